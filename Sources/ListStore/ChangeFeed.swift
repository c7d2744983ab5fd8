import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

/// What a staging of log entries works with besides the entries: where they end, whether
/// the observer missed some, the connection to read rows through, and how errors read in
/// users' words on this engine.
@usableFromInline
struct StagingContext {
  /// The seq of the last log entry the staging covers.
  @usableFromInline var lastSeq: Int64
  /// Whether the log was pruned past the observer's position, or holds more of its
  /// entries than a reload costs: the observer reloads its list.
  @usableFromInline var fellBehind: Bool
  /// Sees the state the entries lead to.
  @usableFromInline var db: any DatabaseConnection
  /// Whether `db` is a writer's, in its transaction: an observer that must reload its
  /// list leaves that to a refresh after the commit instead of reading it there.
  @usableFromInline var inWrite: Bool
  /// The engine's errors in users' words.
  @usableFromInline var userError: (any Error) -> ListStoreError
}

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
  /// The observed list.
  let listID: Int64
  private let seqBody: () -> Int64
  private let isAliveBody: () -> Bool
  private let needsReadBody: () -> Bool
  private let rowCountBody: () -> Int
  private let concernsBody: (ChangeLogEntry) -> Bool
  private let stageBody: (ArraySlice<ChangeLogEntry>, StagingContext) -> () -> Void
  private let discardBody: () -> Void
  private let finishBody: (ListStoreError?) -> Void
  private let deliverBody: () -> Void

  @usableFromInline
  init(
    listID: Int64, seq: @escaping () -> Int64, isAlive: @escaping () -> Bool,
    needsRead: @escaping () -> Bool, rowCount: @escaping () -> Int,
    concerns: @escaping (ChangeLogEntry) -> Bool,
    stage: @escaping (ArraySlice<ChangeLogEntry>, StagingContext) -> () -> Void,
    discard: @escaping () -> Void, finish: @escaping (ListStoreError?) -> Void,
    deliver: @escaping () -> Void
  ) {
    self.listID = listID
    seqBody = seq
    isAliveBody = isAlive
    needsReadBody = needsRead
    rowCountBody = rowCount
    concernsBody = concerns
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
  /// How many sections and items its copy of the list holds: what a reload reads.
  var rowCount: Int { rowCountBody() }
  /// Whether `entry` may concern its list (the list, one of its sections, or a row in
  /// one of them, before or after the change).
  func concerns(_ entry: ChangeLogEntry) -> Bool { concernsBody(entry) }

  /// Works out what the entries after ``seq`` did (up to the context's `lastSeq`),
  /// reading rows through the context's connection, which sees the state the entries
  /// lead to. Changes nothing yet: the returned closure, called once that state is
  /// committed, applies it to the observer's array (queuing its event).
  func stage(entries: ArraySlice<ChangeLogEntry>, context: StagingContext) -> () -> Void {
    stageBody(entries, context)
  }

  /// Undoes what the last ``stage(entries:context:)`` prepared, whose state was not
  /// committed; nothing when there is nothing staged.
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
  /// How many registrations are under way: a write that found no observer checks this
  /// after its commit, since a registration may have read the state before it.
  private let registering = Atomic<Int>(0)
  /// The log entry through which every observer has been brought up to date; -1 when
  /// some observer must read again whatever the log says.
  private let processedSeq = Atomic<Int64>(0)

  /// Tells the feed when others commit. Never held while the watch is cancelled, which
  /// waits for the watch's callback, which may wait for `state`.
  private let watch = Locked<(any ChangeWatch)?>(nil)
  private let watchesDatabase: Bool
  /// Hears when the engine loses or regains its connection.
  private let statusHandlers = Locked<[@Sendable (FeedConnectionStatus) -> Void]>([])

  /// Where this process's observers have read, for other processes' pruning.
  private let readerRecord = Locked<ReaderRecord>(ReaderRecord())
  /// Whether the record waits for a write transaction to end (so that writes need not
  /// take `readerRecord`'s lock to find out).
  private let readerPending = Atomic<Bool>(false)
  /// Keeps the reader record's heartbeat fresh while observers live.
  private let heartbeat = Locked<(any DispatchSourceTimer)?>(nil)
  /// The delay before the next retry after a transient failure; zero when none failed.
  private let retryDelay = Locked<Duration>(.zero)

  /// Pauses at chosen points, for tests that force an interleaving of threads.
  let hooks = Locked<FeedHooks>(FeedHooks())
  private let hooksInstalled = Atomic<Bool>(false)

  /// The rows read by the last staging that applied log entries, for tests and
  /// benchmarks.
  let lastRefreshRowsRead = Atomic<Int>(0)
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
  /// - Throws: ``ListStoreError`` when the connection cannot be opened.
  init(
    engine: any StorageEngine, busyTimeout: Duration, readOnly: Bool, watchesDatabase: Bool = true
  ) throws(ListStoreError) {
    self.engine = engine
    self.busyTimeout = busyTimeout
    self.readOnly = readOnly
    self.watchesDatabase = watchesDatabase
    userError = { error in engine.userError(error, busyTimeout: busyTimeout) }
    connection = try engine.openConnection(for: .feed, busyTimeout: busyTimeout, readOnly: readOnly)
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
  private func liveObservers() -> [FeedObserver] {
    var live: [FeedObserver] = []
    for (key, observer) in observers {
      if observer.isAlive { live.append(observer) } else { observers[key] = nil }
    }
    observerCount.store(observers.count, ordering: .sequentiallyConsistent)
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
  /// staged once the commit succeeded.
  ///
  /// The lock is taken only now, not while the transaction's work ran, so that work may
  /// observe lists or read freely; and only when it is free, since a refresh holding it
  /// may read for long: the write then commits without staging and asks for a refresh.
  /// A staging larger than one page of the log, or one that needs an observer to reload
  /// its list, is left to that refresh too.
  /// - Returns: The observers to ``deliver(_:)`` to once every lock is released, and
  ///   whether to ``refresh()`` then, before the write returns, for what was not staged.
  /// - Throws: What `commit` throws; nothing is applied then.
  func committing(db: any DatabaseConnection, _ commit: () throws -> Void) throws
    -> (observers: [FeedObserver], refresh: Bool)
  {
    guard
      observerCount.load(ordering: .sequentiallyConsistent) > 0
        || registering.load(ordering: .sequentiallyConsistent) > 0
    else {
      pause { $0.beforeCommitWithoutObservers }
      try commit()
      // An observer registering now may have read the state before this commit: it
      // announced itself first, so it is seen here, and a refresh brings it this write.
      let racing =
        registering.load(ordering: .sequentiallyConsistent) > 0
        || observerCount.load(ordering: .sequentiallyConsistent) > 0
      return ([], racing)
    }
    let outcome = try state.withLockIfAvailable { _ throws -> ([FeedObserver], Bool) in
      pause { $0.whileStagingLocked }
      let live = liveObservers()
      guard !live.isEmpty else {
        try commit()
        return ([], false)
      }
      readAgain = false
      var staged: [Staged]?
      // A failure to read the log must not undo the write: the observers stay where
      // they were, and read again once it is committed.
      var failure: (any Error)?
      do { staged = try stage(live, db: db, inWrite: true) } catch { failure = error }
      watch.withLock { $0 }?.noteOwnCommit()
      do {
        try commit()
      } catch {
        // Not committed: the observers are where they were.
        for observer in live { observer.discard() }
        throw error
      }
      guard let staged else {
        // Too much for the write's transaction: a refresh reads it after the commit.
        noteProcessed()
        return ([], true)
      }
      // Committed: the staged state is the database's now.
      for work in staged { work.install() }
      let ended = failure.map { failed($0, observers: live) } ?? false
      noteProcessed()
      return (ended ? live : staged.map(\.observer), false)
    }
    guard let outcome else {
      watch.withLock { $0 }?.noteOwnCommit()
      try commit()
      return ([], true)
    }
    return outcome
  }

  /// One observer's staged work: applied, once committed, by `install`.
  private struct Staged {
    var observer: FeedObserver
    var install: () -> Void
  }

  /// Stages every observer's changes from the log entries after its position, read
  /// through `db` inside its transaction, page by page. Call with `state` locked.
  ///
  /// The pruning horizon is asked for after the first page whenever the log does not go
  /// on right after the slowest observer: an observer behind it reloads its list and
  /// needs no entries (one page at most was read for nothing). Values are read only for
  /// the observed lists' entries. The entries an observer needs are held until they are
  /// applied; an observer with more of them than its list has rows (and a page) reloads
  /// its list instead, and the others read on for their own lists.
  /// - Parameters:
  ///   - live: The observers.
  ///   - db: The connection to read through, in a transaction.
  ///   - inWrite: Whether `db` is a writer's, in its transaction: then only what one page
  ///     holds, with no reload, is staged.
  /// - Returns: The staged work, or `nil` (only `inWrite`) when it was left to a refresh.
  /// - Throws: What reading the log throws.
  private func stage(_ live: [FeedObserver], db: any DatabaseConnection, inWrite: Bool) throws
    -> [Staged]?
  {
    let rowsBefore = db.rowsRead
    defer { lastRefreshRowsRead.store(db.rowsRead - rowsBefore, ordering: .relaxed) }
    var slowest = Int64.max
    var recovering = false
    for observer in live {
      slowest = min(slowest, observer.seq)
      if observer.needsRead { recovering = true }
    }
    if inWrite && recovering { return nil }
    // A write reads one page at most in its own transaction, every list's entries: mostly
    // its own. A refresh reads only the observed lists' rows, however many pages.
    var lists = inWrite ? nil : observedLists(live)
    var page = try ChangeLog.page(after: slowest, lists: lists, db: db)
    // The log is pruned from its start only, and numbered one entry after another unless
    // a write was rolled back (PostgreSQL's sequence) or a client chose a number: when it
    // goes on right after the slowest observer, nobody missed anything.
    var horizon: Int64 = .min
    var end = page.lastSeq ?? slowest
    // (A client may have written a seq of its own, Int64.max even.)
    if slowest == .max || page.firstSeq != slowest &+ 1 {
      let (lastSeq, pruned) = try ChangeLog.lastSeqAndHorizon(db: db)
      horizon = pruned
      end = max(end, lastSeq)
      guard slowest < end || recovering else { return [] }
      if inWrite && slowest < horizon { return nil }
      // Those behind the horizon reload; the others read from the slowest of them.
      let readFrom = live.lazy.map(\.seq).filter { $0 >= pruned }.min()
      if let readFrom, readFrom != slowest {
        page = try ChangeLog.page(after: readFrom, lists: lists, db: db)
        end = max(end, page.lastSeq ?? readFrom)
      } else if readFrom == nil {
        page = ChangeLog.Page()
      }
    }
    var entries = page.entries
    // Observers with more entries to apply than their list has rows reload it instead.
    var reloading = Set<ObjectIdentifier>()
    if page.isFull {
      if inWrite { return nil }
      var following = live
      func bound() -> Int {
        following.reduce(ChangeLog.pageSize) { $0 + $1.rowCount + ChangeLog.pageSize }
      }
      var limit = bound()
      while page.isFull, let after = page.lastSeq {
        page = try ChangeLog.page(after: after, lists: lists, db: db)
        entries += page.entries
        end = max(end, page.lastSeq ?? after)
        guard entries.count > limit else { continue }
        for observer in following
        where entries.lazy.filter(observer.concerns).count > observer.rowCount + ChangeLog.pageSize
        {
          reloading.insert(ObjectIdentifier(observer))
        }
        following.removeAll { reloading.contains(ObjectIdentifier($0)) }
        guard !following.isEmpty else {
          // Every observer reloads: nothing more to read but where the log ends.
          entries = []
          end = max(end, try ChangeLog.lastSeq(db: db))
          break
        }
        // The others keep their entries and read on, for their lists alone.
        entries.removeAll { entry in !following.contains { $0.concerns(entry) } }
        lists = observedLists(following)
        limit = bound()
      }
    }
    largestStaging.store(
      max(largestStaging.load(ordering: .relaxed), entries.count), ordering: .relaxed)
    pause { $0.beforeObserversStage }
    var staged: [Staged] = []
    for observer in live where observer.seq < end || observer.needsRead {
      let reloads = reloading.contains(ObjectIdentifier(observer))
      let start = reloads ? entries.endIndex : entries.partitioningIndex { $0.seq > observer.seq }
      let context = StagingContext(
        lastSeq: end, fellBehind: reloads || observer.seq < horizon, db: db, inWrite: inWrite,
        userError: userError)
      staged.append(
        Staged(
          observer: observer, install: observer.stage(entries: entries[start...], context: context)
        ))
    }
    return staged
  }

  /// The sorted ids of the lists `live` observe (one, without allocating a set, for the
  /// usual single list).
  private func observedLists(_ live: [FeedObserver]) -> [Int64] {
    guard let first = live.first?.listID else { return [] }
    if live.allSatisfy({ $0.listID == first }) { return [first] }
    return Set(live.map(\.listID)).sorted()
  }

  /// The engine's errors in users' words, for observers' staging.
  private let userError: @Sendable (any Error) -> ListStoreError

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
    var anyone = true
    for _ in 0..<Self.roundsPerRefresh {
      pause { $0.beforeRefreshLocks }
      // Only observers that had something to apply deliver: a refresh that found
      // nothing new never delivers another thread's events.
      let touched = state.withLock { _ -> [FeedObserver] in
        let live = liveObservers()
        anyone = !live.isEmpty
        guard anyone else { return [] }
        readAgain = false
        var staged: [Staged] = []
        var ended = false
        do {
          try connection.transaction(.read) {
            staged = try stage(live, db: connection, inWrite: false) ?? []
          }
        } catch {
          ended = failed(error, observers: live)
        }
        // (Ended: nothing is queued after the end.)
        if !ended { for work in staged { work.install() } }
        noteProcessed()
        pending = readAgain || live.contains { $0.needsRead }
        return ended ? live : staged.map(\.observer)
      }
      deliver(touched)
      if !pending { break }
    }
    if anyone { updateReader() } else { giveUpReaderRecord() }
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
    DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatchInterval) {
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

  /// Records, for pruning in every process, that an observer starts reading at `seq`;
  /// `deferred`: only once ``writePendingReaderRecord()`` is called (the caller is in a
  /// write transaction that the record's write would wait for).
  private func noteReader(at seq: Int64, deferred: Bool) {
    guard !readOnly else { return }
    readerRecord.withLock { record in
      let seq = min(seq, record.seq < 0 ? seq : record.seq)
      if deferred {
        record.pendingSeq = min(seq, record.pendingSeq ?? seq)
        readerPending.store(true, ordering: .releasing)
      } else {
        record.update(seq: seq, force: true, engine: engine, busyTimeout: busyTimeout)
      }
    }
  }

  /// Writes the record an observer registered inside a write transaction left pending.
  func writePendingReaderRecord() {
    guard readerPending.exchange(false, ordering: .acquiringAndReleasing) else { return }
    readerRecord.withLock { record in
      guard let seq = record.pendingSeq else { return }
      record.pendingSeq = nil
      record.update(seq: seq, force: true, engine: engine, busyTimeout: busyTimeout)
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

  /// Starts the timer that keeps the reader record alive, unless it runs.
  private func startHeartbeat() {
    guard !readOnly else { return }
    heartbeat.withLock { timer in
      guard timer == nil else { return }
      let made = DispatchSource.makeTimerSource(queue: .global())
      let interval = Self.heartbeatInterval.dispatchInterval
      made.schedule(deadline: .now() + interval, repeating: interval)
      made.setEventHandler { [weak self] in self?.beatHeart() }
      made.resume()
      timer = made
    }
  }

  /// Tells other processes that this one still reads (its record's heartbeat), or, when
  /// its observers are all gone, removes its record so that it no longer holds pruning
  /// back. What the heartbeat timer runs.
  func beatHeart() {
    let anyone = state.withLock { _ in !liveObservers().isEmpty }
    guard anyone else {
      giveUpReaderRecord()
      return
    }
    let processed = processedSeq.load(ordering: .acquiring)
    readerRecord.withLock { record in
      record.update(
        seq: record.seq >= 0 ? record.seq : processed, force: true, engine: engine,
        busyTimeout: busyTimeout)
    }
  }

  /// Removes the reader record, unless an observer registered (or began to) since the
  /// caller found none: registrations write the record under the same lock.
  private func giveUpReaderRecord() {
    readerRecord.withLock { record in
      guard observerCount.load(ordering: .sequentiallyConsistent) == 0,
        registering.load(ordering: .sequentiallyConsistent) == 0
      else { return }
      record.unregister()
    }
  }

  // MARK: - Test pauses

  /// Installs `hooks`: from now on, the feed calls them at their points.
  func installHooks(_ hooks: FeedHooks) {
    self.hooks.withLock { $0 = hooks }
    hooksInstalled.store(true, ordering: .releasing)
  }

  @inline(__always)
  private func pause(at point: (FeedHooks) -> (@Sendable () -> Void)?) {
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

extension Duration {
  /// The duration as a dispatch interval (nanoseconds).
  var dispatchInterval: DispatchTimeInterval {
    let (seconds, attoseconds) = components
    return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
  }
}

extension Array where Element == ChangeLogEntry {
  /// The index of the first entry for which `predicate` holds, all entries before it
  /// failing it (binary search).
  func partitioningIndex(where predicate: (ChangeLogEntry) -> Bool) -> Int {
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      if predicate(self[middle]) { high = middle } else { low = middle + 1 }
    }
    return low
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
  /// A position to record once the write transaction it waited for ended.
  var pendingSeq: Int64?

  mutating func update(
    seq: Int64, force: Bool, engine: any StorageEngine, busyTimeout: Duration
  ) {
    guard seq >= 0 else { return }
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
    if (try? ChangeLog.unregisterReader(id, db: connection)) != nil {
      self.id = nil
      seq = -1
    }
  }
}
