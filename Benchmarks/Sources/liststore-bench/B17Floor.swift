import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// B17's floor: the least a server can do to fan one event out to many streams. A
/// process of its own on raw sockets, single-threaded: each byte that arrives on its
/// trigger connection makes one event (`event: changes`, the next id, the `data:` the
/// parent gives), sent to every stream socket with one `send` each.
final class FanOutFloor {
  private let child: Child
  private let trigger: LoopbackConnection
  private let fanIn: StreamFanIn
  private var sent: Int64 = 0

  /// Starts the floor process and connects `streams` streams to it, read by a
  /// ``StreamFanIn`` of their own.
  init(streams: Int, data: String) throws {
    child = try Child.spawn(
      executablePath(), ["--fanout-floor", String(streams), data], captureOutput: true)
    guard let output = child.output else { throw BenchError("the floor: no output") }
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(output, &byte, 1) == 1, byte != 10 { line.append(byte) }
    guard let port = Int(String(decoding: line, as: UTF8.self)) else {
      kill(child.pid, SIGKILL)
      throw BenchError("the floor did not start: \(String(decoding: line, as: UTF8.self))")
    }
    trigger = try LoopbackConnection(port: port)
    try trigger.send(Array("T".utf8))
    var connections: [LoopbackConnection] = []
    for _ in 0..<streams {
      let connection = try LoopbackConnection(port: port)
      try connection.send(Array("S".utf8))
      connections.append(connection)
    }
    fanIn = try StreamFanIn(connections)
  }

  /// One event: seconds from the trigger's byte leaving until the last stream has it.
  func measure() throws -> Double {
    fanIn.expect(after: sent)
    let start = monotonicNanoseconds()
    try trigger.send([1])
    let (at, lowest, highest) = try fanIn.wait()
    sent += 1
    try check(
      lowest == sent && highest == sent, "the floor's streams have \(lowest)…\(highest)")
    return Double(at - start) / 1e9
  }

  /// Closes the trigger (the floor exits) and the streams.
  func stop() {
    fanIn.stop()
    shutdown(trigger.fd, Int32(SHUT_WR))
    _ = try? child.wait()
  }

  /// The floor process: `--fanout-floor COUNT DATA`. Prints its port, takes `COUNT`
  /// streams (each says `S` first) and one trigger (`T`), and sends an event to every
  /// stream for every byte of the trigger until it closes.
  static func main(_ arguments: [String]) throws {
    guard arguments.count == 2, let count = Int(arguments[0]), count > 0 else {
      throw BenchError("usage: --fanout-floor COUNT DATA")
    }
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 4096) == 0
          && getsockname(listener, $0, &length) == 0
      }
    }
    guard listener >= 0, bound else { throw BenchError("the floor's socket: \(errnoText())") }
    let line = "\(UInt16(bigEndian: address.sin_port))\n"
    _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    var trigger: Int32 = -1
    var streams: [Int32] = []
    while trigger < 0 || streams.count < count {
      let fd = accept(listener, nil, nil)
      guard fd >= 0 else {
        if errno == EINTR { continue }
        throw BenchError("accept: \(errnoText())")
      }
      var yes: Int32 = 1
      setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
      var kind: UInt8 = 0
      guard recv(fd, &kind, 1, Int32(MSG_WAITALL)) == 1 else {
        throw BenchError("a connection to the floor said nothing")
      }
      if kind == UInt8(ascii: "T") { trigger = fd } else { streams.append(fd) }
    }
    let data = arguments[1]
    var id = 0
    var byte: UInt8 = 0
    while recv(trigger, &byte, 1, 0) == 1 {
      id += 1
      let event = Array("event: changes\nid: \(id)\ndata: \(data)\n\n".utf8)
      event.withUnsafeBytes { bytes in
        for fd in streams { _ = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
      }
    }
  }
}
