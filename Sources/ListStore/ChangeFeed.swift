import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

/// One observed list, as the feed drives it: its typed observer's operations, as closures
/// made where the list's `Metadata` and `Item` are concrete (``ListObserver/feedObserver()``),
/// so that this feed, which is not generic, runs them compiled for those types.
///
/// `@unchecked Sendable`, for the reason ``ListObserver`` is: every operation but
/// ``deliver()`` is used only with the feed's state lock held, which orders all of them;
/// ``deliver()`` runs after the lock is released and only asks the observer's array, which
/// is thread-safe, to deliver what was queued. The closures are set once, in `init`.
@usableFromInline
final class FeedObserver: @unchecked Sendable {
  private let seqBody: () -> Int64
  private let isAliveBody: () -> Bool
  private let needsReadBody: () -> Bool
  private let stageBody:
    (ArraySlice<ChangeLogEntry>, Int64, Bool, any DatabaseConnection) -> () -> Void
  private let discardBody: () -> Void
  private let finishBody: (ListStoreError?) -> Void
  private let deliverBody: () -> Void

  @usableFromInline
  init(
    seq: @escaping () -> Int64, isAlive: @escaping () -> Bool, needsRead: @escaping () -> Bool,
    stage:
      @escaping (ArraySlice<ChangeLogEntry>, Int64, Bool, any DatabaseConnection) -> () ->
      Void,
    discard: @escaping () -> Void, finish: @escaping (ListStoreError?) -> Void,
    deliver: @escaping () -> Void
  ) {
    seqBody = seq
    isAliveBody = isAlive
    needsReadBody = needsRead
    stageBody = stage
    discardBody = discard
    finishBody = finish
    deliverBody = deliver
  }

  /// The last log entry this observer applied.
  var seq: Int64 { seqBody() }
  /// Whether anyone still listens; the feed forgets observers that do not.
  var isAlive: Bool { isAliveBody() }
  /// Whether it must read even when the log has nothing new: to reload after its
  /// array disagreed with the store, or to retry after a transient failure.
  var needsRead: Bool { needsReadBody() }

  /// Works out what the entries after ``seq`` did (up to `lastSeq`), reading rows
  /// through `db`, which sees the state the entries lead to; `fellBehind` says that the
  /// log was pruned past ``seq`` (the observer must reload). Changes nothing yet: the
  /// returned closure, called once that state is committed, applies it to the observer's
  /// array (queuing its event).
  func stage(
    entries: ArraySlice<ChangeLogEntry>, lastSeq: Int64, fellBehind: Bool,
    db: any DatabaseConnection
  ) -> () -> Void {
    stageBody(entries, lastSeq, fellBehind, db)
  }

  /// Undoes what the last ``stage(entries:lastSeq:fellBehind:db:)`` prepared, whose state
  /// was not committed; nothing when there is nothing staged.
  func discard() { discardBody() }

  /// Queues the end of the observation, failing with `error`, or completing when it is
  /// `nil`; nothing is staged any more.
  func finish(failing error: ListStoreError?) { finishBody(error) }

  /// Delivers the queued events to the observer's subscribers.
  func deliver() { deliverBody() }
}

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
/// A transient failure (the database busy or unreadable for a moment) leaves the
/// observers where they were and retries with a growing delay; only a failure that
/// cannot pass (the schema gone, say) ends their observations, with that error.
final class ChangeFeed: Sendable {
  private let engine: any StorageEngine
  private let busyTimeout: Duration
  private let readOnly: Bool

  /// Orders every reading of the log and every change to observers' state.
  private let state = Locked<Void>(())
  /// Touched only while `state` is locked.
  private nonisolated(unsafe) let connection: any DatabaseConnection
  /// Touched only while `state` is locked.
  @exclusivity(unchecked) private nonisolated(unsafe) var observers:
    [ObjectIdentifier: FeedObserver] = [:]
  /// How many observers are registered, for writes that check without the lock.
  private let observerCount = Atomic<Int>(0)
  /// The log entry through which every observer has been brought up to date; -1 when
  /// some observer must read again whatever the log says.
  private let processedSeq = Atomic<Int64>(0)

  /// Tells the feed when others commit.
  private let watch = Locked<(any ChangeWatch)?>(nil)
  private let watchesDatabase: Bool
  /// Hears when the engine loses or regains its connection.
  private let statusHandlers = Locked<[@Sendable (FeedConnectionStatus) -> Void]>([])

  /// Where this process's observers have read, for other processes' pruning.
  private let readerRecord = Locked<ReaderRecord>(ReaderRecord())
  /// The delay before the next retry after a transient failure; zero when none failed.
  private let retryDelay = Locked<Duration>(.zero)

  /// The rows read by the last staging that applied log entries, for tests and
  /// benchmarks.
  let lastRefreshRowsRead = Atomic<Int>(0)

  /// How many rounds one refresh runs at most before it leaves the rest to a retry.
  static let roundsPerRefresh = 3
  /// The first and the longest delay before retrying after a transient failure.
  static let retryDelays: (first: Duration, longest: Duration) = (.milliseconds(5), .seconds(1))

  /// Opens the feed's connection to the database `engine` reaches.
  /// - Parameters:
  ///   - engine: The database.
  ///   - busyTimeout: How long its connections wait for a lock.
  ///   - readOnly: Whether the repository opened the database read-only.
  ///   - watchesDatabase: Whether other processes' commits are noticed on their own;
  ///     when `false`, they arrive only through ``refresh()`` (and writes).
  /// - Throws: ``ListStoreError`` when the connection cannot be opened.
  init(
    engine: any StorageEngine, busyTimeout: Duration, readOnly: Bool, watchesDatabase: Bool = true
  ) throws(ListStoreError) {
    self.engine = engine
    self.busyTimeout = busyTimeout
    self.readOnly = readOnly
    self.watchesDatabase = watchesDatabase
    connection = try engine.openConnection(for: .feed, busyTimeout: busyTimeout, readOnly: readOnly)
  }

  deinit {
    watch.withLock { $0?.cancel() }
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
  /// - Returns: What `make` returns besides the observer.
  func register<Result>(
    _ make: (any DatabaseConnection) throws -> (
      observer: FeedObserver, seq: Int64, result: Result
    )
  ) throws -> Result {
    var outcome: Swift.Result<(Result, Int64), any Error>?
    state.withLock { _ in
      outcome = Swift.Result {
        let made = try connection.transaction(.read) { try make(connection) }
        observers[ObjectIdentifier(made.observer)] = made.observer
        observerCount.store(observers.count, ordering: .releasing)
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
          onChange: { [weak self] probe in self?.databaseChanged(probe: probe) },
          status: { [weak self] status in self?.report(status) })
      }
    }
    noteReader(at: seq)
    return result
  }

  /// Stops watching the database and waits for work under way on another thread to
  /// finish; observers complete and get nothing more.
  func shutDown() {
    watch.withLock { watch in
      watch?.cancel()
      watch = nil
    }
    let finished = state.withLock { _ in
      defer {
        observers.removeAll()
        observerCount.store(0, ordering: .releasing)
      }
      for observer in observers.values { observer.finish(failing: nil) }
      return Array(observers.values)
    }
    deliver(finished)
  }

  /// The observers still wanted; forgets the others. Call with `state` locked.
  private func liveObservers() -> [FeedObserver] {
    var live: [FeedObserver] = []
    for (key, observer) in observers {
      if observer.isAlive { live.append(observer) } else { observers[key] = nil }
    }
    observerCount.store(observers.count, ordering: .releasing)
    return live
  }

  /// Records how far every observer has read, or that one must read again. Call with
  /// `state` locked.
  private func noteProcessed() {
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

  // MARK: - Writes through the repository

  /// Commits the write transaction open on `db` with `commit`, staging the observers'
  /// changes first: with the feed's state locked, it reads the new log entries and the
  /// rows they touched through `db` (which sees them), commits, and applies what was
  /// staged once the commit succeeded. Returns the observers to ``deliver(_:)`` to once
  /// every lock is released.
  ///
  /// The lock is taken only now, not while the transaction's work ran, so that work may
  /// observe lists or read freely.
  /// - Throws: What `commit` throws; nothing is applied then.
  func committing(db: any DatabaseConnection, _ commit: () throws -> Void) throws
    -> [FeedObserver]
  {
    guard observerCount.load(ordering: .acquiring) > 0 else {
      try commit()
      return []
    }
    return try state.withLock { _ in
      let live = liveObservers()
      guard !live.isEmpty else {
        try commit()
        return []
      }
      readAgain = false
      var staged: [Staged] = []
      // A failure to read the log must not undo the write: the observers stay where
      // they were, and read again once it is committed.
      var failure: (any Error)?
      do { staged = try stage(live, db: db) } catch { failure = error }
      watch.withLock { $0 }?.noteOwnCommit()
      do {
        try commit()
      } catch {
        // Not committed: the observers are where they were.
        for observer in live { observer.discard() }
        throw error
      }
      // Committed: the staged state is the database's now.
      for work in staged { work.install() }
      let ended = failure.map { failed($0, observers: live) } ?? false
      noteProcessed()
      return ended ? live : staged.map(\.observer)
    }
  }

  /// One observer's staged work: applied, once committed, by `install`.
  private struct Staged {
    var observer: FeedObserver
    var install: () -> Void
  }

  /// Stages every observer's changes from the log entries after its position, read
  /// through `db` inside its transaction. Call with `state` locked.
  private func stage(_ live: [FeedObserver], db: any DatabaseConnection) throws -> [Staged] {
    let rowsBefore = db.rowsRead
    var slowest = Int64.max
    var recovering = false
    for observer in live {
      slowest = min(slowest, observer.seq)
      if observer.needsRead { recovering = true }
    }
    // The log after the slowest observer, with the rows it names, in one read; only
    // when it has nothing does the feed ask where the log ends (an observer may have
    // fallen behind the pruned log, or must read anyway).
    let entries = try ChangeLog.entries(after: slowest, db: db)
    let lastSeq: Int64
    var horizon: Int64?
    if let last = entries.last {
      lastSeq = last.seq
    } else {
      let (seq, pruned) = try ChangeLog.lastSeqAndHorizon(db: db)
      (lastSeq, horizon) = (seq, pruned)
      guard slowest < lastSeq || recovering else { return [] }
    }
    var staged: [Staged] = []
    for observer in live where observer.seq < lastSeq || observer.needsRead {
      let start = entries.firstIndex { $0.seq > observer.seq } ?? entries.endIndex
      // The log is pruned from its start only, and its entries are numbered one after
      // another unless a write was rolled back (PostgreSQL's sequence) or a client chose
      // a number: an observer whose next entry follows its position, or that has read
      // every entry, missed none. Only for another does the feed ask how far the log was
      // pruned.
      let missedNone =
        observer.seq >= lastSeq
        || (start < entries.endIndex && entries[start].seq == observer.seq + 1)
      var fellBehind = false
      if !missedNone {
        let pruned = try horizon ?? ChangeLog.horizon(db: db)
        horizon = pruned
        fellBehind = observer.seq < pruned
      }
      staged.append(
        Staged(
          observer: observer,
          install: observer.stage(
            entries: entries[start...], lastSeq: lastSeq, fellBehind: fellBehind, db: db)))
    }
    lastRefreshRowsRead.store(db.rowsRead - rowsBefore, ordering: .relaxed)
    return staged
  }

  /// Handles a failure to read the log: a transient one is retried, any other ends the
  /// observations with it. Call with `state` locked.
  /// - Returns: Whether the observations ended (their end is then to be delivered).
  private func failed(_ error: any Error, observers live: [FeedObserver]) -> Bool {
    let error = engine.userError(error, busyTimeout: busyTimeout)
    if error.isTransient {
      readAgain = true
      return false
    }
    for observer in live { observer.finish(failing: error) }
    return true
  }

  /// Whether the log could not be read for a passing reason: read it again. Touched
  /// only while `state` is locked.
  @exclusivity(unchecked) private nonisolated(unsafe) var readAgain = false

  // MARK: - Commits by others

  /// Reads the log through the feed's own connection and delivers every observer's
  /// changes: how commits of other processes and SQLite clients arrive. An observer
  /// that must read again (to reload, or after a transient failure) gets up to
  /// ``roundsPerRefresh`` rounds; then retries are scheduled with a growing delay.
  func refresh() {
    var pending = false
    for _ in 0..<Self.roundsPerRefresh {
      // Only observers that had something to apply deliver: a refresh that found
      // nothing new never delivers another thread's events.
      let touched = state.withLock { _ -> [FeedObserver] in
        let live = liveObservers()
        guard !live.isEmpty else { return [] }
        readAgain = false
        var staged: [Staged] = []
        var ended = false
        do {
          try connection.transaction(.read) { staged = try stage(live, db: connection) }
        } catch {
          ended = failed(error, observers: live)
        }
        for work in staged { work.install() }
        noteProcessed()
        pending = readAgain || live.contains { $0.needsRead }
        return ended ? live : staged.map(\.observer)
      }
      deliver(touched)
      if !pending { break }
    }
    updateReader()
    if pending { scheduleRetry() } else { retryDelay.withLock { $0 = .zero } }
  }

  /// Refreshes, then waits until every observer's queued events are delivered, including
  /// those another thread (the watch reacting to the same commit, say) installed but is
  /// still delivering: what ``Repository/synchronizeObservers()`` promises.
  func synchronize() {
    refresh()
    deliver(state.withLock { _ in liveObservers() })
  }

  /// Refreshes again after a delay that doubles with every consecutive retry.
  private func scheduleRetry() {
    let delay = retryDelay.withLock { delay -> Duration in
      delay =
        delay == .zero ? Self.retryDelays.first : min(delay * 2, Self.retryDelays.longest)
      return delay
    }
    let (seconds, attoseconds) = delay.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
      [weak self] in self?.refresh()
    }
  }

  /// The watch saw a commit: refresh, unless the log has nothing this feed has not
  /// processed (this process's own commits, which its writes already delivered). The
  /// check runs on the watch's own connection, `probe`, without waiting for work under
  /// way.
  private func databaseChanged(probe: any DatabaseConnection) {
    guard observerCount.load(ordering: .acquiring) > 0 else { return }
    if let (lastSeq, _) = try? ChangeLog.lastSeqAndHorizon(db: probe),
      lastSeq <= processedSeq.load(ordering: .acquiring)
    {
      updateReader()
      return
    }
    refresh()
  }

  /// Calls `handler` whenever the engine loses or regains its connection to the
  /// database (PostgreSQL's listener); SQLite never does.
  func onStatusChange(_ handler: @escaping @Sendable (FeedConnectionStatus) -> Void) {
    statusHandlers.withLock { $0.append(handler) }
  }

  private func report(_ status: FeedConnectionStatus) {
    for handler in statusHandlers.withLock({ $0 }) { handler(status) }
    // Reconnected: whatever was committed meanwhile is in the log.
    if status == .connected { refresh() }
  }

  // MARK: - Reader positions for pruning

  /// Records, for pruning in every process, that an observer starts reading at `seq`.
  private func noteReader(at seq: Int64) {
    guard !readOnly else { return }
    readerRecord.withLock { record in
      record.update(
        seq: min(seq, record.seq < 0 ? seq : record.seq), force: true, engine: engine,
        busyTimeout: busyTimeout)
    }
  }

  /// Tells other processes' pruning how far this process's observers have read, at
  /// most once a second (it is a write). Never runs under the state lock, so a writer
  /// in another process delays only this bookkeeping, never this process's writes.
  private func updateReader() {
    let seq = processedSeq.load(ordering: .acquiring)
    guard seq >= 0, !readOnly else { return }
    readerRecord.withLock {
      $0.update(seq: seq, force: false, engine: engine, busyTimeout: busyTimeout)
    }
  }
}

/// This process's row in `change_log_readers`, written through a connection of its
/// own that never waits long for the write lock: the row is a hint for pruning, and
/// pruning past a reader only makes that reader reload.
private struct ReaderRecord {
  /// Opened on first use.
  var connection: (any DatabaseConnection)?
  var id: Int64?
  var process: Int64 = 0
  var seq: Int64 = -1
  var updated = ContinuousClock.now

  mutating func update(
    seq: Int64, force: Bool, engine: any StorageEngine, busyTimeout: Duration
  ) {
    let now = ContinuousClock.now
    guard force || (seq != self.seq && (id == nil || now - updated > .seconds(1))) else { return }
    do {
      if connection == nil {
        let opened = try engine.openConnection(
          for: .bookkeeping, busyTimeout: busyTimeout, readOnly: false)
        process = try engine.readerProcessID(db: opened)
        connection = opened
      }
      guard let connection else { return }
      try connection.transaction(.write) {
        if let id {
          try ChangeLog.updateReader(id, seq: seq, process: process, db: connection)
        } else {
          id = try ChangeLog.registerReader(at: seq, process: process, db: connection)
        }
      }
      self.seq = seq
      updated = now
    } catch {
      // A read-only database or a busy writer: observing still works; pruning may
      // then outrun this process, which reloads if it falls behind.
    }
  }

  mutating func unregister() {
    guard let id, let connection else { return }
    try? ChangeLog.unregisterReader(id, db: connection)
    self.id = nil
  }
}
