import ListStoreFormats
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// MARK: - Reading

/// Wakes a ``KeyReader`` from another thread, or from a signal handler: a pipe whose read end
/// the reader waits on.
final class Waker: Sendable {
  /// The end the reader waits on.
  let readDescriptor: Int32
  /// The end ``wake()`` writes to.
  let writeDescriptor: Int32

  /// Creates the pipe.
  /// - Throws: ``TerminalError`` when the process is out of descriptors.
  init() throws(TerminalError) {
    var descriptors: [Int32] = [-1, -1]
    guard pipe(&descriptors) == 0 else {
      throw TerminalError(description: "cannot create a pipe: \(String(cString: strerror(errno)))")
    }
    for descriptor in descriptors {
      _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
      _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }
    readDescriptor = descriptors[0]
    writeDescriptor = descriptors[1]
  }

  deinit {
    close(readDescriptor)
    close(writeDescriptor)
  }

  /// Wakes the reader; wakes that come before it looks are merged into one. Safe from any
  /// thread.
  func wake() {
    var byte: UInt8 = 1
    _ = write(writeDescriptor, &byte, 1)  // A full pipe already holds a wake.
  }

  /// Empties the pipe.
  func drain() {
    var buffer = [UInt8](repeating: 0, count: 64)
    while buffer.withUnsafeMutableBytes({ read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {}
  }
}

/// Waits for keys on a terminal, for a timeout, or for a ``Waker``.
final class KeyReader {
  /// What ended a wait.
  enum Event: Equatable {
    /// Keys were pressed.
    case keys([Key])
    /// The timeout passed.
    case timedOut
    /// ``waker`` was woken.
    case woken
    /// The input was closed.
    case endOfInput
  }

  /// The descriptor read.
  let descriptor: Int32
  /// Wakes ``next(timeout:)`` from another thread.
  let waker: Waker
  /// How long to wait for the rest of an escape sequence before a lone ESC counts as Escape.
  var escapeDelay: Duration = .milliseconds(40)
  private var decoder = KeyDecoder()

  /// Creates a reader.
  /// - Parameters:
  ///   - descriptor: The terminal to read; standard input by default.
  ///   - waker: What wakes ``next(timeout:)`` from other threads; a new one by default.
  /// - Throws: ``TerminalError`` when the waker's pipe cannot be made.
  init(descriptor: Int32 = STDIN_FILENO, waker: Waker? = nil) throws(TerminalError) {
    self.descriptor = descriptor
    if let waker {
      self.waker = waker
    } else {
      self.waker = try Waker()
    }
  }

  /// Waits until keys arrive, `timeout` passes, or ``waker`` is woken.
  /// - Parameter timeout: How long to wait at most; `nil` waits without a limit.
  /// - Returns: What ended the wait. Keys win over a wake that came at the same time.
  /// - Throws: ``TerminalError`` when the terminal cannot be read.
  func next(timeout: Duration?) throws(TerminalError) -> Event {
    var fds = [
      pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
      pollfd(fd: waker.readDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    let ready = poll(&fds, 2, timeout.map(Self.milliseconds) ?? -1)
    if ready < 0 {
      if errno == EINTR { return .woken }
      throw TerminalError(description: "cannot wait for input: \(String(cString: strerror(errno)))")
    }
    if fds[1].revents != 0 { waker.drain() }
    if fds[0].revents != 0 {
      guard var keys = try readKeys() else { return .endOfInput }
      // An unfinished escape sequence: wait briefly for its rest.
      while decoder.hasPending {
        var more = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        if poll(&more, 1, Self.milliseconds(escapeDelay)) > 0, let rest = try readKeys() {
          keys += rest
        } else {
          keys += decoder.flush()
        }
      }
      return keys.isEmpty ? .woken : .keys(keys)
    }
    return ready == 0 ? .timedOut : .woken
  }

  /// The keys in what can be read now; `nil` at the end of input.
  private func readKeys() throws(TerminalError) -> [Key]? {
    var buffer = [UInt8](repeating: 0, count: 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 && (errno == EINTR || errno == EAGAIN) { return [] }
      if count < 0 {
        throw TerminalError(
          description: "cannot read the terminal: \(String(cString: strerror(errno)))")
      }
      if count == 0 { return nil }
      return decoder.decode(buffer[0..<count])
    }
  }

  private static func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    return Int32(clamping: max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
  }
}
