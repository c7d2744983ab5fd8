import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

extension ChangeFeed {
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
      // An observer registering now may have read the state before this commit: it
      // announced itself first, so it is seen here, and a refresh brings it this write.
      var racing: Bool {
        registering.load(ordering: .sequentiallyConsistent) > 0
          || observerCount.load(ordering: .sequentiallyConsistent) > 0
      }
      do { try commit() } catch {
        // (The commit may have gone through.)
        if racing { readAfterFailedCommit() }
        throw error
      }
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
      // PostgreSQL over a network: what the staging reads goes with the COMMIT, in one
      // round trip; the commit's outcome still decides whether what was staged is installed.
      if let reads = Self.writeReads(live, dialect: db.dialect) {
        do { try db.sendWithCommit(reads) } catch {
          // (Its COMMIT may have gone through.)
          readAfterFailedCommit()
          throw error
        }
      }
      do {
        staged = try stage(live, db: db, inWrite: true)
      } catch is NeedsReload {
        // A read that did not go with the COMMIT: a refresh reads it after the commit.
      } catch {
        failure = error
      }
      watch.withLock { $0 }?.noteOwnCommit()
      do {
        try commit()
      } catch {
        // Not committed: the observers are where they were. A failed read is the first
        // cause: PostgreSQL aborts the transaction at it, and the commit fails then.
        for observer in live { observer.discard() }
        readAfterFailedCommit()
        throw failure ?? error
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
      do { try commit() } catch {
        readAfterFailedCommit()
        throw error
      }
      return ([], true)
    }
    return outcome
  }

  /// After a commit that failed, where the watch leaves this repository's own commits to
  /// its writes (``ownCommits``, PostgreSQL): the commit's answer may have been lost after
  /// it went through, so a refresh reads the log soon.
  private func readAfterFailedCommit() {
    if ownCommits != nil { scheduleRetry() }
  }

  /// What ``stage(_:db:inWrite:)`` reads in a write, unless an observer must read again
  /// (then it reads nothing): the log's page after the slowest observer. (Where the log
  /// ends is read only when the page does not go on right after that observer: rarely,
  /// and then after the commit, by a refresh.)
  static func writeReads(_ live: [FeedObserver], dialect: SQLDialect) -> [(
    sql: String, values: [SQLValue]
  )]? {
    guard !live.contains(where: \.needsRead), let slowest = live.lazy.map(\.seq).min() else {
      return nil
    }
    return [(dialect.changeLogPage.all, [.integer(slowest)])]
  }

  /// One observer's staged work: applied, once committed, by `install`.
  struct Staged {
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
  func stage(_ live: [FeedObserver], db: any DatabaseConnection, inWrite: Bool) throws
    -> [Staged]?
  {
    let rowsBefore = db.rowsRead
    defer {
      let rows = db.rowsRead - rowsBefore
      lastRefreshRowsRead.store(rows, ordering: .relaxed)
      logReads.add(1, ordering: .relaxed)
      logRowsRead.add(rows, ordering: .relaxed)
    }
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
  func observedLists(_ live: [FeedObserver]) -> [Int64] {
    guard let first = live.first?.listID else { return [] }
    if live.allSatisfy({ $0.listID == first }) { return [first] }
    return Set(live.map(\.listID)).sorted()
  }

  /// Handles a failure to read the log: a transient one is retried, any other ends the
  /// observations with it. Call with `state` locked.
  /// - Returns: Whether the observations ended (their end is then to be delivered).
  func failed(_ error: any Error, observers live: [FeedObserver]) -> Bool {
    let error = engine.userError(error, busyTimeout: busyTimeout)
    if error.isTransient {
      readAgain = true
      return false
    }
    for observer in live { observer.finish(failing: error) }
    return true
  }

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
