internal import CLibEvent
import ListStore
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The server's HTTP/1.1 side on one libevent loop thread: it accepts connections, reads
/// their requests itself (``HTTPConnection``), asks ``admit`` about each head before its
/// body is read, and hands each whole request to `handler`.
///
/// It holds at most ``ServerLimits/maxConnections`` connections, and keeps descriptors
/// spare: at its limit it still accepts, then closes the connection that has waited
/// longest without a complete head (failing that, the longest-idle kept-alive one); out
/// of descriptors, it accepts and closes at once, saying so on standard error at most
/// once a second, rather than spinning.
final class HTTPServer: @unchecked Sendable {
  // `@unchecked Sendable`: the connections, the listener and the counters' bookkeeping
  // are touched on the loop's thread only; `statusCounts` is locked.
  let ev: LibEventFunctions
  let loop: EventLoop
  let limits: ServerLimits
  private var listener: Int32 = -1
  private var acceptEvent: OpaquePointer?
  /// A descriptor held in reserve, given up for a moment to accept and close a connection
  /// when the process has none left.
  private var spare: Int32 = -1
  private var lastDescriptorWarning: ContinuousClock.Instant?
  /// The open connections (loop's thread only).
  private var connections: [ObjectIdentifier: HTTPConnection] = [:]
  /// The bound address's port (useful when asked for port 0).
  private(set) var port: Int = 0
  let handler: @Sendable (HTTPRequest, HTTPExchange) -> Void
  /// Decides on a request's head, before its body is read (on the loop's thread).
  var admit: (RequestHead, HTTPConnection) -> Admission = { _, _ in .admit(maxBody: 0) }
  /// Responses by status, for `/metrics`.
  let statusCounts = Locked<[Int: Int]>([:])
  /// Wraps each connection in TLS, when serving it.
  private let tls: TLSContext?
  /// Whether connections are TLS (their bytes go through libevent's OpenSSL filter).
  var isTLS: Bool { tls != nil }

  /// What ``admit`` decides about a head.
  enum Admission {
    /// Read the body, up to `maxBody` bytes, and hand the request over; the connection is
    /// then counted as `holder`'s (``HTTPConnection/Holder``).
    case admit(maxBody: Int, holder: HTTPConnection.Holder = .nobody)
    /// Answer this without reading the body, and close.
    case refuse(HTTPResponse)
  }

  /// Binds `host:port` and prepares the server; ``run()`` serves.
  init(
    host: String, port: Int, limits: ServerLimits, tls: TLSFiles? = nil,
    handler: @escaping @Sendable (HTTPRequest, HTTPExchange) -> Void
  ) throws(ServerError) {
    let ev = try LibEvent.functions.get()
    // A client that goes away while libevent writes to it must not end the process:
    // the write fails instead, and the connection closes.
    signal(SIGPIPE, SIG_IGN)
    self.tls = try tls.map { files throws(ServerError) in try TLSContext(files) }
    self.ev = ev
    self.limits = limits
    loop = try EventLoop(ev)
    self.handler = handler
    listener = try Self.listen(host: host, port: port)
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    self.port = Self.port(of: address)
    spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
    acceptEvent = ev.event_new(
      loop.base, listener, Int16(LISTSTORE_EV_READ | LISTSTORE_EV_PERSIST),
      { _, _, context in
        guard let context else { return }
        Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().acceptConnections()
      }, Unmanaged.passUnretained(self).toOpaque())
    guard let acceptEvent, ev.event_add(acceptEvent, nil) == 0 else {
      close(listener)
      throw ServerError("libevent cannot accept connections on \(host):\(port)")
    }
  }

  deinit {
    if let acceptEvent { ev.event_free(acceptEvent) }
    if listener >= 0 { close(listener) }
    if spare >= 0 { close(spare) }
  }

  func count(status: Int) {
    statusCounts.withLock { $0[status, default: 0] += 1 }
  }

  /// How many connections are open (loop's thread).
  var connectionCount: Int { connections.count }

  /// Serves until ``stop()``; blocks the calling thread.
  func run() {
    loop.run()
    // Whatever is still open when the loop ends goes with it.
    for connection in Array(connections.values) { connection.close() }
  }

  /// Stops accepting connections, closes the idle ones, and makes ``run()`` return once
  /// the tasks queued before it ran.
  func stop() {
    loop.execute { [self] in stopAccepting() }
    loop.stop()
  }

  /// Stops accepting, and closes the connections that wait for a request (loop's thread).
  func stopAccepting() {
    if let acceptEvent {
      _ = ev.event_del(acceptEvent)
      ev.event_free(acceptEvent)
      self.acceptEvent = nil
    }
    if listener >= 0 {
      close(listener)
      listener = -1
    }
    for connection in connections.values
    where connection.isWaitingForHead || connection.isIdleKeepAlive {
      connection.close()
    }
  }

  // MARK: - Accepting

  private func acceptConnections() {
    // A bounded number per wake-up, so that one busy listener cannot starve the loop.
    for _ in 0..<64 {
      let fd = accept(listener, nil, nil)
      if fd < 0 {
        switch errno {
        case EINTR, ECONNABORTED: continue
        case EMFILE, ENFILE: shedWithoutDescriptors()
        default: break
        }
        return
      }
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      var evicted = false
      if connections.count >= limits.maxConnections {
        guard makeRoom() else {
          close(fd)
          continue
        }
        evicted = true
      }
      let bufferevent =
        tls.flatMap { $0.bufferevent(base: loop.base, fd: fd) }
        ?? (tls == nil
          ? ev.bufferevent_socket_new(loop.base, fd, LISTSTORE_BEV_OPT_CLOSE_ON_FREE) : nil)
      guard let bufferevent else {
        close(fd)
        continue
      }
      let connection = HTTPConnection(server: self, bufferevent: bufferevent, fd: fd)
      connections[ObjectIdentifier(connection)] = connection
      connection.start()
      // libevent closes a freed connection's socket when the loop next runs its
      // finalizers: accept the next one after that, so that evictions keep the count of
      // descriptors where the limit puts it.
      if evicted { return }
    }
  }

  /// At the connection limit: closes the connection that has waited longest without a
  /// complete head, else the longest-idle kept-alive one; `false` when none may go.
  private func makeRoom() -> Bool {
    let waiting = connections.values.filter(\.isWaitingForHead)
    let idle = connections.values.filter(\.isIdleKeepAlive)
    guard
      let victim = waiting.min(by: { $0.phaseSince < $1.phaseSince })
        ?? idle.min(by: { $0.phaseSince < $1.phaseSince })
    else { return false }
    victim.close()
    return true
  }

  /// No descriptor left: gives up the spare one to accept the waiting connection and
  /// close it at once (else the listener stays readable and the loop spins), and says
  /// so at most once a second.
  private func shedWithoutDescriptors() {
    let now = ContinuousClock.now
    if lastDescriptorWarning.map({ $0.duration(to: now) >= .seconds(1) }) ?? true {
      lastDescriptorWarning = now
      let line =
        "liststore serve: out of file descriptors with \(connections.count) connections open; "
        + "closing new connections (raise the limit with ulimit -n, or lower --max-connections)\n"
      _ = line.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
    }
    guard spare >= 0 else { return }
    close(spare)
    spare = -1
    while true {
      let fd = accept(listener, nil, nil)
      if fd < 0 { break }
      close(fd)
    }
    spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
  }

  /// A connection is gone (from the connection).
  func forget(_ connection: HTTPConnection) {
    connections[ObjectIdentifier(connection)] = nil
  }

  // MARK: - Who holds what

  /// Open connections by the token of their latest request (loop's thread).
  private(set) var connectionsByToken: [String: Int] = [:]
  /// Open streams and held long polls by token (loop's thread).
  private(set) var streamsByToken: [String: Int] = [:]
  /// Open streams and held long polls, with a token or not (loop's thread).
  private(set) var streamCount = 0

  /// A connection's holder changed, from `old` to `new` (from the connection).
  func recount(from old: HTTPConnection.Holder, to new: HTTPConnection.Holder) {
    func add(_ count: inout [String: Int], _ token: String?, _ delta: Int) {
      guard let token else { return }
      let value = count[token, default: 0] + delta
      count[token] = value > 0 ? value : nil
    }
    if old.token != new.token {
      add(&connectionsByToken, old.token, -1)
      add(&connectionsByToken, new.token, 1)
    }
    if old.stream {
      streamCount -= 1
      add(&streamsByToken, old.token, -1)
    }
    if new.stream {
      streamCount += 1
      add(&streamsByToken, new.token, 1)
    }
  }

  private static func listen(host: String, port: Int) throws(ServerError) -> Int32 {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
      hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
      hints.ai_socktype = SOCK_STREAM
    #endif
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &list)
    guard status == 0, let first = list else {
      throw ServerError(
        "cannot listen on \(host):\(port): \(String(cString: gai_strerror(status)))")
    }
    defer { freeaddrinfo(list) }
    let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, 0)
    guard fd >= 0 else {
      throw ServerError("cannot make a socket: \(String(cString: strerror(errno)))")
    }
    var yes: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
      let code = errno
      let reason = String(cString: strerror(code))
      close(fd)
      if code == EADDRINUSE {
        throw ServerError(
          "cannot listen on \(host):\(port): \(reason); another server (another 'liststore "
            + "serve', say) may be running there: stop it, or choose another address with "
            + "--listen HOST:PORT (port 0 picks a free one)")
      }
      throw ServerError("cannot listen on \(host):\(port): \(reason)")
    }
    guard Glibc.listen(fd, 1024) == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw ServerError("cannot listen on \(host):\(port): \(reason)")
    }
    return fd
  }

  private static func port(of address: sockaddr_storage) -> Int {
    var address = address
    return withUnsafePointer(to: &address) { pointer in
      switch Int32(pointer.pointee.ss_family) {
      case AF_INET:
        pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
          Int(UInt16(bigEndian: $0.pointee.sin_port))
        }
      case AF_INET6:
        pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          Int(UInt16(bigEndian: $0.pointee.sin6_port))
        }
      default: 0
      }
    }
  }
}
