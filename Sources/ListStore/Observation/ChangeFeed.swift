import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

/// The change feed of one repository: the observers of its lists, its own
/// connection to the database, and a watcher that wakes it when another process or
/// SQLite client commits.
///
/// Writes through the repository bring observers up to date inside their own
/// transaction: after the write, before its `COMMIT`, the feed reads the new log
/// entries and the rows they touched through the writer's connection (which sees
/// them), and once the commit succeeded the staged changesets are applied. Commits by
/// others are read by ``refresh()`` through the feed's connection. Both, and every
/// registration of an observer, run under the feed's state lock, which orders them;
/// observers' code runs only when their events are delivered, after every lock is
/// released, so an observer may write to the repository.
///
/// The log is read in pages of ``ChangeLog/pageSize`` entries, with values only for the
/// lists observed here: what a refresh holds grows with the observed lists' changes,
/// never with other lists' transactions. A write stages inside its transaction only
/// what one page holds and no reload; anything larger it leaves to a refresh after its
/// commit, which it waits for, so that the database's write lock is never held for long
/// reads, and never while waiting for this feed's lock.
///
/// A transient failure (the database busy or unreadable for a moment) leaves the
/// observers where they were and retries with a growing delay; only a failure that
/// cannot pass (the schema gone, say) ends their observations, with that error.
final class ChangeFeed: Sendable {
  let engine: any StorageEngine
  let busyTimeout: Duration
  let readOnly: Bool

  /// Orders every reading of the log and every change to observers' state.
  let state = Locked<Void>(())
  /// Touched only while `state` is locked.
  nonisolated(unsafe) let connection: any DatabaseConnection
  /// Touched only while `state` is locked.
  @exclusivity(unchecked) private nonisolated(unsafe) var observers:
    [ObjectIdentifier: FeedObserver] = [:]
  /// How many observers are registered, for writes that check without the lock.
  let observerCount = Atomic<Int>(0)
  /// How many registrations are under way: a write that found no observer checks this
  /// after its commit, since a registration may have read the state before it.
  let registering = Atomic<Int>(0)
  /// The log entry through which every observer has been brought up to date; -1 when
  /// some observer must read again whatever the log says.
  let processedSeq = Atomic<Int64>(0)

  /// Tells the feed when others commit. Never held while the watch is cancelled, which
  /// waits for the watch's callback, which may wait for `state`.
  let watch = Locked<(any ChangeWatch)?>(nil)
  let watchesDatabase: Bool
  /// Tells the watch which commits are the repository's own (``DatabaseConnection/ownCommits``).
  let ownCommits: (any Sendable)?
  /// Why other connections' commits cannot reach this feed's observers (a file read
  /// immutable), or `nil`: observing is refused then, rather than showing a state that
  /// might silently go stale.
  private let unfollowable: String?
  /// Hears when the engine loses or regains its connection.
  let statusHandlers = Locked<[@Sendable (FeedConnectionStatus) -> Void]>([])

  /// Where this process's observers have read, for other processes' pruning.
  let readerRecord = Locked<ReaderRecord>(ReaderRecord())
  /// Whether the record waits for a write transaction to end (so that writes need not
  /// take `readerRecord`'s lock to find out).
  let readerPending = Atomic<Bool>(false)
  /// Keeps the reader record's heartbeat fresh while observers live.
  let heartbeat = Locked<(any DispatchSourceTimer)?>(nil)
  /// The delay before the next retry after a transient failure; zero when none failed.
  let retryDelay = Locked<Duration>(.zero)

  /// Pauses at chosen points, for tests that force an interleaving of threads.
  let hooks = Locked<FeedHooks>(FeedHooks())
  let hooksInstalled = Atomic<Bool>(false)

  /// The engine's errors in users' words, for observers' staging.
  let userError: @Sendable (any Error) -> ListStoreError

  /// Whether the log could not be read for a passing reason: read it again. Touched
  /// only while `state` is locked.
  @exclusivity(unchecked) nonisolated(unsafe) var readAgain = false

  /// The rows read by the last staging that applied log entries, for tests and
  /// benchmarks.
  let lastRefreshRowsRead = Atomic<Int>(0)
  /// How many times the feed read the change log (each staging, in a write or a
  /// refresh), and the rows those reads returned: what `/metrics` counts per commit.
  let logReads = Atomic<Int>(0)
  let logRowsRead = Atomic<Int>(0)
  /// The most log entries one staging held at once (for tests and benchmarks).
  let largestStaging = Atomic<Int>(0)

  /// How many rounds one refresh runs at most before it leaves the rest to a retry.
  static let roundsPerRefresh = 3
  /// The first and the longest delay before retrying after a transient failure.
  static let retryDelays: (first: Duration, longest: Duration) = (.milliseconds(5), .seconds(1))
  /// How often a feed with observers tells other processes that it is alive.
  static let heartbeatInterval: Duration = .seconds(Int64(ChangeLog.staleReaderAge / 4))

  /// Opens the feed's connection to the database `engine` reaches.
  /// - Parameters:
  ///   - engine: The database.
  ///   - busyTimeout: How long its connections wait for a lock.
  ///   - readOnly: Whether the repository opened the database read-only.
  ///   - watchesDatabase: Whether other processes' commits are noticed on their own;
  ///     when `false`, they arrive only through ``refresh()`` (and writes).
  ///   - ownCommits: What tells the repository's own commits apart for the watch: its
  ///     writes deliver them, and a commit that may have failed is read by a refresh.
  /// - Throws: ``ListStoreError`` when the connection cannot be opened.
  init(
    engine: any StorageEngine, busyTimeout: Duration, readOnly: Bool, watchesDatabase: Bool = true,
    ownCommits: (any Sendable)? = nil
  ) throws(ListStoreError) {
    self.engine = engine
    self.ownCommits = ownCommits
    self.busyTimeout = busyTimeout
    self.readOnly = readOnly
    self.watchesDatabase = watchesDatabase
    userError = { error in engine.userError(error, busyTimeout: busyTimeout) }
    connection = try engine.openConnection(for: .feed, busyTimeout: busyTimeout, readOnly: readOnly)
    unfollowable = watchesDatabase ? engine.whyChangesCannotBeFollowed(through: connection) : nil
  }

  deinit {
    heartbeat.withLock { $0?.cancel() }
    watch.withLock { watch in
      defer { watch = nil }
      return watch
    }?.cancel()
    let finished = state.withLock { _ in
      defer { observers.removeAll() }
      for observer in observers.values { observer.finish(failing: nil) }
      return Array(observers.values)
    }
    for observer in finished { observer.deliver() }
    readerRecord.withLock { $0.unregister() }
  }

  // MARK: - Observers

  /// Registers an observer made by `make` from one consistent state of the database,
  /// read through the feed's connection, and starts watching the database when it is
  /// the first. No write or refresh runs between the read and the registration, so the
  /// observer misses nothing committed after the state it starts from.
  /// - Parameters:
  ///   - inBatch: Whether the caller is inside a write transaction of this process,
  ///     which the record of where this process reads must wait for
  ///     (``writePendingReaderRecord()``, once it ended).
  ///   - make: Reads the state and makes the observer.
  /// - Returns: What `make` returns besides the observer.
  /// - Throws: What `make` or reading throws.
  func register<Result>(
    inBatch: Bool = false,
    _ make: (any DatabaseConnection) throws -> (
      observer: FeedObserver, seq: Int64, result: Result
    )
  ) throws -> Result {
    if let reason = unfollowable {
      throw ListStoreError.cannotObserve(path: engine.location, reason: reason)
    }
    // Announced before the state is read (see `committing`).
    registering.add(1, ordering: .sequentiallyConsistent)
    defer { registering.subtract(1, ordering: .sequentiallyConsistent) }
    var outcome: Swift.Result<(Result, Int64), any Error>?
    state.withLock { _ in
      outcome = Swift.Result {
        let made = try connection.transaction(.read) { try make(connection) }
        observers[ObjectIdentifier(made.observer)] = made.observer
        observerCount.store(observers.count, ordering: .sequentiallyConsistent)
        noteProcessed()
        return (made.result, made.seq)
      }
    }
    guard let (result, seq) = try outcome?.get() else {
      throw NeedsReload(reason: "the feed's lock body did not run")
    }
    if watchesDatabase {
      watch.withLock { watch in
        guard watch == nil else { return }
        watch = engine.watch(
          ownCommits: ownCommits,
          onChange: { [weak self] probe in self?.databaseChanged(probe: probe) },
          status: { [weak self] status in self?.report(status) })
      }
    }
    startHeartbeat()
    noteReader(at: seq, deferred: inBatch)
    return result
  }

  /// Stops watching the database and waits for work under way on another thread to
  /// finish; observers complete and get nothing more.
  func shutDown() {
    heartbeat.withLock { timer in
      timer?.cancel()
      timer = nil
    }
    // Taken out first: cancelling waits for a callback under way, which may wait for
    // the state lock, which a writer holds while it asks the watch to rest.
    let stopped = watch.withLock { watch in
      defer { watch = nil }
      return watch
    }
    pause { $0.beforeCancellingWatch }
    stopped?.cancel()
    let finished = state.withLock { _ in
      defer {
        observers.removeAll()
        observerCount.store(0, ordering: .sequentiallyConsistent)
      }
      for observer in observers.values { observer.finish(failing: nil) }
      return Array(observers.values)
    }
    deliver(finished)
    readerRecord.withLock { $0.unregister() }
  }

  /// The observers still wanted; forgets the others. Call with `state` locked.
  func liveObservers() -> [FeedObserver] {
    var live: [FeedObserver] = []
    for (key, observer) in observers {
      if observer.isAlive { live.append(observer) } else { observers[key] = nil }
    }
    observerCount.store(observers.count, ordering: .sequentiallyConsistent)
    return live
  }

  /// Records how far every observer has read, or that one must read again. Call with
  /// `state` locked.
  func noteProcessed() {
    if readAgain {
      processedSeq.store(-1, ordering: .releasing)
      return
    }
    var slowest = Int64.max
    for observer in observers.values {
      if observer.needsRead {
        processedSeq.store(-1, ordering: .releasing)
        return
      }
      slowest = min(slowest, observer.seq)
    }
    if slowest != .max { processedSeq.store(slowest, ordering: .releasing) }
  }

  /// Delivers the events staged for `observers`; call with no lock held.
  func deliver(_ observers: [FeedObserver]) {
    for observer in observers { observer.deliver() }
  }

  /// Whether some observer must read again (after a transient failure, or to reload).
  var needsRefresh: Bool { processedSeq.load(ordering: .acquiring) < 0 }
  // MARK: - Test pauses

  /// Installs `hooks`: from now on, the feed calls them at their points.
  func installHooks(_ hooks: FeedHooks) {
    self.hooks.withLock { $0 = hooks }
    hooksInstalled.store(true, ordering: .releasing)
  }

  @inline(__always)
  func pause(at point: (FeedHooks) -> (@Sendable () -> Void)?) {
    guard hooksInstalled.load(ordering: .acquiring) else { return }
    point(hooks.withLock { $0 })?()
  }
}

/// Points where a test may pause the feed's threads to force an interleaving.
struct FeedHooks: Sendable {
  /// A write holds the state lock, before it stages.
  var whileStagingLocked: (@Sendable () -> Void)?
  /// A refresh is about to wait for the state lock.
  var beforeRefreshLocks: (@Sendable () -> Void)?
  /// ``ChangeFeed/shutDown()`` is about to cancel the watch.
  var beforeCancellingWatch: (@Sendable () -> Void)?
  /// A write that found no observer is about to commit.
  var beforeCommitWithoutObservers: (@Sendable () -> Void)?
  /// The log was read; the observers are about to stage what it says (in the transaction).
  var beforeObserversStage: (@Sendable () -> Void)?
}
