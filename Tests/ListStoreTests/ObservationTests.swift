import Foundation
import ListStore
import Observable2D
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@Suite struct ObservationTests {
  typealias List = StoredList<SectionMetadata, String>

  func makeList(_ repository: Repository, name: String = "cities") throws -> List {
    let list = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try list.appendItems(["Paris", "Berlin"], toSection: 0)
    return list
  }

  func fresh(_ list: List) throws -> [Observable2DArraySection<SectionMetadata, String>] {
    try list.repository.list(list.name, metadata: SectionMetadata.self, item: String.self).observe()
      .sections
  }

  @Test(arguments: TestEngine.tested)
  func startsAsTheStoredListAndFollowsEveryKindOfWrite(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    #expect(array.sections.map { Array($0.items) } == [["Paris", "Berlin"]])
    #expect(array.sections[0].metadata == SectionMetadata(header: "Cities", footer: "That's it"))

    // Each write is applied before the call returns.
    let copenhagen = try list.appendItem("Copenhagen", toSection: 0)
    #expect(array.sections[0].items.last == "Copenhagen")
    #expect(recorder.changesets.last?.insertedItems.map(\.id) == [copenhagen])
    try list.insert(section: SectionMetadata(header: "Towns"), at: 0)
    try list.insert(item: "Bonn", at: IndexPath(indexes: [0, 0]))
    try list.moveItem(from: IndexPath(indexes: [1, 0]), to: IndexPath(indexes: [0, 1]))
    try list.replaceItem(at: IndexPath(indexes: [1, 0]), with: "Berlin, Germany")
    try list.setMetadata(SectionMetadata(header: "Big cities"), forSectionAt: 1)
    try list.moveSection(from: 1, to: 0)
    try list.removeItem(at: IndexPath(indexes: [0, 0]))
    try list.removeSection(at: 1)
    #expect(recorder.changesets.count == 9)
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    #expect(array.sections == (try fresh(list)))
    let last = try #require(recorder.changesets.last)
    #expect(last.deletedSections.map(\.index) == [1] && last.deletedItems.isEmpty)
    // A move is one entry, a value change another.
    #expect(recorder.changesets[3].movedItems.count == 1 && recorder.changesets[3].entryCount == 1)
    #expect(recorder.changesets[4].updatedItems.map(\.value) == ["Berlin, Germany"])
  }

  @Test(arguments: TestEngine.tested)
  func eventsCarryTheChangeLogPositionTheyReflect(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let other = try makeList(repository, name: "other")
    let array = try list.observe()
    let versions = Mutex<[Int64]>([])
    let subscription = array.subscribe(
      initialWithVersion: { _, version in versions.withLock { $0.append(version) } },
      onNext: { event in versions.withLock { $0.append(event.version) } })
    defer { subscription.dispose() }
    // The start is the position of the last commit, also one to another list.
    #expect(versions.withLock { $0 } == [try repository.changeLogPosition()])
    try list.appendItem("Rome", toSection: 0)
    #expect(versions.withLock { $0.last } == (try repository.changeLogPosition()))
    try other.appendItem("Oslo", toSection: 0)
    try database.foreign().execute("UPDATE items SET value = '\"Roma\"' WHERE value = '\"Rome\"'")
    let recorder = ArrayRecorder(array, header: { $0.header })
    #expect(recorder.wait { $0.sections.flatMap(\.items).contains("Roma") })
    let seen = versions.withLock { $0 }
    #expect(seen.count == 3, "\(seen)")
    #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen)")
    #expect(seen.last == (try repository.changeLogPosition()))
  }

  @Test(arguments: TestEngine.tested)
  func failedAndRolledBackWritesEmitNothing(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    #expect(throws: ListStoreError.self) { try list.removeItem(at: IndexPath(indexes: [0, 5])) }
    // Another client's transaction that rolls back.
    try database.foreign().execute(
      "BEGIN; INSERT INTO items(section_id, position, value) VALUES (1, 'a5', '\"x\"'); ROLLBACK"
    )
    repository.synchronizeObservers()
    try list.appendItem("Rome", toSection: 0)
    #expect(recorder.changesets.count == 1)
    #expect(recorder.changesets.first?.insertedItems.map(\.value) == ["Rome"])
  }

  @Test(arguments: TestEngine.tested)
  func seesCommitsOfOtherConnectionsAndTheShell(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    // Another repository: as another process would.
    let other = try database.openRepository()
    let otherList = try other.list("cities", metadata: SectionMetadata.self, item: String.self)
    try otherList.appendItem("Oslo", toSection: 0)
    #expect(recorder.wait { $0.sections.first?.items.last == "Oslo" })
    // The engine's shell (sqlite3 with foreign keys off, or psql), in one transaction
    // of three statements.
    let shell = try database.shell(
      """
      BEGIN;
      UPDATE items SET value = '"Paris, France"' WHERE CAST(value AS TEXT) = '"Paris"';
      INSERT INTO items(section_id, position, value) VALUES (1, 'Zz', '"Athens"');
      DELETE FROM items WHERE CAST(value AS TEXT) = '"Berlin"';
      COMMIT;
      """)
    #expect(shell.status == 0, "\(shell)")
    #expect(
      recorder.wait {
        $0.sections.first.map { Array($0.items) } == ["Athens", "Paris, France", "Oslo"]
      })
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    // One transaction: one changeset.
    let last = try #require(recorder.changesets.last)
    #expect(
      last.insertedItems.count == 1 && last.updatedItems.count == 1 && last.deletedItems.count == 1)
    #expect(array.sections == (try fresh(list)))
  }

  @Test(arguments: TestEngine.tested)
  func deletingTheListCompletesItsObservers(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    let other = try makeList(repository, name: "other")
    let otherRecorder = ArrayRecorder(try other.observe(), header: { $0.header })
    try repository.deleteList("cities")
    #expect(recorder.isCompleted)
    #expect(!otherRecorder.isCompleted)
    try other.appendItem("x", toSection: 0)
    #expect(otherRecorder.changesets.count == 1)
    #expect(throws: ListStoreError.listNotFound(name: "cities")) { try list.observe() }
  }

  @Test(arguments: TestEngine.tested)
  func anObserverBehindThePrunedLogReloadsAndStillEmitsAValidChangeset(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    // Another client changes rows and prunes the log past the observer, in one commit.
    let lastSeq =
      engine == .sqlite
      ? "(SELECT seq FROM sqlite_sequence WHERE name = 'changes')"
      : "(SELECT max(seq) FROM changes)"
    try database.foreign().execute(
      """
      BEGIN;
      INSERT INTO items(section_id, position, value) VALUES (1, 'a5', '"Vienna"');
      UPDATE items SET position = 'Zz' WHERE CAST(value AS TEXT) = '"Berlin"';
      UPDATE items SET value = '"Lutetia"' WHERE CAST(value AS TEXT) = '"Paris"';
      UPDATE change_log_horizon SET pruned_through = \(lastSeq);
      DELETE FROM changes;
      COMMIT;
      """)
    repository.synchronizeObservers()
    #expect(array.sections.first.map { Array($0.items) } == ["Berlin", "Lutetia", "Vienna"])
    #expect(recorder.changesets.count == 1)
    let changeset = try #require(recorder.changesets.first)
    #expect(changeset.insertedItems.count == 1 && changeset.movedItems.count == 1)
    #expect(changeset.entryCount == 3)
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  /// The seq of the last change-log entry ever written, as SQL.
  func lastSeqSQL(_ engine: TestEngine) -> String {
    engine == .sqlite
      ? "(SELECT seq FROM sqlite_sequence WHERE name = 'changes')"
      : "(SELECT max(seq) FROM changes)"
  }

  @Test(arguments: TestEngine.tested)
  func anObserverWhoseNextEntriesWerePrunedReloads(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    // Three inserts, of which the log keeps only the last: the observer's next entries
    // are gone, though the log is not empty.
    try database.foreign().execute(
      """
      BEGIN;
      INSERT INTO items(section_id, position, value) VALUES (1, 'a5', '"Vienna"');
      INSERT INTO items(section_id, position, value) VALUES (1, 'a6', '"Rome"');
      UPDATE change_log_horizon SET pruned_through = \(lastSeqSQL(engine));
      DELETE FROM changes;
      INSERT INTO items(section_id, position, value) VALUES (1, 'a7', '"Oslo"');
      COMMIT;
      """)
    repository.synchronizeObservers()
    #expect(
      array.sections.first.map { Array($0.items) } == ["Paris", "Berlin", "Vienna", "Rome", "Oslo"])
    #expect(recorder.changesets.map(\.entryCount) == [3])
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  @Test(arguments: TestEngine.tested)
  func aGapInTheLogsNumbersIsNotAPrunedLog(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    // Numbers skipped, as a rolled-back write leaves them on PostgreSQL.
    try database.foreign().execute(
      engine == .sqlite
        ? "UPDATE sqlite_sequence SET seq = seq + 5 WHERE name = 'changes'"
        : "SELECT setval('changes_seq', nextval('changes_seq') + 5)")
    try list.appendItem("Vienna", toSection: 0)
    #expect(array.sections.first.map { Array($0.items) } == ["Paris", "Berlin", "Vienna"])
    #expect(recorder.changesets.map(\.entryCount) == [1])
    // Applied from the log, not by reading the list again.
    #expect(repository.lastFeedRefreshRowsRead <= 2)
    try database.foreign().execute(
      "INSERT INTO items(section_id, position, value) VALUES (1, 'a9', '\"Rome\"')")
    repository.synchronizeObservers()
    #expect(recorder.changesets.map(\.entryCount) == [1, 1])
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  @Test(arguments: TestEngine.tested)
  func observationEndsWhenTheArrayIsReleased(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    weak var released: Observable2DArray<SectionMetadata, String>?
    do {
      let array = try list.observe()
      released = array
      try list.appendItem("x", toSection: 0)
    }
    try list.appendItem("y", toSection: 0)
    #expect(released == nil)
  }

  @Test(arguments: TestEngine.tested)
  func changesetsArriveAsAnAsyncSequence(engine: TestEngine) async throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let changesets = try list.changesets()
    let writer = Task.detached {
      try list.appendItem("Rome", toSection: 0)
      try list.removeItem(at: IndexPath(indexes: [0, 0]))
      try repository.deleteList("cities")
    }
    var received: [Changeset<SectionMetadata, String>] = []
    for try await changeset in changesets { received.append(changeset) }
    try await writer.value
    #expect(received.map(\.insertedItems.count) == [1, 0])
    #expect(received.map(\.deletedItems.count) == [0, 1])
  }

  /// A single change on a large list reads and places only the changed row: the rows
  /// the feed reads per notification do not grow with the list.
  @Test func aChangeOnALargeListReadsOnlyThatRow() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    var rowsRead: [Int: [Int]] = [:]
    for size in [1000, 100_000] {
      let repository = try Repository(path: folder.file("big\(size).sqlite"))
      let list = try repository.createList("big", metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: "All"))
      try list.appendItems((0..<size).map { "item \($0)" }, toSection: 0)
      let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
      try list.insert(item: "middle", at: IndexPath(indexes: [0, size / 2]))
      rowsRead[size, default: []].append(repository.lastFeedRefreshRowsRead)
      try list.replaceItem(at: IndexPath(indexes: [0, size - 1]), with: "changed")
      rowsRead[size, default: []].append(repository.lastFeedRefreshRowsRead)
      try list.moveItem(from: IndexPath(indexes: [0, 1]), to: IndexPath(indexes: [0, size - 2]))
      rowsRead[size, default: []].append(repository.lastFeedRefreshRowsRead)
      // The move from row 1 shifted the middle item up by one.
      #expect(recorder.array.sections[0].items[size / 2 - 1] == "middle")
      #expect(recorder.changesets.map(\.entryCount) == [1, 1, 1])
      #expect(recorder.problems.isEmpty)
    }
    // data_version, the last seq, the horizon, one log entry and the row itself.
    #expect(rowsRead[1000] == rowsRead[100_000])
    #expect(rowsRead[100_000]?.allSatisfy { $0 <= 6 } == true, "\(rowsRead)")
  }

  @Test(arguments: TestEngine.tested)
  func aBindingKeepsTheObservationAliveWithoutTheArray(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository)
    let bag = DisposeBag()
    let received = Locked<[Int]>([])
    try list.observe().observeNext { event in
      received.withLock { $0.append(event.changeset.entryCount) }
    }
    .disposed(by: bag)
    try list.appendItem("Rome", toSection: 0)
    try list.appendItem("Oslo", toSection: 0)
    #expect(received.withLock { $0 } == [1, 1])
  }
}
