import Dispatch
import SQLiteKit
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One observed list, as the feed drives it: it reads the log entries after its
/// own position inside the feed's read transaction, and delivers what they did
/// outside it.
protocol FeedObserver: AnyObject, Sendable {
  /// The last log entry this observer applied.
  var seq: Int64 { get }
  /// Whether anyone still listens; the feed forgets observers that do not.
  var isAlive: Bool { get }
  /// Whether it must read even when the log has nothing new (to recover).
  var needsRead: Bool { get }
  /// Reads what the entries after ``seq`` did (up to `lastSeq`), inside the feed's
  /// read transaction; `horizon` is how far the log was pruned.
  func prepare(entries: ArraySlice<ChangeLogEntry>, lastSeq: Int64, horizon: Int64, db: Connection)
  /// Delivers what ``prepare(entries:lastSeq:horizon:db:)`` found to the observer's
  /// subscribers, outside any transaction.
  func deliver()
  /// Ends the observation: the feed is going away.
  func finish()
}

/// The change feed of one repository: its own connection to the database, the
/// observers of its lists, and a watcher that wakes it when another process or
/// SQLite client commits.
///
/// ``refresh()`` reads the log once for all observers and delivers their changesets.
/// It runs after every write through the repository (before the write call
/// returns), and from the watcher for other writers. Refreshes are serialised: a
/// refresh requested from inside an observer's callback (an observer that writes)
/// is run by the refresh already under way on that thread, right after the current
/// delivery; one requested on another thread waits for the current one to finish.
final class ChangeFeed: Sendable {
  private let path: String
  /// Touched only while `drainLock` is held (by the draining thread).
  private nonisolated(unsafe) let connection: Connection
  /// A second connection, used only on the watcher's queue for its cheap check.
  private nonisolated(unsafe) let watcherConnection: Connection?
  /// The log entry through which every observer has been brought up to date.
  private let processedSeq = Atomic<Int64>(0)
  private nonisolated(unsafe) var readerID: Int64?
  private nonisolated(unsafe) var readerSeq: Int64 = -1
  private nonisolated(unsafe) var readerUpdated = ContinuousClock.now

  /// The rows the last refresh that found new log entries read from the database,
  /// for tests and benchmarks.
  let lastRefreshRowsRead = Atomic<Int>(0)

  private let drainLock = Mutex<Void>(())
  /// The thread running a refresh, so a nested request can be recognised.
  private let drainingThread = Atomic<UInt>(0)
  private let refreshRequested = Atomic<Bool>(false)
  private let observers = Mutex<[ObjectIdentifier: any FeedObserver]>([:])
  private let watcher = Mutex<DatabaseWatcher?>(nil)

  init(path: String, busyTimeout: Duration, mode: Connection.OpenMode) throws(ListStoreError) {
    self.path = path
    do {
      connection = try Connection(
        path: path, mode: mode == .readWriteCreate ? .readWrite : mode, busyTimeout: busyTimeout)
      watcherConnection = try Connection(
        path: path, mode: mode == .immutable ? .immutable : .readOnly, busyTimeout: busyTimeout)
    } catch {
      throw ListStoreError.cannotOpen(path: path, reason: "\(error)")
    }
  }

  deinit {
    watcher.withLock { $0?.cancel() }
    for observer in observers.withLock({ Array($0.values) }) { observer.finish() }
    if let readerID { try? ChangeLog.unregisterReader(readerID, db: connection) }
  }

  /// Runs `body` with the feed's connection, serialised with refreshes, inside a
  /// read transaction: what it reads is one consistent state.
  func withSnapshot<Result>(_ body: (Connection) throws -> Result) throws -> Result {
    try exclusively {
      try connection.transaction(.deferred) { try body(connection) }
    }
  }

  /// Records, for pruning in every process, that an observer starts reading at `seq`.
  func noteReader(at seq: Int64) {
    try? exclusively { updateReader(seq: min(seq, readerSeq < 0 ? seq : readerSeq), force: true) }
  }

  /// Adds an observer (created by `make` at a consistent snapshot) and starts
  /// watching the database when it is the first.
  func add(_ observer: any FeedObserver) {
    observers.withLock { $0[ObjectIdentifier(observer)] = observer }
    watcher.withLock { watcher in
      guard watcher == nil else { return }
      watcher = DatabaseWatcher(path: path) { [weak self] in self?.databaseChanged() }
    }
  }

  /// Stops watching the database and waits for a refresh under way on another
  /// thread to finish; observers get nothing more.
  func shutDown() {
    watcher.withLock { watcher in
      watcher?.cancel()
      watcher = nil
    }
    let finished = observers.withLock { observers in
      defer { observers.removeAll() }
      return Array(observers.values)
    }
    _ = try? exclusively { for observer in finished { observer.finish() } }
  }

  func remove(_ observer: any FeedObserver) {
    observers.withLock { $0[ObjectIdentifier(observer)] = nil }
  }

  /// Reads the log and delivers every observer's changes.
  func refresh() {
    let me = currentThreadID()
    if drainingThread.load(ordering: .acquiring) == me {
      refreshRequested.store(true, ordering: .releasing)
      return
    }
    drainLock.withLock { _ in
      drainingThread.store(me, ordering: .releasing)
      defer { drainingThread.store(0, ordering: .releasing) }
      repeat {
        refreshRequested.store(false, ordering: .releasing)
        drainOnce()
      } while refreshRequested.load(ordering: .acquiring)
    }
  }

  private func exclusively<Result>(_ body: () throws -> Result) throws -> Result {
    let me = currentThreadID()
    if drainingThread.load(ordering: .acquiring) == me { return try body() }
    var outcome: Swift.Result<Result, any Error>?
    drainLock.withLock { _ in
      drainingThread.store(me, ordering: .releasing)
      defer { drainingThread.store(0, ordering: .releasing) }
      outcome = Swift.Result { try body() }
    }
    switch outcome {
    case .some(let outcome): return try outcome.get()
    case .none: throw NeedsReload(reason: "the feed's lock body did not run")
    }
  }

  private func drainOnce() {
    var live: [any FeedObserver] = []
    observers.withLock { observers in
      for (key, observer) in observers where !observer.isAlive { observers[key] = nil }
      live = Array(observers.values)
    }
    guard !live.isEmpty else { return }
    let rowsBefore = connection.rowsRead
    var slowest = Int64.max
    var recovering = false
    for observer in live {
      slowest = min(slowest, observer.seq)
      if observer.needsRead { recovering = true }
    }
    do {
      try connection.transaction(.deferred) {
        let (lastSeq, horizon) = try ChangeLog.lastSeqAndHorizon(db: connection)
        guard slowest < lastSeq || recovering else { return }
        let entries = try ChangeLog.entries(after: max(slowest, horizon), db: connection)
        for observer in live where observer.seq < lastSeq || observer.needsRead {
          let start = entries.firstIndex { $0.seq > observer.seq } ?? entries.endIndex
          observer.prepare(
            entries: entries[start...], lastSeq: lastSeq, horizon: horizon, db: connection)
        }
        lastRefreshRowsRead.store(connection.rowsRead - rowsBefore, ordering: .relaxed)
      }
    } catch {
      // The database could not be read now (e.g. locked past the timeout); the next
      // refresh tries again, since observers' positions did not move.
      return
    }
    slowest = Int64.max
    recovering = false
    for observer in live {
      observer.deliver()
      slowest = min(slowest, observer.seq)
      if observer.needsRead { recovering = true }
    }
    processedSeq.store(slowest, ordering: .releasing)
    if recovering { refreshRequested.store(true, ordering: .releasing) }
    updateReader(seq: slowest)
  }

  /// The watcher saw the database change: refresh, unless the log has nothing this
  /// feed has not processed (this process's own commits, which its writes already
  /// delivered). The check runs on the watcher's own connection, without waiting for
  /// a refresh under way.
  private func databaseChanged() {
    if let probe = watcherConnection,
      let (lastSeq, _) = try? ChangeLog.lastSeqAndHorizon(db: probe),
      lastSeq <= processedSeq.load(ordering: .acquiring)
    {
      return
    }
    refresh()
  }

  /// Tells other processes' pruning how far this process's observers have read,
  /// at most once a second (it is a write).
  private func updateReader(seq: Int64, force: Bool = false) {
    let now = ContinuousClock.now
    guard force || (seq != readerSeq && (readerID == nil || now - readerUpdated > .seconds(1)))
    else {
      return
    }
    do {
      try connection.transaction(.immediate) {
        if let readerID {
          try ChangeLog.updateReader(readerID, seq: seq, db: connection)
        } else {
          readerID = try ChangeLog.registerReader(at: seq, db: connection)
        }
      }
      readerSeq = seq
      readerUpdated = now
    } catch {
      // Read-only database or a busy writer: observing still works; pruning may
      // then outrun this process, which reloads if it falls behind.
    }
  }
}

/// A number naming the calling thread, unique among running threads.
private func currentThreadID() -> UInt {
  #if canImport(Glibc)
    UInt(pthread_self())
  #else
    UInt(bitPattern: pthread_self())
  #endif
}
