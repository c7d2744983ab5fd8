import Dispatch
import FoundationEssentials
import ListStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// B17b: 10,000 streams on one `serve` process, one write every 200 ms for a minute:
/// every stream has every event, the server's peak memory, and `/healthz` meanwhile.
enum ManyStreamsBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B17b needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let streamCount = options.quick ? 2_000 : 10_000
    let seconds = options.quick ? 10 : 60
    let interval = 0.2
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    guard limit.rlim_max >= rlim_t(streamCount + 200) else {
      var row = Row(
        id: "B17b", name: "\(streamCount) streams on one server", unit: "MB", target: "")
      row.skipped =
        "it needs \(streamCount + 200) open files, and the hard limit is \(limit.rlim_max): "
        + "raise it (ulimit -Hn, or LimitNOFILE)"
      return [row]
    }
    ServerFanOutBenchmark.raiseOpenFileLimit(to: streamCount + 200)
    let folder = try ScratchFolder(in: scratch, name: "b17b")
    defer { folder.remove() }
    do {
      let repository = try Repository(path: folder.database)
      let list = try repository.createList(
        "b17b", metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: "S"))
      try list.appendItems((0..<1000).map(Fixtures.text), toSection: 0)
    }
    // No tokens, so no limit per token; the server's own, raised to fit.
    let server = try ServedDatabase(
      cli: cli, database: folder.database,
      arguments: [
        "--max-streams", String(streamCount), "--max-connections", String(streamCount + 100),
      ])
    defer { try? server.stop() }
    let writer = try LoopbackConnection(port: server.port)
    var round = 0
    func write() throws -> Int64 {
      round += 1
      let answer = try writer.request(
        "PATCH", "/v1/lists/b17b/items/\(1 + round % 1000)",
        body: Array("{\"value\":\"round \(round)\"}".utf8))
      try check(answer.status == 200, "B17b: PATCH answered \(answer.status): \(answer.body)")
      guard let seq = Int64(answer.body.drop { !$0.isNumber }.prefix { $0.isNumber }) else {
        throw BenchError("B17b: no seq in \(answer.body)")
      }
      return seq
    }
    var seq = try write()
    let openStart = monotonicNanoseconds()
    let fanIn = try StreamFanIn(
      StreamFanIn.resuming("b17b", after: seq, count: streamCount, port: server.port))
    defer { fanIn.stop() }
    let metrics = try LoopbackConnection(port: server.port)
    func openStreams() throws -> Int {
      let answer = try metrics.request("GET", "/metrics")
      let line = answer.body.split(separator: "\n").first {
        $0.hasPrefix("liststore_open_streams ")
      }
      return Int(Double(line?.split(separator: " ").last ?? "") ?? -1)
    }
    while case let open = try openStreams(), open != streamCount {
      try check(
        monotonicNanoseconds() - openStart < 120_000_000_000,
        "B17b: the server follows \(open) of \(streamCount) streams after 2 min")
    }
    let openTime = Double(monotonicNanoseconds() - openStart) / 1e9

    // /healthz every 50 ms on a connection of its own, on a thread of its own.
    let health = HealthProbe(port: server.port, every: 0.05)
    var latencies: [Double] = []
    let writes = Int(Double(seconds) / interval)
    let start = monotonicNanoseconds()
    for index in 0..<writes {
      let due = start + UInt64(Double(index) * interval * 1e9)
      while monotonicNanoseconds() < due { usleep(1000) }
      fanIn.expect(after: seq)
      let began = monotonicNanoseconds()
      let written = try write()
      let (at, lowest, highest) = try fanIn.wait()
      try check(
        lowest == written && highest == written,
        "B17b: the streams have \(lowest)…\(highest) after write \(written)")
      seq = written
      latencies.append(Double(at - began) / 1e6)
    }
    let healthTimes = try health.stop()
    let counts = fanIn.eventCounts()
    if let failure = counts.failure { throw BenchError("B17b: \(failure)") }
    try check(
      counts.fewest == writes && counts.most == writes,
      "B17b: streams had \(counts.fewest)…\(counts.most) events of \(writes)")
    let peak = Double(statusKilobytes("VmHWM:", process: "\(server.child.pid)")) / 1024
    let latency = Stats(latencies)
    let healthStats = Stats(healthTimes)
    return [
      Row(
        id: "B17b",
        name:
          "\(streamCount) streams on one server, a write every 200 ms for \(seconds) s: the "
          + "server's peak memory",
        unit: "MB", value: nil, baseline: nil, ratio: peak,
        target: "every stream has every event; server VmHWM ≤ 300 MB",
        pass: peak <= 300,
        note:
          "ratio is the server's VmHWM in MB; \(streamCount) streams × \(writes) events, every "
          + "id checked on every stream; opening them all took "
          + String(format: "%.1f", openTime) + " s; a write → the last stream: p50 "
          + String(format: "%.1f", latency.median) + " ms, p99 "
          + String(format: "%.1f", latency.p99) + " ms; /healthz on its own connection "
          + "meanwhile: p50 " + String(format: "%.2f", healthStats.median) + " ms, p99 "
          + String(format: "%.2f", healthStats.p99) + " ms (\(healthStats.count) probes); "
          + "the server sends from its one loop thread",
        details: [
          "serverPeakMB": peak, "streams": Double(streamCount), "events": Double(writes),
          "writeToLastStreamP50ms": latency.median, "writeToLastStreamP99ms": latency.p99,
          "healthzP50ms": healthStats.median, "healthzP99ms": healthStats.p99,
          "openSeconds": openTime,
        ])
    ]
  }
}

/// `GET /healthz` on a new connection every `every` seconds, on a thread of its own,
/// until ``stop()``: each answer's time in milliseconds, from the connect to the last
/// byte.
final class HealthProbe: @unchecked Sendable {
  private let state = Mutex<(times: [Double], failure: String?)>(([], nil))
  private let stopping = Atomic<Bool>(false)
  private let done = DispatchSemaphore(value: 0)

  init(port: Int, every interval: Double) {
    let box = UncheckedBox(self)
    Thread.detach { box.value.probe(port: port, interval: interval) }
  }

  private func probe(port: Int, interval: Double) {
    defer { done.signal() }
    while !stopping.load(ordering: .relaxed) {
      let start = monotonicNanoseconds()
      do {
        let connection = try LoopbackConnection(port: port)
        let answer = try connection.request("GET", "/healthz")
        guard answer.status == 200 else {
          throw BenchError("/healthz answered \(answer.status): \(answer.body)")
        }
        let time = Double(monotonicNanoseconds() - start) / 1e6
        state.withLock { $0.times.append(time) }
      } catch {
        state.withLock { $0.failure = $0.failure ?? "\(error)" }
        return
      }
      usleep(useconds_t(interval * 1e6))
    }
  }

  /// Stops probing; the times, or the first failure.
  func stop() throws -> [Double] {
    stopping.store(true, ordering: .relaxed)
    done.wait()
    return try state.withLock { state in
      if let failure = state.failure { throw BenchError(failure) }
      try check(!state.times.isEmpty, "/healthz was never probed")
      return state.times
    }
  }
}
