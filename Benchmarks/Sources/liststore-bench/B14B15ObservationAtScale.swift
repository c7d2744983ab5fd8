import CSQLiteBench
import Dispatch
import FoundationEssentials
import ListStore
import ListStorePostgreSQL
import Observable2D
import PostgreSQLKit
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What a subscriber saw of the events of one observed list.
final class DeliveryLog: Sendable {
  struct State {
    var events = 0
    var time: UInt64 = 0
    var values: [String] = []
  }
  let state = Mutex(State())
  /// Signalled after every event.
  let delivered = DispatchSemaphore(value: 0)

  /// Subscribes to `array`, noting each event's time and the values it inserted or updated.
  func follow(_ array: Observable2DArray<SectionMetadata, String>) -> any Disposable {
    array.subscribe(onNext: { event in
      let time = monotonicNanoseconds()
      let values =
        event.changeset.updatedItems.map(\.value) + event.changeset.insertedItems.map(\.value)
      self.state.withLock { state in
        state.time = time
        state.events += 1
        state.values = values
      }
      self.delivered.signal()
    })
  }

  /// Waits until an event brought `value`, for `seconds` at most.
  func wait(for value: String, seconds: Double) -> Bool {
    let deadline = DispatchTime.now() + seconds
    while !state.withLock({ $0.values.contains(value) }) {
      guard delivered.wait(timeout: deadline) == .success else { return false }
    }
    return true
  }
}

/// B14: a one-row write → its event, in-process (B2's and B10's path), while the change log
/// holds a million entries of another list that a lagging reader keeps, against the same
/// write on a fresh database, alternately in one run; SQLite and PostgreSQL.
enum LargeLogBenchmark {
  static let target = "≤ 1.2 × the same on a fresh database"

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let entries = options.quick ? 100_000 : 1_000_000
    let rounds = options.quick ? 150 : 400
    var rows: [Row] = []
    let sqlite = try measure(entries: entries, rounds: rounds) { name in
      // A folder each: a file watch sees its folder's files, and neither side should hear
      // the other's commits.
      let folder = scratch + "/b14-\(name)"
      let path = folder + "/db.sqlite"
      let repository = try Repository(path: path)
      let raw = try RawDatabase(path: path)
      return Database(
        repository: repository, execute: { try raw.execute($0) },
        count: {
          let statement = try raw.prepare("SELECT count(*) FROM changes")
          defer { sqlite3_finalize(statement) }
          guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
          return Int(sqlite3_column_int64(statement, 0))
        },
        remove: {
          Self.removeSQLite(path)
          rmdir(folder)
        })
    }
    rows.append(row(engine: "SQLite", entries: entries, sqlite))
    if BenchPostgres.unavailableReason == nil {
      let postgres = try measure(entries: entries, rounds: rounds) { _ in
        let database = try BenchPostgres.makeDatabase(options)
        let raw = try PGConnection(database.connectionString)
        return Database(
          repository: try Repository(url: database.connectionString),
          execute: { try raw.execute($0) }, settle: { try database.vacuum() },
          count: { Int(try raw.scalarInt64("SELECT count(*) FROM changes") ?? 0) },
          remove: { database.remove() })
      }
      rows.append(row(engine: "PostgreSQL", entries: entries, postgres))
    } else {
      rows += BenchPostgres.skipped(
        "B14", "PostgreSQL: write → event with a large log", target: target)
    }
    return rows
  }

  static func removeSQLite(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
  }

  static func row(engine: String, entries: Int, _ result: (loaded: [Double], fresh: [Double]))
    -> Row
  {
    let value = Stats(result.loaded)
    let baseline = Stats(result.fresh)
    let ratio = value.median / baseline.median
    return Row(
      id: "B14",
      name:
        "\(engine): write → event, \(ObserveBenchmark.label(entries)) log entries of another list",
      unit: "µs", value: value, baseline: baseline, ratio: ratio, target: target,
      pass: ratio <= 1.2,
      note:
        "replaceItem(id:with:) on a 1k-item list until the subscriber's onNext; the log holds "
        + "\(entries) entries of another list's one transaction, kept by a reader at 0 (a slow "
        + "process); baseline: the same list and write on a database with the same history "
        + "whose log is empty (the other list deleted, the log pruned), alternating, each "
        + "first in every other round")
  }

  /// One database of the benchmark, with a raw connection of its own.
  struct Database {
    let repository: Repository
    /// Runs SQL through the raw connection.
    let execute: (String) throws -> Void
    /// Leaves the server nothing to do after the set-up's bulk writes (PostgreSQL's
    /// `VACUUM ANALYZE`, which autovacuum would otherwise run during the measurement).
    var settle: () throws -> Void = {}
    /// The number of entries in the change log.
    let count: () throws -> Int
    let remove: () -> Void
  }

  /// Microseconds per write → event on a database whose log holds `entries` entries of
  /// another list, and on a fresh one.
  static func measure(entries: Int, rounds: Int, open: (String) throws -> Database) throws -> (
    loaded: [Double], fresh: [Double]
  ) {
    let loaded = try open("loaded")
    defer { loaded.remove() }
    let fresh = try open("fresh")
    defer { fresh.remove() }
    // Both files get the same history (the other list's import), so that they differ in
    // their logs alone: the fresh one deletes the list again and prunes its log empty.
    for database in [loaded, fresh] {
      let other = try database.repository.createList(
        "other", metadata: SectionMetadata.self, item: String.self)
      try other.appendSection(SectionMetadata(header: "All"))
      try other.appendItems((0..<entries).map(Fixtures.text), toSection: 0)
    }
    try fresh.repository.deleteList("other")
    try fresh.repository.pruneChangeLog()
    try check(try fresh.count() == 0, "B14: the fresh log is not empty")
    try fresh.settle()
    // A reader that has read nothing yet and keeps beating, as a slow process would: no
    // pruning passes it (but for ChangeLog.maximumBacklog; the run makes fewer writes than
    // prune the log by themselves).
    let farFuture = Date().timeIntervalSince1970 + 86_400
    try loaded.execute(
      "INSERT INTO change_log_readers(pid, seq, heartbeat) VALUES (1, 0, \(Int(farFuture)))")
    try check(try loaded.count() >= entries, "B14: the log lost the other list's entries")
    try loaded.settle()

    struct Side {
      let list: StoredList<SectionMetadata, String>
      let array: Observable2DArray<SectionMetadata, String>
      let log: DeliveryLog
      let subscription: any Disposable
      let id: Int64
    }
    func side(_ repository: Repository) throws -> Side {
      // Made without pruning the log (Fixtures.makeList prunes).
      let list = try repository.createList("b14", metadata: SectionMetadata.self, item: String.self)
      for section in 0..<10 {
        try list.appendSection(SectionMetadata(header: "Section \(section)"))
        try list.appendItems(
          (0..<100).map { Fixtures.text(section * 100 + $0) }, toSection: section)
      }
      let array = try list.observe()
      let log = DeliveryLog()
      return Side(
        list: list, array: array, log: log, subscription: log.follow(array),
        id: array.sections[5].items.id(at: 50))
    }
    let sides = (fresh: try side(fresh.repository), loaded: try side(loaded.repository))
    defer {
      sides.fresh.subscription.dispose()
      sides.loaded.subscription.dispose()
    }
    func write(_ side: Side, _ round: Int) throws -> Double {
      let value = "updated \(round)"
      let start = monotonicNanoseconds()
      try side.list.replaceItem(id: side.id, with: value)
      let state = side.log.state.withLock { $0 }
      try check(
        state.values == [value], "B14: the write's event was not delivered before it returned")
      return Double(state.time - start) / 1e3
    }
    var samples: (loaded: [Double], fresh: [Double]) = ([], [])
    let warmups = 20
    for round in 0..<(warmups + rounds) {
      // Each side first in every other round, so that neither always follows the other.
      var freshTime = 0.0
      var loadedTime = 0.0
      if round.isMultiple(of: 2) {
        freshTime = try write(sides.fresh, round)
        loadedTime = try write(sides.loaded, round)
      } else {
        loadedTime = try write(sides.loaded, round)
        freshTime = try write(sides.fresh, round)
      }
      if round >= warmups {
        samples.fresh.append(freshTime)
        samples.loaded.append(loadedTime)
      }
    }
    try check(try loaded.count() >= entries, "B14: the log was pruned during the run")
    return samples
  }
}

/// B15: an observer's peak memory while another process commits a million items to another
/// list in one transaction, against its idle memory: the observer is a process of its own
/// (this program in its `--b15-observer` mode) that reports both.
enum ObserverMemoryBenchmark {
  static let target = "≤ 1.5 × its idle memory"

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let items = options.quick ? 100_000 : 1_000_000
    var rows: [Row] = []
    let path = scratch + "/b15.sqlite"
    defer { LargeLogBenchmark.removeSQLite(path) }
    rows.append(try measure(engine: "SQLite", location: path, items: items))
    if BenchPostgres.unavailableReason == nil {
      let database = try BenchPostgres.makeDatabase(options)
      defer { database.remove() }
      rows.append(
        try measure(engine: "PostgreSQL", location: database.connectionString, items: items))
    } else {
      rows += BenchPostgres.skipped("B15", "PostgreSQL: observer memory", target: target)
    }
    return rows
  }

  static func measure(engine: String, location: String, items: Int) throws -> Row {
    let repository = try Repository.open(location)
    let observed = try repository.createList(
      "observed", metadata: SectionMetadata.self, item: String.self)
    try observed.appendSection(SectionMetadata(header: "One"))
    try observed.appendItem("only", toSection: 0)
    let other = try repository.createList(
      "other", metadata: SectionMetadata.self, item: String.self)
    try other.appendSection(SectionMetadata(header: "All"))
    let child = try Child.spawn(
      executablePath(), ["--b15-observer", location, "observed"], captureOutput: true)
    var reader = LineReader(descriptor: child.output ?? -1)
    guard let idleLine = reader.next(), idleLine.hasPrefix("idle ") else {
      _ = try? child.wait()
      throw BenchError("B15: the observer did not report its idle memory")
    }
    let idle = Double(idleLine.dropFirst(5)) ?? 0
    let start = monotonicNanoseconds()
    try other.appendItems((0..<items).map(Fixtures.text), toSection: 0)
    let commit = Double(monotonicNanoseconds() - start) / 1e9
    try observed.appendItem("done", toSection: 0)
    let rest = try child.wait()
    let peakLine = (reader.rest + rest).split(separator: "\n").first { $0.hasPrefix("peak ") }
    guard let peakLine, let peak = Double(peakLine.split(separator: " ")[1]) else {
      throw BenchError("B15: the observer did not report its peak memory")
    }
    let value = Stats([peak / 1024])
    let baseline = Stats([idle / 1024])
    let ratio = peak / idle
    return Row(
      id: "B15",
      name:
        "\(engine): observer's peak memory while another list gets \(ObserveBenchmark.label(items)) items",
      unit: "MB", value: value, baseline: baseline, ratio: ratio, target: target,
      pass: ratio <= 1.5,
      note:
        "a process observing a 1-item list (VmHWM from /proc, reset after its start) while "
        + "another commits \(items) items to another list in one transaction (\(format(commit)) s), "
        + "then one item to the observed list, which it receives; baseline: its VmRSS idle")
  }

  /// The observer process: observes `list`, prints `idle KB` once it is up, and
  /// `peak KB` once it received the item "done".
  static func observerMain(_ arguments: [String]) throws {
    guard arguments.count == 2 else { throw BenchError("usage: --b15-observer LOCATION LIST") }
    let repository = try Repository.open(arguments[0])
    let list = try repository.list(arguments[1], metadata: SectionMetadata.self, item: String.self)
    let array = try list.observe()
    let log = DeliveryLog()
    let subscription = log.follow(array)
    defer { subscription.dispose() }
    // The peak from here on (clear_refs 5 resets VmHWM to the current size).
    if let file = fopen("/proc/self/clear_refs", "w") {
      fputs("5", file)
      fclose(file)
    }
    // Written straight to the pipe: the parent waits for this line.
    var line = "idle \(statusKilobytes("VmRSS:"))\n"
    line.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
    guard log.wait(for: "done", seconds: 600) else {
      throw BenchError("B15: the observer never received the item")
    }
    try check(array.sections[0].items.count == 2, "B15: the observer's list is wrong")
    print("peak \(statusKilobytes("VmHWM:"))")
  }

  /// Lines of a pipe, as they come.
  struct LineReader {
    let descriptor: Int32
    var buffer: [UInt8] = []

    /// The next line, or `nil` at the end.
    mutating func next() -> String? {
      while true {
        if let newline = buffer.firstIndex(of: 0x0A) {
          let line = String(decoding: buffer[..<newline], as: UTF8.self)
          buffer.removeSubrange(...newline)
          return line
        }
        var chunk = [UInt8](repeating: 0, count: 256)
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return nil }
        buffer += chunk[..<count]
      }
    }

    /// What was read but not returned.
    var rest: String { String(decoding: buffer, as: UTF8.self) }
  }
}
