import CEpollBench
import Dispatch
import FoundationEssentials
import ListStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Server-sent event streams read by one thread through epoll: the moment the last of
/// them had an event after a given position.
final class StreamFanIn: @unchecked Sendable {
  private var connections: [LoopbackConnection]
  private let epoll: Int32
  private struct State {
    var last: [Int64]
    /// How many events each stream has had since ``expect(after:)`` was first called.
    var events: [Int]
    /// The position the count is armed for, and how many streams are past it.
    var after = Int64.max
    var past = 0
    var reachedAt: UInt64 = 0
    var failure: String?
  }
  private let state: Mutex<State>
  private let reached = DispatchSemaphore(value: 0)
  private let stopping = Atomic<Bool>(false)
  private let stopped = DispatchSemaphore(value: 0)

  /// Takes over `connections` (streams already asked for) and reads them on a thread
  /// of its own until ``stop()``.
  init(_ connections: [LoopbackConnection]) throws {
    self.connections = connections
    count = connections.count
    state = Mutex(
      State(
        last: Array(repeating: 0, count: connections.count),
        events: Array(repeating: 0, count: connections.count)))
    epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epoll >= 0 else { throw BenchError("epoll_create1: \(errnoText())") }
    for (index, connection) in connections.enumerated() {
      _ = fcntl(connection.fd, F_SETFL, fcntl(connection.fd, F_GETFL) | O_NONBLOCK)
      var event = epoll_event()
      event.events = EPOLLIN.rawValue
      event.data.u64 = UInt64(index)
      guard epoll_ctl(epoll, EPOLL_CTL_ADD, connection.fd, &event) == 0 else {
        throw BenchError("epoll_ctl: \(errnoText())")
      }
    }
    let box = UncheckedBox(self)
    Thread.detach { box.value.read() }
  }

  deinit { close(epoll) }

  let count: Int

  private func read() {
    defer { stopped.signal() }
    var partial = Array(repeating: [UInt8](), count: connections.count)
    var events = [epoll_event](repeating: epoll_event(), count: 256)
    var chunk = [UInt8](repeating: 0, count: 65536)
    while !stopping.load(ordering: .relaxed) {
      let ready = epoll_wait(epoll, &events, Int32(events.count), 100)
      guard ready >= 0 else {
        if errno == EINTR { continue }
        return fail("epoll_wait: \(errnoText())")
      }
      for event in events[0..<Int(ready)] {
        // One read per ready stream: epoll reports it again while bytes remain.
        let index = Int(event.data.u64)
        let count = chunk.withUnsafeMutableBytes {
          recv(connections[index].fd, $0.baseAddress, $0.count, 0)
        }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }
        guard count > 0 else { return fail("stream \(index) was closed by the server") }
        var ids: [Int64] = []
        _ = Self.lastID(in: chunk[0..<count], partial: &partial[index]) { ids.append($0) }
        if !ids.isEmpty { saw(ids, on: index) }
      }
    }
  }

  /// The last `id: N` line among the complete lines of `partial` followed by `bytes`;
  /// leaves the incomplete last line in `partial`, and gives `each` id in order.
  static func lastID(
    in bytes: ArraySlice<UInt8>, partial: inout [UInt8], each: (Int64) -> Void = { _ in }
  ) -> Int64? {
    var newest: Int64?
    var lineStart = bytes.startIndex
    func check(_ line: some Collection<UInt8>) {
      guard line.starts(with: idPrefix) else { return }
      var value: Int64 = 0
      for byte in line.dropFirst(idPrefix.count) {
        guard byte >= 48 && byte <= 57 else { return }
        value = value * 10 + Int64(byte - 48)
      }
      newest = value
      each(value)
    }
    while let newline = bytes[lineStart...].firstIndex(of: 10) {
      if partial.isEmpty {
        check(bytes[lineStart..<newline])
      } else {
        partial += bytes[lineStart..<newline]
        check(partial)
        partial.removeAll(keepingCapacity: true)
      }
      lineStart = newline + 1
    }
    partial += bytes[lineStart...]
    return newest
  }

  private static let idPrefix = Array("id: ".utf8)

  private func saw(_ ids: [Int64], on index: Int) {
    let all = state.withLock { state -> Bool in
      let old = state.last[index]
      guard let id = ids.last else { return false }
      // Every event once, in order: an id at or below the one before is a repeat.
      for (previous, next) in zip([old] + ids, ids) where next <= previous {
        state.failure = state.failure ?? "stream \(index) had id \(next) after \(previous)"
      }
      state.events[index] += ids.count
      state.last[index] = id
      guard old <= state.after, id > state.after else { return false }
      state.past += 1
      guard state.past == state.last.count else { return false }
      state.reachedAt = monotonicNanoseconds()
      return true
    }
    if all { reached.signal() }
  }

  private func fail(_ message: String) {
    state.withLock { $0.failure = message }
    reached.signal()
  }

  /// Arms the count for the events after `seq` (call before the write that makes one,
  /// when no stream has it yet).
  func expect(after seq: Int64) {
    state.withLock { state in
      state.after = seq
      state.past = state.last.count { $0 > seq }
    }
  }

  /// Waits until every stream has an event after the armed position; returns when the
  /// last one got it, and the lowest and highest ids the streams have then.
  func wait() throws -> (at: UInt64, lowest: Int64, highest: Int64) {
    // Signalled once per armed position: when the count reaches them all (or on failure).
    guard reached.wait(timeout: .now() + .seconds(60)) == .success else {
      let past = state.withLock { $0.past }
      throw BenchError("only \(past) of \(count) streams had the event within 60 s")
    }
    return try state.withLock { state in
      if let failure = state.failure { throw BenchError(failure) }
      return (state.reachedAt, state.last.min() ?? 0, state.last.max() ?? 0)
    }
  }

  /// The fewest and the most events a stream has had, and the first failure, if any.
  func eventCounts() -> (fewest: Int, most: Int, failure: String?) {
    state.withLock { ($0.events.min() ?? 0, $0.events.max() ?? 0, $0.failure) }
  }

  /// `count` change streams of `list` that resume after `seq` (no snapshot each).
  static func resuming(_ list: String, after seq: Int64, count: Int, port: Int) throws
    -> [LoopbackConnection]
  {
    try (0..<count).map { _ in
      let connection = try LoopbackConnection(port: port)
      try connection.send(
        Array(
          ("GET /v1/lists/\(list)/changes HTTP/1.1\r\nHost: bench\r\n"
            + "Accept: text/event-stream\r\nLast-Event-ID: \(seq)\r\n\r\n").utf8))
      return connection
    }
  }

  /// Stops reading and closes the streams.
  func stop() {
    stopping.store(true, ordering: .relaxed)
    if stopped.wait(timeout: .now() + .seconds(5)) == .success { connections = [] }
  }
}

/// B17: one list followed by 1,000 streams: for each write, the time until the last
/// stream has it, against the same with one stream; the server's memory and CPU, the
/// client's CPU, and the database reads per commit.
enum ServerFanOutBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B17 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let size = options.quick ? 10_000 : 100_000
    let streamCount = options.quick ? 200 : 1_000
    let runs = options.quick ? 60 : 300
    raiseOpenFileLimit(to: 2 * streamCount + 200)
    let folder = try ScratchFolder(in: scratch, name: "b17")
    defer { folder.remove() }
    do {
      let repository = try Repository(path: folder.database)
      let list = try repository.createList("b17", metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: "S"))
      try list.appendItems((0..<size).map(Fixtures.text), toSection: 0)
    }
    let server = try ServedDatabase(cli: cli, database: folder.database)
    defer { try? server.stop() }
    let writer = try LoopbackConnection(port: server.port)
    let metrics = try LoopbackConnection(port: server.port)
    var round = 0
    /// One PATCH; returns its seq.
    func write() throws -> Int64 {
      round += 1
      let id = 1 + (round * 7919) % size
      let answer = try writer.request(
        "PATCH", "/v1/lists/b17/items/\(id)", body: Array("{\"value\":\"fan \(round)\"}".utf8))
      try check(answer.status == 200, "B17: PATCH answered \(answer.status): \(answer.body)")
      guard let seq = Int64(answer.body.drop { !$0.isNumber }.prefix { $0.isNumber }) else {
        throw BenchError("B17: no seq in \(answer.body)")
      }
      return seq
    }
    var seq = try write()
    func counter(_ name: String) throws -> Double {
      let answer = try metrics.request("GET", "/metrics")
      guard
        let line = answer.body.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }),
        let value = Double(line.split(separator: " ").last ?? "")
      else { throw BenchError("B17: /metrics has no \(name)") }
      return value
    }
    /// Opens `count` streams that resume after `seq` (no snapshot each), and waits until
    /// the server follows them all (a stream it took after the next write would start
    /// with a reset: its feed would not reach back to `seq`).
    func streams(_ count: Int) throws -> StreamFanIn {
      let fanIn = try StreamFanIn(
        StreamFanIn.resuming("b17", after: seq, count: count, port: server.port))
      for _ in 0..<100_000 where try counter("liststore_open_streams") != Double(count) {}
      try check(
        try counter("liststore_open_streams") == Double(count),
        "B17: the server does not count \(count) open streams")
      return fanIn
    }
    /// `writes` writes, each timed until the last stream has it.
    func measure(_ fanIn: StreamFanIn, writes: Int) throws -> [Double] {
      var times: [Double] = []
      for _ in 0..<writes {
        fanIn.expect(after: seq)
        let start = monotonicNanoseconds()
        let written = try write()
        let (at, lowest, highest) = try fanIn.wait()
        try check(
          lowest == written && highest == written,
          "B17: the streams have \(lowest)…\(highest) after write \(written)")
        seq = written
        times.append(Double(at - start) / 1e9)
      }
      return times
    }
    // One stream: the database reads per commit with one follower.
    let single = try streams(1)
    _ = try measure(single, writes: 10)
    let readsBefore = try counter("liststore_feed_log_reads_total")
    _ = try measure(single, writes: 50)
    let readsOne = (try counter("liststore_feed_log_reads_total") - readsBefore) / 50
    single.stop()
    // The event a write makes, for the floor to send the same bytes.
    let data: String
    do {
      let sample = try LoopbackConnection(port: server.port)
      try sample.send(
        Array(
          ("GET /v1/lists/b17/changes HTTP/1.1\r\nHost: bench\r\n"
            + "Accept: text/event-stream\r\nLast-Event-ID: \(seq - 1)\r\n\r\n").utf8))
      data = try sample.firstChangesData()
    }
    // The sample's stream has ended when the server counts none open.
    for _ in 0..<100_000 where try counter("liststore_open_streams") != 0 {}
    let floor = try FanOutFloor(streams: streamCount, data: data)
    defer { floor.stop() }
    let fanIn = try streams(streamCount)
    defer { fanIn.stop() }
    _ = try measure(fanIn, writes: 10)
    for _ in 0..<10 { _ = try floor.measure() }
    let reads = try counter("liststore_feed_log_reads_total")
    let clientBefore = processCPUSeconds()
    let serverBefore = cpuSeconds(of: server.child.pid)
    var serverTime = 0.0
    let wallStart = monotonicNanoseconds()
    let times = try sideBySide(
      warmups: 0, runs: runs,
      subject: {
        let start = monotonicNanoseconds()
        defer { serverTime += Double(monotonicNanoseconds() - start) / 1e9 }
        return try measure(fanIn, writes: 1)[0]
      },
      baseline: floor.measure)
    let wall = Double(monotonicNanoseconds() - wallStart) / 1e9
    let clientShare = (processCPUSeconds() - clientBefore) / wall
    let serverShare = (cpuSeconds(of: server.child.pid) - serverBefore) / serverTime
    let readsMany = (try counter("liststore_feed_log_reads_total") - reads) / Double(runs)
    let resident = Double(statusKilobytes("VmRSS:", process: "\(server.child.pid)")) / 1024
    let peak = Double(statusKilobytes("VmHWM:", process: "\(server.child.pid)")) / 1024
    let all = Stats(times.subject).scaled(by: 1e3)
    let base = Stats(times.baseline).scaled(by: 1e3)
    let medianRatio = all.median / base.median
    let tailRatio = all.p99 / base.p99
    let pass =
      medianRatio <= 1.3 && tailRatio <= 1.3 && resident <= 150 && readsMany <= readsOne + 0.5
    func figure(_ value: Double) -> String { String(format: "%.2f", value) }
    return [
      Row(
        id: "B17",
        name:
          "a write through the API → the last of \(streamCount) streams of one list has it, "
          + "\(size) items",
        unit: "ms", value: all, baseline: base, ratio: medianRatio,
        target:
          "p50 and p99 ≤ 1.3 × a raw-socket floor's; server ≤ 150 MB; reads per commit as "
          + "with one stream",
        pass: pass,
        note:
          "ratio is p50 ÷ the floor's p50 (p99 ÷ p99: \(figure(tailRatio))); the floor is a "
          + "process of its own that sends the same event bytes to \(streamCount) sockets "
          + "with one send each when a byte arrives, read by the same client, alternating "
          + "with ListStore's writes; both clocks start as the trigger leaves the client "
          + "(ListStore's PATCH, which also commits); server VmRSS \(Int(resident)) MB with "
          + "\(streamCount) streams (peak \(Int(peak)) MB); log reads per commit "
          + "\(figure(readsMany)) (one stream: \(figure(readsOne))); client CPU "
          + "\(Int(clientShare * 100)) % of one core over both sides' writes, server "
          + "\(Int(serverShare * 100)) % over ListStore's",
        details: [
          "serverResidentMB": resident, "serverPeakMB": peak, "logReadsPerCommit": readsMany,
          "logReadsPerCommitOneStream": readsOne, "clientCPUShare": clientShare,
          "serverCPUShare": serverShare, "streams": Double(streamCount), "p99Ratio": tailRatio,
        ])
    ]
  }

  /// Raises this process's soft limit on open files (and so its children's) to at least
  /// `wanted`, within the hard limit.
  static func raiseOpenFileLimit(to wanted: Int) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0,
      limit.rlim_cur < rlim_t(wanted)
    else { return }
    limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  }

  /// The CPU time (user and system) this process has used, in seconds.
  static func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
      + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  }

  /// The CPU time (user and system) process `pid` has used, in seconds, from
  /// `/proc/PID/stat`.
  static func cpuSeconds(of pid: pid_t) -> Double {
    guard let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
    defer { fclose(file) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    guard getline(&line, &capacity, file) > 0, let line else { return 0 }
    let text = String(cString: line)
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    guard let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12])
    else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }
}
