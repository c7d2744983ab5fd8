import Dispatch
import SQLiteKit
import Synchronization

/// One observed list, as the feed drives it.
///
/// The feed calls ``stage(entries:lastSeq:horizon:db:)`` and the closure it returns
/// while holding its state lock — never running observers' code there — and
/// ``deliver()`` after releasing it.
protocol FeedObserver: AnyObject, Sendable {
  /// The last log entry this observer applied.
  var seq: Int64 { get }
  /// Whether anyone still listens; the feed forgets observers that do not.
  var isAlive: Bool { get }
  /// Whether it must read even when the log has nothing new (to recover).
  var needsRead: Bool { get }
  /// Works out what the entries after ``seq`` did (up to `lastSeq`), reading rows
  /// through `db`, which sees the state the entries lead to; `horizon` is how far the
  /// log was pruned. Changes nothing yet: the returned closure, called once that state
  /// is committed, applies it to the observer's array (queuing its event).
  func stage(entries: ArraySlice<ChangeLogEntry>, lastSeq: Int64, horizon: Int64, db: Connection)
    -> () -> Void
  /// Delivers the queued events to the observer's subscribers.
  func deliver()
  /// Ends the observation: the feed is going away.
  func finish()
}

/// The change feed of one repository: the observers of its lists, its own
/// connection to the database, and a watcher that wakes it when another process or
/// SQLite client commits.
///
/// Writes through the repository bring observers up to date inside their own
/// transaction: after the write, before its `COMMIT`, ``stage(db:)`` reads the new log
/// entries and the rows they touched through the writer's connection (which sees
/// them), and once the commit succeeded the staged changesets are applied. Commits by
/// others are read by ``refresh()`` through the feed's connection. Both run under the
/// feed's state lock, which orders them; observers' code runs only in ``deliver()``,
/// after every lock is released, so an observer may write to the repository.
final class ChangeFeed: Sendable {
  private let path: String
  /// Touched only while `state` is locked.
  private nonisolated(unsafe) let connection: Connection
  /// A second connection, used only on the watcher's queue for its cheap check.
  private nonisolated(unsafe) let watcherConnection: Connection?
  /// The log entry through which every observer has been brought up to date.
  private let processedSeq = Atomic<Int64>(0)
  private nonisolated(unsafe) var readerID: Int64?
  private nonisolated(unsafe) var readerSeq: Int64 = -1
  private nonisolated(unsafe) var readerUpdated = ContinuousClock.now

  /// The rows the last staging read from the database, for tests and benchmarks.
  let lastRefreshRowsRead = Atomic<Int>(0)

  /// Orders every reading of the log and every change to observers' state.
  private let state = Mutex<Void>(())
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

  /// Whether any observer is registered (then writes stage their changes).
  var isObserved: Bool { observers.withLock { !$0.isEmpty } }

  /// Runs `body` with the feed's connection inside a read transaction, ordered with
  /// every other use of the log: what it reads is one consistent state.
  func withSnapshot<Result>(_ body: (Connection) throws -> Result) throws -> Result {
    var outcome: Swift.Result<Result, any Error>?
    state.withLock { _ in
      outcome = Swift.Result { try connection.transaction(.deferred) { try body(connection) } }
    }
    switch outcome {
    case .some(let outcome): return try outcome.get()
    case .none: throw NeedsReload(reason: "the feed's lock body did not run")
    }
  }

  /// Adds an observer and starts watching the database when it is the first.
  func add(_ observer: any FeedObserver) {
    observers.withLock { $0[ObjectIdentifier(observer)] = observer }
    watcher.withLock { watcher in
      guard watcher == nil else { return }
      watcher = DatabaseWatcher(path: path) { [weak self] in self?.databaseChanged() }
    }
  }

  /// Stops watching the database and waits for work under way on another thread to
  /// finish; observers get nothing more.
  func shutDown() {
    watcher.withLock { watcher in
      watcher?.cancel()
      watcher = nil
    }
    let finished = observers.withLock { observers in
      defer { observers.removeAll() }
      return Array(observers.values)
    }
    state.withLock { _ in }
    for observer in finished { observer.finish() }
  }

  /// The observers still wanted.
  private func liveObservers() -> [any FeedObserver] {
    observers.withLock { observers in
      for (key, observer) in observers where !observer.isAlive { observers[key] = nil }
      return Array(observers.values)
    }
  }

  // MARK: - Writes through the repository

  /// Runs `write` — a write transaction on `db`, which calls `stage` after its work and
  /// before its `COMMIT` — with the feed's state locked, and applies what was staged
  /// once the transaction committed. Returns the observers to ``deliver(_:)`` to once
  /// every lock is released.
  func observing<Result: Sendable>(
    _ write: (_ stage: () -> Void) throws -> Result, db: Connection
  ) throws -> (result: Result, observers: [any FeedObserver]) {
    let live = liveObservers()
    guard !live.isEmpty else { return (try write {}, []) }
    var installs: [() -> Void] = []
    let result = try state.withLock { _ in
      let result = try write { installs = self.stage(live, db: db) }
      // Committed: the staged state is the database's now.
      for install in installs { install() }
      noteProcessed(live)
      return result
    }
    return (result, live)
  }

  /// Delivers the events staged for `observers`; call with no lock held.
  func deliver(_ observers: [any FeedObserver]) {
    for observer in observers { observer.deliver() }
  }

  /// Stages every observer's changes from the log entries after its position, read
  /// through `db` inside its transaction. Call with `state` locked.
  private func stage(_ live: [any FeedObserver], db: Connection) -> [() -> Void] {
    let rowsBefore = db.rowsRead
    defer { lastRefreshRowsRead.store(db.rowsRead - rowsBefore, ordering: .relaxed) }
    var slowest = Int64.max
    var recovering = false
    for observer in live {
      slowest = min(slowest, observer.seq)
      if observer.needsRead { recovering = true }
    }
    do {
      let (lastSeq, horizon) = try ChangeLog.lastSeqAndHorizon(db: db)
      guard slowest < lastSeq || recovering else { return [] }
      let entries = try ChangeLog.entries(after: max(slowest, horizon), db: db)
      var installs: [() -> Void] = []
      for observer in live where observer.seq < lastSeq || observer.needsRead {
        let start = entries.firstIndex { $0.seq > observer.seq } ?? entries.endIndex
        installs.append(
          observer.stage(entries: entries[start...], lastSeq: lastSeq, horizon: horizon, db: db))
      }
      return installs
    } catch {
      // The log could not be read now; the observers' positions did not move, so the
      // next refresh reads it again.
      return []
    }
  }

  // MARK: - Commits by others

  /// Reads the log through the feed's own connection and delivers every observer's
  /// changes: how commits of other processes and SQLite clients arrive.
  func refresh() {
    var live = liveObservers()
    guard !live.isEmpty else { return }
    var again = true
    while again {
      state.withLock { _ in
        var installs: [() -> Void] = []
        try? connection.transaction(.deferred) { installs = stage(live, db: connection) }
        for install in installs { install() }
        noteProcessed(live)
        updateReader(seq: processedSeq.load(ordering: .relaxed))
      }
      for observer in live { observer.deliver() }
      // An observer that found itself inconsistent reloads on the next round.
      again = live.contains { $0.needsRead }
      live = live.filter { $0.needsRead }
    }
  }

  /// The watcher saw the database change: refresh, unless the log has nothing this
  /// feed has not processed (this process's own commits, which its writes already
  /// delivered). The check runs on the watcher's own connection, without waiting for
  /// work under way.
  private func databaseChanged() {
    if let probe = watcherConnection,
      let (lastSeq, _) = try? ChangeLog.lastSeqAndHorizon(db: probe),
      lastSeq <= processedSeq.load(ordering: .acquiring)
    {
      return
    }
    refresh()
  }

  /// Records how far every observer has read. Call with `state` locked.
  private func noteProcessed(_ live: [any FeedObserver]) {
    var slowest = Int64.max
    for observer in live { slowest = min(slowest, observer.seq) }
    if slowest != Int64.max { processedSeq.store(slowest, ordering: .releasing) }
  }

  /// Records, for pruning in every process, that an observer starts reading at `seq`.
  func noteReader(at seq: Int64) {
    state.withLock { _ in updateReader(seq: min(seq, readerSeq < 0 ? seq : readerSeq), force: true)
    }
  }

  /// Tells other processes' pruning how far this process's observers have read,
  /// at most once a second (it is a write). Call with `state` locked.
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
