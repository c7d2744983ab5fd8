import Foundation
import Observable2D
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// Each way a legal write by another client, or a race inside the change feed, once made
/// an observer's array differ from the database (issue "exact observation"), and what the
/// schema now refuses instead.
@Suite struct ExactObservationTests {
  let folder = TemporaryDirectory()

  typealias RawList = StoredList<RawJSON, RawJSON>

  /// A repository whose observers see other clients' commits only when the test says so
  /// (``Repository/synchronizeObservers()``), so that it decides how commits are batched.
  func quietRepository(_ name: String = "db.sqlite", busyTimeout: Duration = .seconds(10)) throws
    -> Repository
  {
    try Repository(
      path: folder.file(name), busyTimeout: busyTimeout, readOnly: false, maximumPageCount: nil,
      watchesDatabase: false)
  }

  /// A list `cities` with two sections of two items each.
  @discardableResult
  func makeCities(_ repository: Repository) throws -> RawList {
    let list = try repository.createList("cities", metadata: RawJSON.self, item: RawJSON.self)
    for (index, (header, items)) in [
      ("Europe", ["Paris", "Berlin"]), ("Asia", ["Tokyo", "Seoul"]),
    ]
    .enumerated() {
      try list.appendSection(RawJSON("{\"header\":\"\(header)\"}"))
      try list.appendItems(items.map { RawJSON("\"\($0)\"") }, toSection: index)
    }
    return list
  }

  func record(_ list: RawList) throws -> ArrayRecorder<RawJSON, RawJSON> {
    ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
  }

  /// The observer's array equals the test's own reading of the database, and every
  /// changeset it emitted passed the table view's checks.
  func expectExact(
    _ recorder: ArrayRecorder<RawJSON, RawJSON>, _ repository: Repository, list: String = "cities",
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    TestSupport.expectExact(
      recorder, try ListContents.read(list: list, path: repository.path),
      sourceLocation: sourceLocation)
  }

  /// Another client's connection, as Python's `sqlite3` or the shell would use it.
  func foreign(_ repository: Repository, foreignKeys: Bool = true, recursiveTriggers: Bool = false)
    throws -> Connection
  {
    let db = try Connection(path: repository.path)
    try db.execute("PRAGMA foreign_keys = \(foreignKeys ? "ON" : "OFF")")
    try db.execute("PRAGMA recursive_triggers = \(recursiveTriggers ? "ON" : "OFF")")
    return db
  }

  // MARK: 1. A deleted section's id is never handed to a new one

  @Test func aSectionDeletedAndOneInsertedInOneCommitAreTwoSections() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let list = try repository.list("cities", metadata: RawJSON.self, item: RawJSON.self)
    let recorder = try record(list)
    let asia = try list.sectionID(at: 1)  // The highest section id, with two items.
    try foreign(repository).execute(
      """
      BEGIN;
      DELETE FROM sections WHERE id = \(asia);
      INSERT INTO sections(list_id, position, metadata) VALUES (\(list.id), 'a5', '{"header":"New"}');
      COMMIT;
      """)
    repository.synchronizeObservers()
    try expectExact(recorder, repository)
    #expect(try list.sectionID(at: 1) > asia)
    #expect(recorder.array.sections[1].items.isEmpty)
  }

  @Test func sectionRemoveAndAddByOtherProcessesInOneRefreshAreTwoSections() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let recorder = try record(repository.list("cities", metadata: RawJSON.self, item: RawJSON.self))
    for arguments in [["section", "rm", "cities", "1"], ["section", "add", "cities", "New"]] {
      let result = try liststore(arguments, database: repository.path)
      #expect(result.status == 0, "\(result)")
    }
    repository.synchronizeObservers()
    try expectExact(recorder, repository)
    let last = try #require(recorder.changesets.last)
    #expect(last.deletedSections.count == 1 && last.insertedSections.count == 1)
  }

  // MARK: 2. REPLACE removes rows without delete triggers

  static let replaceStatements = [
    // A new item at the position of Berlin (items 1 and 2 are Paris and Berlin).
    "INSERT OR REPLACE INTO items(section_id, position, value) VALUES (1, 'a1', '\"Rome\"')",
    "REPLACE INTO items(section_id, position, value) VALUES (1, 'a1', '\"Rome\"')",
    // Paris takes Berlin's position: Berlin goes.
    "UPDATE OR REPLACE items SET position = 'a1' WHERE id = 1",
    // Tokyo moves into section 1 at Paris's position.
    "UPDATE OR REPLACE items SET section_id = 1, position = 'a0' WHERE id = 3",
    // A new section at Asia's position: Asia goes (its items with it, or orphaned).
    "INSERT OR REPLACE INTO sections(list_id, position, metadata) VALUES (1, 'a1', '{\"header\":\"Africa\"}')",
    "UPDATE OR REPLACE sections SET position = 'a1' WHERE id = 1",
    // In one commit, the row that took Berlin's place moves on, or goes: only where it
    // was for a moment tells that Berlin is gone.
    """
    BEGIN; INSERT OR REPLACE INTO items(section_id, position, value) VALUES (1, 'a1', '"Rome"');
    UPDATE items SET section_id = 2, position = 'a5' WHERE CAST(value AS TEXT) = '"Rome"'; COMMIT
    """,
    """
    BEGIN; UPDATE OR REPLACE items SET position = 'a1' WHERE id = 1;
    UPDATE items SET value = '"Lutetia"' WHERE id = 1; UPDATE items SET position = 'a7' WHERE id = 1;
    COMMIT
    """,
    """
    BEGIN; INSERT OR REPLACE INTO items(section_id, position, value) VALUES (1, 'a1', '"Rome"');
    DELETE FROM items WHERE CAST(value AS TEXT) = '"Rome"'; COMMIT
    """,
    // UPSERTs and IGNORE: the BEFORE trigger logs a row that stays.
    "INSERT INTO items(section_id, position, value) VALUES (1, 'a0', '\"x\"') ON CONFLICT DO UPDATE SET value = '\"Lutetia\"'",
    "INSERT OR IGNORE INTO items(section_id, position, value) VALUES (1, 'a0', '\"x\"')",
    "INSERT INTO items(section_id, position, value) VALUES (1, 'a0', '\"x\"') ON CONFLICT DO NOTHING",
  ]

  @Test(arguments: replaceStatements, [(false, false), (true, false), (false, true), (true, true)])
  func replaceAndUpsertAreObservedExactly(statement: String, pragmas: (Bool, Bool)) throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let recorder = try record(repository.list("cities", metadata: RawJSON.self, item: RawJSON.self))
    let db = try foreign(repository, foreignKeys: pragmas.0, recursiveTriggers: pragmas.1)
    try db.execute(statement)
    repository.synchronizeObservers()
    try expectExact(recorder, repository)
    let ids = recorder.array.sections.flatMap { $0.items.ids }
    #expect(Set(ids).count == ids.count)
  }

  @Test func replacingARowByItsIdIsRefusedAsIdReuse() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let db = try foreign(repository)
    for statement in [
      "INSERT OR REPLACE INTO items(id, section_id, position, value) VALUES (2, 1, 'a5', '\"x\"')",
      "REPLACE INTO sections(id, list_id, position, metadata) VALUES (2, 1, 'a5', 'null')",
      "INSERT OR REPLACE INTO lists(id, name) VALUES (1, 'other')",
    ] {
      #expect(
        performing: { try db.execute(statement) },
        throws: { error in
          "\(error)".contains("is never reused")
        })
    }
  }

  @Test func aListReplacedByNameEndsItsObservers() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let recorder = try record(repository.list("cities", metadata: RawJSON.self, item: RawJSON.self))
    try foreign(repository, foreignKeys: false).execute(
      "INSERT OR REPLACE INTO lists(name) VALUES ('cities')")
    repository.synchronizeObservers()
    #expect(recorder.isCompleted)
    // The new list of the same name starts empty, whatever the old one's rows became.
    let fresh = try repository.list("cities", metadata: RawJSON.self, item: RawJSON.self)
    #expect(try fresh.sections().isEmpty)
  }

  // MARK: 3, 4, 8. What the schema refuses

  static let refusedWrites: [(sql: String, rule: String)] = [
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, CAST('a5' AS BLOB), '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, x'6135', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, 5, '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, '', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, '~', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, 'zzz', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a5é', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a50', '1')",
      "items.position must be a position key"
    ),
    (
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a5' || char(0) || 'x', '1')",
      "items.position must be a position key"
    ),
    ("UPDATE items SET position = 'b0' WHERE id = 1", "items.position must be a position key"),
    (
      "UPDATE sections SET position = CAST(position AS BLOB) WHERE id = 1",
      "sections.position must be a position key"
    ),
    (
      "INSERT INTO sections(list_id, position, metadata) VALUES (1, 'A', 'null')",
      "sections.position must be a position key"
    ),
    (
      "INSERT INTO items(id, section_id, position, value) VALUES (0, 1, 'a5', '1')",
      "items.id is never reused"
    ),
    (
      "INSERT INTO items(id, section_id, position, value) VALUES (-7, 1, 'a5', '1')",
      "items.id is never reused"
    ),
    (
      "INSERT INTO sections(id, list_id, position, metadata) VALUES (0, 1, 'a5', 'null')",
      "sections.id is never reused"
    ),
    ("INSERT INTO lists(id, name) VALUES (-1, 'negative')", "lists.id is never reused"),
    ("UPDATE items SET id = 100 WHERE id = 1", "items.id never changes"),
    ("UPDATE sections SET id = 100 WHERE id = 1", "sections.id never changes"),
    ("UPDATE lists SET id = 100 WHERE id = 1", "lists.id never changes"),
  ]

  @Test(arguments: refusedWrites)
  func theSchemaRefusesWhatBreaksOrderOrIdentityAndChangesNothing(
    write: (sql: String, rule: String)
  ) throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let before = try ListContents.read(list: "cities", path: repository.path)
    let db = try foreign(repository, foreignKeys: false)
    #expect(
      performing: { try db.execute(write.sql) },
      throws: { error in
        "\(error)".contains("ListStore: \(write.rule)")
      })
    #expect(try ListContents.read(list: "cities", path: repository.path) == before)
    #expect(try repository.check().isEmpty)
  }

  @Test func aDeletedItemIdIsNeverReusedEvenWhenExplicit() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try makeCities(repository)
    let seoul = try list.itemID(at: IndexPath(indexes: [1, 1]))  // The highest id.
    try list.removeItem(id: seoul)
    let next = try list.appendItem(RawJSON("\"Busan\""), toSection: 1)
    #expect(next > seoul)
    #expect(
      performing: {
        try foreign(repository).execute(
          "INSERT INTO items(id, section_id, position, value) VALUES (\(seoul), 2, 'a9', '1')")
      }, throws: { "\($0)".contains("items.id is never reused") })
    // A new id above every one used so far is fine.
    try foreign(repository).execute(
      "INSERT INTO items(id, section_id, position, value) VALUES (\(next + 10), 2, 'a9', '1')")
  }

  // MARK: 5. A section that leaves its list and comes back in one commit

  @Test func anItemChangedWhileItsSectionVisitsAnotherListIsSeen() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try makeCities(repository)
    try repository.createList("elsewhere")
    let recorder = try record(list)
    let europe = try list.sectionID(at: 0)
    let paris = try list.itemID(at: IndexPath(indexes: [0, 0]))
    try foreign(repository).execute(
      """
      BEGIN;
      UPDATE sections SET list_id = (SELECT id FROM lists WHERE name = 'elsewhere') WHERE id = \(europe);
      UPDATE items SET value = '"Paris, France"' WHERE id = \(paris);
      UPDATE sections SET list_id = \(list.id) WHERE id = \(europe);
      COMMIT;
      """)
    repository.synchronizeObservers()
    try expectExact(recorder, repository)
    #expect(recorder.changesets.last?.updatedItems.map(\.id) == [paris])
  }

  // MARK: 6. Stale identities

  @Test func aHandleOnADeletedListNeverActsOnANewListOfTheSameName() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let old = try makeCities(repository)
    let oldItem = try old.itemID(at: IndexPath(indexes: [1, 1]))
    try repository.deleteList("cities")
    let new = try makeCities(repository)
    #expect(new.id != old.id)
    #expect(throws: ListStoreError.listNotFound(name: "cities")) {
      try old.appendItem(RawJSON("\"x\""), toSection: 0)
    }
    #expect(throws: ListStoreError.listNotFound(name: "cities")) { try old.sections() }
    #expect(throws: ListStoreError.itemNotFound(id: oldItem)) { try new.removeItem(id: oldItem) }
    #expect(try new.sections().flatMap { $0.items.ids }.allSatisfy { $0 > oldItem })
  }

  @Test func anObserverBehindThePrunedLogOfADeletedListCompletes() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try makeCities(repository)
    let recorder = try record(list)
    // Another client deletes the list, makes one of the same name, and prunes the log
    // past the observer, in one commit.
    try foreign(repository).execute(
      """
      BEGIN IMMEDIATE;
      DELETE FROM lists WHERE name = 'cities';
      INSERT INTO lists(name) VALUES ('cities');
      INSERT INTO sections(list_id, position, metadata) SELECT id, 'a0', 'null' FROM lists;
      DELETE FROM changes;
      UPDATE change_log_horizon SET pruned_through = (SELECT seq FROM sqlite_sequence WHERE name = 'changes');
      COMMIT;
      """)
    repository.synchronizeObservers()
    #expect(recorder.isCompleted)
    #expect(recorder.array.sections.count == 2)
  }

  // MARK: 7. Keys compare as bytes

  @Test func keysThatSwiftCallsEqualButDifferInBytesAreDifferentKeys() {
    var list = ItemList<PositionMirror.Slot>()
    list.append(PositionMirror.Slot(key: "e\u{301}", hash: 0), id: 7)
    #expect("e\u{301}" == "\u{e9}")  // Canonically equivalent for Swift…
    #expect(PositionMirror.index(of: 7, key: "\u{e9}", in: list) == nil)  // …not for SQLite.
    #expect(PositionMirror.index(of: 7, key: "e\u{301}", in: list) == 0)
    #expect(!PositionMirror.sameKey("e\u{301}", "\u{e9}"))
  }

  @Test func theMirrorsKeyOrderIsSQLitesByteOrder() {
    // Small, native, bridged-free and empty strings; ASCII, accents, emoji; prefixes.
    let alphabet: [String] = [
      "", "0", "a", "a0", "a00", "Z", "z", "~", "é", "e\u{301}", "😀", "\u{0}",
    ]
    var random = SeededGenerator(seed: 14)
    var keys = alphabet
    for _ in 0..<300 {
      let length = Int.random(in: 1...24, using: &random)
      keys.append((0..<length).map { _ in alphabet.randomElement(using: &random) ?? "" }.joined())
    }
    for lhs in keys {
      for rhs in keys.prefix(60) {
        #expect(
          PositionMirror.precedes(lhs, rhs)
            == Array(lhs.utf8).lexicographicallyPrecedes(Array(rhs.utf8)),
          "\(Array(lhs.utf8)) vs \(Array(rhs.utf8))")
      }
    }
  }

  // MARK: 8. Repair of what older schemas let in

  @Test func repairRewritesBadKeysInTheirOrderAsOneObservedWrite() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    try makeCities(repository)
    let recorder = try record(repository.list("cities", metadata: RawJSON.self, item: RawJSON.self))
    // A client with the schema's rules dropped, as older versions had it.
    let db = try foreign(repository, foreignKeys: false)
    try db.execute(
      """
      DROP TRIGGER items_position_is_a_key;
      DROP TRIGGER items_position_stays_a_key;
      DROP TRIGGER items_need_section;
      BEGIN;
      INSERT INTO items(section_id, position, value) VALUES (1, CAST('a5' AS BLOB), '"blob"');
      INSERT INTO items(section_id, position, value) VALUES (1, '', '"empty"');
      INSERT INTO items(section_id, position, value) VALUES (1, 'zzz', '"zzz"');
      INSERT INTO items(section_id, position, value) VALUES (1, 7, '"seven"');
      INSERT INTO items(section_id, position, value) VALUES (1, 'a0~', '"tilde"');
      INSERT INTO items(section_id, position, value) VALUES (99, 'a0', '"orphan"');
      COMMIT;
      """)
    let order = try itemValues(db, section: 1)
    // The number became the text '7' (the column's affinity), after the empty key.
    #expect(
      order == [
        "\"empty\"", "\"seven\"", "\"Paris\"", "\"tilde\"", "\"Berlin\"", "\"zzz\"", "\"blob\"",
      ])
    let report = try repository.repair()
    #expect(
      report
        == RepairReport(positionsRewritten: 5, orphanedItemsDeleted: 1, orphanedSectionsDeleted: 0))
    #expect(try itemValues(db, section: 1) == order)
    #expect(try positions(db).allSatisfy(PositionKey.isValid))
    repository.synchronizeObservers()
    try expectExact(recorder, repository)
    #expect(try repository.repair().isEmpty)
  }

  func itemValues(_ db: Connection, section: Int64) throws -> [String] {
    var values: [String] = []
    let statement = try db.prepare("SELECT value FROM items WHERE section_id = ? ORDER BY position")
    try statement.bind(section, at: 1)
    try statement.forEachRow { values.append($0.string(at: 0)) }
    return values
  }

  func positions(_ db: Connection) throws -> [String] {
    var keys: [String] = []
    try db.prepare("SELECT position FROM items UNION ALL SELECT position FROM sections")
      .forEachRow { keys.append($0.string(at: 0)) }
    return keys
  }

  // MARK: 9. Observers registered while others write

  @Test(arguments: TestEngine.tested)
  func observersRegisteredWhileWritesAreStagedAllCatchUpWithoutAnotherCommit(engine: TestEngine)
    throws
  {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    try makeCities(repository)
    let other = try database.openRepository()
    let done = Atomic<Int>(0)
    let writers = [repository, other].map { writer in
      Thread {
        defer { done.add(1, ordering: .releasing) }
        guard let list = try? writer.list("cities", metadata: RawJSON.self, item: RawJSON.self)
        else { return }
        for number in 0..<scaled(150) {
          _ = try? list.appendItem(RawJSON("\(number)"), toSection: 0)
        }
      }
    }
    for writer in writers { writer.start() }
    var recorders: [ArrayRecorder<RawJSON, RawJSON>] = []
    // Observers join while the writes are staged and delivered, until both writers end.
    while recorders.count < 20
      && (done.load(ordering: .acquiring) < writers.count || recorders.count < 3)
    {
      recorders.append(
        try record(repository.list("cities", metadata: RawJSON.self, item: RawJSON.self)))
    }
    while done.load(ordering: .acquiring) < writers.count { sched_yield() }
    // No commit follows: every observer must get there on its own.
    let truth = try database.contents(list: "cities")
    for (number, recorder) in recorders.enumerated() {
      #expect(
        recorder.wait { ListContents($0.array.sections) == truth },
        "observer \(number) of \(recorders.count) stayed behind")
      #expect(recorder.problems.isEmpty)
    }
  }

  // MARK: 11. Transient failures are retried

  /// A WAL database's readers are hardly ever locked out, so this runs on a copy in
  /// rollback-journal mode, where a writer's exclusive lock stops readers for real.
  @Test func aBusyDatabaseWhileStagingIsRetriedNotTheEndOfTheObservation() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try makeCities(repository)
    let path = folder.file("journal.sqlite")
    try repository.backup(to: path)
    try Connection(path: path).execute("PRAGMA journal_mode = DELETE")
    let feed = try ChangeFeed(
      engine: SQLiteEngine(path: path), busyTimeout: .zero, readOnly: false,
      watchesDatabase: false)
    let array = try feed.register(list.observer(undecodable: .fail))
    let recorder = ArrayRecorder(array, describe: { $0.text }, header: { $0.text })
    // Another client commits a change, then holds the database locked.
    let locker = try Connection(path: path, busyTimeout: .zero)
    try locker.execute("UPDATE items SET value = '\"Lutetia\"' WHERE id = 1; BEGIN EXCLUSIVE")

    // One observer staged by hand: the read fails, so it reads again later and goes on.
    let (sections, mirror) = try StoredListObserver<RawJSON, RawJSON>.load(
      listID: list.id, db: SQLiteDatabase(Connection(path: repository.path, mode: .readOnly)))
    let handArray = MutableObservable2DArray(sections)
    let handRecorder = ArrayRecorder(handArray, describe: { $0.text }, header: { $0.text })
    let observer = StoredListObserver<RawJSON, RawJSON>(
      listID: list.id, name: "cities", seq: 0, mirror: mirror, array: handArray, policy: .fail)
    // A section inserted into the list: its items must be read from the database.
    let entry = ChangeLogEntry(
      seq: 1, listID: list.id, oldListID: nil, kind: .section, operation: .insert, rowID: 99,
      parent: list.id, oldParent: nil, oldPosition: nil,
      current: CurrentRow(parent: list.id, key: "a5", json: "null"))
    let reader = SQLiteDatabase(try Connection(path: path, mode: .readOnly, busyTimeout: .zero))
    let engine = SQLiteEngine(path: path)
    let context = StagingContext(
      lastSeq: 1, fellBehind: false, db: reader, inWrite: false,
      userError: { engine.userError($0, busyTimeout: .zero) })
    observer.stage(entries: [entry][...], context: context)()
    observer.deliver()
    #expect(observer.needsRead && observer.seq == 0)
    #expect(!handRecorder.isCompleted && handRecorder.error == nil)
    #expect(handRecorder.changesets.isEmpty)

    // Through the feed: a refresh while locked changes nothing and ends nothing…
    feed.refresh()
    #expect(feed.needsRefresh)
    #expect(!recorder.isCompleted && recorder.error == nil && recorder.changesets.isEmpty)
    // …and once the lock is gone, the scheduled retry brings the change, with no further
    // commit or call.
    try locker.execute("COMMIT")
    #expect(recorder.wait { $0.array.sections.first?.items.first?.text == "\"Lutetia\"" })
    #expect(
      ListContents(recorder.array.sections) == (try ListContents.read(list: "cities", path: path)))
    #expect(recorder.problems.isEmpty && recorder.error == nil)
  }

  // MARK: 13. A write returns after its event was delivered

  @Test(arguments: TestEngine.tested)
  func everyWriteIsDeliveredBeforeItReturnsWhileOthersDeliverToo(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeCities(repository)
    let recorder = try record(list)
    let delivered = Locked<Set<Int64>>([])
    let bag = DisposeBag()
    recorder.array.observeNext { event in
      delivered.withLock { $0.formUnion(event.changeset.insertedItems.map(\.id)) }
    }.disposed(by: bag)
    // Another process's writes keep the feed's queue delivering meanwhile.
    let other = try database.openRepository()
    let stop = Atomic<Bool>(false)
    let foreignWriter = Thread {
      guard let list = try? other.list("cities", metadata: RawJSON.self, item: RawJSON.self)
      else { return }
      // Bounded, so that the list stays small however slowly the main thread writes.
      for _ in 0..<scaled(300) where !stop.load(ordering: .relaxed) {
        _ = try? list.appendItem(RawJSON("\"other\""), toSection: 1)
      }
    }
    foreignWriter.start()
    defer { stop.store(true, ordering: .relaxed) }
    var late: [Int64] = []
    for number in 0..<scaled(150) {
      let id = try list.appendItem(RawJSON("\(number)"), toSection: 0)
      // No waiting: the event was delivered, and the bound table shows the row.
      let seen = delivered.withLock { $0.contains(id) }
      let shown = recorder.sections.first?.items.ids.contains(id) == true
      if !seen || !shown { late.append(id) }
    }
    stop.store(true, ordering: .relaxed)
    #expect(late.isEmpty, "writes returned before their events were delivered: \(late)")
    #expect(recorder.problems.isEmpty)
  }

  // MARK: 14. Rows that do not decode

  struct City: Codable, Equatable, Sendable {
    var name: String
  }

  @Test func aRowThatDoesNotDecodeFailsTheObservationNamingTheRow() async throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try repository.createList("cities", metadata: String.self, item: City.self)
    try list.appendSection("Europe")
    try list.appendItem(City(name: "Paris"), toSection: 0)
    let recorder = ArrayRecorder(try list.observe())
    let changesets = try list.changesets()
    try foreign(repository).execute(
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a5', '\"just a string\"')")
    let bad = try #require(try foreign(repository).scalarInt64("SELECT max(id) FROM items"))
    repository.synchronizeObservers()
    let error = try #require(recorder.error as? ListStoreError)
    guard case .undecodable(let row) = error else {
      Issue.record("expected an undecodable row, got \(error)")
      return
    }
    #expect(row.kind == .item && row.id == bad && row.json == "\"just a string\"")
    #expect(row.type.hasSuffix("City"))
    #expect("\(error)".contains("item \(bad) holds \"just a string\""), "\(error)")
    await #expect(throws: ListStoreError.undecodable(row)) {
      for try await _ in changesets {}
    }
    #expect(throws: ListStoreError.undecodable(row)) { try list.observe() }
  }

  @Test func aSubstitutePolicyShowsAStandInAndThenTheFixedValue() throws {
    defer { folder.remove() }
    let repository = try quietRepository()
    let list = try repository.createList("cities", metadata: String.self, item: City.self)
    try list.appendSection("Europe")
    try list.appendItem(City(name: "Paris"), toSection: 0)
    let array = try list.observe(
      undecodable: .substitute(
        item: { City(name: "? item \($0.id)") }, metadata: { _ in "?" }))
    let recorder = ArrayRecorder(array)
    try foreign(repository).execute(
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a5', '\"just a string\"')")
    repository.synchronizeObservers()
    let bad = try #require(array.sections[0].items.ids.last)
    #expect(Array(array.sections[0].items) == [City(name: "Paris"), City(name: "? item \(bad)")])
    try foreign(repository).execute(
      "UPDATE items SET value = '{\"name\":\"Rome\"}' WHERE id = \(bad)")
    repository.synchronizeObservers()
    #expect(recorder.changesets.last?.updatedItems.map(\.value) == [City(name: "Rome")])
    #expect(recorder.error == nil && recorder.problems.isEmpty)
  }
}
