import FoundationEssentials
import ListStore
import ListStorePostgreSQL
import Observable2D
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// B8: a commit by another process, over TCP with a password → this process's observer,
/// also over TCP with a password, delivers the event. B3 on PostgreSQL.
///
/// The writer is this executable in its hidden `--pg-writer` mode (``writerMain(_:)``): it
/// writes the `CLOCK_MONOTONIC` time just before each write into the value it writes, and
/// the observer subtracts it from the time of delivery. The path measured: the writer's
/// transaction and commit on the server, `NOTIFY` to the observer's listening
/// connection, the observer reading the log and the row, and the event.
enum PostgresCrossProcessBenchmark {
  static let warmups = 10
  static let name = "other process's write over TCP → event delivered"
  static let target = "median ≤ 5 ms, p99 ≤ 20 ms"
  /// The environment variable that hands the writer its connection string (with the
  /// password), so that it is not on a command line.
  static let connectionVariable = "LISTSTORE_BENCH_POSTGRES_URL"

  /// Latencies in milliseconds, filled on the change feed's thread.
  private final class Latencies: Sendable {
    let values = Mutex<[Double]>([])
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let size = options.quick ? 10_000 : 100_000
    guard BenchPostgres.unavailableReason == nil else {
      return BenchPostgres.skipped(
        "B8", name + ", \(ObserveBenchmark.label(size)) items", target: target)
    }
    let count = options.quick ? 100 : 1_000
    let intervalMicroseconds = options.quick ? 5_000 : 10_000
    let database = try BenchPostgres.makeDatabase(options)
    defer { database.remove() }
    let url = try database.passwordRoleOverTCP()
    let latencies = Latencies()
    let total = warmups + count
    do {
      let repository = try Repository(url: url)
      defer { repository.stopObserving() }
      let list = try Fixtures.makeList(
        repository, name: "b8", sections: 10, perSection: size / 10)
      try database.vacuum()
      let id = try list.itemID(at: IndexPath(indexes: [5, size / 20]))
      let array = try list.observe()
      let subscription = array.subscribe(onNext: { event in
        let now = monotonicNanoseconds()
        for item in event.changeset.updatedItems {
          guard let sent = UInt64(item.value) else { continue }
          latencies.values.withLock { $0.append(Double(now - sent) / 1e6) }
        }
      })
      defer { subscription.dispose() }

      setenv(connectionVariable, url, 1)
      let writer = try Child.spawn(
        executablePath(),
        ["--pg-writer", "b8", String(id), String(total), String(intervalMicroseconds)])
      unsetenv(connectionVariable)
      _ = try writer.wait()
      // The last commit's event may still be on its way.
      let deadline = monotonicNanoseconds() + 2_000_000_000
      while latencies.values.withLock({ $0.count }) < total && monotonicNanoseconds() < deadline {
        usleep(1_000)
      }
    }
    let all = latencies.values.withLock { $0 }
    try check(all.count > warmups + count / 2, "B8: only \(all.count) of \(total) events arrived")
    let stats = Stats(Array(all.dropFirst(warmups)))
    return [
      Row(
        id: "B8", name: name + ", \(ObserveBenchmark.label(size)) items", unit: "ms",
        value: stats, target: target, pass: stats.median <= 5 && stats.p99 <= 20,
        note:
          "p99 \(format(stats.p99)) ms; \(all.count - warmups) of \(count) updates arrived as "
          + "their own event, one every \(intervalMicroseconds / 1000) ms; both processes "
          + "connect to 127.0.0.1 with a password (SCRAM)",
        details: ["p99 ms": stats.p99, "events": Double(all.count - warmups)])
    ]
  }

  /// The writer child: `--pg-writer LIST ITEM-ID COUNT INTERVAL-µs`, the connection
  /// string in `$LISTSTORE_BENCH_POSTGRES_URL`.
  static func writerMain(_ arguments: [String]) throws {
    guard arguments.count == 4, let id = Int64(arguments[1]), let count = Int(arguments[2]),
      let interval = UInt32(arguments[3]), let url = getenv(connectionVariable)
    else {
      throw BenchError(
        "usage: \(connectionVariable)=URL --pg-writer LIST ITEM-ID COUNT INTERVAL-µs")
    }
    let repository = try Repository(url: String(cString: url))
    let list = try repository.list(arguments[0], metadata: SectionMetadata.self, item: String.self)
    for _ in 0..<count {
      usleep(interval)
      try list.replaceItem(id: id, with: String(monotonicNanoseconds()))
    }
  }
}
