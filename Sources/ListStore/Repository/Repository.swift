import FoundationEssentials
import ReactiveCore
import SQLiteKit
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A ListStore database: named lists of sections of items in one SQLite file.
///
/// Every write is one `BEGIN IMMEDIATE` transaction: it happens whole or not at all,
/// waits up to ``busyTimeout`` for other writers (other threads, other processes),
/// and then fails with ``ListStoreError/busy(path:timeout:)``.
/// A repository is safe to use from any thread; its calls are serialised.
///
/// ```swift
/// let repository = try Repository(path: "/tmp/cities.sqlite")
/// let cities = try repository.createList("cities", metadata: SectionMetadata.self, item: String.self)
/// try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
/// try cities.appendItem("Paris", toSection: 0)
/// try cities.appendItem("Berlin", toSection: 0)
/// ```
public final class Repository: Sendable {
  /// Where the database is: its file, or for PostgreSQL its URL without the password.
  public let path: String
  /// How long a write waits for another writer's lock before failing.
  public let busyTimeout: Duration
  /// Whether the database was opened read-only (by request, or because the file
  /// cannot be written); writes then fail with ``ListStoreError/readOnly(path:)``.
  public let isReadOnly: Bool

  /// Serialises every use of `connection`.
  let lock = Locked<Void>(())
  /// Touched only inside `lock.withLock`, which makes the repository `Sendable`.
  nonisolated(unsafe) let connection: any DatabaseConnection
  /// The storage engine: SQLite, or PostgreSQL.
  let engine: any StorageEngine
  /// The change feed, made by the first observation.
  let feedStorage = Locked<ChangeFeed?>(nil)
  /// Writes since the change log was last pruned.
  let writesSincePruning = Atomic<Int>(0)
  /// The thread running a write transaction on `connection` (0 for none), so that
  /// reads and writes it makes from inside join that transaction.
  let batchThread = Atomic<UInt>(0)
  /// Whether observers notice other processes' commits on their own (else only
  /// through ``synchronizeObservers()`` and this repository's writes).
  let watchesDatabase: Bool
  /// The private database behind ``inMemoryPath``, removed when the repository goes.
  let inMemoryDatabase: InMemoryDatabase?
  /// Test pauses (``installHooks(_:)``).
  let hooks = Locked<Hooks>(Hooks())
  let hooksInstalled = Atomic<Bool>(false)

  /// Opens the database at `path`, creating the file and its folders when missing
  /// (unless `createIfMissing` is false) and migrating it to the current schema.
  ///
  /// ```swift
  /// // A reader that must not leave an empty database behind a mistyped path:
  /// let repository = try Repository(path: path, createIfMissing: false)
  /// ```
  ///
  /// `":memory:"` (``inMemoryPath``) opens a fresh, empty database of this repository's
  /// own, removed when the repository is released, or at the latest when the process
  /// exits. It is a real database file in a
  /// private temporary folder — under `/dev/shm`, in memory, where the system has it —
  /// so it behaves exactly as any other: observers, other connections and other
  /// processes (given ``path``, which names the file) all work.
  ///
  /// - Parameters:
  ///   - path: The database file; ``defaultPath(environment:)`` by default, or
  ///     ``inMemoryPath``.
  ///   - busyTimeout: How long a write waits for another writer's lock.
  ///   - readOnly: Open without ever writing (the file must exist).
  ///   - createIfMissing: Whether a missing file (and its folders) is created. When
  ///     false, a missing file throws ``ListStoreError/databaseNotFound(path:)`` and
  ///     nothing is created: no folder, no file, no `-wal` or `-shm`.
  /// - Throws: ``ListStoreError`` when the file is missing (and may not be created),
  ///   is a directory or unreadable, is not a ListStore database, has a newer schema,
  ///   or cannot be created or opened. Nothing is modified then.
  public convenience init(
    path: String = Repository.defaultPath(), busyTimeout: Duration = .seconds(10),
    readOnly: Bool = false, createIfMissing: Bool = true
  ) throws(ListStoreError) {
    try self.init(
      path: path, busyTimeout: busyTimeout, readOnly: readOnly, createIfMissing: createIfMissing,
      maximumPageCount: nil)
  }

  /// Opens the database with its writes limited to `maximumPageCount` pages (SQLite's
  /// `max_page_count`), which stands in for a full disk in tests; without
  /// `watchesDatabase`, other processes' commits reach observers only through
  /// ``synchronizeObservers()`` and this repository's writes, which tests use to
  /// decide how commits are batched.
  package convenience init(
    path: String, busyTimeout: Duration, readOnly: Bool, createIfMissing: Bool = true,
    maximumPageCount: Int?, watchesDatabase: Bool = true
  ) throws(ListStoreError) {
    let inMemoryDatabase = path == Self.inMemoryPath ? try InMemoryDatabase() : nil
    try self.init(
      engine: SQLiteEngine(path: inMemoryDatabase?.path ?? path), busyTimeout: busyTimeout,
      readOnly: readOnly, createIfMissing: createIfMissing || inMemoryDatabase != nil,
      maximumPageCount: maximumPageCount,
      watchesDatabase: watchesDatabase, inMemoryDatabase: inMemoryDatabase)
  }

  /// Opens the database `engine` reaches: how every engine's repository is made.
  package init(
    engine: any StorageEngine, busyTimeout: Duration, readOnly: Bool,
    createIfMissing: Bool = true, maximumPageCount: Int? = nil, watchesDatabase: Bool = true,
    inMemoryDatabase: InMemoryDatabase? = nil
  ) throws(ListStoreError) {
    self.watchesDatabase = watchesDatabase
    let opened = try engine.openRepository(
      busyTimeout: busyTimeout, readOnly: readOnly, createIfMissing: createIfMissing,
      maximumPageCount: maximumPageCount)
    self.engine = engine
    self.inMemoryDatabase = inMemoryDatabase
    self.path = engine.location
    self.busyTimeout = busyTimeout
    self.isReadOnly = opened.isReadOnly
    self.connection = opened.connection
  }

  /// Another connection to the same database, for reads that must not wait for this
  /// repository's writes (a server's snapshots and health checks): read-only, and
  /// observing nothing.
  /// - Returns: The repository.
  /// - Throws: ``ListStoreError`` when the database cannot be opened again.
  package func openReader() throws(ListStoreError) -> Repository {
    try Repository(
      engine: engine, busyTimeout: busyTimeout, readOnly: true, createIfMissing: false,
      watchesDatabase: false)
  }

  /// The database path used when none is given: `$LISTSTORE_DB`, else
  /// `$XDG_DATA_HOME/liststore/liststore.sqlite`, else
  /// `~/.local/share/liststore/liststore.sqlite`.
  /// - Parameter environment: The environment to read; the process's by default.
  /// - Returns: The path.
  public static func defaultPath(
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> String {
    if let path = environment["LISTSTORE_DB"], !path.isEmpty { return path }
    let dataHome: String
    if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
      dataHome = xdg
    } else {
      let home =
        environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        ?? FileManager.default.homeDirectoryForCurrentUser.path
      dataHome = home + "/.local/share"
    }
    return dataHome + "/liststore/liststore.sqlite"
  }

  /// Runs `body` with the connection in a read transaction (one consistent state);
  /// SQLite errors are mapped to ``ListStoreError``. The result is made and returned on
  /// the caller's thread, so it need not be `Sendable`. Inside a batch (``write(_:)``)
  /// on this thread, it reads in the batch's transaction, seeing its writes.
  func read<Result>(_ body: (any DatabaseConnection) throws -> Result) throws(ListStoreError)
    -> Result
  {
    do {
      if batchThread.load(ordering: .acquiring) == currentThreadID() {
        return try connection.transaction(.read) { try body(connection) }
      }
      var outcome: Swift.Result<Result, any Error> = .failure(
        ListStoreError.sqlite(SQLiteError(code: .misuse, message: "the read did not run")))
      lock.withLock { _ in
        outcome = Swift.Result { try connection.transaction(.read) { try body(connection) } }
      }
      return try outcome.get()
    } catch {
      throw mapped(error)
    }
  }

  /// Runs `body` in a `BEGIN IMMEDIATE` transaction, rolled back when it throws; errors
  /// are mapped to ``ListStoreError``.
  ///
  /// When lists of this repository are observed, the transaction also reads what it
  /// changed, just before its `COMMIT`, and the observers' arrays apply it once the
  /// commit succeeded; their events are delivered after every lock is released and
  /// before this returns (see ``StoredList/observe(undecodable:)`` for the one
  /// exception: a write from inside an observer's callback). Inside a batch on this
  /// thread, it runs in a savepoint of the batch's transaction instead.
  func write<Result: Sendable>(_ body: (any DatabaseConnection) throws -> Result)
    throws(ListStoreError)
    -> Result
  {
    do {
      return try transaction(body)
    } catch {
      throw mapped(error)
    }
  }

  /// ``write(_:)`` that leaves errors other than SQLite's as they are.
  func transaction<Result: Sendable>(_ body: (any DatabaseConnection) throws -> Result)
    throws
    -> Result
  {
    let thread = currentThreadID()
    if batchThread.load(ordering: .acquiring) == thread {
      // A write inside a batch: part of the batch's transaction, undone alone if it fails.
      return try connection.savepoint { try body(connection) }
    }
    let outcome = try lock.withLock {
      _ throws -> (result: Result, observers: [FeedObserver], refresh: Bool, feed: ChangeFeed?) in
      if isReadOnly { throw ListStoreError.readOnly(path: path) }
      batchThread.store(thread, ordering: .releasing)
      defer { batchThread.store(0, ordering: .releasing) }
      try connection.begin(.write)
      let outcome: (result: Result, observers: [FeedObserver], refresh: Bool, feed: ChangeFeed?)
      do {
        let result = try body(connection)
        // A replica's commit closes the rows it touched into a write of its outbox.
        if engine.dialect.engine == .sqlite { try ReplicaOutbox.closeWrite(db: connection) }
        // The feed as it is now: `body` may have started observing.
        let feed = feedStorage.withLock { $0 }
        let staged = try feed?.committing(db: connection) { try connection.commit() }
        if let feed {
          outcome = (result, staged?.observers ?? [], staged?.refresh ?? false, feed)
        } else {
          if hooksInstalled.load(ordering: .acquiring) {
            hooks.withLock { $0 }.beforeCommitWithoutFeed?()
          }
          try connection.commit()
          // A first observation may have begun meanwhile, from the state before this
          // commit: its feed, made before it read that state, is seen here.
          let made = feedStorage.withLock { $0 }
          outcome = (result, [], made != nil, made)
        }
      } catch {
        connection.rollback()
        // An observation begun inside the batch records where it reads all the same.
        feedStorage.withLock { $0 }?.writePendingReaderRecord()
        throw error
      }
      if writesSincePruning.add(1, ordering: .relaxed).newValue >= Self.writesBetweenPruning {
        writesSincePruning.store(0, ordering: .relaxed)
        // Best effort: a failure here must not fail the write that just committed.
        try? connection.transaction(.write) { try ChangeLog.prune(db: connection, engine: engine) }
      }
      return outcome
    }
    if let feed = outcome.feed {
      feed.deliver(outcome.observers)
      // What the write did not stage is read now, before the write returns; another
      // thread's refresh may have read it first, so this also waits for deliveries under
      // way. An observer that could not read the log with the write reads it now too.
      if outcome.refresh {
        feed.synchronize()
      } else if feed.needsRefresh {
        feed.refresh()
      }
      feed.writePendingReaderRecord()
    }
    return outcome.result
  }

  /// Pauses for tests that force an interleaving of threads.
  struct Hooks: Sendable {
    /// A write that found no change feed is about to commit.
    var beforeCommitWithoutFeed: (@Sendable () -> Void)?
  }

  /// Installs `hooks`: from now on, writes call them at their points.
  func installHooks(_ hooks: Hooks) {
    self.hooks.withLock { $0 = hooks }
    hooksInstalled.store(true, ordering: .releasing)
  }

  /// Whether the calling thread runs a write transaction of this repository.
  var isInBatchOnThisThread: Bool { batchThread.load(ordering: .acquiring) == currentThreadID() }

  /// How many writes may pass between two prunings of the change log.
  static let writesBetweenPruning = 1000

  /// The change feed, made on first use.
  func changeFeed() throws(ListStoreError) -> ChangeFeed {
    try feedStorage.withLock { feed throws(ListStoreError) -> ChangeFeed in
      if let feed { return feed }
      let made = try ChangeFeed(
        engine: engine, busyTimeout: busyTimeout, readOnly: isReadOnly,
        watchesDatabase: watchesDatabase, ownCommits: connection.ownCommits)
      feed = made
      return made
    }
  }

  /// Brings every observer of this repository up to date with everything committed
  /// so far, by this process or any other, before returning.
  ///
  /// Writes through this repository do this themselves; call it to see another
  /// process's commit at once instead of within the watcher's few milliseconds.
  public func synchronizeObservers() {
    feedStorage.withLock { $0 }?.synchronize()
  }

  /// The database's position in its order of commits: the change log's `seq` of the
  /// last change committed to any list (0 before the first). It never goes backwards,
  /// also after the log is pruned and the database reopened. Inside a batch
  /// (``write(_:)``) on this thread, it is the batch's own last change: the position its
  /// commit will have. An observed array's events carry the same numbers
  /// (`Observable2DArrayEvent.version`).
  /// - Throws: ``ListStoreError`` when the database cannot be read.
  public func changeLogPosition() throws(ListStoreError) -> Int64 {
    try read { db in try ChangeLog.lastSeq(db: db) }
  }

  /// Calls `handler` whenever the change feed loses or regains its connection to the
  /// database server (PostgreSQL's listener; a SQLite file never disconnects). While
  /// disconnected, observers keep their state and retry with a growing delay; once
  /// connected again they catch up with everything committed meanwhile.
  /// - Parameter handler: Called on the feed's own thread.
  /// - Throws: ``ListStoreError`` when the change feed cannot be started.
  public func onConnectionStatusChange(
    _ handler: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) throws(ListStoreError) {
    try changeFeed().onStatusChange(handler)
  }

  /// Ends every observation of this repository: stops watching the database, waits
  /// for a delivery under way to finish, and completes the observers' events. Later
  /// observations start a new feed.
  public func stopObserving() {
    let feed = feedStorage.withLock { feed in
      defer { feed = nil }
      return feed
    }
    feed?.shutDown()
  }

  /// The change-log position through which every observer of this repository has been
  /// brought up to date, or `nil` while nothing observes it (or its observers must read
  /// the log again). With ``changeLogPosition()`` it tells how far observers lag.
  package var observedChangeLogPosition: Int64? {
    guard let feed = feedStorage.withLock({ $0 }) else { return nil }
    let seq = feed.processedSeq.load(ordering: .acquiring)
    return seq < 0 ? nil : seq
  }

  /// How many times the change feed read the change log since it started, and the rows
  /// those reads returned (zero while nothing observes the repository).
  package var changeFeedReads: (reads: Int, rows: Int) {
    guard let feed = feedStorage.withLock({ $0 }) else { return (0, 0) }
    return (feed.logReads.load(ordering: .relaxed), feed.logRowsRead.load(ordering: .relaxed))
  }

  /// How many rows the change feed's last refresh read from the database.
  package var lastFeedRefreshRowsRead: Int {
    feedStorage.withLock { $0 }?.lastRefreshRowsRead.load(ordering: .relaxed) ?? 0
  }

  /// Prunes the change log now: deletes the entries every live observer (in any
  /// process) has read.
  /// - Throws: ``ListStoreError`` when the database cannot be written.
  public func pruneChangeLog() throws(ListStoreError) {
    try write { db in try ChangeLog.prune(db: db, engine: engine) }
  }

  /// SQLite's count of rows changed through this repository's connection since it
  /// opened, triggers included (`sqlite3_total_changes`).
  package func totalChanges() throws(ListStoreError) -> Int {
    try read { db in (db as? SQLiteDatabase)?.connection.totalChanges ?? 0 }
  }

  func mapped(_ error: any Error) -> ListStoreError {
    switch error {
    case let error as PositionKey.InvalidKey: .malformedPosition(error.description)
    default: engine.userError(error, busyTimeout: busyTimeout)
    }
  }
}

/// An id of the calling thread, never 0.
func currentThreadID() -> UInt {
  #if canImport(Glibc)
    UInt(pthread_self())
  #else
    UInt(bitPattern: pthread_self())
  #endif
}
