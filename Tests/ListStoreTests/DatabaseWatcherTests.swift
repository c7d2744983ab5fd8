import Dispatch
import ReactiveCore
import SQLiteKit
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
    // No fallback timer within the test: every call comes from the watch.
    let watcher = DatabaseWatcher(path: path, fallbackInterval: .seconds(3600)) {
      let rows = (try? reader.value.scalarInt64("SELECT count(*) FROM t")) ?? -1
      seen.withLock { $0.append(rows) }
      called.signal()
    }
    defer { watcher.cancel() }
    /// Waits for a call that saw `rows` rows.
    func waitForCall(seeing rows: Int64) -> Bool {
      while !seen.withLock({ $0.contains(rows) }) {
        guard called.wait(timeout: .now() + 30) == .success else { return false }
      }
      return true
    }
    #expect(watcher.isWatchingKernel)
    // Another writer's commit is heard.
    try writer.execute("INSERT INTO t VALUES (1)")
    #expect(waitForCall(seeing: 1))
    // This process is about to commit: the watch rests. What another writer commits
    // meanwhile is seen by the call that comes with the watch's return (nothing else
    // calls: the rows are not this process's, and the timer is an hour away).
    watcher.noteOwnCommit()
    try writer.execute("INSERT INTO t VALUES (2)")
    #expect(waitForCall(seeing: 2))
    // And the watch hears writes again.
    try writer.execute("INSERT INTO t VALUES (3)")
    #expect(waitForCall(seeing: 3))
  }
}
