import Foundation
import SQLiteKit
import TestSupport

@testable import ListStore

/// The rows a generator picks from: every list, section and item with its parent and
/// position key, as one connection sees them (a foreign client inside its transaction
/// sees its own writes).
struct FuzzState {
  struct List {
    var id: Int64
    var name: String
  }

  /// A section (parent: its list) or an item (parent: its section).
  struct Row {
    var id: Int64
    var parent: Int64
    var key: String
  }

  var lists: [List] = []
  /// Ordered by parent, then by the bytes of the key.
  var sections: [Row] = []
  var items: [Row] = []
  /// `sqlite_sequence`: the highest id each table ever used.
  var sequence: [String: Int64] = [:]
  private(set) var sectionsByList: [Int64: [Row]] = [:]
  private(set) var itemsBySection: [Int64: [Row]] = [:]

  /// Reads every row through `db`, in one read transaction unless `db` is in one already.
  static func read(_ db: Connection) throws -> FuzzState {
    if db.isInTransaction { return try readRows(db) }
    return try db.transaction(.deferred) { try readRows(db) }
  }

  private static func readRows(_ db: Connection) throws -> FuzzState {
    var state = FuzzState()
    try db.cachedStatement("SELECT id, name FROM lists ORDER BY id").forEachRow {
      state.lists.append(List(id: $0.int64(at: 0), name: $0.string(at: 1)))
    }
    try db.cachedStatement(
      "SELECT id, list_id, position FROM sections ORDER BY list_id, CAST(position AS BLOB)"
    ).forEachRow {
      state.sections.append(
        Row(id: $0.int64(at: 0), parent: $0.int64(at: 1), key: $0.string(at: 2)))
    }
    try db.cachedStatement(
      "SELECT id, section_id, position FROM items ORDER BY section_id, CAST(position AS BLOB)"
    ).forEachRow {
      state.items.append(Row(id: $0.int64(at: 0), parent: $0.int64(at: 1), key: $0.string(at: 2)))
    }
    try db.cachedStatement("SELECT name, seq FROM sqlite_sequence").forEachRow {
      state.sequence[$0.string(at: 0)] = $0.int64(at: 1)
    }
    for section in state.sections {
      state.sectionsByList[section.parent, default: []].append(section)
    }
    for item in state.items { state.itemsBySection[item.parent, default: []].append(item) }
    return state
  }

  func list(named name: String) -> List? { lists.first { $0.name == name } }
  func list(id: Int64) -> List? { lists.first { $0.id == id } }
  func sections(inList id: Int64) -> [Row] { sectionsByList[id] ?? [] }
  func items(inSection id: Int64) -> [Row] { itemsBySection[id] ?? [] }
  func section(id: Int64) -> Row? { sections.first { $0.id == id } }

  /// Sections whose list exists (others were left behind by a REPLACE with foreign
  /// keys and recursive triggers off).
  var liveSections: [Row] {
    let ids = Set(lists.map(\.id))
    return sections.filter { ids.contains($0.parent) }
  }

  /// Items whose section row exists (others were left behind by a REPLACE).
  var itemsWithSection: [Row] {
    let ids = Set(sections.map(\.id))
    return items.filter { ids.contains($0.parent) }
  }

  /// Items of live sections.
  var liveItems: [Row] {
    let ids = Set(liveSections.map(\.id))
    return items.filter { ids.contains($0.parent) }
  }

  /// The items of list `id`, section by section.
  func items(inList id: Int64) -> [Row] { sections(inList: id).flatMap { items(inSection: $0.id) } }

  /// An id table `table` used once and gave up (never to be given again), if any.
  func deletedID(in table: String, existing: [Int64], random: inout SeededGenerator) -> Int64? {
    let high = sequence[table] ?? 0
    guard high > 0 else { return nil }
    let taken = Set(existing)
    for _ in 0..<8 {
      let id = Int64.random(in: 1...high, using: &random)
      if !taken.contains(id) { return id }
    }
    return nil
  }
}

/// A seeded source of random foreign statements, API calls and CLI command lines, each
/// chosen from the rows that exist when it is made.
struct FuzzGenerator {
  var random: SeededGenerator
  /// Lists that are never deleted, replaced or renamed (the one `watch` follows).
  var protectedNames: Set<String> = []
  /// Whether other writers run at the same time: no `OR ROLLBACK`, whose rollback would
  /// let the statements after it run outside the transaction, on rows that may change.
  var concurrent = false
  /// Ids each list name has had, to act on stale handles.
  var seenListIDs: [String: [Int64]] = [:]
  private var counter = 0

  /// The names lists get; few, so that they are deleted and made again under the same name.
  static let listNames = ["L0", "L1", "L2", "L3"]

  init(seed: UInt64) { random = SeededGenerator(seed: seed) }

  // MARK: Randomness

  mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &random) }
  mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
  mutating func chance(_ probability: Double) -> Bool {
    Double.random(in: 0..<1, using: &random) < probability
  }
  mutating func pick<T>(_ elements: [T]) -> T? { elements.randomElement(using: &random) }

  mutating func next() -> Int {
    counter += 1
    return counter
  }

  // MARK: Values

  /// JSON text for an item, in the shapes clients write (spaces and line breaks kept).
  mutating func value() -> String {
    let n = next()
    switch int(0..<12) {
    case 0...4: return "\"v\(n)\""
    case 5: return "{\"n\":\(n)}"
    case 6: return "[\(n), \"x\"]"
    case 7: return "{ \"spaced\" : \(n) }"
    case 8: return "[1,\n\(n)]"
    case 9: return pick(["null", "true", "12.5", "\"h\\u00e9\\\"llo\"", "\"é👍\""]) ?? "null"
    case 10: return "\"it's \(n)\""
    default: return "\(n)"
    }
  }

  /// JSON text for section metadata: mostly `{header, footer}`, sometimes other shapes.
  mutating func metadata() -> String {
    let n = next()
    switch int(0..<10) {
    case 0...2: return "{\"header\":\"H\(n)\",\"footer\":null}"
    case 3: return "{\"header\":\"H\(n)\",\"footer\":\"f\(n)\"}"
    case 4: return "{\"header\":\"H\(n)\"}"
    case 5: return "\"bare \(n)\""
    case 6: return "null"
    case 7: return "{\"other\":\(n)}"
    case 8: return "[\(n)]"
    default: return "{ \"header\" : \"sp\(n)\" , \"footer\" : null }"
    }
  }

  /// Text that is not JSON.
  mutating func invalidJSON() -> String {
    pick(["{bad", "", "'single'", "[1,]", "{\"a\":}", "nul", "\"open"]) ?? "{bad"
  }

  // MARK: Position keys

  /// A well-formed key, by the rules of `PositionKey` (and of the schema's triggers):
  /// mostly short, sometimes at the ends of the key space.
  mutating func validKey() -> String {
    let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    if chance(0.15) {
      return pick([
        "A" + String(repeating: "0", count: 25) + "1",
        "A" + String(repeating: "0", count: 26) + "V",
        "A" + String(repeating: "0", count: 26) + "01",
        "z" + String(repeating: "z", count: 26),
        "z" + String(repeating: "z", count: 26) + "zz",
        "Zz", "Zzz", "a0", "a01", "Z0", "b00", "az", "a0zzzz", "Yzz",
      ]) ?? "a0"
    }
    let head: Character
    let length: Int
    if chance(0.25) {
      let offset = pick([0, 0, 1, 2, 25]) ?? 0
      head = Character(UnicodeScalar(UInt8(ascii: "Z") - UInt8(offset)))
      length = offset + 2
    } else {
      let offset = pick([0, 0, 0, 1, 2, 25]) ?? 0
      head = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(offset)))
      length = offset + 2
    }
    var key = String(head)
    for _ in 1..<length { key.append(pick(digits) ?? "0") }
    let fraction = int(0...3)
    for index in 0..<fraction {
      let digit = pick(digits) ?? "1"
      // No trailing zero.
      key.append(digit == "0" && index == fraction - 1 ? "1" : digit)
    }
    if key == "A" + String(repeating: "0", count: 26) { key += "V" }
    return key
  }

  /// A key not among `keys` (sorted by bytes): `PositionKey.between` two neighbours, or
  /// a random well-formed key. `nil` (rarely) when `between` refuses its bounds.
  mutating func freshKey(among keys: [String]) -> String? {
    if chance(0.2) {
      let key = validKey()
      if !keys.contains(key) { return key }
    }
    let gap = int(0...keys.count)
    let (lower, upper) = (gap > 0 ? keys[gap - 1] : nil, gap < keys.count ? keys[gap] : nil)
    guard let key = try? PositionKey.between(lower, upper) else { return nil }
    return checked([key], lower, upper, "between")?.first
  }

  /// `count` ascending keys in one gap among `keys`.
  mutating func freshKeys(among keys: [String], count: Int) -> [String]? {
    let gap = int(0...keys.count)
    let (lower, upper) = (gap > 0 ? keys[gap - 1] : nil, gap < keys.count ? keys[gap] : nil)
    guard let made = try? PositionKey.keys(between: lower, upper, count: count) else { return nil }
    return checked(made, lower, upper, "keys(count: \(count))")
  }

  /// What `PositionKey` got wrong: keys it made between two well-formed keys that are
  /// not well formed, or not in order between them (the schema would refuse them, and
  /// the repository's inserts and moves next to such neighbours fail).
  private(set) var keyProblems: [String] = []

  /// `keys` when they are well formed and ascend strictly between the bounds; else
  /// `nil`, and the problem is noted.
  private mutating func checked(
    _ keys: [String], _ lower: String?, _ upper: String?, _ call: String
  )
    -> [String]?
  {
    let bounded = [lower].compactMap { $0 } + keys + [upper].compactMap { $0 }
    let ascending = zip(bounded, bounded.dropFirst()).allSatisfy { pair in
      pair.0.utf8.lexicographicallyPrecedes(pair.1.utf8)
    }
    if ascending && keys.allSatisfy(PositionKey.isValid) { return keys }
    let problem =
      "PositionKey.\(call) between \(lower.map(literal) ?? "nil") and \(upper.map(literal) ?? "nil")"
      + " made \(keys.map(literal)): "
      + (ascending ? "not a well-formed key (the schema refuses it)" : "not strictly between them")
    if !keyProblems.contains(problem) { keyProblems.append(problem) }
    return nil
  }

  /// An SQL expression for a position the schema refuses.
  mutating func invalidKeySQL() -> String {
    pick([
      "''", "'~'", "'zzz'", "'a50'", "'A" + String(repeating: "0", count: 26) + "'", "'a5é'",
      "'a5' || char(0) || 'x'", "CAST('a5' AS BLOB)", "x'6135'", "5", "1.5", "NULL", "'b0'",
      "'a 5'", "' a5'", "'A5'", "'a5-'", "'a5V0'", "'z'", "CAST('a0' AS BLOB)", "zeroblob(2)",
    ]) ?? "''"
  }

  /// `text` as an SQL string literal.
  static func quoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
  }

  private func q(_ text: String) -> String { Self.quoted(text) }

  // MARK: Foreign statements

  /// The statements of one step of a foreign client (usually one; several for the
  /// writes that take a few statements, like a section visiting another list).
  mutating func statements(_ state: FuzzState) -> [ForeignStatement] {
    for _ in 0..<20 {
      if let made = attempt(state), !made.isEmpty { return made }
    }
    return [
      ForeignStatement(
        "INSERT INTO lists(name) SELECT 'L0' WHERE NOT EXISTS (SELECT 1 FROM lists WHERE name = 'L0')"
      )
    ]
  }

  private mutating func attempt(_ state: FuzzState) -> [ForeignStatement]? {
    // Keep the database small, so that statements meet existing rows.
    if state.items.count > 70 && chance(0.5) { return deleteItems(state) }
    if state.sections.count > 16 && chance(0.5) { return deleteSections(state) }
    switch int(0..<100) {
    case 0..<12: return insertItem(state)
    case 12..<16: return insertItemsMultiRow(state)
    case 16..<19: return insertItemsSelect(state)
    case 19..<26: return updateItemValues(state)
    case 26..<32: return moveItemWithinSection(state)
    case 32..<39: return moveItemAcrossSections(state)
    case 39..<42: return updateEveryItemColumn(state)
    case 42..<47: return deleteItems(state)
    case 47..<51: return replaceItem(state)
    case 51..<56: return upsertItem(state)
    case 56..<60: return insertSection(state)
    case 60..<62: return insertSectionsSelect(state)
    case 62..<65: return updateSectionMetadata(state)
    case 65..<68: return moveSectionWithinList(state)
    case 68..<71: return moveSectionAcrossLists(state)
    case 71..<73: return sectionVisitsAnotherListAndReturns(state)
    case 73..<75: return deleteSections(state)
    case 75..<78: return replaceOrUpsertSection(state)
    case 78..<80: return createOrDeleteList(state)
    case 80..<82: return deleteAndRecreateList(state)
    case 82..<83: return renameLists(state)
    case 83..<84: return replaceList(state)
    case 84..<96: return refused(state)
    default: return noOps(state)
    }
  }

  // Items.

  private mutating func insertItem(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(chance(0.9) ? state.liveSections : state.sections),
      let key = freshKey(among: state.items(inSection: section.id).map(\.key))
    else { return nil }
    let value = q(value())
    switch int(0..<4) {
    case 0:
      let id = (state.sequence["items"] ?? 0) + Int64(pick([1, 1, 2, 50]) ?? 1)
      return [
        ForeignStatement(
          "INSERT INTO items(id, section_id, position, value) VALUES (\(id), \(section.id), \(q(key)), \(value))"
        )
      ]
    case 1:
      return [
        ForeignStatement(
          "INSERT INTO items(value, position, section_id) VALUES (\(value), \(q(key)), \(section.id))"
        )
      ]
    default:
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES (\(section.id), \(q(key)), \(value))"
        )
      ]
    }
  }

  private mutating func insertItemsMultiRow(_ state: FuzzState) -> [ForeignStatement]? {
    var rows: [String] = []
    var used = Set<Int64>()
    for _ in 0..<int(1...2) {
      guard let section = pick(state.liveSections), !used.contains(section.id),
        let keys = freshKeys(
          among: state.items(inSection: section.id).map(\.key), count: int(1...3))
      else { continue }
      used.insert(section.id)
      rows += keys.map { "(\(section.id), \(q($0)), \(q(value())))" }
    }
    guard !rows.isEmpty else { return nil }
    return [
      ForeignStatement(
        "INSERT INTO items(section_id, position, value) VALUES \(rows.joined(separator: ", "))")
    ]
  }

  private mutating func insertItemsSelect(_ state: FuzzState) -> [ForeignStatement]? {
    guard let source = pick(state.liveSections), let target = pick(state.liveSections) else {
      return nil
    }
    let conflict = pick(["", "OR IGNORE ", "OR REPLACE "]) ?? ""
    let expectation: Expectation =
      conflict.isEmpty
      ? .either("UNIQUE constraint failed: items.section_id, items.position") : .accepted
    if chance(0.5) {
      // A copy of every item of one section, just after each original key.
      return [
        ForeignStatement(
          "INSERT \(conflict)INTO items(section_id, position, value) SELECT \(target.id), position || 'V', value FROM items WHERE section_id = \(source.id)",
          expectation)
      ]
    }
    // One new item in every section of a list, at the same key.
    let key = validKey()
    return [
      ForeignStatement(
        "INSERT \(conflict)INTO items(section_id, position, value) SELECT id, \(q(key)), \(q(value())) FROM sections WHERE list_id = \(source.parent)",
        expectation)
    ]
  }

  private mutating func updateItemValues(_ state: FuzzState) -> [ForeignStatement]? {
    guard let item = pick(chance(0.9) ? state.liveItems : state.items) else { return nil }
    switch int(0..<8) {
    case 0:
      return [
        ForeignStatement("UPDATE items SET value = \(q(value())) WHERE section_id = \(item.parent)")
      ]
    case 1: return [ForeignStatement("UPDATE items SET value = value WHERE id = \(item.id)")]
    case 2:
      return [ForeignStatement("UPDATE items SET value = json_array(value) WHERE id = \(item.id)")]
    case 3:
      let other = pick(state.items)?.id ?? item.id
      return [
        ForeignStatement(
          "UPDATE items SET value = \(q(value())) WHERE id IN (\(item.id), \(other))")
      ]
    default:
      return [ForeignStatement("UPDATE items SET value = \(q(value())) WHERE id = \(item.id)")]
    }
  }

  private mutating func moveItemWithinSection(_ state: FuzzState) -> [ForeignStatement]? {
    guard let item = pick(state.liveItems) else { return nil }
    let siblings = state.items(inSection: item.parent)
    if chance(0.3), let other = pick(siblings), other.id != item.id {
      // Onto another item's key.
      let conflicts = ["", "OR REPLACE ", "OR IGNORE ", "OR ABORT ", "OR FAIL ", "OR ROLLBACK "]
      let conflict = pick(Array(conflicts.dropLast(concurrent ? 1 : 0))) ?? ""
      return [
        ForeignStatement(
          "UPDATE \(conflict)items SET position = \(q(other.key)) WHERE id = \(item.id)",
          conflictExpectation(
            conflict, "UNIQUE constraint failed: items.section_id, items.position"))
      ]
    }
    guard let key = freshKey(among: siblings.filter { $0.id != item.id }.map(\.key)) else {
      return nil
    }
    return [ForeignStatement("UPDATE items SET position = \(q(key)) WHERE id = \(item.id)")]
  }

  /// What a statement with conflict clause `conflict` does when it meets a row.
  private func conflictExpectation(_ conflict: String, _ message: String) -> Expectation {
    switch conflict {
    case "OR REPLACE ", "OR IGNORE ": .accepted
    case "OR FAIL ", "OR ROLLBACK ":
      Expectation(outcome: .either, messages: [message], mayChangeOnFailure: true)
    default: .either(message)
    }
  }

  private mutating func moveItemAcrossSections(_ state: FuzzState) -> [ForeignStatement]? {
    guard let item = pick(chance(0.95) ? state.liveItems : state.items),
      let target = pick(chance(0.9) ? state.liveSections : state.sections)
    else { return nil }
    let targetKeys = state.items(inSection: target.id).filter { $0.id != item.id }.map(\.key)
    if chance(0.25) {
      // Keeping its key, which the target may hold already.
      let conflict = pick(["", "OR REPLACE ", "OR IGNORE "]) ?? ""
      return [
        ForeignStatement(
          "UPDATE \(conflict)items SET section_id = \(target.id) WHERE id = \(item.id)",
          conflictExpectation(
            conflict, "UNIQUE constraint failed: items.section_id, items.position"))
      ]
    }
    guard let key = freshKey(among: targetKeys) else { return nil }
    if chance(0.2) {
      // Every item of a section at once, each to its own new key.
      let keys = state.items(inSection: item.parent)
      guard keys.count > 1, keys.count < 6, target.id != item.parent,
        let newKeys = freshKeys(among: targetKeys, count: keys.count)
      else { return nil }
      let cases = zip(keys, newKeys).map { pair in "WHEN \(pair.0.id) THEN \(q(pair.1))" }
        .joined(separator: " ")
      return [
        ForeignStatement(
          "UPDATE items SET section_id = \(target.id), position = CASE id \(cases) END WHERE section_id = \(item.parent)"
        )
      ]
    }
    return [
      ForeignStatement(
        "UPDATE items SET section_id = \(target.id), position = \(q(key)) WHERE id = \(item.id)")
    ]
  }

  private mutating func updateEveryItemColumn(_ state: FuzzState) -> [ForeignStatement]? {
    guard let item = pick(state.liveItems), let target = pick(state.liveSections),
      let key = freshKey(
        among: state.items(inSection: target.id).filter { $0.id != item.id }.map(\.key))
    else { return nil }
    return [
      ForeignStatement(
        "UPDATE items SET id = id, section_id = \(target.id), position = \(q(key)), value = \(q(value())) WHERE id = \(item.id)"
      )
    ]
  }

  private mutating func deleteItems(_ state: FuzzState) -> [ForeignStatement]? {
    guard let item = pick(state.items) else { return nil }
    switch int(0..<5) {
    case 0:
      return [
        ForeignStatement(
          "DELETE FROM items WHERE section_id = \(item.parent) AND position >= \(q(item.key))")
      ]
    case 1:
      return [
        ForeignStatement(
          "DELETE FROM items WHERE id IN (SELECT id FROM items WHERE section_id = \(item.parent) ORDER BY position DESC LIMIT 2)"
        )
      ]
    case 2:
      return [ForeignStatement("DELETE FROM items WHERE value LIKE '%\(int(0...9))%'")]
    default:
      return [ForeignStatement("DELETE FROM items WHERE id = \(item.id)")]
    }
  }

  private mutating func replaceItem(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.liveSections) else { return nil }
    let siblings = state.items(inSection: section.id)
    let key = (chance(0.8) ? pick(siblings)?.key : nil) ?? freshKey(among: siblings.map(\.key))
    guard let key else { return nil }
    let verb = pick(["REPLACE", "INSERT OR REPLACE"]) ?? "REPLACE"
    if chance(0.3) {
      let id = (state.sequence["items"] ?? 0) + 1
      return [
        ForeignStatement(
          "\(verb) INTO items(id, section_id, position, value) VALUES (\(id), \(section.id), \(q(key)), \(q(value())))"
        )
      ]
    }
    return [
      ForeignStatement(
        "\(verb) INTO items(section_id, position, value) VALUES (\(section.id), \(q(key)), \(q(value())))"
      )
    ]
  }

  private mutating func upsertItem(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.liveSections) else { return nil }
    let siblings = state.items(inSection: section.id)
    guard
      let key = (chance(0.7) ? pick(siblings)?.key : nil) ?? freshKey(among: siblings.map(\.key))
    else { return nil }
    let insert =
      "INSERT INTO items(section_id, position, value) VALUES (\(section.id), \(q(key)), \(q(value())))"
    switch int(0..<6) {
    case 0:
      return [ForeignStatement(insert + " ON CONFLICT DO NOTHING")]
    case 1:
      return [ForeignStatement("INSERT OR IGNORE" + insert.dropFirst(6))]
    case 2:
      // Moves the row it meets to a new key of its section.
      guard let moved = freshKey(among: siblings.map(\.key)) else { return nil }
      return [
        ForeignStatement(
          insert + " ON CONFLICT(section_id, position) DO UPDATE SET position = \(q(moved))")
      ]
    case 3:
      // Moves the row it meets into another section.
      guard let target = pick(state.liveSections), target.id != section.id,
        let moved = freshKey(among: state.items(inSection: target.id).map(\.key))
      else { return nil }
      return [
        ForeignStatement(
          insert
            + " ON CONFLICT(section_id, position) DO UPDATE SET section_id = \(target.id), position = \(q(moved)), value = excluded.value"
        )
      ]
    case 4:
      // By id: the row stays and takes the new value.
      guard let item = pick(state.items), let fresh = freshKey(among: siblings.map(\.key)) else {
        return nil
      }
      return [
        ForeignStatement(
          "INSERT INTO items(id, section_id, position, value) VALUES (\(item.id), \(section.id), \(q(fresh)), \(q(value()))) ON CONFLICT(id) DO UPDATE SET value = excluded.value"
        )
      ]
    default:
      return [
        ForeignStatement(
          insert + " ON CONFLICT(section_id, position) DO UPDATE SET value = excluded.value")
      ]
    }
  }

  // Sections.

  private mutating func insertSection(_ state: FuzzState) -> [ForeignStatement]? {
    guard let list = pick(state.lists) else { return nil }
    let keys = state.sections(inList: list.id).map(\.key)
    if chance(0.2), let fresh = freshKeys(among: keys, count: int(2...3)) {
      let rows = fresh.map { "(\(list.id), \(q($0)), \(q(metadata())))" }
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) VALUES \(rows.joined(separator: ", "))"
        )
      ]
    }
    guard let key = freshKey(among: keys) else { return nil }
    if chance(0.2) {
      let id = (state.sequence["sections"] ?? 0) + Int64(pick([1, 3]) ?? 1)
      return [
        ForeignStatement(
          "INSERT INTO sections(id, list_id, position, metadata) VALUES (\(id), \(list.id), \(q(key)), \(q(metadata())))"
        )
      ]
    }
    if chance(0.1) {
      return [
        ForeignStatement("INSERT INTO sections(list_id, position) VALUES (\(list.id), \(q(key)))")
      ]
    }
    return [
      ForeignStatement(
        "INSERT INTO sections(list_id, position, metadata) VALUES (\(list.id), \(q(key)), \(q(metadata())))"
      )
    ]
  }

  private mutating func insertSectionsSelect(_ state: FuzzState) -> [ForeignStatement]? {
    guard let source = pick(state.lists), let target = pick(state.lists) else { return nil }
    let conflict = pick(["", "OR IGNORE "]) ?? ""
    return [
      ForeignStatement(
        "INSERT \(conflict)INTO sections(list_id, position, metadata) SELECT \(target.id), position || 'G', metadata FROM sections WHERE list_id = \(source.id)",
        conflict.isEmpty
          ? .either("UNIQUE constraint failed: sections.list_id, sections.position") : .accepted)
    ]
  }

  private mutating func updateSectionMetadata(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.sections) else { return nil }
    if chance(0.2) {
      return [
        ForeignStatement(
          "UPDATE sections SET metadata = \(q(metadata())) WHERE list_id = \(section.parent)")
      ]
    }
    if chance(0.1) {
      return [ForeignStatement("UPDATE sections SET metadata = metadata WHERE id = \(section.id)")]
    }
    return [
      ForeignStatement("UPDATE sections SET metadata = \(q(metadata())) WHERE id = \(section.id)")
    ]
  }

  private mutating func moveSectionWithinList(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.liveSections) else { return nil }
    let siblings = state.sections(inList: section.parent)
    if chance(0.3), let other = pick(siblings), other.id != section.id {
      let conflict = pick(["", "OR REPLACE ", "OR IGNORE ", "OR FAIL "]) ?? ""
      return [
        ForeignStatement(
          "UPDATE \(conflict)sections SET position = \(q(other.key)) WHERE id = \(section.id)",
          conflictExpectation(
            conflict, "UNIQUE constraint failed: sections.list_id, sections.position"))
      ]
    }
    guard let key = freshKey(among: siblings.filter { $0.id != section.id }.map(\.key)) else {
      return nil
    }
    let metadata = chance(0.5) ? ", metadata = \(q(metadata()))" : ""
    return [
      ForeignStatement(
        "UPDATE sections SET position = \(q(key))\(metadata) WHERE id = \(section.id)")
    ]
  }

  private mutating func moveSectionAcrossLists(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.sections), let list = pick(state.lists),
      let key = freshKey(among: state.sections(inList: list.id).map(\.key))
    else { return nil }
    if chance(0.2) {
      let conflict = pick(["", "OR REPLACE "]) ?? ""
      return [
        ForeignStatement(
          "UPDATE \(conflict)sections SET list_id = \(list.id) WHERE id = \(section.id)",
          conflictExpectation(
            conflict, "UNIQUE constraint failed: sections.list_id, sections.position"))
      ]
    }
    return [
      ForeignStatement(
        "UPDATE sections SET list_id = \(list.id), position = \(q(key)) WHERE id = \(section.id)")
    ]
  }

  /// A section leaves its list, one of its items changes (or moves) while it is away,
  /// and it comes back, to its old key or a new one: all in one transaction.
  private mutating func sectionVisitsAnotherListAndReturns(_ state: FuzzState)
    -> [ForeignStatement]?
  {
    guard let section = pick(state.liveSections),
      let other = pick(state.lists.filter { $0.id != section.parent }),
      let away = freshKey(among: state.sections(inList: other.id).map(\.key))
    else { return nil }
    var statements = [
      ForeignStatement(
        "UPDATE sections SET list_id = \(other.id), position = \(q(away)) WHERE id = \(section.id)")
    ]
    let items = state.items(inSection: section.id)
    if let item = pick(items) {
      if chance(0.5) {
        statements.append(
          ForeignStatement("UPDATE items SET value = \(q(value())) WHERE id = \(item.id)"))
      } else if let key = freshKey(among: items.filter { $0.id != item.id }.map(\.key)) {
        statements.append(
          ForeignStatement("UPDATE items SET position = \(q(key)) WHERE id = \(item.id)"))
      }
    }
    if chance(0.3) {
      statements.append(
        ForeignStatement("UPDATE sections SET metadata = \(q(metadata())) WHERE id = \(section.id)")
      )
    }
    let home = state.sections(inList: section.parent).filter { $0.id != section.id }.map(\.key)
    let back = chance(0.5) ? section.key : (freshKey(among: home) ?? section.key)
    statements.append(
      ForeignStatement(
        "UPDATE sections SET list_id = \(section.parent), position = \(q(back)) WHERE id = \(section.id)"
      ))
    return statements
  }

  private mutating func deleteSections(_ state: FuzzState) -> [ForeignStatement]? {
    guard let section = pick(state.sections) else { return nil }
    if chance(0.2) {
      return [
        ForeignStatement(
          "DELETE FROM sections WHERE list_id = \(section.parent) AND position > \(q(section.key))")
      ]
    }
    return [ForeignStatement("DELETE FROM sections WHERE id = \(section.id)")]
  }

  private mutating func replaceOrUpsertSection(_ state: FuzzState) -> [ForeignStatement]? {
    guard let list = pick(state.lists) else { return nil }
    let siblings = state.sections(inList: list.id)
    guard
      let key = (chance(0.8) ? pick(siblings)?.key : nil) ?? freshKey(among: siblings.map(\.key))
    else { return nil }
    let values = "VALUES (\(list.id), \(q(key)), \(q(metadata())))"
    switch int(0..<5) {
    case 0:
      return [ForeignStatement("REPLACE INTO sections(list_id, position, metadata) \(values)")]
    case 1:
      return [
        ForeignStatement("INSERT OR REPLACE INTO sections(list_id, position, metadata) \(values)")
      ]
    case 2:
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) \(values) ON CONFLICT DO NOTHING")
      ]
    case 3:
      guard let other = pick(state.lists),
        let moved = freshKey(among: state.sections(inList: other.id).map(\.key))
      else { return nil }
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) \(values) ON CONFLICT(list_id, position) DO UPDATE SET list_id = \(other.id), position = \(q(moved))"
        )
      ]
    default:
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) \(values) ON CONFLICT(list_id, position) DO UPDATE SET metadata = excluded.metadata"
        )
      ]
    }
  }

  // Lists.

  private mutating func unprotected(_ state: FuzzState) -> [FuzzState.List] {
    state.lists.filter { !protectedNames.contains($0.name) }
  }

  private mutating func createOrDeleteList(_ state: FuzzState) -> [ForeignStatement]? {
    let missing = Self.listNames.filter { state.list(named: $0) == nil }
    if let name = pick(missing), chance(0.7) || unprotected(state).isEmpty {
      if chance(0.3) {
        let id = (state.sequence["lists"] ?? 0) + Int64(pick([1, 2]) ?? 1)
        return [ForeignStatement("INSERT INTO lists(id, name) VALUES (\(id), \(q(name)))")]
      }
      return [ForeignStatement("INSERT INTO lists(name) VALUES (\(q(name)))")]
    }
    guard let list = pick(unprotected(state)) else { return nil }
    return [
      ForeignStatement(
        chance(0.5)
          ? "DELETE FROM lists WHERE name = \(q(list.name))"
          : "DELETE FROM lists WHERE id = \(list.id)")
    ]
  }

  /// A list deleted and made again under the same name, with a section, in one transaction.
  private mutating func deleteAndRecreateList(_ state: FuzzState) -> [ForeignStatement]? {
    guard let list = pick(unprotected(state)) else { return nil }
    var statements = [
      ForeignStatement("DELETE FROM lists WHERE name = \(q(list.name))"),
      ForeignStatement("INSERT INTO lists(name) VALUES (\(q(list.name)))"),
    ]
    if chance(0.7) {
      statements.append(
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) SELECT id, 'a0', \(q(metadata())) FROM lists WHERE name = \(q(list.name))"
        ))
    }
    return statements
  }

  private mutating func renameLists(_ state: FuzzState) -> [ForeignStatement]? {
    let candidates = unprotected(state)
    if candidates.count >= 2, chance(0.5), let first = pick(candidates),
      let second = pick(candidates.filter { $0.id != first.id })
    {
      // Two lists swap names.
      return [
        ForeignStatement("UPDATE lists SET name = 'swapping' WHERE id = \(first.id)"),
        ForeignStatement("UPDATE lists SET name = \(q(first.name)) WHERE id = \(second.id)"),
        ForeignStatement("UPDATE lists SET name = \(q(second.name)) WHERE id = \(first.id)"),
      ]
    }
    guard let list = pick(candidates),
      let name = pick(Self.listNames.filter { state.list(named: $0) == nil })
    else { return nil }
    return [ForeignStatement("UPDATE lists SET name = \(q(name)) WHERE id = \(list.id)")]
  }

  /// A REPLACE that deletes a list (its sections stay behind when foreign keys and
  /// recursive triggers are off).
  private mutating func replaceList(_ state: FuzzState) -> [ForeignStatement]? {
    guard let list = pick(unprotected(state)) else { return nil }
    switch int(0..<3) {
    case 0:
      return [ForeignStatement("INSERT OR REPLACE INTO lists(name) VALUES (\(q(list.name)))")]
    case 1:
      let id = (state.sequence["lists"] ?? 0) + 1
      return [ForeignStatement("REPLACE INTO lists(id, name) VALUES (\(id), \(q(list.name)))")]
    default:
      guard let other = pick(unprotected(state).filter { $0.id != list.id }) else { return nil }
      return [
        ForeignStatement(
          "UPDATE OR REPLACE lists SET name = \(q(list.name)) WHERE id = \(other.id)")
      ]
    }
  }

  /// Statements that change nothing, or nothing visible.
  private mutating func noOps(_ state: FuzzState) -> [ForeignStatement]? {
    switch int(0..<4) {
    case 0:
      return [ForeignStatement("UPDATE items SET id = id WHERE id = \(pick(state.items)?.id ?? 0)")]
    case 1:
      return [
        ForeignStatement(
          "UPDATE sections SET position = position WHERE list_id = \(pick(state.lists)?.id ?? 0)")
      ]
    case 2:
      return [
        ForeignStatement("DELETE FROM items WHERE id = \((state.sequence["items"] ?? 0) + 7)")
      ]
    default:
      guard let item = pick(state.itemsWithSection) else { return nil }
      return [
        ForeignStatement(
          "INSERT OR IGNORE INTO items(id, section_id, position, value) VALUES (\(item.id), \(item.parent), \(q(item.key)), '0')"
        )
      ]
    }
  }

  // What the schema refuses.

  private mutating func refused(_ state: FuzzState) -> [ForeignStatement]? {
    let itemKey = "items.position must be a position key"
    let sectionKey = "sections.position must be a position key"
    switch int(0..<17) {
    case 0:
      guard let section = pick(state.sections) else { return nil }
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES (\(section.id), \(invalidKeySQL()), \(q(value())))",
          .refused(itemKey))
      ]
    case 1:
      guard let list = pick(state.lists) else { return nil }
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) VALUES (\(list.id), \(invalidKeySQL()), 'null')",
          .refused(sectionKey))
      ]
    case 2:
      guard let item = pick(state.items) else { return nil }
      let conflict = pick(["", "OR REPLACE ", "OR IGNORE "]) ?? ""
      return [
        ForeignStatement(
          "UPDATE \(conflict)items SET position = \(invalidKeySQL()) WHERE id = \(item.id)",
          .refused(itemKey))
      ]
    case 3:
      guard let section = pick(state.sections) else { return nil }
      return [
        ForeignStatement(
          "UPDATE sections SET position = \(chance(0.5) ? "CAST(position AS BLOB)" : invalidKeySQL()) WHERE id = \(section.id)",
          .refused(sectionKey))
      ]
    case 4:
      // An id that is not new: 0, negative, or one a deleted item had.
      guard let section = pick(state.sections),
        let key = freshKey(among: state.items(inSection: section.id).map(\.key))
      else { return nil }
      let deleted =
        chance(0.5)
        ? state.deletedID(in: "items", existing: state.items.map(\.id), random: &random) : nil
      let id: Int64 = deleted ?? pick([0, -1, -42]) ?? 0
      let verb = pick(["INSERT", "INSERT OR REPLACE", "REPLACE", "INSERT OR IGNORE"]) ?? "INSERT"
      return [
        ForeignStatement(
          "\(verb) INTO items(id, section_id, position, value) VALUES (\(id), \(section.id), \(q(key)), \(q(value())))",
          .refused("items.id is never reused"))
      ]
    case 5:
      // The id of an existing item.
      guard let item = pick(state.items), let section = pick(state.sections),
        let key = freshKey(among: state.items(inSection: section.id).map(\.key))
      else { return nil }
      let replace = chance(0.5)
      return [
        ForeignStatement(
          "\(replace ? "INSERT OR REPLACE" : "INSERT") INTO items(id, section_id, position, value) VALUES (\(item.id), \(section.id), \(q(key)), \(q(value())))",
          .refused(replace ? "items.id is never reused" : "UNIQUE constraint failed: items.id"))
      ]
    case 6:
      guard let list = pick(state.lists),
        let key = freshKey(among: state.sections(inList: list.id).map(\.key))
      else { return nil }
      let deleted =
        chance(0.5)
        ? state.deletedID(in: "sections", existing: state.sections.map(\.id), random: &random)
        : nil
      let id: Int64 = deleted ?? pick(state.sections)?.id ?? 0
      let exists = state.section(id: id) != nil
      let verb = exists ? "REPLACE" : (pick(["INSERT", "REPLACE", "INSERT OR IGNORE"]) ?? "INSERT")
      return [
        ForeignStatement(
          "\(verb) INTO sections(id, list_id, position, metadata) VALUES (\(id), \(list.id), \(q(key)), 'null')",
          .refused("sections.id is never reused"))
      ]
    case 7:
      let name = "N\(next())"
      let deleted =
        chance(0.5)
        ? state.deletedID(in: "lists", existing: state.lists.map(\.id), random: &random) : nil
      let id: Int64 = deleted ?? pick([0, -3]) ?? 0
      return [
        ForeignStatement(
          "INSERT INTO lists(id, name) VALUES (\(id), \(q(name)))",
          .refused("lists.id is never reused"))
      ]
    case 8:
      let table = pick(["items", "sections", "lists"]) ?? "items"
      let ids =
        table == "items"
        ? state.items.map(\.id)
        : table == "sections" ? state.sections.map(\.id) : state.lists.map(\.id)
      guard let id = pick(ids) else { return nil }
      let change = pick(["id + 1", "id + 1000", "0", "-id"]) ?? "0"
      return [
        ForeignStatement(
          "UPDATE \(table) SET id = \(change) WHERE id = \(id)",
          .refused("\(table).id never changes"))
      ]
    case 9:
      let missing = (state.sequence["sections"] ?? 0) + 100
      if chance(0.5), let item = pick(state.items) {
        return [
          ForeignStatement(
            "UPDATE items SET section_id = \(missing) WHERE id = \(item.id)",
            .refused("no section with this section_id"))
        ]
      }
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES (\(missing), 'a0', '1')",
          .refused("no section with this section_id"))
      ]
    case 10:
      let missing = (state.sequence["lists"] ?? 0) + 100
      if chance(0.5), let section = pick(state.sections) {
        return [
          ForeignStatement(
            "UPDATE sections SET list_id = \(missing) WHERE id = \(section.id)",
            .refused("no list with this list_id"))
        ]
      }
      return [
        ForeignStatement(
          "INSERT INTO sections(list_id, position, metadata) VALUES (\(missing), 'a0', 'null')",
          .refused("no list with this list_id"))
      ]
    case 11:
      guard let section = pick(state.sections),
        let key = freshKey(among: state.items(inSection: section.id).map(\.key))
      else { return nil }
      if chance(0.5), let item = pick(state.items) {
        return [
          ForeignStatement(
            "UPDATE items SET value = \(q(invalidJSON())) WHERE id = \(item.id)",
            .refused("CHECK constraint failed"))
        ]
      }
      let null = chance(0.3)
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES (\(section.id), \(q(key)), \(null ? "NULL" : q(invalidJSON())))",
          .refused(null ? "NOT NULL constraint failed: items.value" : "CHECK constraint failed"))
      ]
    case 12:
      guard let section = pick(state.sections) else { return nil }
      return [
        ForeignStatement(
          "UPDATE sections SET metadata = \(q(invalidJSON())) WHERE id = \(section.id)",
          .refused("CHECK constraint failed"))
      ]
    case 13:
      switch int(0..<3) {
      case 0:
        return [
          ForeignStatement(
            "INSERT INTO lists(name) VALUES ('')", .refused("CHECK constraint failed"))
        ]
      case 1:
        guard let list = pick(state.lists) else { return nil }
        return [
          ForeignStatement(
            "INSERT INTO lists(name) VALUES (\(q(list.name)))",
            .refused("UNIQUE constraint failed: lists.name"))
        ]
      default:
        return [
          ForeignStatement(
            "INSERT INTO lists(name) VALUES (NULL)",
            .refused("NOT NULL constraint failed: lists.name"))
        ]
      }
    case 14:
      // An UPSERT whose update breaks a rule.
      guard let item = pick(state.liveItems) else { return nil }
      let invalid = chance(0.5)
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES (\(item.parent), \(q(item.key)), '1') ON CONFLICT(section_id, position) DO UPDATE SET "
            + (invalid ? "position = \(invalidKeySQL())" : "id = id + 1000"),
          .refused(invalid ? itemKey : "items.id never changes"))
      ]
    case 15:
      // Keys made by SQL, with a trailing zero.
      guard let item = pick(state.itemsWithSection) else { return nil }
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) SELECT section_id, position || '0', value FROM items WHERE section_id = \(item.parent)",
          .refused(itemKey))
      ]
    default:
      // Several rows, the last one refused: none is written.
      guard let section = pick(state.liveSections),
        let keys = freshKeys(among: state.items(inSection: section.id).map(\.key), count: 2)
      else { return nil }
      let rows = keys.map { "(\(section.id), \(q($0)), \(q(value())))" }
      return [
        ForeignStatement(
          "INSERT INTO items(section_id, position, value) VALUES \(rows.joined(separator: ", ")), (\(section.id), \(invalidKeySQL()), '1')",
          .refused(itemKey))
      ]
    }
  }

  // MARK: API calls

  /// A call of the Swift API on the rows of `state`, and the `ListStoreError` case it
  /// must fail with (`nil`: it must succeed).
  mutating func apiCall(_ state: FuzzState) -> (APICall, failsWith: String?) {
    for list in state.lists where !(seenListIDs[list.name]?.contains(list.id) ?? false) {
      seenListIDs[list.name, default: []].append(list.id)
    }
    let roll = int(0..<100)
    if roll < 3 || state.lists.isEmpty {
      guard let name = pick(Self.listNames) else { return (.pruneChangeLog, nil) }
      return (.createList(name), state.list(named: name) == nil ? nil : "listExists")
    }
    if roll < 5 {
      guard let list = pick(unprotected(state)) else { return (.pruneChangeLog, nil) }
      return (.deleteList(list.name), nil)
    }
    if roll < 6 {
      guard let list = pick(unprotected(state)),
        let name = pick(Self.listNames.filter { state.list(named: $0) == nil })
      else { return (.pruneChangeLog, nil) }
      return (.renameList(list.name, to: name), nil)
    }
    if roll < 7 { return (.pruneChangeLog, nil) }
    guard let list = pick(state.lists) else { return (.pruneChangeLog, nil) }
    // Now and then through a handle on a list of that name that is gone.
    if chance(0.04), let stale = pick((seenListIDs[list.name] ?? []).filter { $0 != list.id }),
      state.list(id: stale) == nil
    {
      return (.list(id: stale, name: list.name, .appendSection(metadata())), "listNotFound")
    }
    let (operation, failure) = listOperation(state, list: list.id)
    return (.list(id: list.id, name: list.name, operation), failure)
  }

  private mutating func listOperation(_ state: FuzzState, list: Int64) -> (
    ListOperation, String?
  ) {
    let sections = state.sections(inList: list)
    let counts = sections.map { state.items(inSection: $0.id).count }
    let items = state.items(inList: list)
    let foreignItems = state.items.filter { item in !items.contains { $0.id == item.id } }
    let foreignSections = state.sections.filter { $0.parent != list }
    guard !sections.isEmpty else {
      return chance(0.8)
        ? (.appendSection(metadata()), nil) : (.insertSection(metadata(), at: 0), nil)
    }
    let section = int(0..<sections.count)
    let nonEmpty = counts.indices.filter { counts[$0] > 0 }
    switch int(0..<24) {
    case 0: return (.appendSection(metadata()), nil)
    case 1: return (.insertSection(metadata(), at: int(0...sections.count)), nil)
    case 2: return (.removeSection(at: section), nil)
    case 3:
      if chance(0.2), let other = pick(foreignSections) {
        return (.removeSectionWithID(other.id), "sectionNotFound")
      }
      return (.removeSectionWithID(sections[section].id), nil)
    case 4: return (.moveSection(from: section, to: int(0..<sections.count)), nil)
    case 5: return (.moveSectionWithID(sections[section].id, to: int(0..<sections.count)), nil)
    case 6: return (.setMetadata(metadata(), at: section), nil)
    case 7:
      if chance(0.2), let other = pick(foreignSections) {
        return (.setMetadataOfSectionWithID(metadata(), id: other.id), "sectionNotFound")
      }
      return (.setMetadataOfSectionWithID(metadata(), id: sections[section].id), nil)
    case 8, 9: return (.appendItem(value(), section: section), nil)
    case 10: return (.appendItems((0..<int(1...3)).map { _ in value() }, section: section), nil)
    case 11:
      var batches: [Int: [String]] = [:]
      for _ in 0..<int(1...2) {
        batches[int(0..<sections.count)] = (0..<int(1...2)).map { _ in value() }
      }
      return (.appendItemsBySection(batches), nil)
    case 12, 13: return (.insertItem(value(), at: [section, int(0...counts[section])]), nil)
    default: break
    }
    // Operations on an item.
    guard let from = pick(nonEmpty), let item = pick(items) else {
      return (.appendItem(value(), section: section), nil)
    }
    let row = int(0..<counts[from])
    let target = int(0..<sections.count)
    let targetRows = target == from ? counts[target] - 1 : counts[target]
    let neighbor = pick(items)?.id ?? item.id
    switch int(0..<12) {
    case 0: return (.insertItemAfter(value(), neighbor: neighbor), nil)
    case 1: return (.insertItemBefore(value(), neighbor: neighbor), nil)
    case 2: return (.removeItem(at: [from, row]), nil)
    case 3:
      if chance(0.2), let other = pick(foreignItems) {
        return (.removeItemWithID(other.id), "itemNotFound")
      }
      return (.removeItemWithID(item.id), nil)
    case 4: return (.moveItem(from: [from, row], to: [target, int(0...targetRows)]), nil)
    case 5:
      let (itemSection, itemRow) = place(of: item.id, sections: sections, state: state)
      let rows = target == itemSection ? counts[target] - 1 : counts[target]
      _ = itemRow
      if chance(0.15), let other = pick(foreignItems) {
        return (.moveItemWithID(other.id, to: [target, 0]), "itemNotFound")
      }
      return (.moveItemWithID(item.id, to: [target, int(0...rows)]), nil)
    case 6: return (.moveItemAfter(item.id, neighbor: neighbor), nil)
    case 7: return (.moveItemBefore(item.id, neighbor: neighbor), nil)
    case 8: return (.replaceItem(at: [from, row], with: value()), nil)
    case 9:
      if chance(0.2), let other = pick(foreignItems) {
        return (.replaceItemWithID(other.id, with: value()), "itemNotFound")
      }
      return (.replaceItemWithID(item.id, with: value()), nil)
    default:
      return (.moveItem(from: [from, row], to: [target, int(0...targetRows)]), nil)
    }
  }

  /// The section index and row of item `id` among `sections`.
  private func place(of id: Int64, sections: [FuzzState.Row], state: FuzzState) -> (Int, Int) {
    for (index, section) in sections.enumerated() {
      if let row = state.items(inSection: section.id).firstIndex(where: { $0.id == id }) {
        return (index, row)
      }
    }
    return (0, 0)
  }

  // MARK: CLI command lines

  /// A `liststore` command line that changes a list (after `--db PATH`).
  mutating func cliArguments(_ state: FuzzState) -> [String] {
    guard let list = pick(state.lists) else { return ["list", "create", "L0"] }
    let sections = state.sections(inList: list.id)
    let counts = sections.map { state.items(inSection: $0.id).count }
    let n = next()
    let unprotected = !protectedNames.contains(list.name)
    guard let section = sections.indices.randomElement(using: &random) else {
      return ["section", "add", list.name, "cli \(n)"]
    }
    let item = counts[section] > 0 ? "\(section):\(int(0..<counts[section]))" : nil
    switch int(0..<12) {
    case 0, 1:
      return [
        "item", "add", list.name, "\(section)", "cli \(n)", "--at", "\(int(0...counts[section]))",
      ]
    case 2:
      return ["item", "add", list.name, "\(section)", "{\"cli\": \(n)}", "--json"]
    case 3 where item != nil: return ["item", "rm", list.name, item ?? ""]
    case 4 where item != nil:
      return ["item", "move", list.name, item ?? "", "\(int(0..<sections.count)):0"]
    case 5 where item != nil: return ["item", "set", list.name, item ?? "", "[\(n)]", "--json"]
    case 6: return ["section", "add", list.name, "cli \(n)", "--footer", "f", "--at", "0"]
    case 7: return ["section", "rm", list.name, "\(section)"]
    case 8:
      return ["section", "move", list.name, "\(section)", "\(int(0..<sections.count))"]
    case 9: return ["section", "set", list.name, "\(section)", "--header", "cli \(n)"]
    case 10 where unprotected: return ["demo", "--list", list.name]
    case 11 where unprotected: return ["list", "rm", list.name]
    default:
      let missing = Self.listNames.filter { state.list(named: $0) == nil }
      if let name = pick(missing) { return ["list", "create", name] }
      return ["section", "set", list.name, "\(section)", "--no-footer"]
    }
  }
}
