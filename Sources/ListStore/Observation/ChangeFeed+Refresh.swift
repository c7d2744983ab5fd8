import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

extension ChangeFeed {
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
  func scheduleRetry() {
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
  /// way; with no `probe`, the watch knows the commits to be this repository's own.
  /// Either way, where this process has read is noted for others' pruning.
  func databaseChanged(probe: (any DatabaseConnection)?) {
    guard observerCount.load(ordering: .acquiring) > 0 else { return }
    guard let probe else {
      updateReader()
      return
    }
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

  func report(_ status: FeedConnectionStatus) {
    for handler in statusHandlers.withLock({ $0 }) { handler(status) }
    // Reconnected: whatever was committed meanwhile is in the log.
    if status == .connected { refresh() }
  }
}
