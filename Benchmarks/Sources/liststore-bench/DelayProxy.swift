import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP proxy that holds every chunk of bytes for `delay` before passing it on, in both
/// directions: a link whose round trip takes two delays more than loopback's, between the
/// benchmark and a server on `targetPort` of 127.0.0.1 (B10 with `--pg-tcp-delay`). It
/// listens on the machine's own network address when it has one, so that clients see a
/// network link (ListStore sends a write's reads with its COMMIT only over a network),
/// else on 127.0.0.1. It runs until the process ends.
final class DelayProxy: Sendable {
  /// Where clients connect.
  let host: String
  let port: Int

  /// Starts listening on an unused port.
  init(targetPort: Int, delayMicroseconds: Int) throws {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { throw BenchError("proxy: socket: \(errnoText())") }
    var address = Self.loopback(port: 0)
    if let network = Self.networkAddress() { address.sin_addr.s_addr = network }
    host = Self.text(address.sin_addr)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0, listen(listener, 16) == 0 else {
      close(listener)
      throw BenchError("proxy: bind/listen: \(errnoText())")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(listener, $0, &length)
      }
    }
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread.detach {
      while true {
        let client = accept(listener, nil, nil)
        guard client >= 0 else {
          if errno == EINTR { continue }
          return
        }
        guard let server = try? Self.connect(port: targetPort) else {
          close(client)
          continue
        }
        for (from, to) in [(client, server), (server, client)] {
          Self.pump(from: from, to: to, delayMicroseconds: delayMicroseconds)
        }
      }
    }
  }

  /// The machine's first IPv4 address outside the loopback network, if any.
  private static func networkAddress() -> in_addr_t? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0, let first = list else { return nil }
    defer { freeifaddrs(first) }
    for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
      guard let address = entry.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET
      else { continue }
      let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
        $0.pointee.sin_addr.s_addr
      }
      if UInt32(bigEndian: ipv4) >> 24 != 127 { return ipv4 }
    }
    return nil
  }

  /// An IPv4 address in dotted form.
  private static func text(_ address: in_addr) -> String {
    let value = UInt32(bigEndian: address.s_addr)
    return [24, 16, 8, 0].map { String((value >> $0) & 0xFF) }.joined(separator: ".")
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }

  private static func connect(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("proxy: socket: \(errnoText())") }
    var address = loopback(port: port)
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard status == 0 else {
      close(fd)
      throw BenchError("proxy: connect: \(errnoText())")
    }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    return fd
  }

  /// Chunks read from `from`, each with the time it may be written to `to`; `nil` at the
  /// end of the stream.
  private final class Queue: Sendable {
    let chunks = Mutex<[(due: UInt64, bytes: [UInt8])?]>([])
    let ready = DispatchSemaphore(value: 0)
  }

  /// Copies `from` to `to`, each chunk `delayMicroseconds` after it was read: one thread
  /// reads, another writes when a chunk is due.
  private static func pump(from: Int32, to: Int32, delayMicroseconds: Int) {
    var one: Int32 = 1
    setsockopt(to, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    let queue = Queue()
    Thread.detach {
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        let due = monotonicNanoseconds() + UInt64(delayMicroseconds) * 1_000
        queue.chunks.withLock { $0.append(count > 0 ? (due, Array(buffer[0..<count])) : nil) }
        queue.ready.signal()
        if count <= 0 { return }
      }
    }
    Thread.detach {
      while true {
        queue.ready.wait()
        guard let chunk = queue.chunks.withLock({ $0.removeFirst() }) else {
          shutdown(to, Int32(SHUT_WR))
          return
        }
        let now = monotonicNanoseconds()
        if chunk.due > now {
          var pause = timespec(
            tv_sec: Int((chunk.due - now) / 1_000_000_000),
            tv_nsec: Int((chunk.due - now) % 1_000_000_000))
          var left = timespec()
          while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
        }
        var offset = 0
        while offset < chunk.bytes.count {
          let written = chunk.bytes[offset...].withUnsafeBytes {
            write(to, $0.baseAddress, $0.count)
          }
          if written < 0 && errno == EINTR { continue }
          guard written > 0 else { return }
          offset += written
        }
      }
    }
  }
}
