import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// A server's application of a replica's pushes (docs/replicas.md), on both engines:
/// each write applied exactly once or rejected with a reason, a write sent again answered
/// with its stored result, gaps and copies of a replica's file refused whole, and every
/// insert and move placed by the anchor rule — checked against a model of the rule.
@Suite struct PushTests {
  typealias List = StoredList<RawJSON, RawJSON>

  /// A database with a list `groceries` (a section "Fruit" of apples and pears) and a
  /// registered replica.
  struct Fixture {
    let database: TestDatabase
    let repository: Repository
    let list: List
    let replica: Int64

    init(_ engine: TestEngine) throws {
      database = try engine.makeDatabase()
      repository = try database.openRepository()
      list = try repository.createList("groceries", metadata: RawJSON.self, item: RawJSON.self)
      try list.appendSection(RawJSON("\"Fruit\""))
      try list.appendItems([RawJSON("\"apples\""), RawJSON("\"pears\"")], toSection: 0)
      replica = try repository.registerReplica()
    }

    /// The replica's `k`th id.
    func id(_ k: Int64) -> Int64 { replica << 40 + k }

    var section: Int64 { get throws { try list.sectionID(at: 0) } }

    func push(
      _ writes: [ReplicaWrite], ackedThrough: Int64 = 0, mayWrite: (String) -> Bool = { _ in true }
    ) throws -> PushOutcome {
      try repository.applyPush(
        replica: replica, ackedThrough: ackedThrough, writes: writes, mayWrite: mayWrite)
    }

    /// Each section's id with its items' values, in order.
    func contents() throws -> [[String]] {
      try list.storedSections().map { [$0.row.json] + $0.items.map(\.json) }
    }

    func storedResults() throws -> [Int64] {
      try repository.read { db in
        var numbers: [Int64] = []
        let statement = try db.prepared("SELECT n FROM replica_results ORDER BY n")
        try statement.forEachRow { numbers.append($0.int64(at: 0)) }
        return numbers
      }
    }
  }

  static func write(_ number: Int64, digest: String? = nil, _ intents: ReplicaIntent...)
    -> ReplicaWrite
  {
    ReplicaWrite(
      number: number, digest: digest ?? "digest \(number)", protocolVersion: 1, intents: intents)
  }

  static let first = ReplicaAnchor(after: nil, before: nil, afterKey: nil)

  @Test(arguments: TestEngine.tested)
  func aWriteSentAgainIsAnsweredWithItsResultAndAppliedOnce(engine: TestEngine) throws {
    let fixture = try Fixture(engine)
    defer { fixture.database.remove() }
    let section = try fixture.section
    let pears = try fixture.list.itemID(at: IndexPath(item: 1, section: 0))
    let kiwi = Self.write(
      1,
      .insertItem(
        list: fixture.list.id, section: section, id: fixture.id(1), value: "\"kiwi\"",
        anchor: ReplicaAnchor(after: pears, before: nil, afterKey: nil)))
    let first = try fixture.push([kiwi])
    guard case .applied(let seq) = first.results.first?.result else {
      Issue.record("not applied: \(first)")
      return
    }
    #expect(first.last == 1 && seq == first.seq)
    // The answer was lost: the replica sends it again, with the next write.
    let plums = Self.write(
      2, .setItem(list: fixture.list.id, id: fixture.id(1), value: "\"plums\""))
    let again = try fixture.push([kiwi, plums])
    #expect(again.results.first?.result == .applied(seq: seq))
    #expect(again.results.count == 2 && again.last == 2)
    #expect(try fixture.contents() == [["\"Fruit\"", "\"apples\"", "\"pears\"", "\"plums\""]])
    #expect(try fixture.list.itemID(at: IndexPath(item: 2, section: 0)) == fixture.id(1))
    // Its acknowledgement forgets the results it covers, and nothing else.
    #expect(try fixture.storedResults() == [1, 2])
    _ = try fixture.push([], ackedThrough: 1)
    #expect(try fixture.storedResults() == [2])
    // Sent again once acknowledged: only a copy of the replica's file would.
    #expect(throws: PushRefusal.forked(number: 1)) { try fixture.push([kiwi], ackedThrough: 1) }
    // A number applied with other content: a copy too; nothing of that push is applied.
    let other = Self.write(
      2, digest: "another", .deleteItem(list: fixture.list.id, id: fixture.id(1)))
    #expect(throws: PushRefusal.forked(number: 2)) { try fixture.push([other]) }
    #expect(try fixture.list.totalItemCount() == 3)
  }

  @Test(arguments: TestEngine.tested)
  func gapsUnknownReplicasAndAServerBehindAreRefusedWhole(engine: TestEngine) throws {
    let fixture = try Fixture(engine)
    defer { fixture.database.remove() }
    let delete = { (n: Int64) in
      Self.write(n, .deleteItem(list: fixture.list.id, id: fixture.id(n)))
    }
    #expect(throws: PushRefusal.outOfOrder(last: 0, got: 2)) { try fixture.push([delete(2)]) }
    #expect(throws: PushRefusal.outOfOrder(last: 1, got: 3)) {
      try fixture.push([delete(1), delete(3)])
    }
    #expect(throws: PushRefusal.serverBehind(last: 0, ackedThrough: 4)) {
      try fixture.push([], ackedThrough: 4)
    }
    #expect(throws: PushRefusal.unknownReplica(fixture.replica + 1)) {
      try fixture.repository.applyPush(
        replica: fixture.replica + 1, ackedThrough: 0, writes: [], mayWrite: { _ in true })
    }
    // None of them recorded anything.
    #expect(try fixture.push([delete(1)]).last == 1)
  }

  @Test(arguments: TestEngine.tested)
  func aRejectedWriteIsUndoneWholeAndTheNextGoOn(engine: TestEngine) throws {
    let fixture = try Fixture(engine)
    defer { fixture.database.remove() }
    let (list, section) = (fixture.list.id, try fixture.section)
    let gone = try fixture.list.appendSection(RawJSON("\"Gone\""))
    try fixture.list.removeSection(id: gone)
    let insert = { (k: Int64, section: Int64) in
      ReplicaIntent.insertItem(
        list: list, section: section, id: fixture.id(k), value: "\(k)", anchor: Self.first)
    }
    let outcome = try fixture.push(
      [
        // A row is written, then one in a section deleted on the server: neither stays.
        Self.write(1, insert(1, section), insert(2, gone)),
        Self.write(2, insert(3, section)),
        Self.write(
          3, .insertItem(list: list, section: section, id: 7, value: "7", anchor: Self.first)),
        Self.write(4, insert(3, section)),
        Self.write(5, .createList(id: fixture.id(5), name: "groceries")),
        Self.write(6, .createList(id: fixture.id(6), name: "")),
        Self.write(7, .setItem(list: list, id: fixture.id(2), value: "0")),
        // A delete of what is gone is done; a list outside the token's scope is not.
        Self.write(8, .deleteItem(list: list, id: fixture.id(2))),
        Self.write(9, .createList(id: fixture.id(9), name: "secret")),
      ], mayWrite: { $0 != "secret" })
    let codes = outcome.results.map { result -> String in
      switch result.result {
      case .applied: "applied"
      case .rejected(let rejection): rejection.code
      }
    }
    #expect(
      codes == [
        "deleted", "applied", "invalid", "invalid", "nameTaken", "invalid", "deleted", "applied",
        "forbidden",
      ])
    #expect(outcome.last == 9)
    #expect(try fixture.contents() == [["\"Fruit\"", "3", "\"apples\"", "\"pears\""]])
    #expect(try fixture.repository.lists().map(\.name) == ["groceries"])
    if case .rejected(let rejection) = outcome.results[0].result {
      #expect(rejection.error == "section \(gone) was deleted on the server")
    }
  }

  @Test(arguments: TestEngine.tested)
  func aReplicasListsSectionsAndItemsKeepTheirIds(engine: TestEngine) throws {
    let fixture = try Fixture(engine)
    defer { fixture.database.remove() }
    let (list, section, item) = (fixture.id(1), fixture.id(2), fixture.id(3))
    let outcome = try fixture.push([
      Self.write(
        1, .createList(id: list, name: "trip"),
        .insertSection(
          list: list, id: section, metadata: "{\"header\":\"Bags\"}", anchor: Self.first),
        .insertItem(list: list, section: section, id: item, value: "\"tent\"", anchor: Self.first)),
      Self.write(2, .renameList(id: list, name: "holiday")),
    ])
    #expect(
      outcome.results.map(\.result).allSatisfy { if case .applied = $0 { true } else { false } })
    let trip = try fixture.repository.list("holiday", metadata: RawJSON.self, item: RawJSON.self)
    #expect(trip.id == list)
    #expect(try trip.sectionID(at: 0) == section)
    #expect(try trip.itemID(at: IndexPath(item: 0, section: 0)) == item)
    // The server's own rows stay of its origin.
    let own = try fixture.list.appendItem(RawJSON("\"figs\""), toSection: 0)
    #expect(own < Repository.originSpan)
  }

  @Test(arguments: TestEngine.tested)
  func twoRunsInsertedAtOnePlaceStayContiguous(engine: TestEngine) throws {
    let fixture = try Fixture(engine)
    defer { fixture.database.remove() }
    let (list, section) = (fixture.list.id, try fixture.section)
    let apples = try fixture.list.itemID(at: IndexPath(item: 0, section: 0))
    let pears = try fixture.list.itemID(at: IndexPath(item: 1, section: 0))
    let other = try fixture.repository.registerReplica()
    // Each replica inserted a run of three between apples and pears while apart.
    func run(_ replica: Int64, _ name: String) -> [ReplicaWrite] {
      (1...3).map { k in
        let id = replica << 40 + Int64(k)
        return Self.write(
          Int64(k),
          .insertItem(
            list: list, section: section, id: id, value: "\"\(name)\(k)\"",
            anchor: ReplicaAnchor(after: k == 1 ? apples : id - 1, before: pears, afterKey: nil)))
      }
    }
    _ = try fixture.push(run(fixture.replica, "a"))
    _ = try fixture.repository.applyPush(
      replica: other, ackedThrough: 0, writes: run(other, "b"), mayWrite: { _ in true })
    #expect(
      try fixture.contents() == [
        [
          "\"Fruit\"", "\"apples\"", "\"b1\"", "\"b2\"", "\"b3\"", "\"a1\"", "\"a2\"", "\"a3\"",
          "\"pears\"",
        ]
      ])
  }
}
