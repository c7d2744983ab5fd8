import Foundation
import TestSupport
import Testing

@testable import ListStore

/// The anchor rule of a push (docs/replicas.md), checked against a model of it: random
/// inserts and moves of sections and items, whose predecessors and successors are rows
/// that are there, rows deleted, rows of another section or the row itself, with
/// recorded keys or none. After each, the server's order must be the model's: the rows
/// as they were, with the row placed after its predecessor (first when it has none),
/// else before its successor, else after the rows whose keys are at most the recorded
/// key, else last.
@Suite struct AnchorRuleTests {
  typealias List = StoredList<RawJSON, RawJSON>

  /// A row and its position key.
  struct Row: Equatable {
    var id: Int64
    var key: String
  }

  /// The list's sections, each with its items, as the database holds them.
  static func state(_ list: List) throws -> [(section: Row, items: [Row])] {
    try list.storedSections().map { section in
      (
        Row(id: section.row.id, key: section.row.position),
        section.items.map { Row(id: $0.id, key: $0.position) }
      )
    }
  }

  /// Where the rule puts a row among `rows` (which do not hold it).
  static func index(in rows: [Row], _ anchor: ReplicaAnchor) -> Int {
    guard let after = anchor.after else { return 0 }
    if let index = rows.firstIndex(where: { $0.id == after }) { return index + 1 }
    if let before = anchor.before, let index = rows.firstIndex(where: { $0.id == before }) {
      return index
    }
    if let key = anchor.afterKey {
      return rows.filter { !key.utf8.lexicographicallyPrecedes($0.key.utf8) }.count
    }
    return rows.count
  }

  @Test(arguments: TestEngine.tested)
  func placementsFollowTheModel(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("board", metadata: RawJSON.self, item: RawJSON.self)
    for (index, header) in ["To do", "Doing", "Done"].enumerated() {
      try list.appendSection(RawJSON("\"\(header)\""))
      for k in 0..<4 { try list.appendItem(RawJSON("\"\(header) \(k)\""), toSection: index) }
    }
    let replica = try repository.registerReplica()
    let seed = testSeed(0xA5C4)
    var random = SeededGenerator(seed: seed)
    var number: Int64 = 0
    var nextID: Int64 = replica << 40
    var goneIDs: [Int64] = []
    var seenKeys: [String] = []
    let steps = engine == .sqlite ? scaled(400) : scaled(120)
    for step in 0..<steps {
      let before = try Self.state(list)
      seenKeys += before.flatMap { [$0.section.key] + $0.items.map(\.key) }
      let allItems = before.flatMap(\.items)
      let sectionRows = before.map(\.section)
      /// A neighbour: a row of `rows`, a deleted one, one of `others`, the row itself, or
      /// none.
      func neighbour(_ rows: [Row], _ others: [Row], own: Int64) -> Int64? {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return nil
        case 1, 2: return goneIDs.randomElement(using: &random)
        case 3: return others.randomElement(using: &random)?.id
        case 4: return own
        default:
          return rows.randomElement(using: &random)?.id ?? goneIDs.randomElement(using: &random)
        }
      }
      func anchor(_ rows: [Row], _ others: [Row], own: Int64) -> ReplicaAnchor {
        let key: String? =
          Bool.random(using: &random) ? seenKeys.randomElement(using: &random) : nil
        return ReplicaAnchor(
          after: neighbour(rows, others, own: own), before: neighbour(rows, others, own: own),
          afterKey: key)
      }
      // The kind of step: insert or move an item or a section, or delete an item.
      let kind = Int.random(in: 0..<10, using: &random)
      var expected = before
      let intent: ReplicaIntent
      if kind < 7 || sectionRows.count < 2 {
        let target = Int.random(in: 0..<before.count, using: &random)
        let moving = kind >= 3 && !allItems.isEmpty
        let id: Int64
        if moving, let row = allItems.randomElement(using: &random) {
          id = row.id
        } else {
          nextID += 1
          id = nextID
        }
        for index in expected.indices { expected[index].items.removeAll { $0.id == id } }
        let place = anchor(expected[target].items, allItems, own: id)
        let section = before[target].section.id
        intent =
          moving
          ? .moveItem(list: list.id, section: section, id: id, anchor: place)
          : .insertItem(list: list.id, section: section, id: id, value: "\(step)", anchor: place)
        let at = Self.index(in: expected[target].items, place)
        expected[target].items.insert(Row(id: id, key: ""), at: at)
      } else if kind < 9 {
        let moving = kind == 8
        let id: Int64
        if moving, let row = sectionRows.randomElement(using: &random) {
          id = row.id
        } else {
          nextID += 1
          id = nextID
        }
        let items = expected.first { $0.section.id == id }?.items ?? []
        expected.removeAll { $0.section.id == id }
        let place = anchor(expected.map(\.section), allItems, own: id)
        intent =
          moving
          ? .moveSection(list: list.id, id: id, anchor: place)
          : .insertSection(list: list.id, id: id, metadata: "\(step)", anchor: place)
        expected.insert(
          (Row(id: id, key: ""), items), at: Self.index(in: expected.map(\.section), place))
      } else {
        guard let row = allItems.randomElement(using: &random) else { continue }
        goneIDs.append(row.id)
        for index in expected.indices { expected[index].items.removeAll { $0.id == row.id } }
        intent = .deleteItem(list: list.id, id: row.id)
      }
      number += 1
      let outcome = try repository.applyPush(
        replica: replica, ackedThrough: number - 1,
        writes: [
          ReplicaWrite(number: number, digest: "\(number)", protocolVersion: 1, intents: [intent])
        ],
        mayWrite: { _ in true })
      guard case .applied = outcome.results.first?.result else {
        Issue.record("seed \(seed), step \(step): \(intent) was not applied: \(outcome)")
        return
      }
      let after = try Self.state(list)
      func ids(_ state: [(section: Row, items: [Row])]) -> [[Int64]] {
        state.map { entry in [entry.section.id] + entry.items.map(\.id) }
      }
      let (was, got, wanted) = (ids(before), ids(after), ids(expected))
      guard got == wanted else {
        Issue.record("seed \(seed), step \(step): \(intent) on \(was) gave \(got), not \(wanted)")
        return
      }
    }
  }
}
