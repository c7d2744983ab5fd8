import Foundation
import Observable2D
import PostgreSQLKit
import PostgresTestSupport
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// Faults while observers watch, on both engines: sessions terminated and the server
/// restarted, a reader lagging past the pruned log, a loop slower than the writers, a
/// thousand observers registering and cancelling while others write, a disk that fills.
/// Each ends with every observer's array equal to a fresh read, and with no callback once
/// the observation was stopped.
@Suite struct FaultSuiteTests {
  typealias RawList = StoredList<RawJSON, RawJSON>

  /// `count` callbacks of a subscription, and whether any came after the observation was
  /// stopped.
  final class CallbackCounter: @unchecked Sendable {
    // Touched only under `lock`.
    private let lock = NSLock()
    private var count = 0
    private var stopped = false
    private var late = 0

    func called() {
      lock.withLock {
        count += 1
        if stopped { late += 1 }
      }
    }
    func stop() { lock.withLock { stopped = true } }
    var calls: Int { lock.withLock { count } }
    var callsAfterStop: Int { lock.withLock { late } }
  }

  static func makeList(_ repository: Repository, _ name: String, items: Int) throws -> RawList {
    let list = try repository.createList(name, metadata: RawJSON.self, item: RawJSON.self)
    for section in 0..<2 {
      try list.appendSection(RawJSON(#"{"header":"\#(name) \#(section)"}"#))
      try list.appendItems((0..<items).map { RawJSON("\($0)") }, toSection: section)
    }
    return list
  }

  /// Writes `count` random changes to `list` (adds, moves, updates, removes).
  static func scramble(_ list: RawList, count: Int, seed: UInt64) throws {
    var random = SeededGenerator(seed: seed)
    for step in 0..<count {
      let section = Int.random(in: 0..<2, using: &random)
      let rows = try list.numberOfItems(inSection: section)
      switch Int.random(in: 0..<4, using: &random) {
      case 0 where rows > 1:
        try list.moveItem(
          from: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]),
          to: IndexPath(indexes: [1 - section, 0]))
      case 1 where rows > 0:
        try list.replaceItem(
          at: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]),
          with: RawJSON("\"s\(seed)-\(step)\""))
      case 2 where rows > 3:
        _ = try list.removeItem(
          at: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]))
      default:
        try list.insert(
          item: RawJSON("\(step)"),
          at: IndexPath(indexes: [section, Int.random(in: 0...rows, using: &random)]))
      }
    }
  }

  static func isExact(_ array: Observable2DArray<RawJSON, RawJSON>, _ truth: ListContents?)
    -> Bool
  {
    ListContents(array.sections) == truth
  }

  // MARK: - A reader lagging past the pruned log

  /// A repository whose refresh is held while another writes and prunes the log past it
  /// (its reader record gone, as a stale one would be) catches up by reloading.
  @Test(arguments: TestEngine.tested)
  func aReaderLaggingPastThePrunedLogCatchesUp(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let lagging = try database.openRepository()
    let list = try Self.makeList(lagging, "l", items: 20)
    let recorder = ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
    let held = Signal()
    let release = Signal()
    let armed = Atomic<Bool>(true)
    try lagging.changeFeed().installHooks(
      FeedHooks(beforeRefreshLocks: {
        guard armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        held.signal()
        try? release.wait()
      }))
    let writer = try database.openRepository()
    let theirs = try writer.list("l", metadata: RawJSON.self, item: RawJSON.self)
    try Self.scramble(theirs, count: 1, seed: 1)
    try held.wait()
    try Self.scramble(theirs, count: 60, seed: 2)
    try database.foreign().execute("DELETE FROM change_log_readers")
    try writer.pruneChangeLog()
    release.signal()
    let truth = try database.contents(list: "l")
    #expect(recorder.wait { Self.isExact($0.array, truth) })
    #expect(recorder.problems.isEmpty && recorder.error == nil)
  }

  // MARK: - A loop slower than the writers

  /// A `for try await` loop that starts only after 400 commits receives them coalesced
  /// (never more than the buffer's limit waits), and replaying what it received gives
  /// the list as it is.
  @Test(arguments: TestEngine.tested)
  func aLoopSlowerThanTheWritersEndsExact(engine: TestEngine) async throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try Self.makeList(repository, "l", items: 10)
    let array = try list.observe()
    let start = array.sections
    let stream = array.changesets(bufferingLimit: 8)
    let other = try database.openRepository()
    let theirs = try other.list("l", metadata: RawJSON.self, item: RawJSON.self)
    try Self.scramble(list, count: 200, seed: 3)
    try Self.scramble(theirs, count: 200, seed: 4)
    repository.synchronizeObservers()
    let truth = try database.contents(list: "l")
    var state = start
    var received = 0
    for try await changeset in stream {
      try changeset.validate(against: state)
      state = try changeset.applied(to: state)
      received += 1
      if ListContents(state) == truth { break }
    }
    #expect(ListContents(state) == truth)
    #expect(received <= 9, "\(received) changesets for 400 commits")
  }

  // MARK: - Many observers coming and going

  /// A thousand observers register on one repository from four threads, half of them
  /// cancelled at once, while a thread of the same repository and another repository
  /// write: every observer kept equals a fresh read, and once the repository stopped
  /// observing, another client's writes call nobody back.
  @Test(arguments: TestEngine.tested)
  func aThousandObserversComeAndGoWhileOthersWrite(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let lists = try ["a", "b"].map { try Self.makeList(repository, $0, items: 5) }
    let other = try database.openRepository()
    let counter = CallbackCounter()
    let kept = Locked<[(list: String, array: Observable2DArray<RawJSON, RawJSON>)]>([])
    let bag = Locked<[any Disposable]>([])
    let mine = BackgroundThread { try Self.scramble(lists[0], count: 100, seed: 5) }
    let theirs = BackgroundThread {
      try Self.scramble(
        other.list("b", metadata: RawJSON.self, item: RawJSON.self), count: 100, seed: 6)
    }
    let registrars = (0..<4).map { thread in
      BackgroundThread {
        var random = SeededGenerator(seed: UInt64(10 + thread))
        for _ in 0..<scaled(250) {
          let list = lists[Int.random(in: 0..<2, using: &random)]
          let array = try list.observe()
          let subscription = array.observeNext { _ in counter.called() }
          if Bool.random(using: &random) {
            subscription.dispose()
          } else {
            bag.withLock { $0.append(subscription) }
            kept.withLock { $0.append((list.name, array)) }
          }
        }
      }
    }
    for registrar in registrars { try registrar.join() }
    try mine.join()
    try theirs.join()
    // One write once every observer is in place, so that the kept ones of "a" are called
    // back whatever the threads' timing (on busy cores the writers may finish first).
    try Self.scramble(lists[0], count: 1, seed: 8)
    repository.synchronizeObservers()
    let truth = try ["a": database.contents(list: "a"), "b": database.contents(list: "b")]
    let observers = kept.withLock { $0 }
    #expect(observers.count > scaled(250))
    let inexact = observers.filter { !Self.isExact($0.array, truth[$0.list] ?? nil) }
    #expect(inexact.isEmpty, "\(inexact.count) of \(observers.count) observers differ")
    #expect(counter.calls > 0)

    repository.stopObserving()
    counter.stop()
    let lateWriter = try other.list("a", metadata: RawJSON.self, item: RawJSON.self)
    let witness = ArrayRecorder(
      try lateWriter.observe(), describe: { $0.text }, header: { $0.text })
    try Self.scramble(lateWriter, count: 10, seed: 7)
    // Another observer of the database saw the writes; the stopped one called nobody.
    #expect(witness.changesets.count == 10)
    #expect(counter.callsAfterStop == 0)
    withExtendedLifetime(bag) {}
  }

  // MARK: - A disk that fills

  /// Writes fail once the file may grow no more (SQLite's page limit stands in for a full
  /// disk) while observers of this repository stage them and another repository's
  /// observer reads them: every failed write is reported and emits nothing, and every
  /// observer stays exact, also once space is freed and writes succeed again.
  @Test func aDiskThatFillsWhileObserversStageLeavesThemExact() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let path = folder.file("db.sqlite")
    let setup = try Repository(path: path)
    _ = try Self.makeList(setup, "l", items: 5)
    let pages = try #require(try Connection(path: path).scalarInt64("PRAGMA page_count"))
    let repository = try Repository(
      path: path, busyTimeout: .seconds(10), readOnly: false,
      maximumPageCount: Int(pages) + 40)
    let list = try repository.list("l", metadata: RawJSON.self, item: RawJSON.self)
    let here = ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
    let elsewhere = try Repository(path: path)
    let there = ArrayRecorder(
      try elsewhere.list("l", metadata: RawJSON.self, item: RawJSON.self).observe(),
      describe: { $0.text }, header: { $0.text })
    let big = RawJSON("\"" + String(repeating: "x", count: 3000) + "\"")
    var failures = 0
    for _ in 0..<200 {
      do {
        try list.appendItem(big, toSection: 0)
      } catch ListStoreError.diskFull {
        failures += 1
        if failures == 5 { break }
      }
    }
    #expect(failures == 5)
    elsewhere.synchronizeObservers()
    let full = try ListContents.read(list: "l", path: path)
    #expect(ListContents(here.array.sections) == full)
    #expect(there.wait { ListContents($0.array.sections) == full })
    // Space freed: writes go on, observed.
    for _ in 0..<5 { _ = try list.removeItem(at: IndexPath(indexes: [0, 5])) }
    try list.appendItem(RawJSON(#""fits""#), toSection: 1)
    elsewhere.synchronizeObservers()
    let after = try ListContents.read(list: "l", path: path)
    #expect(ListContents(here.array.sections) == after)
    #expect(there.wait { ListContents($0.array.sections) == after })
    #expect(here.problems.isEmpty && there.problems.isEmpty)
    #expect(here.error == nil && there.error == nil)
  }
}

/// Server faults on PostgreSQL: the observing repository's sessions terminated, then the
/// server restarted, while another client writes.
@Suite(.postgres) struct ServerFaultSuiteTests {
  @Test func observersStayExactThroughTerminatedSessionsAndARestart() throws {
    // A server of its own: restarting the shared one would disturb other tests.
    let server = try TestPostgresServer.start()
    defer { server.stop() }
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    let repository = try Repository.open(database.location(applicationName: "faulty"))
    let lists = try ["a", "b"].map { try FaultSuiteTests.makeList(repository, $0, items: 5) }
    let recorders = try lists.map {
      ArrayRecorder(try $0.observe(), describe: { $0.text }, header: { $0.text })
    }
    let counter = FaultSuiteTests.CallbackCounter()
    let subscription = try lists[0].observe().observeNext { _ in counter.called() }
    defer { subscription.dispose() }

    /// Another client's writes, once the server accepts connections again.
    func write(_ count: Int, seed: UInt64) throws {
      var other: Repository?
      #expect(
        pollUntil {
          other = try? Repository.open(database.location)
          return other != nil
        })
      let list = try #require(other).list("b", metadata: RawJSON.self, item: RawJSON.self)
      try FaultSuiteTests.scramble(list, count: count, seed: seed)
    }
    try write(20, seed: 1)
    let admin = try PGConnection(database.location)
    try admin.execute(
      """
      SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
      """)
    try write(20, seed: 2)
    // This repository's own session was terminated too: its next write fails with the lost
    // connection (nothing written), and the one after connects again.
    #expect(
      pollUntil {
        (try? lists[0].appendItem(RawJSON(#""after terminating""#), toSection: 0)) != nil
      })
    try server.restart()
    try write(20, seed: 3)
    #expect(
      pollUntil { (try? lists[0].appendItem(RawJSON(#""after restarting""#), toSection: 1)) != nil }
    )
    for (name, recorder) in zip(["a", "b"], recorders) {
      let truth = try database.contents(list: name)
      #expect(recorder.wait { ListContents($0.array.sections) == truth }, "list \(name)")
      #expect(recorder.problems.isEmpty && recorder.error == nil, "list \(name)")
    }
    repository.stopObserving()
    counter.stop()
    try write(5, seed: 4)
    #expect(counter.callsAfterStop == 0)
    #expect(counter.calls >= 2)
  }
}
