import Foundation
import ListStore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

/// Several processes and threads write to the same list at once while observers watch.
@Suite(.serialized) struct ConcurrencyTests {
  /// What one writer reports as committed, replayed: its items and their values.
  static func committed(_ lines: [String]) -> [Int64: String] {
    var items: [Int64: String] = [:]
    for line in lines {
      let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
      guard parts.count >= 2, let id = Int64(parts[1]) else { continue }
      switch parts[0] {
      case "add", "set": items[id] = parts.count > 2 ? parts[2] : ""
      case "rm": items[id] = nil
      default: break
      }
    }
    return items
  }

  @Test(arguments: TestEngine.tested)
  func writersInProcessesAndThreadsLoseNothingAndObserversConverge(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    let folder = database.folder
    defer { database.remove() }
    let path = database.location
    let repository = try database.openRepository()
    let list = try repository.createList(
      "shared", metadata: SectionMetadata.self, item: RawJSON.self)
    for header in ["A", "B", "C"] { try list.appendSection(SectionMetadata(header: header)) }

    let recorder = ArrayRecorder(try list.observe(), describe: \.text, header: { $0.header })
    let watcher = try Worker(
      liststoreBinary, ["--db", path, "watch", "shared", "--json"], folder: folder)
    defer { watcher.kill() }
    // The watcher has printed its snapshot.
    #expect(waitForFirstLine(watcher))

    let seed = testSeed(71)
    let writes = scaled(150)
    let processes = try (0..<4).map { index in
      try Worker(
        stressBinary,
        ["writer", path, "shared", "p\(index)", "\(writes)", "\(seed &+ UInt64(index))"],
        folder: folder)
    }
    // Two threads of this process, each through its own repository.
    let threadLines = Mutex<[[String]]>([[], []])
    let threadErrors = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 2) { thread in
      do {
        let mine = try database.openRepository().list(
          "shared", metadata: RawJSON.self, item: RawJSON.self)
        var random = SeededGenerator(seed: seed &+ 100 &+ UInt64(thread))
        var ids: [Int64] = []
        for step in 0..<writes {
          let value = "\"t\(thread)-\(step)\""
          var line: String
          if ids.isEmpty || Bool.random(using: &random) {
            let id = try mine.appendItem(
              RawJSON(value), toSection: Int.random(in: 0..<3, using: &random))
            ids.append(id)
            line = "add \(id) \(value)"
          } else if Bool.random(using: &random) {
            let id = ids.remove(at: Int.random(in: 0..<ids.count, using: &random))
            try mine.removeItem(id: id)
            line = "rm \(id)"
          } else {
            let id = ids[Int.random(in: 0..<ids.count, using: &random)]
            try mine.replaceItem(id: id, with: RawJSON(value))
            line = "set \(id) \(value)"
          }
          threadLines.withLock { $0[thread].append(line) }
        }
      } catch {
        threadErrors.withLock { $0.append("thread \(thread): \(error)") }
      }
    }
    for process in processes { process.wait() }
    #expect(threadErrors.withLock { $0 }.isEmpty, "\(threadErrors.withLock { $0 })")
    for (index, process) in processes.enumerated() {
      // No SQLITE_BUSY reached any writer: each finished all its writes.
      #expect(process.exitedNormally && process.status == 0, "writer \(index): \(process.errors)")
      #expect(process.errors.isEmpty, "writer \(index): \(process.errors)")
      #expect(process.lines.last == "end", "writer \(index) did not finish")
    }

    // The list holds exactly the union of what every writer reported committed.
    var expected: [Int64: String] = [:]
    for lines in processes.map(\.lines) + threadLines.withLock({ $0 }) {
      expected.merge(Self.committed(lines)) { _, new in new }
    }
    let stored = try list.storedSections().flatMap(\.items)
    let actual = Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0.json) })
    #expect(actual == expected)
    #expect(expected.count > writes)

    // Every observer converges on the database.
    let truth = try list.observe().sections
    #expect(recorder.wait { $0.array.sections == truth })
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    let shown = try liststore(["show", "shared", "--json"], database: path)
    let expectedJSON =
      try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? NSDictionary
    var replayed: NSDictionary?
    let deadline = Date().addingTimeInterval(10)
    repeat {
      replayed = try replayWatch(watcher.output)
      if replayed == expectedJSON { break }
      pause(0.02)
    } while Date() < deadline
    #expect(replayed != nil && replayed == expectedJSON)
  }

  /// Other processes opening the database while this process writes through a second
  /// connection corrupt nothing. (Opening used to read the file's header with `open()`
  /// and `close()` of its own, which drops all of this process's POSIX locks on the file:
  /// another process then checkpointed under the writer.)
  @Test func openingTheDatabaseElsewhereWhileThisProcessWritesCorruptsNothing() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("live.sqlite")
    let repository = try Repository(path: db)
    let list = try repository.createList("numbers", metadata: String.self, item: Int.self)
    try list.appendSection("odd")
    try list.appendItems(Array(0..<10_000), toSection: 0)
    let stop = Atomic<Bool>(false)
    let failure = Mutex<String?>(nil)
    let writer = Thread {
      do {
        // Opened while `repository` holds its locks: the case that went wrong.
        let mine = try Repository(path: db).list("numbers", metadata: String.self, item: Int.self)
        var next = 0
        while !stop.load(ordering: .relaxed) {
          try mine.appendItem(next, toSection: 0)
          next += 1
        }
      } catch {
        failure.withLock { $0 = "\(error)" }
      }
    }
    writer.start()
    for _ in 0..<scaled(8) {
      #expect(try liststore(["lists"], database: db).status == 0)
    }
    stop.store(true, ordering: .relaxed)
    while !writer.isFinished { pause(0.001) }
    #expect(failure.withLock { $0 } == nil)
    #expect(try repository.check().isEmpty)
  }

  /// Writers wait for each other up to the busy timeout (10 s by default,
  /// `LISTSTORE_BUSY_TIMEOUT` seconds for the CLI), then fail with a clear error.
  @Test func aWriterWaitsForTheLockThenFailsClearlyPastItsBound() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let path = folder.file("busy.sqlite")
    _ = try liststore(["demo"], database: path)
    let holder = try Connection(path: path)
    try holder.execute("BEGIN IMMEDIATE")

    let started = Date()
    let refused = try liststore(
      ["item", "add", "demo", "0", "x"], database: path,
      environment: ["LISTSTORE_BUSY_TIMEOUT": "0.3"])
    #expect(Date().timeIntervalSince(started) >= 0.3)
    #expect(refused.status == 1)
    #expect(
      refused.stderr.hasPrefix("error: ")
        && refused.stderr.contains("stayed locked by another writer"), "\(refused)")
    #expect(
      !refused.stderr.contains("SQLITE_BUSY") && !refused.stderr.contains("database is locked"))

    // Within the bound, the writer simply waits its turn.
    let waiter = try Worker(
      liststoreBinary, ["--db", path, "item", "add", "demo", "0", "y"], folder: folder)
    pause(0.5)
    #expect(waiter.process.isRunning)
    try holder.execute("COMMIT")
    waiter.wait()
    #expect(waiter.status == 0, "\(waiter.errors)")
    let items = try itemIDs(path, list: "demo")
    #expect(items.first?.count == 4)
  }
}
