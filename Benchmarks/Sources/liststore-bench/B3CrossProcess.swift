import FoundationEssentials
import ListStore
import Observable2D
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// B3: a commit by another process → this process's observer delivers the event.
///
/// The writer is this executable in its hidden `--writer` mode (``writerMain(_:)``): it
/// writes the `CLOCK_MONOTONIC` time just before each write into the value it writes,
/// and the observer subtracts it from the time of delivery.
enum CrossProcessBenchmark {
  static let warmups = 10

  /// Latencies in milliseconds, filled on the change feed's thread.
  private final class Latencies: Sendable {
    let values = Mutex<[Double]>([])
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let size = options.quick ? 10_000 : 100_000
    let count = options.quick ? 100 : 1_000
    let intervalMicroseconds = options.quick ? 5_000 : 10_000
    let folder = try ScratchFolder(in: scratch, name: "b3")
    defer { folder.remove() }
    let path = folder.database
    let repository = try Repository(path: path)
    let list = try Fixtures.makeList(repository, name: "b3", sections: 10, perSection: size / 10)
    let id = try list.itemID(at: IndexPath(indexes: [5, size / 20]))
    let array = try list.observe()
    let latencies = Latencies()
    let subscription = array.subscribe(onNext: { event in
      let now = monotonicNanoseconds()
      for item in event.changeset.updatedItems {
        guard let sent = UInt64(item.value) else { continue }
        latencies.values.withLock { $0.append(Double(now - sent) / 1e6) }
      }
    })
    defer { subscription.dispose() }

    let total = warmups + count
    let writer = try Child.spawn(
      executablePath(),
      ["--writer", path, "b3", String(id), String(total), String(intervalMicroseconds)])
    _ = try writer.wait()
    // The last commit's event may still be on its way.
    let deadline = monotonicNanoseconds() + 2_000_000_000
    while latencies.values.withLock({ $0.count }) < total && monotonicNanoseconds() < deadline {
      usleep(1_000)
    }
    let all = latencies.values.withLock { $0 }
    try check(all.count > warmups + count / 2, "B3: only \(all.count) of \(total) events arrived")
    let stats = Stats(Array(all.dropFirst(warmups)))
    return [
      Row(
        id: "B3",
        name: "other process's write → event delivered, \(ObserveBenchmark.label(size)) items",
        unit: "ms", value: stats, target: "median ≤ 10 ms, p99 ≤ 50 ms",
        pass: stats.median <= 10 && stats.p99 <= 50,
        note:
          "p99 \(format(stats.p99)) ms; \(all.count - warmups) of \(count) updates arrived as "
          + "their own event, one every \(intervalMicroseconds / 1000) ms",
        details: ["p99 ms": stats.p99, "events": Double(all.count - warmups)])
    ]
  }

  /// The writer child: `--writer DB LIST ITEM-ID COUNT INTERVAL-µs`.
  static func writerMain(_ arguments: [String]) throws {
    guard arguments.count == 5, let id = Int64(arguments[2]), let count = Int(arguments[3]),
      let interval = UInt32(arguments[4])
    else { throw BenchError("usage: --writer DB LIST ITEM-ID COUNT INTERVAL-µs") }
    let repository = try Repository(path: arguments[0])
    let list = try repository.list(arguments[1], metadata: SectionMetadata.self, item: String.self)
    for _ in 0..<count {
      usleep(interval)
      try list.replaceItem(id: id, with: String(monotonicNanoseconds()))
    }
  }
}
