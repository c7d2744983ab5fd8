import Foundation
import ListStoreFormats
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

/// A replica's outbox (migration 8, docs/replicas.md): each local commit — through
/// ListStore or another client of the file — becomes one write of intents, and pushing the
/// writes to the server the replica was copied from, with nothing else written there,
/// gives the server the replica's very lists: ids, names, values and order.
@Suite struct OutboxTests {
  typealias List = StoredList<RawJSON, RawJSON>

  /// A server's file with a list, and a replica made from a copy of it.
  struct Pair {
    let folder = TemporaryDirectory()
    let server: Repository
    let replica: Repository
    let number: Int64

    init() throws {
      server = try Repository(path: folder.file("server.sqlite"))
      let board = try server.createList("board", metadata: RawJSON.self, item: RawJSON.self)
      for (index, header) in ["To do", "Doing", "Done"].enumerated() {
        try board.appendSection(RawJSON("\"\(header)\""))
        for k in 0..<3 { try board.appendItem(RawJSON("\"\(header) \(k)\""), toSection: index) }
      }
      number = try server.registerReplica()
      let copy = try Connection(path: folder.file("server.sqlite"))
      try copy.execute("VACUUM INTO '\(folder.file("replica.sqlite"))'")
      copy.close()
      replica = try Repository(path: folder.file("replica.sqlite"))
      try replica.makeReplica(
        server: "test", number: number, lists: nil, seq: try server.changeLogPosition(),
        readOnly: false)
    }

    /// The writes in the replica's outbox.
    func outbox() throws -> [ReplicaWrite] {
      try replica.read { db in
        var writes: [ReplicaWrite] = []
        let statement = try db.prepared("SELECT n, digest, protocol, ops FROM outbox ORDER BY n")
        try statement.forEachRow { row in
          let ops = Array(row.string(at: 3).utf8)
          guard case .array(let nodes) = try JSONSyntax.parse(ops).kind else { return }
          let intents = try nodes.enumerated().map { index, node in
            try ReplicaWire.intent(node, in: ops, at: "ops[\(index)]")
          }
          writes.append(
            ReplicaWrite(
              number: row.int64(at: 0), digest: row.string(at: 1),
              protocolVersion: row.int64(at: 2), intents: intents))
        }
        return writes
      }
    }
  }

  @Test func pushingTheOutboxGivesTheServerTheReplicasLists() throws {
    let pair = try Pair()
    defer { pair.folder.remove() }
    let seed = testSeed(0x0_7B0C)
    var random = SeededGenerator(seed: seed)
    var lists = [try pair.replica.list("board", metadata: RawJSON.self, item: RawJSON.self)]
    var commits = 0
    for step in 0..<scaled(300) {
      let list = lists.randomElement(using: &random)!
      let value = RawJSON("\(step)")
      let sections = try list.numberOfSections()
      let counts = try (0..<sections).map { try list.numberOfItems(inSection: $0) }
      let full = counts.indices.filter { counts[$0] > 0 }
      func anyPath() -> IndexPath? {
        guard let section = full.randomElement(using: &random) else { return nil }
        return IndexPath(
          item: Int.random(in: 0..<counts[section], using: &random), section: section)
      }
      commits += 1
      switch Int.random(in: 0..<20, using: &random) {
      case 0:
        let name = "list \(step)"
        let made = try pair.replica.createList(name, metadata: RawJSON.self, item: RawJSON.self)
        try made.appendSection(RawJSON("\"first\""))
        commits += 1
        lists.append(made)
      case 1 where lists.count > 1:
        try pair.replica.renameList(list.name, to: "renamed \(step)")
        lists = try lists.map {
          try pair.replica.list(
            $0.id == list.id ? "renamed \(step)" : $0.name, metadata: RawJSON.self,
            item: RawJSON.self)
        }
      case 2 where lists.count > 1 && list.name != "board":
        try pair.replica.deleteList(list.name)
        lists.removeAll { $0.id == list.id }
      case 3: try list.insert(section: value, at: Int.random(in: 0...sections, using: &random))
      case 4 where sections > 1:
        try list.removeSection(at: Int.random(in: 0..<sections, using: &random))
      case 5 where sections > 1:
        try list.moveSection(
          from: Int.random(in: 0..<sections, using: &random),
          to: Int.random(in: 0..<sections, using: &random))
      case 6 where sections > 0:
        try list.setMetadata(value, forSectionAt: Int.random(in: 0..<sections, using: &random))
      case 7 where !full.isEmpty:
        // A batch: several rows in one commit, one write.
        try pair.replica.write {
          for _ in 0..<3 {
            let section = Int.random(in: 0..<sections, using: &random)
            try list.insert(item: value, at: IndexPath(item: 0, section: section))
          }
          if let path = anyPath() { try list.removeItem(at: path) }
        }
      case 8...11 where sections > 0:
        let section = Int.random(in: 0..<sections, using: &random)
        try list.insert(
          item: value,
          at: IndexPath(item: Int.random(in: 0...counts[section], using: &random), section: section)
        )
      case 12, 13:
        guard let path = anyPath() else { continue }
        try list.removeItem(at: path)
      case 14, 15:
        guard let path = anyPath() else { continue }
        try list.replaceItem(at: path, with: value)
      default:
        guard let path = anyPath() else { continue }
        let target = Int.random(in: 0..<sections, using: &random)
        let limit = counts[target] - (target == path.section ? 1 : 0)
        try list.moveItem(
          from: path,
          to: IndexPath(item: Int.random(in: 0...limit, using: &random), section: target))
      }
    }
    let writes = try pair.outbox()
    #expect(writes.count > commits / 2, "\(writes.count) writes for \(commits) commits")
    let outcome = try pair.server.applyPush(
      replica: pair.number, ackedThrough: 0, writes: writes, mayWrite: { _ in true })
    let rejected = outcome.results.filter { if case .rejected = $0.result { true } else { false } }
    #expect(rejected.isEmpty, "seed \(seed): \(rejected)")
    #expect(
      try ReplicaSyncTests.contents(pair.server)
        == (try ReplicaSyncTests.contents(pair.replica)), "seed \(seed)")
  }

  @Test func anotherClientsCommitsAreNotedAndTheSyncEnginesAreNot() throws {
    let pair = try Pair()
    defer { pair.folder.remove() }
    let board = try pair.replica.list("board", metadata: RawJSON.self, item: RawJSON.self)
    let section = try board.sectionID(at: 0)
    let shell = try Connection(path: pair.folder.file("replica.sqlite"))
    defer { shell.close() }
    // The shell adds an item without an id (the replica's own is given) and moves one.
    try shell.execute(
      "INSERT INTO items(section_id, position, value) VALUES (\(section), 'a1V', '\"shell\"')")
    try shell.execute("UPDATE items SET position = 'a3' WHERE id = 1")
    // The sync engine's write is not the replica's.
    try shell.execute(
      "UPDATE replica_origin SET applying = 1; UPDATE items SET value = '\"server\"' WHERE id = 2; "
        + "UPDATE replica_origin SET applying = 0")
    // The next ListStore commit closes them with its own into one write.
    try board.appendItem(RawJSON("\"mine\""), toSection: 0)
    let writes = try pair.outbox()
    #expect(writes.count == 1)
    let intents = writes.first?.intents ?? []
    let own = pair.number << 40
    #expect(intents.count == 3, "\(intents)")
    #expect(
      intents.contains {
        if case .insertItem(_, _, own + 1, "\"shell\"", _) = $0 { true } else { false }
      })
    #expect(intents.contains { if case .moveItem(_, _, 1, _) = $0 { true } else { false } })
    #expect(!intents.contains { if case .setItem = $0 { true } else { false } })
    // A plain file notes nothing.
    try pair.server.list("board", metadata: RawJSON.self, item: RawJSON.self)
      .appendItem(RawJSON("\"plain\""), toSection: 0)
    #expect(try pair.server.read { db in try db.scalarInt64("SELECT count(*) FROM outbox") } == 0)
  }
}
