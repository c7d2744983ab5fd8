import Foundation
import Observable2D
import ReactiveCore
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

/// Ids split by origin (migration 6, docs/replicas.md): a file's own rows get ids of its
/// origin (`id >> 40`), above every id of that origin the table ever used, whatever rows of
/// other origins the sync engine wrote into it; a row another client writes with no id,
/// or with an id of another origin, gets one of the file's own, and observers see it so.
@Suite struct IdOriginTests {
  let folder = TemporaryDirectory()

  static let originSpan: Int64 = 1 << 40

  /// A repository whose observers see other clients' commits when the test says so.
  func quietRepository() throws -> Repository {
    try Repository(
      path: folder.file("db.sqlite"), busyTimeout: .seconds(10), readOnly: false,
      maximumPageCount: nil, watchesDatabase: false)
  }

  /// Another client's connection, as the sqlite3 shell would use it.
  func foreign(_ repository: Repository) throws -> Connection {
    try Connection(path: repository.path)
  }

  /// Writes rows of another origin as the sync engine does (`applying` set for its own
  /// transaction only).
  func applying(_ db: Connection, _ sql: String) throws {
    try db.execute(
      "BEGIN IMMEDIATE; UPDATE replica_origin SET applying = 1; \(sql); "
        + "UPDATE replica_origin SET applying = 0; COMMIT;")
  }

  /// A list `groceries` with a section "Fruit" of apples and pears; its section's id.
  func groceries(_ repository: Repository) throws -> (StoredList<RawJSON, RawJSON>, Int64) {
    let list = try repository.createList("groceries", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON("\"Fruit\""))
    try list.appendItems([RawJSON("\"apples\""), RawJSON("\"pears\"")], toSection: 0)
    return (list, try list.sectionID(at: 0))
  }

  func ids(_ db: Connection, _ table: String) throws -> [Int64] {
    let statement = try db.prepare("SELECT id FROM \(table) ORDER BY id")
    var ids: [Int64] = []
    while try statement.step() { ids.append(statement.int64(at: 0)) }
    return ids
  }

  @Test func aServersOwnIdsStayBelowTwoToTheFortyBesideAReplicasRows() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let (list, section) = try groceries(repository)
    let db = try foreign(repository)
    // The highest own id is deleted first: it is never given again.
    let pears = try list.itemID(at: IndexPath(item: 1, section: 0))
    try list.removeItem(at: IndexPath(item: 1, section: 0))
    let replicaRow = 3 * Self.originSpan + 7
    try applying(
      db,
      "INSERT INTO items(id, section_id, position, value) VALUES (\(replicaRow), \(section), 'a8', '\"replica\"')"
    )
    let plums = try list.appendItem(RawJSON("\"plums\""), toSection: 0)
    #expect(plums == pears + 1)
    // The shell, with no id: the next of the file's origin too.
    try db.execute(
      "INSERT INTO items(section_id, position, value) VALUES (\(section), 'c5551', '\"shell\"')")
    #expect(try ids(db, "items") == [pears - 1, plums, plums + 1, replicaRow])
    // A section and a list of the program's own, beside a replica's section.
    try applying(
      db,
      "INSERT INTO sections(id, list_id, position, metadata) VALUES (\(5 * Self.originSpan + 1), \(list.id), 'a7', 'null')"
    )
    try list.appendSection(RawJSON("\"Vegetables\""))
    #expect(try ids(db, "sections") == [section, section + 1, 5 * Self.originSpan + 1])
    #expect(try repository.check().isEmpty)
  }

  @Test func aReplicasShellRowsGetItsOwnRangeAndObserversSeeTheIdsGiven() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let db = try foreign(repository)
    try db.execute("UPDATE replica_origin SET origin = 5")
    // The server's rows, written by the sync engine with the server's ids.
    try applying(
      db,
      """
      INSERT INTO lists(id, name) VALUES (4, 'groceries');
      INSERT INTO sections(id, list_id, position, metadata) VALUES (12, 4, 'a0', '"Fruit"');
      INSERT INTO items(id, section_id, position, value) VALUES (30, 12, 'a0', '"apples"');
      INSERT INTO items(id, section_id, position, value) VALUES (\(7 * Self.originSpan + 2), 12, 'a1', '"theirs"')
      """)
    let list = try repository.list("groceries", metadata: RawJSON.self, item: RawJSON.self)
    let recorder = ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
    let own = 5 * Self.originSpan
    // No id, an id of the server's origin, an id of another replica's: all get the file's.
    try db.execute(
      """
      BEGIN;
      INSERT INTO items(section_id, position, value) VALUES (12, 'a2', '"one"');
      INSERT INTO items(id, section_id, position, value) VALUES (31, 12, 'a3', '"two"');
      INSERT INTO items(id, section_id, position, value) VALUES (\(9 * Self.originSpan), 12, 'a4', '"three"');
      COMMIT;
      """)
    try list.appendItem(RawJSON("\"four\""), toSection: 0)
    try list.appendSection(RawJSON("\"Mine\""))
    repository.synchronizeObservers()
    #expect(
      try ids(db, "items") == [30, own + 1, own + 2, own + 3, own + 4, 7 * Self.originSpan + 2])
    #expect(try ids(db, "sections") == [12, own + 1])
    expectExact(recorder, try ListContents.read(list: "groceries", path: repository.path))
    #expect(try repository.check().isEmpty)
  }

  @Test func anOwnIdBelowTheHighestEverUsedIsRefusedAndChangesNothing() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let (list, section) = try groceries(repository)
    let db = try foreign(repository)
    try applying(
      db,
      "INSERT INTO items(id, section_id, position, value) VALUES (\(2 * Self.originSpan + 1), \(section), 'a5', '\"replica\"')"
    )
    let before = try ids(db, "items")
    let pears = try list.itemID(at: IndexPath(item: 1, section: 0))
    #expect(throws: (any Error).self) {
      try db.execute(
        "INSERT INTO items(id, section_id, position, value) VALUES (\(pears), \(section), 'a6', '1')"
      )
    }
    #expect(throws: (any Error).self) {
      try db.execute("UPDATE items SET id = \(pears + 100) WHERE id = \(pears)")
    }
    #expect(try ids(db, "items") == before)
  }

  /// Random writes by the program, the shell (with and without ids) and the sync engine,
  /// with deletes, on a server's file and on a replica's: every row the sync engine did
  /// not write has an id of the file's origin, no id is ever given twice, and the
  /// observer's array equals the database.
  @Test(arguments: [(0 as Int64, 11 as UInt64), (6, 12), (0, 13), (3, 14)])
  func randomWritesKeepEachOriginsIdsApartAndNeverReuseOne(origin: Int64, seed: UInt64) throws {
    defer { folder.remove() }
    var random = SeededGenerator(seed: testSeed(seed))
    let repository = try quietRepository()
    let db = try foreign(repository)
    try db.execute("UPDATE replica_origin SET origin = \(origin)")
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON("\"S\""))
    let section = try list.sectionID(at: 0)
    let recorder = ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
    var given: Set<Int64> = []
    var theirs: Set<Int64> = []
    var otherNext: Int64 = 1
    var key = 0
    func nextKey() -> String {
      key += 1
      // Keys of the shell's own: a fraction ends each, while the program's appends have none.
      return "d" + String(format: "%05d", key) + "1"
    }
    for _ in 0..<300 {
      let count = try list.numberOfItems(inSection: 0)
      switch Int.random(in: 0..<6, using: &random) {
      case 0: try list.appendItem(RawJSON("1"), toSection: 0)
      case 1:
        try db.execute(
          "INSERT INTO items(section_id, position, value) VALUES (\(section), '\(nextKey())', '2')")
      case 2:
        let other = origin == 0 ? 4 : 0
        try db.execute(
          "INSERT INTO items(id, section_id, position, value) VALUES (\(Int64(other) * Self.originSpan + Int64(Int.random(in: 0..<1000, using: &random)) + 1), \(section), '\(nextKey())', '3')"
        )
      case 3:
        let other: Int64 = origin == 0 ? 2 : (Bool.random(using: &random) ? 0 : 9)
        let id = other * Self.originSpan + otherNext + (other == 0 ? 1 << 30 : 0)
        otherNext += 1
        try applying(
          db,
          "INSERT INTO items(id, section_id, position, value) VALUES (\(id), \(section), '\(nextKey())', '4')"
        )
        theirs.insert(id)
      default:
        if count > 0 {
          try list.removeItem(
            at: IndexPath(item: Int.random(in: 0..<count, using: &random), section: 0))
        }
      }
      for id in try ids(db, "items") where !theirs.contains(id) && !given.contains(id) {
        #expect(id >> 40 == origin, "item \(id) is not of origin \(origin)")
        // Never reused: each id given is above every one given before.
        #expect(id > (given.max() ?? 0), "item \(id) is below an id given before")
        given.insert(id)
      }
    }
    repository.synchronizeObservers()
    expectExact(recorder, try ListContents.read(list: "l", path: repository.path))
    #expect(given.count > 100)
    #expect(try repository.check().isEmpty)
  }
}
