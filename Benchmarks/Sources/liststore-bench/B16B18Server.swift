import Dispatch
import FoundationEssentials
import ListStore
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `liststore serve` started for a benchmark: the release CLI on a database, on a free
/// loopback port, stopped with SIGTERM.
struct ServedDatabase {
  let child: Child
  let port: Int

  /// Starts it with more `arguments` of `serve`; with a `descriptorLimit`, through a
  /// shell that sets `ulimit -n` (soft and hard) and then becomes the server.
  init(
    cli: String, database: String, arguments: [String] = [], descriptorLimit: Int? = nil
  ) throws {
    let command = [cli, "--db", database, "serve", "--listen", "127.0.0.1:0"] + arguments
    if let descriptorLimit {
      child = try Child.spawn(
        "/bin/sh", ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\""] + command,
        captureOutput: true)
    } else {
      child = try Child.spawn(cli, Array(command.dropFirst()), captureOutput: true)
    }
    guard let output = child.output else { throw BenchError("serve: no output") }
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(output, &byte, 1) == 1, byte != 10 { line.append(byte) }
    let text = String(decoding: line, as: UTF8.self)
    guard text.hasPrefix("listening on http://"),
      let port = Int(text.split(separator: ":").last ?? "")
    else {
      kill(child.pid, SIGKILL)
      throw BenchError("serve did not start: \(text)")
    }
    self.port = port
  }

  func stop() throws {
    kill(child.pid, SIGTERM)
    _ = try child.wait()
  }
}

/// A kept-alive HTTP/1.1 connection to a loopback port: requests written whole, answers
/// read by their Content-Length (the benchmark's own client, so that the client side
/// costs as little as it can).
final class LoopbackConnection {
  let fd: Int32
  private var buffer: [UInt8] = []
  /// A stream's unfinished line and the last event id it had (``readEvents(through:)``).
  private var partialLine: [UInt8] = []
  private var lastEventID: Int64 = -1
  /// Header lines (each ending in CRLF) sent with every ``request(_:_:body:type:)``.
  var headers = ""

  /// Connects; with `receiveBuffer`, a receive buffer that small (set before the
  /// connect, so that the window the server sees is small too).
  init(port: Int, receiveBuffer: Int32? = nil) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var receiveBuffer {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard fd >= 0, connected == 0 else { throw BenchError("connect: \(errnoText())") }
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
  }

  deinit { close(fd) }

  func send(_ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
      let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { throw BenchError("send: \(errnoText())") }
      sent += count
    }
  }

  /// Sends a request and reads its answer: the status and the body.
  func request(
    _ method: String, _ path: String, body: [UInt8] = [], type: String = "application/json"
  ) throws -> (status: Int, body: String) {
    var head = "\(method) \(path) HTTP/1.1\r\nHost: bench\r\n" + headers
    if !body.isEmpty || method != "GET" {
      head += "Content-Type: \(type)\r\nContent-Length: \(body.count)\r\n"
    }
    try send(Array((head + "\r\n").utf8) + body)
    return try response()
  }

  /// Reads more bytes; throws at the end of the connection.
  func fill() throws {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { throw BenchError("the server closed the connection") }
    buffer += chunk[..<count]
  }

  private func response() throws -> (status: Int, body: String) {
    let separator: [UInt8] = [13, 10, 13, 10]
    var end: Int?
    while end == nil {
      end = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
      if end == nil { try fill() }
    }
    guard let end else { throw BenchError("no answer") }
    let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
    let length =
      head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
      .flatMap { Int($0.dropFirst("content-length:".count).filter { $0 != " " }) } ?? 0
    while buffer.count < end + 4 + length { try fill() }
    let body = String(decoding: buffer[(end + 4)..<(end + 4 + length)], as: UTF8.self)
    buffer.removeFirst(end + 4 + length)
    return (status, body)
  }

  /// Reads a server-sent event stream until its first `event: changes` is whole, and
  /// returns that event's `data:` text.
  func firstChangesData() throws -> String {
    while true {
      let text = String(decoding: buffer, as: UTF8.self)
      if let event = text.range(of: "event: changes\n"),
        let data = text[event.upperBound...].range(of: "data: "),
        let end = text[data.upperBound...].firstIndex(of: "\n")
      {
        return String(text[data.upperBound..<end])
      }
      try fill()
    }
  }

  /// Reads a server-sent event stream on the calling thread until it has had an event
  /// with an id of at least `seq` (so that no hand-over between threads is timed).
  func readEvents(through seq: Int64) throws {
    var newest = lastEventID
    while newest < seq {
      try fill()
      if let id = StreamFanIn.lastID(in: buffer[...], partial: &partialLine) { newest = id }
      buffer.removeAll(keepingCapacity: true)
    }
    lastEventID = newest
  }
}

struct UncheckedBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

extension Thread {
  /// Runs `body` on a new thread.
  static func detach(_ body: @escaping @Sendable () -> Void) {
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Closure(body))
    pthread_create(
      &thread, nil,
      { context in
        guard let context else { return nil }
        let closure = Unmanaged<Closure>.fromOpaque(context).takeRetainedValue()
        closure.body()
        return nil
      }, box.toOpaque())
    pthread_detach(thread)
  }

  private final class Closure {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
}

enum Thread {}

/// How many events an observer has had.
final class EventCount: Sendable {
  let count = Mutex(0)
}

/// B16: a write through the API until another client's stream has its event, against
/// the same write made and observed in-process plus one kept-alive loopback round trip.
enum ServerLatencyBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B16 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let size = options.quick ? 10_000 : 100_000
    let runs = options.quick ? 100 : 300
    let folder = try ScratchFolder(in: scratch, name: "b16")
    defer { folder.remove() }
    let served = folder.path + "/served.sqlite"
    defer { removeDatabase(served) }
    for path in [served, folder.database] {
      let repository = try Repository(path: path)
      let list = try repository.createList("b16", metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: "S"))
      try list.appendItems((0..<size).map(Fixtures.text), toSection: 0)
    }
    let server = try ServedDatabase(cli: cli, database: served)
    defer { try? server.stop() }
    let stream = try LoopbackConnection(port: server.port)
    try stream.send(
      Array(
        "GET /v1/lists/b16/changes HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n"
          .utf8))
    let writer = try LoopbackConnection(port: server.port)
    let probe = try LoopbackConnection(port: server.port)
    // The floor's own list, observed in-process (B2's path).
    let repository = try Repository(path: folder.database)
    let list = try repository.list("b16", metadata: SectionMetadata.self, item: String.self)
    let array = try list.observe()
    let events = EventCount()
    let bag = DisposeBag()
    array.observeNext { _ in events.count.withLock { $0 += 1 } }.disposed(by: bag)
    var round = 0
    func throughAPI() throws -> Double {
      round += 1
      let id = 1 + (round * 7919) % size
      let start = monotonicNanoseconds()
      let answer = try writer.request(
        "PATCH", "/v1/lists/b16/items/\(id)", body: Array("{\"value\":\"api \(round)\"}".utf8))
      try check(answer.status == 200, "B16: PATCH answered \(answer.status): \(answer.body)")
      guard let seq = Int64(answer.body.drop { !$0.isNumber }.prefix { $0.isNumber }) else {
        throw BenchError("B16: no seq in \(answer.body)")
      }
      try stream.readEvents(through: seq)
      return Double(monotonicNanoseconds() - start) / 1e9
    }
    func floor() throws -> Double {
      round += 1
      let id = Int64(1 + (round * 7919) % size)
      let before = events.count.withLock { $0 }
      let start = monotonicNanoseconds()
      try list.replaceItem(id: id, with: "local \(round)")
      let trip = try probe.request("GET", "/healthz")
      let time = Double(monotonicNanoseconds() - start) / 1e9
      try check(trip.status == 200, "B16: /healthz answered \(trip.status)")
      try check(events.count.withLock { $0 } == before + 1, "B16: the observer missed the write")
      return time
    }
    let times = try sideBySide(warmups: 20, runs: runs, subject: throughAPI, baseline: floor)
    let time = Stats(times.subject).scaled(by: 1e3)
    let base = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / base.median
    return [
      Row(
        id: "B16",
        name: "write through the API → the event at another client's stream, \(size) items",
        unit: "ms", value: time, baseline: base, ratio: ratio, target: "≤ 1.5 × floor",
        pass: ratio <= 1.5,
        note:
          "PATCH of one item's value on a kept-alive connection until a second connection's "
          + "SSE stream has its id; floor: the same write in-process, observed in-process, plus "
          + "one kept-alive GET /healthz; p99 \(String(format: "%.2f", time.p99)) ms vs "
          + "\(String(format: "%.2f", base.p99)) ms")
    ]
  }
}

/// B18: `POST …/batch` of many item adds against `liststore batch` of the same lines on
/// the same database.
enum ServerBatchBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B18 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let lines = options.quick ? 10_000 : 100_000
    let runs = options.quick ? 2 : 3
    let folder = try ScratchFolder(in: scratch, name: "b18")
    defer { folder.remove() }
    let file = folder.path + "/adds.jsonl"
    defer { unlink(file) }
    try BatchByIndexBenchmark.writeLines(file, count: lines, section: "0")
    guard let body = FileManager.default.contents(atPath: file) else {
      throw BenchError("cannot read \(file)")
    }
    let bytes = [UInt8](body)
    let repository = try Repository(path: folder.database)
    var made = 0
    func freshList() throws -> String {
      made += 1
      let name = "b18-\(made)"
      let list = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: "S"))
      return name
    }
    func count(_ name: String) throws -> Int {
      try repository.list(name, metadata: RawJSON.self, item: RawJSON.self)
        .numberOfItems(inSection: 0)
    }
    let server = try ServedDatabase(cli: cli, database: folder.database)
    defer { try? server.stop() }
    let connection = try LoopbackConnection(port: server.port)
    func throughAPI() throws -> Double {
      let name = try freshList()
      let start = monotonicNanoseconds()
      let answer = try connection.request(
        "POST", "/v1/lists/\(name)/batch", body: bytes, type: "application/x-ndjson")
      let time = Double(monotonicNanoseconds() - start) / 1e9
      try check(
        answer.status == 200, "B18: batch answered \(answer.status): \(answer.body.prefix(200))")
      try check(try count(name) == lines, "B18: the batch lost items")
      return time
    }
    func throughCLI() throws -> Double {
      let name = try freshList()
      let time = try wallTime(cli, ["--db", folder.database, "batch", name, file, "--quiet"])
      try check(try count(name) == lines, "B18: the CLI's batch lost items")
      return time
    }
    let times = try sideBySide(warmups: 1, runs: runs, subject: throughAPI, baseline: throughCLI)
    let time = Stats(times.subject).scaled(by: 1e3)
    let base = Stats(times.baseline).scaled(by: 1e3)
    let throughput = base.median / time.median
    return [
      try concurrentWrites(options, folder: folder, server: server),
      Row(
        id: "B18",
        name: "`POST …/batch` of \(lines) item adds (JSON lines)",
        unit: "ms", value: time, baseline: base, ratio: throughput,
        target: "throughput ≥ 0.8 × `liststore batch`", pass: throughput >= 0.8,
        note:
          "ratio is throughput (the CLI's time ÷ the server's), each into a fresh list of the "
          + "same database, the server kept running; the CLI from spawn to exit, the API from "
          + "the request's first byte to its answer"),
    ]
  }
}

extension ServerBatchBenchmark {
  /// B18b: single-item adds from 8 kept-alive clients of the server, against the same adds
  /// made by 8 threads in-process through `StoredList` on a database of the same kind.
  static func concurrentWrites(_ options: Options, folder: ScratchFolder, server: ServedDatabase)
    throws -> Row
  {
    let clients = 8
    let each = options.quick ? 100 : 1000
    let runs = options.quick ? 3 : 5
    let served = try Repository(path: folder.database)
    let servedList = try served.createList(
      "b18b", metadata: SectionMetadata.self, item: String.self)
    try servedList.appendSection(SectionMetadata(header: "S"))
    let sectionID = try servedList.sectionID(at: 0)
    let local = folder.path + "/in-process.sqlite"
    defer { removeDatabase(local) }
    let repository = try Repository(path: local)
    let list = try repository.createList("b18b", metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "S"))
    let connections = try (0..<clients).map { _ in try LoopbackConnection(port: server.port) }
    let shared = UncheckedBox(
      (list: list, section: try list.sectionID(at: 0), connections: connections))

    /// Runs `body(client, write)` for every write of every client, one thread per client,
    /// and returns the wall time until the last one is done.
    func inParallel(_ body: @escaping @Sendable (Int, Int) throws -> Void) throws -> Double {
      let failure = Mutex<String?>(nil)
      let group = DispatchGroup()
      let start = monotonicNanoseconds()
      for client in 0..<clients {
        group.enter()
        Thread.detach {
          defer { group.leave() }
          do {
            for write in 0..<each { try body(client, write) }
          } catch {
            failure.withLock { $0 = $0 ?? "\(error)" }
          }
        }
      }
      group.wait()
      let time = Double(monotonicNanoseconds() - start) / 1e9
      if let message = failure.withLock({ $0 }) { throw BenchError("B18b: \(message)") }
      return time
    }
    var round = 0
    func throughAPI() throws -> Double {
      round += 1
      let before = try servedList.numberOfItems(inSection: 0)
      let path = "/v1/lists/b18b/sections/\(sectionID)/items"
      let time = try inParallel { [round] client, write in
        let answer = try shared.value.connections[client].request(
          "POST", path, body: Array("{\"value\":\"api \(round) \(client) \(write)\"}".utf8))
        guard answer.status == 201 else {
          throw BenchError("POST answered \(answer.status): \(answer.body)")
        }
      }
      try check(
        try servedList.numberOfItems(inSection: 0) == before + clients * each,
        "B18b: the server lost writes")
      return time
    }
    func inProcess() throws -> Double {
      round += 1
      let before = try list.numberOfItems(inSection: 0)
      let time = try inParallel { [round] client, write in
        try shared.value.list.appendItem(
          "local \(round) \(client) \(write)", toSectionWithID: shared.value.section)
      }
      try check(
        try list.numberOfItems(inSection: 0) == before + clients * each,
        "B18b: the in-process writes were lost")
      return time
    }
    let times = try sideBySide(warmups: 1, runs: runs, subject: throughAPI, baseline: inProcess)
    let time = Stats(times.subject).scaled(by: 1e3)
    let base = Stats(times.baseline).scaled(by: 1e3)
    let throughput = base.median / time.median
    return Row(
      id: "B18b",
      name: "\(clients) kept-alive clients × \(each) single-item adds (`POST …/items`)",
      unit: "ms", value: time, baseline: base, ratio: throughput,
      target: "throughput ≥ 0.5 × \(clients) threads in-process", pass: throughput >= 0.5,
      note:
        "ratio is throughput (the in-process time ÷ the server's); each side \(clients) threads, "
        + "one write at a time each, the in-process side through one shared StoredList "
        + "(appendItem) on a database of its own of the same kind")
  }
}
