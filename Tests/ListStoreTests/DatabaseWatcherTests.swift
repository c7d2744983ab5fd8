import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// The file watch rests while this process commits, and comes back by itself.
@Suite struct DatabaseWatcherTests {
  let folder = TemporaryDirectory()

  @Test func theWatchRestsWhileThisProcessCommitsAndComesBackWithACheck() throws {
    defer { folder.remove() }
    let path = folder.file("watched.sqlite")
    let writer = try Connection(path: path)
    try writer.execute("PRAGMA journal_mode = WAL; CREATE TABLE t(x)")
    // Each call records how many rows the database holds at that moment.
    let reader = UncheckedSendableBox(try Connection(path: path, mode: .readOnly))
    let seen = Locked<[Int64]>([])
    let called = DispatchSemaphore(value: 0)
    // A fast fallback timer: a commit whose last write to the WAL comes just before the
    // check that its first write started (a writer slowed by a busy machine) shows up in
    // the timer's next call.
    let watcher = DatabaseWatcher(path: path, fallbackInterval: .milliseconds(20)) {
      let rows = (try? reader.value.scalarInt64("SELECT count(*) FROM t")) ?? -1
      seen.withLock { $0.append(rows) }
      called.signal()
    }
    defer { watcher.cancel() }
    /// Waits, call by call, until `condition` holds; gives up after 30 seconds.
    func waitForCall(until condition: () -> Bool) -> Bool {
      let deadline = DispatchTime.now() + 30
      while !condition() {
        guard called.wait(timeout: deadline) == .success else { return false }
      }
      return true
    }
    #expect(watcher.isWatchingKernel)
    try writer.execute("INSERT INTO t VALUES (1)")
    #expect(waitForCall { seen.withLock { $0.contains(1) } })
    // This process is about to commit: the watch rests; what another writer commits
    // meanwhile is still seen, and the watch comes back.
    watcher.noteOwnCommit()
    try writer.execute("INSERT INTO t VALUES (2)")
    #expect(waitForCall { seen.withLock { $0.contains(2) } })
    #expect(waitForCall { watcher.isWatchingKernel })
  }

  /// Watchers made and cancelled one after another while a writer commits: some are
  /// cancelled while their read source is suspended between an event and its check, some
  /// while their watch rests, some while a check is due. None calls back once `cancel()`
  /// returned, and none outlives its cancellation in the event loop (a source freed while
  /// still registered there crashes the process).
  @Test func noCallbackOnceCancelled() throws {
    defer { folder.remove() }
    let path = folder.file("cancelled.sqlite")
    let writer = try Connection(path: path)
    try writer.execute("PRAGMA journal_mode = WAL; CREATE TABLE t(x)")
    let lateCalls = Atomic<Int>(0)
    for round in 0..<scaled(1_000) {
      let cancelled = Atomic<Bool>(false)
      let watcher = DatabaseWatcher(path: path, fallbackInterval: .milliseconds(1)) {
        if cancelled.load(ordering: .acquiring) { lateCalls.add(1, ordering: .relaxed) }
      }
      try writer.execute("INSERT INTO t VALUES (\(round))")
      if round % 3 == 0 { watcher.noteOwnCommit() }
      if round % 2 == 0 { try writer.execute("INSERT INTO t VALUES (\(round))") }
      watcher.cancel()
      cancelled.store(true, ordering: .releasing)
    }
    #expect(lateCalls.load(ordering: .relaxed) == 0)
  }
}
