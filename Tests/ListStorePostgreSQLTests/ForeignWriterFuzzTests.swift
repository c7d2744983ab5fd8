import Foundation
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStore

/// A differential fuzzer with a raw libpq connection as the foreign client: random
/// transactions of INSERT, UPDATE, DELETE and UPSERT (`ON CONFLICT`) — moves within and
/// across sections and lists, several statements each, some rolled back, some holding a
/// write the schema refuses (TRUNCATE among them) — and after each refresh (several transactions coalesced
/// into one, or one each) every observer equals the test's own reading of the
/// database, ordered by key bytes, and every changeset passed the table view's checks.
@Suite(.postgres) struct ForeignWriterFuzzTests {
  /// The lists and their rows, as the foreign client reads them before a transaction.
  struct Shape {
    struct Section {
      var id: Int64
      var listID: Int64
      var key: String
      var items: [(id: Int64, key: String)]
    }
    var sections: [Section]

    func sections(of list: Int64) -> [Section] { sections.filter { $0.listID == list } }
  }

  static func shape(_ db: PGConnection) throws -> Shape {
    var sections: [Shape.Section] = []
    let rows = try db.query("SELECT id, list_id, position FROM sections ORDER BY list_id, position")
    for row in 0..<rows.rowCount {
      sections.append(
        Shape.Section(
          id: try rows.int64(row: row, column: 0), listID: try rows.int64(row: row, column: 1),
          key: rows.string(row: row, column: 2), items: []))
    }
    let items = try db.query("SELECT id, section_id, position FROM items ORDER BY position")
    for row in 0..<items.rowCount {
      let section = try items.int64(row: row, column: 1)
      guard let index = sections.firstIndex(where: { $0.id == section }) else { continue }
      sections[index].items.append(
        (try items.int64(row: row, column: 0), items.string(row: row, column: 2)))
    }
    return Shape(sections: sections)
  }

  /// A key in a random gap among `keys` (`excluding` one of them, for a move).
  static func gapKey(_ keys: [String], excluding: String? = nil, _ random: inout SeededGenerator)
    throws -> String
  {
    let keys = keys.filter { $0 != excluding }
    let index = Int.random(in: 0...keys.count, using: &random)
    return try PositionKey.between(
      index > 0 ? keys[index - 1] : nil, index < keys.count ? keys[index] : nil)
  }

  /// One statement the schema accepts (it may change nothing).
  static func acceptedStatement(
    _ shape: Shape, lists: [Int64], _ random: inout SeededGenerator, _ step: Int
  ) throws -> String {
    let list = lists.randomElement(using: &random) ?? 0
    let sections = shape.sections(of: list)
    let value = "'{\"f\":\(step)}'"
    guard let section = sections.randomElement(using: &random) else {
      return
        "INSERT INTO sections(list_id, position, metadata) VALUES (\(list), 'a0', '{\"header\":\"new \(step)\"}')"
    }
    let keys = section.items.map(\.key)
    let item = section.items.randomElement(using: &random)
    // An earlier statement of the transaction may have deleted the section.
    let exists = "EXISTS (SELECT 1 FROM sections WHERE id = \(section.id))"
    switch Int.random(in: 0..<12, using: &random) {
    case 0, 1:
      let key = try gapKey(keys, &random)
      return
        "INSERT INTO items(section_id, position, value) SELECT \(section.id), '\(key)', \(value)::json WHERE \(exists) ON CONFLICT DO NOTHING"
    case 2 where item != nil:
      // UPSERT on an existing key: an update of that item.
      return """
        INSERT INTO items(section_id, position, value)
        SELECT \(section.id), '\(item?.key ?? "")', \(value)::json WHERE \(exists)
        ON CONFLICT (section_id, position) DO UPDATE SET value = excluded.value
        """
    case 3 where item != nil:
      return "UPDATE items SET value = \(value) WHERE id = \(item?.id ?? 0)"
    case 4 where item != nil:
      return "DELETE FROM items WHERE id = \(item?.id ?? 0)"
    case 5, 6:
      // A move within the section, to another section, or to another list's section.
      guard let item, let target = shape.sections.randomElement(using: &random) else {
        return "SELECT 1"
      }
      let key = try gapKey(target.items.map(\.key), excluding: item.key, &random)
      return """
        UPDATE items SET section_id = \(target.id), position = '\(key)' WHERE id = \(item.id)
        AND NOT EXISTS (SELECT 1 FROM items WHERE section_id = \(target.id) AND position = '\(key)')
        AND EXISTS (SELECT 1 FROM sections WHERE id = \(target.id))
        """
    case 7:
      let key = try gapKey(sections.map(\.key), &random)
      return
        "INSERT INTO sections(list_id, position, metadata) VALUES (\(list), '\(key)', '{\"header\":\"s\(step)\"}') ON CONFLICT DO NOTHING"
    case 8:
      return
        "UPDATE sections SET metadata = '{\"header\":\"m\(step)\",\"footer\":\"f\"}' WHERE id = \(section.id)"
    case 9 where sections.count > 1:
      return "DELETE FROM sections WHERE id = \(section.id)"
    case 10:
      // A section moves within its list or to another list.
      let target = lists.randomElement(using: &random) ?? list
      let key = try gapKey(
        shape.sections(of: target).map(\.key), excluding: target == list ? section.key : nil,
        &random)
      return """
        UPDATE sections SET list_id = \(target), position = '\(key)' WHERE id = \(section.id)
        AND NOT EXISTS (SELECT 1 FROM sections WHERE list_id = \(target) AND position = '\(key)')
        """
    default:
      // Several rows at once: every item of the section changes value.
      return "UPDATE items SET value = '[\(step)]' WHERE section_id = \(section.id)"
    }
  }

  /// One statement the schema refuses, with the rule it breaks.
  static func refusedStatement(_ shape: Shape, _ random: inout SeededGenerator) -> (
    sql: String, rule: String
  ) {
    let section = shape.sections.randomElement(using: &random)?.id ?? 1
    let item = shape.sections.flatMap(\.items).randomElement(using: &random)?.id ?? 1
    let choices: [(String, String)] = [
      (
        "INSERT INTO items(section_id, position, value) VALUES (\(section), 'zzz', '1')",
        "items.position must be a position key"
      ),
      (
        "INSERT INTO items(section_id, position, value) VALUES (\(section), 'a50', '1')",
        "items.position must be a position key"
      ),
      (
        "UPDATE items SET position = 'b0' WHERE id = \(item)",
        "items.position must be a position key"
      ),
      (
        "UPDATE sections SET position = '' WHERE id = \(section)", "position must be a position key"
      ),
      (
        "INSERT INTO items(section_id, position, value) VALUES (\(section), 'a5', 'not json')",
        "json"
      ),
      ("INSERT INTO items(section_id, position, value) VALUES (999999, 'a5', '1')", "foreign key"),
      ("UPDATE items SET id = 999999 WHERE id = \(item)", "id"),
      // TRUNCATE fires no row trigger: observers would never hear of it.
      ("TRUNCATE items", "TRUNCATE items is refused"),
      ("TRUNCATE sections, items", "is refused"),
      ("TRUNCATE lists CASCADE", "is refused"),
      ("TRUNCATE changes", "TRUNCATE changes is refused"),
    ]
    return choices.randomElement(using: &random) ?? choices[0]
  }

  @Test(arguments: [501, 502])
  func observersEqualTheDatabaseAfterEveryRefresh(seed: UInt64) throws {
    let seed = testSeed(seed)
    var random = SeededGenerator(seed: seed)
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    var names: [String: Int64] = [:]
    for name in ["a", "b"] {
      let list = try repository.createList(name, metadata: RawJSON.self, item: RawJSON.self)
      names[name] = list.id
      for section in 0..<3 {
        try list.appendSection(RawJSON("{\"header\":\"\(name)\(section)\"}"))
        try list.appendItems(
          (0..<4).map { RawJSON("\"\(name)\(section)-\($0)\"") }, toSection: section)
      }
    }
    let lists = names.values.sorted()
    let recorders = try ["a", "b"].map { name in
      (name, try record(repository.list(name, metadata: RawJSON.self, item: RawJSON.self)))
    }
    // Another repository, as another process, watching list a through its own listener.
    let other = try database.openRepository()
    let otherRecorder = try record(other.list("a", metadata: RawJSON.self, item: RawJSON.self))

    let foreign = try PGConnection(database.location)
    var log: [String] = []
    var pending = 0
    var refreshes = 0
    for step in 0..<scaled(120) {
      let shape = try Self.shape(foreign)
      let before = try ["a", "b"].map { try database.contents(list: $0) }
      var statements: [String] = []
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        statements.append(try Self.acceptedStatement(shape, lists: lists, &random, step))
      }
      let outcome = Int.random(in: 0..<10, using: &random)
      if outcome == 0 {
        // Rolled back: leaves no trace.
        try foreign.execute("BEGIN; " + statements.joined(separator: "; ") + "; ROLLBACK")
        log.append("rolled back: \(statements)")
        #expect(try ["a", "b"].map { try database.contents(list: $0) } == before)
      } else if outcome == 1 {
        // A refused write inside the transaction: the whole transaction changes nothing.
        let refused = Self.refusedStatement(shape, &random)
        statements.insert(refused.sql, at: Int.random(in: 0...statements.count, using: &random))
        let error = #expect(throws: PGError.self) {
          try foreign.execute("BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
        }
        #expect(
          error?.message.contains(refused.rule) == true,
          "seed \(seed) step \(step): \(refused.sql) → \(String(describing: error))")
        if foreign.isInTransaction { try foreign.execute("ROLLBACK") }
        log.append("refused: \(refused.sql)")
        #expect(try ["a", "b"].map { try database.contents(list: $0) } == before)
      } else {
        try foreign.execute("BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
        log.append("committed: \(statements)")
        pending += 1
      }
      // Refresh after one to three transactions, coalesced.
      guard pending >= Int.random(in: 1...3, using: &random) else { continue }
      pending = 0
      refreshes += 1
      if refreshes % 2 == 0 {
        repository.synchronizeObservers()
      } else {
        // Through the listener's wake-up alone.
        for (name, recorder) in recorders {
          #expect(try waitUntilExact(recorder, database, list: name), "seed \(seed) step \(step)")
        }
      }
      for (name, recorder) in recorders {
        try expectExact(
          recorder, database, list: name,
          "seed \(seed) step \(step), list \(name); last:\n\(log.suffix(4).joined(separator: "\n"))"
        )
      }
      if recorders.contains(where: { !$0.1.problems.isEmpty || $0.1.error != nil }) { return }
    }
    repository.synchronizeObservers()
    for (name, recorder) in recorders {
      try expectExact(recorder, database, list: name, "seed \(seed)")
    }
    #expect(try waitUntilExact(otherRecorder, database, list: "a"), "seed \(seed)")
    try expectExact(otherRecorder, database, list: "a", "seed \(seed)")
    #expect(refreshes > 20)
    if ProcessInfo.processInfo.environment["LISTSTORE_VERBOSE"] != nil {
      let kinds = Dictionary(grouping: log) { $0.prefix { $0 != ":" } }.mapValues(\.count)
      print(
        "seed \(seed): \(kinds), \(refreshes) refreshes, changesets "
          + "\(recorders.map { $0.1.changesets.count }), entries "
          + "\(recorders.map { $0.1.changesets.map(\.entryCount).reduce(0, +) })")
    }
  }
}
