import Foundation
import Observable2D
import PostgreSQLKit
import PostgresTestSupport
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// Observation whose cost follows the observed rows (not the log, not other lists), and
/// the races and faults of issue "observation at scale and under faults", each with the
/// test that failed before its fix.
@Suite struct ObservationAtScaleTests {
  typealias RawList = StoredList<RawJSON, RawJSON>

  /// A list `name` with one section of `items` items, written in one transaction.
  @discardableResult
  static func makeList(_ repository: Repository, _ name: String, items: Int) throws -> RawList {
    let list = try repository.createList(name, metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"\#(name)"}"#))
    try list.appendItems((0..<items).map { RawJSON("\"\(name) \($0)\"") }, toSection: 0)
    return list
  }

  static func record(_ list: RawList) throws -> ArrayRecorder<RawJSON, RawJSON> {
    ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
  }

  /// The observer's array equals the test's own reading, and every changeset passed the
  /// table view's checks.
  static func expectExact(
    _ recorder: ArrayRecorder<RawJSON, RawJSON>, _ database: TestDatabase, list: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    TestSupport.expectExact(
      recorder, try database.contents(list: list), sourceLocation: sourceLocation)
  }

  /// A repository on a SQLite file whose observers see other clients' commits only at
  /// ``Repository/synchronizeObservers()`` and at their own writes.
  static func quietRepository(_ path: String) throws -> Repository {
    try Repository(
      path: path, busyTimeout: .seconds(10), readOnly: false, maximumPageCount: nil,
      watchesDatabase: false)
  }

  // MARK: - Cost follows the observed rows

  /// The tables SQLite's plan for `sql` scans whole (`SCAN t`, not `SEARCH t USING …`).
  static func scannedTables(_ sql: String, db: Connection) throws -> [String] {
    var scanned: [String] = []
    try db.prepare("EXPLAIN QUERY PLAN " + sql).forEachRow { row in
      let detail = row.string(at: 3)
      if detail.hasPrefix("SCAN ") {
        scanned.append(String(detail.dropFirst(5).prefix { $0 != " " }))
      }
    }
    return scanned
  }

  /// No query the feed runs for a write, and no read of one list, scans `changes` or
  /// `items` whole in SQLite's plans, whatever the tables hold.
  @Test func sqlitePlansOfTheFeedSearchRatherThanScan() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    try Self.makeList(repository, "big", items: 20_000)
    try Self.makeList(repository, "small", items: 3)
    let db = try Connection(path: repository.path)
    try db.execute("ANALYZE")
    let dialect = SQLiteDatabase.dialect
    for sql in [
      dialect.changeLogPage.single, dialect.changeLogPage.many, dialect.changeLogPage.all,
      dialect.listItems.grouped,
      dialect.listItems.ordered, dialect.listSnapshot, dialect.listItemCount,
    ] {
      let scanned = try Self.scannedTables(sql, db: db)
      #expect(
        scanned.allSatisfy { !["changes", "items", "i", "sections", "s"].contains($0) },
        "\(scanned) in\n\(sql)")
    }
  }

  /// PostgreSQL's own statistics: with 200,000 entries in the log (another list's
  /// import), observing a small list, writing one row to it three times and delivering
  /// each write scan neither `changes` nor `items` (it once scanned both, 0.7 s a write).
  @Test(.postgres) func postgreSQLReadsNoTableInFullForAOneRowWrite() throws {
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    let admin = try PGConnection(database.location)
    try admin.execute(
      """
      ALTER TABLE items SET (autovacuum_enabled = off);
      ALTER TABLE changes SET (autovacuum_enabled = off);
      ALTER TABLE sections SET (autovacuum_enabled = off)
      """)
    func otherSessions() throws -> Int64 {
      try admin.scalarInt64(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
          + "AND pid <> pg_backend_pid()") ?? -1
    }
    do {
      let setup = try database.openRepository()
      try Self.makeList(setup, "big", items: scaled(200_000))
      try Self.makeList(setup, "small", items: 3)
    }
    // Every other session ended (and flushed its statistics): count from zero.
    #expect(try pollUntil(timeout: 3 * TestLimits.eventSeconds) { try otherSessions() == 0 })
    try admin.execute("SELECT pg_stat_reset()")
    do {
      let repository = try Repository.open(database.location(applicationName: "observer"))
      let list = try repository.list("small", metadata: RawJSON.self, item: RawJSON.self)
      let recorder = try Self.record(list)
      for step in 0..<3 {
        try list.appendItem(RawJSON("\"new \(step)\""), toSection: 0)
        #expect(repository.lastFeedRefreshRowsRead <= 6)
      }
      #expect(recorder.changesets.count == 3)
      #expect(recorder.array.sections[0].items.count == 6)
    }
    #expect(try pollUntil(timeout: 3 * TestLimits.eventSeconds) { try otherSessions() == 0 })
    let scans = try admin.query(
      """
      SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables
      WHERE relname IN ('changes', 'items') ORDER BY relname
      """)
    for row in 0..<scans.rowCount {
      #expect(
        try scans.int64(row: row, column: 1) == 0,
        "\(scans.string(row: row, column: 0)): \(scans.string(row: row, column: 1)) scans, \(scans.string(row: row, column: 2)) rows"
      )
    }
  }

  /// Another client's transaction of many items to another list: the observer holds none
  /// of its entries (values are read only for observed lists, the log a page at a time),
  /// and a write of this process to the observed list, made while that transaction is
  /// unread, is delivered before the write returns.
  @Test(arguments: TestEngine.tested)
  func anotherListsTransactionCostsAnObserverNoMemory(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let small = try Self.makeList(repository, "small", items: 2)
    let recorder = try Self.record(small)
    let feed = try repository.changeFeed()
    let other = try database.openRepository()
    try Self.makeList(other, "big", items: scaled(12_000))
    try small.appendItem(RawJSON(#""mine""#), toSection: 0)
    // Delivered before the write returned.
    #expect(recorder.array.sections[0].items.last?.text == #""mine""#)
    repository.synchronizeObservers()
    let big = try other.list("big", metadata: RawJSON.self, item: RawJSON.self)
    try big.appendItems((0..<scaled(5_000)).map { RawJSON("\($0)") }, toSection: 0)
    let otherSmall = try other.list("small", metadata: RawJSON.self, item: RawJSON.self)
    try otherSmall.appendItem(RawJSON(#""theirs""#), toSection: 0)
    repository.synchronizeObservers()
    #expect(feed.largestStaging.load(ordering: .relaxed) <= 1)
    try Self.expectExact(recorder, database, list: "small")
    #expect(recorder.changesets.count == 2)
  }

  /// An observer that the pruned log left behind reloads its list without reading the
  /// entries that remain (it once read them all first).
  @Test func anObserverBehindThePrunedLogReloadsWithoutReadingTheLog() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Self.quietRepository(folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 5)
    let recorder = try Self.record(list)
    let feed = try repository.changeFeed()
    let other = try Repository(path: repository.path)
    let theirs = try other.list("cities", metadata: RawJSON.self, item: RawJSON.self)
    for step in 0..<300 { try theirs.appendItem(RawJSON("\(step)"), toSection: 0) }
    // This process's reader record gone (as if it had been quiet too long): pruning
    // passes the observer.
    let foreign = try Connection(path: repository.path)
    try foreign.execute("DELETE FROM change_log_readers")
    try other.pruneChangeLog()
    try theirs.appendItem(RawJSON("\"after\""), toSection: 0)
    repository.synchronizeObservers()
    #expect(feed.largestStaging.load(ordering: .relaxed) == 0)
    TestSupport.expectExact(recorder, try ListContents.read(list: "cities", path: repository.path))
    #expect(recorder.array.sections[0].items.count == 306)
  }

  // MARK: - Races

  /// `stopObserving()` while a write of this process holds the feed's state lock and the
  /// watch's refresh waits for that lock: the shutdown once held the watch's lock while it
  /// waited for the refresh, and the write then waited for the watch's lock (a deadlock).
  @Test func stoppingWhileAWriteStagesAndTheWatchRefreshesEnds() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let array = try list.observe()
    let feed = try repository.changeFeed()
    let refreshReady = Signal()
    let writerHoldsLock = Signal()
    let writerStaging = Signal()
    let shuttingDown = Signal()
    let refreshArmed = Atomic<Bool>(true)
    let writerArmed = Atomic<Bool>(true)
    feed.installHooks(
      FeedHooks(
        whileStagingLocked: {
          guard writerArmed.exchange(false, ordering: .acquiringAndReleasing) else { return }
          writerHoldsLock.signal()
          writerStaging.signal()
          try? shuttingDown.wait()
        },
        beforeRefreshLocks: {
          guard refreshArmed.exchange(false, ordering: .acquiringAndReleasing) else { return }
          refreshReady.signal()
          try? writerHoldsLock.wait()
        },
        beforeCancellingWatch: { shuttingDown.signal() }))
    // Another process commits: the watch wakes, and its refresh is held before the lock…
    let other = try Repository(path: repository.path)
    try other.list("cities", metadata: RawJSON.self, item: RawJSON.self)
      .appendItem(RawJSON(#""theirs""#), toSection: 0)
    try refreshReady.wait()
    // …until a write of this process holds the state lock: then it waits for that lock,
    // the write waits for the shutdown to begin, and the shutdown cancels the watch, which
    // waits for the refresh.
    let writer = BackgroundThread { try list.appendItem(RawJSON(#""mine""#), toSection: 0) }
    try writerStaging.wait()
    let stopper = BackgroundThread { repository.stopObserving() }
    _ = try writer.join()
    try stopper.join()
    #expect(array.sections[0].items.map(\.text).last == #""mine""#)
    withExtendedLifetime(array) {}
  }

  /// A write that finds no observer commits without the feed's lock; an observer that
  /// registered meanwhile, from the state before that commit, still gets the write (it
  /// once waited for the file watch, or forever without one).
  @Test func anObserverRegisteredDuringALockFreeWriteGetsIt() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Self.quietRepository(folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let feed = try repository.changeFeed()
    let paused = Signal()
    let resume = Signal()
    let armed = Atomic<Bool>(true)
    feed.installHooks(
      FeedHooks(beforeCommitWithoutObservers: {
        guard armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        paused.signal()
        try? resume.wait()
      }))
    let writer = BackgroundThread { try list.appendItem(RawJSON(#""Rome""#), toSection: 0) }
    try paused.wait()
    let recorder = try Self.record(list)
    #expect(recorder.array.sections[0].items.count == 2)
    resume.signal()
    _ = try writer.join()
    // No refresh asked for: the write brought it.
    #expect(recorder.array.sections[0].items.map(\.text).last == #""Rome""#)
    #expect(recorder.changesets.map(\.insertedItems.count) == [1])
  }

  /// The first observation of a repository begins while a write that found no change
  /// feed is about to commit: the write brings it its change (it once left it to the file
  /// watch, or to nobody without one).
  @Test func aFirstObservationDuringAWriteWithoutAFeedGetsIt() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Self.quietRepository(folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let paused = Signal()
    let resume = Signal()
    let armed = Atomic<Bool>(true)
    repository.installHooks(
      Repository.Hooks(beforeCommitWithoutFeed: {
        guard armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        paused.signal()
        try? resume.wait()
      }))
    let writer = BackgroundThread { try list.appendItem(RawJSON(#""Rome""#), toSection: 0) }
    try paused.wait()
    let recorder = try Self.record(list)
    #expect(recorder.array.sections[0].items.count == 2)
    resume.signal()
    _ = try writer.join()
    #expect(recorder.array.sections[0].items.map(\.text).last == #""Rome""#)
  }

  /// Observers of a large list and of a small one: another client's transaction of many
  /// items to the small one makes its observer reload it, and leaves the large one's
  /// alone (both once reloaded, reading the large list for nothing).
  @Test func aHugeTransactionReloadsOnlyTheListItConcerns() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Self.quietRepository(folder.file("db.sqlite"))
    let large = try Self.makeList(repository, "large", items: 20_000)
    let small = try Self.makeList(repository, "small", items: 10)
    let largeRecorder = try Self.record(large)
    let smallRecorder = try Self.record(small)
    let other = try Repository(path: repository.path)
    try other.list("small", metadata: RawJSON.self, item: RawJSON.self)
      .appendItems((0..<30_000).map { RawJSON("\($0)") }, toSection: 0)
    repository.synchronizeObservers()
    // More entries than both lists hold: the log's 30,000 entries and the small list's
    // 30,011 rows are read (about 60,000), not the large list's 20,001 too (74,000).
    #expect(repository.lastFeedRefreshRowsRead < 67_000, "\(repository.lastFeedRefreshRowsRead)")
    TestSupport.expectExact(
      smallRecorder, try ListContents.read(list: "small", path: repository.path))
    #expect(smallRecorder.array.sections[0].items.count == 30_010)
    #expect(largeRecorder.changesets.isEmpty)
  }

  /// A log entry a client wrote with the largest seq there is ends nothing with a trap:
  /// observers refresh, and writes go on or fail with an error.
  @Test func aLogEntryAtTheLargestSeqTrapsNothing() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let recorder = try Self.record(list)
    try Connection(path: repository.path).execute(
      "INSERT INTO changes(seq, kind, op, row_id) VALUES (9223372036854775807, 2, 1, 1)")
    repository.synchronizeObservers()
    repository.synchronizeObservers()
    _ = try? list.appendItem(RawJSON(#""after""#), toSection: 0)
    repository.synchronizeObservers()
    #expect(recorder.error == nil)
  }

  /// Observing inside a write transaction records where this process reads once the
  /// transaction ended (the record's write once waited for the transaction's own lock,
  /// and was silently given up).
  @Test func observingInsideABatchRecordsTheReaderAfterIt() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let array = try repository.write {
      let array = try list.observe()
      try list.appendItem(RawJSON(#""Rome""#), toSection: 0)
      return UncheckedBox(array)
    }
    let foreign = try Connection(path: repository.path)
    #expect(try foreign.scalarInt64("SELECT count(*) FROM change_log_readers") == 1)
    #expect(array.value.sections[0].items.count == 3)
  }

  // MARK: - Reader records

  /// A feed whose observers are all gone removes its reader record, which would hold
  /// pruning back for as long as the process lives.
  @Test func aFeedWithoutObserversGivesUpItsReaderRecord() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let foreign = try Connection(path: repository.path)
    do {
      let array = try list.observe()
      #expect(try foreign.scalarInt64("SELECT count(*) FROM change_log_readers") == 1)
      withExtendedLifetime(array) {}
    }
    repository.synchronizeObservers()
    #expect(try foreign.scalarInt64("SELECT count(*) FROM change_log_readers") == 0)
    // Observing again records it again.
    let array = try list.observe()
    #expect(try foreign.scalarInt64("SELECT count(*) FROM change_log_readers") == 1)
    withExtendedLifetime(array) {}
  }

  /// A reader whose heartbeat is old no longer holds the log back, even when a process
  /// with its id is alive here (another PID namespace's process id means nothing here).
  @Test func aQuietReaderIsGoneWhateverItsProcessID() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let foreign = try Connection(path: repository.path)
    let old = Date().timeIntervalSince1970 - ChangeLog.staleReaderAge * 2
    try foreign.execute(
      "INSERT INTO change_log_readers(pid, seq, heartbeat) VALUES (\(getpid()), 0, \(old))")
    try list.appendItem(RawJSON("1"), toSection: 0)
    try repository.pruneChangeLog()
    #expect(try foreign.scalarInt64("SELECT count(*) FROM change_log_readers") == 0)
    #expect(try foreign.scalarInt64("SELECT count(*) FROM changes") == 0)
  }

  /// A live feed keeps its reader record's heartbeat fresh, however quiet the list.
  @Test func aLiveFeedKeepsItsHeartbeatFresh() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try Self.makeList(repository, "cities", items: 2)
    let array = try list.observe()
    let foreign = try Connection(path: repository.path)
    try foreign.execute("UPDATE change_log_readers SET heartbeat = 0")
    try repository.changeFeed().beatHeart()
    let heartbeat = try #require(
      try foreign.prepare("SELECT heartbeat FROM change_log_readers").firstDouble())
    #expect(heartbeat > Date().timeIntervalSince1970 - 60)
    withExtendedLifetime(array) {}
  }

  // MARK: - Callbacks of other watchers

  /// A watcher tells its own callbacks from another watcher's (all watchers' queues once
  /// carried the same mark: a callback cancelling another watcher skipped the wait that
  /// "no callback after cancel returns" needs).
  @Test func aWatcherKnowsItsOwnQueueFromAnothers() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let first = folder.file("first.sqlite")
    let second = folder.file("second.sqlite")
    _ = try Repository(path: first)
    _ = try Repository(path: second)
    let observed = Locked<[String: Bool]>([:])
    let seen = Signal()
    let watchers = Locked<(DatabaseWatcher?, DatabaseWatcher?)>((nil, nil))
    let secondWatcher = DatabaseWatcher(path: second, fallbackInterval: .seconds(3600)) {
      let own = watchers.withLock { $0.1?.runsOnItsQueue }
      observed.withLock { $0["second in its own"] = own }
    }
    let firstWatcher = DatabaseWatcher(path: first, fallbackInterval: .milliseconds(1)) {
      let (own, other) = watchers.withLock { ($0.0?.runsOnItsQueue, $0.1?.runsOnItsQueue) }
      let done = observed.withLock { observed -> Bool in
        guard let own, let other, observed["first in its own"] == nil else { return false }
        observed["first in its own"] = own
        observed["second in the first's"] = other
        return true
      }
      if done { seen.signal() }
    }
    watchers.withLock { $0 = (firstWatcher, secondWatcher) }
    try seen.wait()
    #expect(observed.withLock { $0["first in its own"] } == true)
    #expect(observed.withLock { $0["second in the first's"] } == false)
    #expect(!secondWatcher.runsOnItsQueue)
    firstWatcher.cancel()
    secondWatcher.cancel()
  }
}

/// A value handed across the batch's closure.
struct UncheckedBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

extension Statement {
  /// The first row's first column as a `Double`.
  func firstDouble() throws -> Double? {
    defer { reset() }
    return try step() ? double(at: 0) : nil
  }
}
