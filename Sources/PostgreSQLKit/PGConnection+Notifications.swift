internal import CLibPQ

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A notification sent with `NOTIFY` (or `pg_notify`) on a channel this connection
/// listens on.
public struct PGNotification: Sendable, Hashable, CustomStringConvertible {
  /// The channel's name.
  public var channel: String
  /// The payload; empty when none was given.
  public var payload: String
  /// The process id of the server process whose session sent it: equal to
  /// ``PGConnection/backendPID`` for a connection's own notifications.
  public var processID: Int32

  /// Creates a notification value.
  /// - Parameters:
  ///   - channel: The channel's name.
  ///   - payload: The payload.
  ///   - processID: The sending session's server process id.
  public init(channel: String, payload: String, processID: Int32) {
    self.channel = channel
    self.payload = payload
    self.processID = processID
  }

  /// `channel: payload (from pid)`.
  public var description: String { "\(channel): \(payload) (from \(processID))" }
}

/// Wakes a thread blocked in ``PGConnection/waitForNotifications(timeout:interrupter:)``
/// from any other thread, so that a listener can be stopped promptly.
///
/// An interruption is remembered until a wait consumes it: interrupting just before
/// the wait begins makes that wait return at once, so no wake-up is lost.
///
/// ```swift
/// let interrupter = try PGWaitInterrupter()
/// // listener thread:
/// while !stopped { handle(try db.waitForNotifications(timeout: .seconds(30), interrupter: interrupter)) }
/// // any other thread:
/// stopped = true; interrupter.interrupt()
/// ```
public final class PGWaitInterrupter: Sendable {
  // A self-pipe: `interrupt()` writes a byte, waits poll the read end alongside the
  // server's socket. Both ends are non-blocking and closed on exec.
  let readDescriptor: Int32
  private let writeDescriptor: Int32

  /// Creates an interrupter.
  /// - Throws: ``PGError`` (`.other`) when the system has no file descriptor left for
  ///   its pipe.
  public init() throws {
    var descriptors: [Int32] = [-1, -1]
    guard pipe(&descriptors) == 0 else {
      throw PGError(kind: .other, message: "cannot create a pipe: errno \(errno)")
    }
    for descriptor in descriptors {
      _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
      _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }
    readDescriptor = descriptors[0]
    writeDescriptor = descriptors[1]
  }

  deinit {
    _ = close(readDescriptor)
    _ = close(writeDescriptor)
  }

  /// Makes the current wait, or the next one, return without notifications. Safe to
  /// call from any thread, any number of times.
  public func interrupt() {
    var byte: UInt8 = 1
    // A full pipe already holds a pending interruption, so a failed write loses nothing.
    _ = write(writeDescriptor, &byte, 1)
  }

  /// Consumes pending interruptions.
  /// - Returns: Whether there was one.
  func consume() -> Bool {
    var buffer = [UInt8](repeating: 0, count: 64)
    var consumed = false
    while buffer.withUnsafeMutableBytes({ read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {
      consumed = true
    }
    return consumed
  }
}

extension PGConnection {
  /// Starts listening on a channel; notifications arrive through
  /// ``waitForNotifications(timeout:interrupter:)``.
  ///
  /// Inside a transaction, listening begins when it commits. ``reset()`` listens again
  /// on every channel listened to.
  /// - Parameter channel: The channel's name (any text; it is quoted as an identifier).
  /// - Throws: ``PGError`` when the server refuses, as a standby does.
  public func listen(_ channel: String) throws {
    try execute("LISTEN " + Self.quoteIdentifier(channel))
    listeningChannels.insert(channel)
  }

  /// Stops listening on a channel.
  /// - Parameter channel: The channel's name.
  /// - Throws: ``PGError`` when the server cannot be reached.
  public func unlisten(_ channel: String) throws {
    try execute("UNLISTEN " + Self.quoteIdentifier(channel))
    listeningChannels.remove(channel)
  }

  /// Sends a notification on a channel, delivered to its listeners when (and if) the
  /// current transaction commits — at once outside a transaction.
  ///
  /// Within one transaction, identical channel and payload pairs are delivered once.
  /// - Parameters:
  ///   - channel: The channel's name.
  ///   - payload: The payload; it must be shorter than 8,000 bytes.
  /// - Throws: ``PGError`` when the payload is too long or the server cannot be reached.
  public func notify(_ channel: String, payload: String = "") throws {
    try query("SELECT pg_notify($1, $2)", channel, payload)
  }

  /// The notifications that already arrived, without waiting: reads what the server
  /// has sent so far.
  /// - Returns: The notifications, oldest first; empty when there are none.
  /// - Throws: ``PGError`` (`.connectionLost`) when the connection broke.
  public func pendingNotifications() throws -> [PGNotification] {
    try checkOpen()
    guard pq.PQconsumeInput(handle) == 1 else { throw lostConnection() }
    return receivedNotifications()
  }

  /// Waits until notifications arrive on a channel this connection listens on, the
  /// timeout passes, or `interrupter` is interrupted, and returns the notifications.
  ///
  /// Notifications that already arrived (such as this session's own, received with
  /// the result of its `NOTIFY`) are returned at once. The connection must be idle: no
  /// query may be running on it.
  /// - Parameters:
  ///   - timeout: How long to wait at most; `nil` waits until notifications arrive or
  ///     an interruption.
  ///   - interrupter: Lets another thread end the wait early.
  /// - Returns: The notifications, oldest first; empty when the timeout passed or the
  ///   wait was interrupted.
  /// - Throws: ``PGError`` (`.connectionLost`) when the connection broke — a server
  ///   shutdown, `pg_terminate_backend`, or a network failure the keepalives noticed.
  public func waitForNotifications(
    timeout: Duration?, interrupter: PGWaitInterrupter? = nil
  ) throws -> [PGNotification] {
    let clock = ContinuousClock()
    let deadline = timeout.map { clock.now.advanced(by: $0) }
    var notifications = try pendingNotifications()
    while notifications.isEmpty {
      if let interrupter, interrupter.consume() { return [] }
      let socket = pq.PQsocket(handle)
      guard socket >= 0 else { throw lostConnection() }
      var milliseconds: Int32 = -1
      if let deadline {
        let remaining = clock.now.duration(to: deadline)
        if remaining <= .zero { return [] }
        // Round up, so that the wait does not end a fraction of a millisecond early.
        let (seconds, attoseconds) = remaining.components
        milliseconds = Int32(
          clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
      }
      var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
      if let interrupter {
        descriptors.append(
          pollfd(fd: interrupter.readDescriptor, events: Int16(POLLIN), revents: 0))
      }
      let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
      if ready < 0 {
        if errno == EINTR { continue }
        throw PGError(kind: .other, message: "poll failed: errno \(errno)")
      }
      if ready == 0 { continue }  // timed out: the loop's deadline check returns
      if descriptors[0].revents != 0 { notifications = try pendingNotifications() }
    }
    return notifications
  }

  /// Drains libpq's queue of received notifications.
  private func receivedNotifications() -> [PGNotification] {
    var notifications: [PGNotification] = []
    while let notify = pq.PQnotifies(handle) {
      notifications.append(
        PGNotification(
          channel: notify.pointee.relname.map { String(cString: $0) } ?? "",
          payload: notify.pointee.extra.map { String(cString: $0) } ?? "",
          processID: notify.pointee.be_pid))
      pq.PQfreemem(notify)
    }
    return notifications
  }

  private func lostConnection() -> PGError {
    var error = error(from: nil, sql: nil)
    error.kind = .connectionLost
    return error
  }
}
