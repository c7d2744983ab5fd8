import Foundation
import PostgresTestSupport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP proxy on 127.0.0.1 to a PostgreSQL server that can cut a session's connection
/// after the server committed a transaction and before the client hears so: the network
/// dropped between a `COMMIT` and its answer. It reads the server's messages (type byte,
/// length) to find the session's process id (`BackendKeyData`) and the answer to `COMMIT`
/// (`CommandComplete` with the tag `COMMIT`). Clients must connect with
/// `sslmode=disable gssencmode=disable`, so that every message the server sends is typed.
final class CommitDroppingProxy: Sendable {
  /// Where clients connect, on 127.0.0.1.
  let port: Int
  private let listener: Int32
  /// The session whose next `COMMIT` answer is dropped (0: none).
  private let armed = Atomic<Int32>(0)
  /// How many answers were dropped.
  private let droppedCount = Atomic<Int>(0)

  /// Starts listening, passing every connection on to `targetPort` of 127.0.0.1.
  init(targetPort: Int) throws {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { throw TestFailure("proxy: socket failed (errno \(errno))") }
    var address = Self.loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ready = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 16) == 0
          && getsockname(listener, $0, &length) == 0
      }
    }
    guard ready else {
      close(listener)
      throw TestFailure("proxy: cannot listen (errno \(errno))")
    }
    port = Int(UInt16(bigEndian: address.sin_port))
    self.listener = listener
    Thread.detachNewThread { [self] in
      while true {
        let client = accept(listener, nil, nil)
        if client < 0 {
          if errno == EINTR { continue }
          close(listener)
          return
        }
        guard let server = Self.connect(port: targetPort) else {
          close(client)
          continue
        }
        // Both descriptors are closed by whichever of the two threads ends last.
        let running = Running()
        Thread.detachNewThread {
          Self.copy(from: client, to: server)
          running.end(client, server)
        }
        Thread.detachNewThread { [self] in
          answers(from: server, to: client)
          running.end(client, server)
        }
      }
    }
  }

  /// Drops the answer to the next `COMMIT` of the session whose process id is
  /// `processID`, closing its connection instead.
  func dropNextCommitAnswer(of processID: Int32) { armed.store(processID, ordering: .releasing) }

  /// How many `COMMIT` answers were dropped.
  var dropped: Int { droppedCount.load(ordering: .acquiring) }

  /// Stops accepting connections (those open stay).
  func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

  /// How many of a connection's two threads still run.
  private final class Running: Sendable {
    private let count = Atomic<Int>(2)

    /// Closes `client` and `server` when the other thread ended too.
    func end(_ client: Int32, _ server: Int32) {
      guard count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
      close(client)
      close(server)
    }
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }

  private static func connect(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = loopback(port: port)
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
    guard fd >= 0, connected else {
      if fd >= 0 { close(fd) }
      return nil
    }
    return fd
  }

  /// Reads a chunk from `fd`; `nil` at the end of the stream or on an error.
  private static func read(_ fd: Int32, into buffer: inout [UInt8]) -> ArraySlice<UInt8>? {
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      return count > 0 ? buffer[0..<count] : nil
    }
  }

  /// Writes all of `bytes` to `fd`; false when it cannot (a peer that is gone raises no
  /// SIGPIPE).
  private static func write(_ bytes: some Collection<UInt8>, to fd: Int32) -> Bool {
    var rest = Array(bytes)[...]
    while !rest.isEmpty {
      let written = rest.withUnsafeBytes {
        send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { return false }
      rest = rest.dropFirst(written)
    }
    return true
  }

  /// Ends both directions of a proxied connection.
  private static func cut(_ client: Int32, _ server: Int32) {
    shutdown(client, Int32(SHUT_RDWR))
    shutdown(server, Int32(SHUT_RDWR))
  }

  /// The client's bytes, passed on as they are.
  private static func copy(from client: Int32, to server: Int32) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while let chunk = read(client, into: &buffer), write(chunk, to: server) {}
    cut(client, server)
  }

  /// The server's messages, passed on whole, but for an armed session's `COMMIT` answer.
  private func answers(from server: Int32, to client: Int32) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var pending: [UInt8] = []
    var processID: Int32 = 0
    let commitTag = Array("COMMIT\0".utf8)
    func bigEndian(_ at: Int) -> Int32 {
      pending[at..<at + 4].reduce(0) { $0 << 8 | Int32($1) }
    }
    reading: while let chunk = Self.read(server, into: &buffer) {
      pending += chunk
      var end = 0
      // Whole messages: a type byte, then a length that counts itself and the body.
      while pending.count - end >= 5 {
        let length = Int(bigEndian(end + 1))
        // (A length that does not count itself is no PostgreSQL message.)
        guard length >= 4 else { break reading }
        guard pending.count - end >= 1 + length else { break }
        let body = pending[(end + 5)..<(end + 1 + length)]
        if pending[end] == UInt8(ascii: "K"), body.count >= 4 { processID = bigEndian(end + 5) }
        if pending[end] == UInt8(ascii: "C"), body.elementsEqual(commitTag), processID != 0,
          armed.compareExchange(expected: processID, desired: 0, ordering: .acquiringAndReleasing)
            .exchanged
        {
          // What came before the answer reaches the client; the answer does not.
          _ = Self.write(pending[0..<end], to: client)
          droppedCount.add(1, ordering: .releasing)
          Self.cut(client, server)
          return
        }
        end += 1 + length
      }
      guard Self.write(pending[0..<end], to: client) else { break }
      pending.removeFirst(end)
    }
    Self.cut(client, server)
  }
}
