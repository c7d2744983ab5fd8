internal import CLibEvent

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One accepted connection, read and written on the loop's thread through a libevent
/// bufferevent: the server's own HTTP/1.1 reader and writer.
///
/// A request's head is read first, within a deadline from its first byte, and parsed
/// strictly (``RequestHead``); the server's ``HTTPServer/admit`` decides on the head alone
/// — the token, the size — before a byte of the body is buffered; then the body, then the
/// handler. One request at a time: what a client pipelines waits, bounded, until the
/// answer before it went out. An answer that leaves where the connection stands unclear
/// (a refused head, a body not read) closes it after a lingering read, so that the client
/// sees the answer rather than a reset.
final class HTTPConnection {
  /// Where the connection stands.
  enum Phase: Equatable {
    /// Waiting for a request: `served` of them answered so far.
    case idle(served: Int)
    /// A request's head has begun.
    case head
    /// Its body is being read.
    case body
    /// The handler has the request.
    case handling
    /// A stream or a held long poll is open.
    case streaming
    /// Sending what is left, then closing.
    case closing
    /// Gone.
    case closed
  }

  unowned let server: HTTPServer
  private let ev: LibEventFunctions
  let bufferevent: OpaquePointer
  let fd: Int32
  private var timer: OpaquePointer?
  private(set) var phase = Phase.idle(served: 0)
  /// When the phase began (for the server's choice of whom to close at its limit).
  private(set) var phaseSince = ContinuousClock.now
  /// Received bytes not yet taken by a head or a body.
  private var input: [UInt8] = []
  private var head: RequestHead?
  private var body: [UInt8] = []
  private var remaining = 0
  private var chunked: ChunkedDecoder?
  /// The head of the request under way.
  var currentHead: RequestHead? { head }
  /// The exchange the handler answers through, while it lasts.
  private(set) var exchange: HTTPExchange?
  /// Whose the connection is, for the server's counts of connections and streams per
  /// token.
  struct Holder: Equatable {
    /// The token of the connection's latest request, if it had one.
    var token: String?
    /// Whether its request is a stream or a long poll, until it is answered.
    var stream: Bool
    /// A connection that has carried no token.
    static let nobody = Holder(token: nil, stream: false)
  }
  /// Whose the connection is now.
  private(set) var holder = Holder.nobody {
    didSet { if holder != oldValue { server.recount(from: oldValue, to: holder) } }
  }
  /// Runs once the connection is gone (for shutting down).
  var onClosed: (() -> Void)?
  /// Whether the client shut down its sending side (the answer is still sent).
  private var peerFinished = false
  /// Whether the connection ends once the current answer is sent.
  private var closesAfterAnswer = false
  /// Whether writing is over and only a lingering read remains.
  private var lingering = false

  /// Input held while a request is handled, past which the socket is no longer read.
  private static let pipelineLimit = 64 * 1024

  init(server: HTTPServer, bufferevent: OpaquePointer, fd: Int32) {
    self.server = server
    self.ev = server.ev
    self.bufferevent = bufferevent
    self.fd = fd
  }

  /// Starts reading, with the idle deadline.
  func start() {
    let context = Unmanaged.passUnretained(self).toOpaque()
    ev.bufferevent_setcb(
      bufferevent,
      { _, context in
        guard let context else { return }
        Unmanaged<HTTPConnection>.fromOpaque(context).takeUnretainedValue().readable()
      },
      { _, context in
        guard let context else { return }
        Unmanaged<HTTPConnection>.fromOpaque(context).takeUnretainedValue().drained()
      },
      { _, events, context in
        guard let context else { return }
        Unmanaged<HTTPConnection>.fromOpaque(context).takeUnretainedValue().event(events)
      }, context)
    // libevent stops reading the socket while this much waits in its input buffer.
    ev.bufferevent_setwatermark(bufferevent, Int16(LISTSTORE_EV_READ), 0, Self.pipelineLimit)
    _ = ev.bufferevent_enable(bufferevent, Int16(LISTSTORE_EV_READ | LISTSTORE_EV_WRITE))
    timer = ev.event_new(
      server.loop.base, -1, 0,
      { _, _, context in
        guard let context else { return }
        Unmanaged<HTTPConnection>.fromOpaque(context).takeUnretainedValue().timedOut()
      }, context)
    enter(.idle(served: 0))
  }

  // MARK: - Phases and deadlines

  private func enter(_ next: Phase) {
    phase = next
    phaseSince = .now
    switch next {
    case .idle, .closing, .closed: holder.stream = false
    default: break
    }
    let limits = server.limits
    switch next {
    case .idle: setDeadline(seconds: limits.idleSeconds)
    case .head: setDeadline(seconds: limits.headSeconds)
    case .body:
      // At least a minimum rate, after a grace period.
      let rate = max(1, limits.minimumBodyRate)
      setDeadline(seconds: limits.headSeconds + max(remaining, 0) / rate)
    case .handling, .streaming: setDeadline(seconds: nil)
    case .closing: setDeadline(seconds: 10)
    case .closed: setDeadline(seconds: nil)
    }
  }

  private func setDeadline(seconds: Int?) {
    guard let timer else { return }
    _ = ev.event_del(timer)
    guard let seconds else { return }
    var interval = timeval(tv_sec: seconds, tv_usec: 0)
    _ = ev.event_add(timer, &interval)
  }

  /// Sets the closing deadline: the rest must be sent (or the lingering read end)
  /// within `seconds`.
  func closeWithin(seconds: Int) {
    guard phase != .closed else { return }
    closesAfterAnswer = true
    setDeadline(seconds: seconds)
  }

  private func timedOut() {
    switch phase {
    case .idle(let served):
      // A connection that never sent a whole request, or a quiet keep-alive one.
      if served == 0 && !input.isEmpty {
        refuse(HeadError(408, "requestTimeout", "the request head did not arrive in time"))
      } else {
        close()
      }
    case .head:
      refuse(
        HeadError(
          408, "requestTimeout",
          "the request head did not arrive within \(server.limits.headSeconds) s"))
    case .body:
      refuse(HeadError(408, "requestTimeout", "the request body did not arrive in time"))
    case .closing where !lingering && unsentBytes < unsentAtLastCheck:
      // Still sending what is left, and the client still takes it: a slow reader gets
      // the end of its answer (a stream's last event), however long that takes.
      unsentAtLastCheck = unsentBytes
      setDeadline(seconds: closingSeconds)
    case .handling, .streaming, .closing, .closed:
      close()
    }
  }

  /// Unsent bytes when the closing deadline was last set.
  private var unsentAtLastCheck = Int.max
  /// The closing deadline's length.
  private var closingSeconds = 10

  // MARK: - Reading

  private func readable() {
    guard let buffer = ev.bufferevent_get_input(bufferevent) else { return }
    switch phase {
    case .handling, .streaming:
      // Held until the answer went out: up to the limit, then the socket waits.
      let room = Self.pipelineLimit - input.count
      if room > 0 { take(from: buffer, upTo: room) }
      return
    case .closing, .closed:
      // A lingering read: what the client still sends is dropped.
      drop(from: buffer)
      return
    case .idle, .head, .body:
      take(from: buffer, upTo: Int.max)
      // A chunked body has no length to set a deadline by: it must keep coming.
      if phase == .body && chunked != nil { setDeadline(seconds: server.limits.headSeconds) }
    }
    advance()
  }

  private func take(from buffer: OpaquePointer, upTo limit: Int) {
    let length = min(ev.evbuffer_get_length(buffer), limit)
    guard length > 0 else { return }
    let start = input.count
    input += repeatElement(0, count: length)
    input.withUnsafeMutableBytes { bytes in
      if let base = bytes.baseAddress { _ = ev.evbuffer_remove(buffer, base + start, length) }
    }
  }

  private func drop(from buffer: OpaquePointer) {
    _ = ev.evbuffer_drain(buffer, ev.evbuffer_get_length(buffer))
  }

  /// Reads as far as the input allows: a head, a body, then hands the request over.
  private func advance() {
    while true {
      switch phase {
      case .idle(let served):
        guard !input.isEmpty else { return }
        if served > 0 || !input.allSatisfy({ $0 == 13 || $0 == 10 }) { enter(.head) }
        if case .idle = phase { return }
      case .head:
        guard readHead() else { return }
      case .body:
        guard readBody() else { return }
        dispatch()
        return
      case .handling, .streaming, .closing, .closed:
        return
      }
    }
  }

  /// Parses the head, and lets the server admit it; `true` when the body may be read.
  private func readHead() -> Bool {
    let parsed: RequestHead.Parsed
    do {
      parsed = try RequestHead.parse(input, limit: server.limits.maxHead)
    } catch {
      refuse(error)
      return false
    }
    guard case .head(let head, let length) = parsed else { return false }
    input.removeFirst(length)
    self.head = head
    switch server.admit(head, self) {
    case .refuse(let response):
      // The body, if any, is never read: the connection closes after the answer.
      write(response, for: head, closing: true)
      return false
    case .admit(let maxBody, let holder):
      self.holder = holder
      body = []
      switch head.framing {
      case .none:
        remaining = 0
      case .length(let length):
        guard length <= maxBody else {
          refuse(HeadError(413, "tooLarge", "the body is over \(maxBody) bytes"))
          return false
        }
        remaining = length
        body.reserveCapacity(min(length, 1 << 20))
      case .chunked:
        remaining = 0
        chunked = ChunkedDecoder(limit: maxBody)
      }
      if head.expectsContinue && head.framing != .none {
        let line = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        line.withUnsafeBytes { bytes in
          if let base = bytes.baseAddress {
            _ = ev.bufferevent_write(bufferevent, base, bytes.count)
          }
        }
      }
      enter(.body)
      return true
    }
  }

  /// Takes the body's bytes from the input; `true` once it is whole.
  private func readBody() -> Bool {
    if var decoder = chunked {
      do {
        let used = try decoder.decode(input[...], into: &body)
        input.removeFirst(used)
      } catch {
        refuse(error)
        return false
      }
      chunked = decoder
      return decoder.isComplete
    }
    let take = min(remaining, input.count)
    if take > 0 {
      body += input[..<take]
      input.removeFirst(take)
      remaining -= take
    }
    return remaining == 0
  }

  private func dispatch() {
    guard let head else { return }
    chunked = nil
    var headers: [String: String] = [:]
    for (name, value) in head.fields {
      if let existing = headers[name] {
        headers[name] = existing + (name == "cookie" ? "; " : ", ") + value
      } else {
        headers[name] = value
      }
    }
    let (path, query) = splitTarget(head.target)
    let request = HTTPRequest(
      method: head.method, path: path, query: query, headers: headers, body: body)
    body = []
    let exchange = HTTPExchange(server: server, connection: self, isHead: head.method == "HEAD")
    self.exchange = exchange
    enter(.handling)
    server.handler(request, exchange)
  }

  /// Answers a head that cannot be served, and closes; a `HEAD` request, even one whose
  /// head did not parse, gets the answer's head alone.
  private func refuse(_ error: HeadError) {
    let headOnly = head?.method == "HEAD" || input.starts(with: Array("HEAD ".utf8))
    write(
      .error(error.status, error.code, error.message), for: head, closing: true,
      headOnly: headOnly)
  }

  // MARK: - Writing

  /// Writes `response` as the answer to the request of `head`; then either waits for the
  /// next request or closes.
  func write(
    _ response: HTTPResponse, for head: RequestHead?, closing: Bool = false, headOnly: Bool = false
  ) {
    guard phase != .closing && phase != .closed else { return }
    exchange = nil
    var closes = closing || closesAfterAnswer || peerFinished || !(head?.keepAlive ?? false)
    if response.headers.contains(where: {
      $0.0.lowercased() == "connection" && $0.1.lowercased() == "close"
    }) {
      closes = true
    }
    let headOnly = headOnly || head?.method == "HEAD"
    var text = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
    for (name, value) in response.headers where !Self.framingFields.contains(name.lowercased()) {
      text += "\(name): \(value)\r\n"
    }
    if response.status != 204 && response.status != 304 {
      text += "Content-Length: \(response.body.count)\r\n"
    }
    if closes {
      text += "Connection: close\r\n"
    } else if head?.minorVersion == 0 {
      text += "Connection: keep-alive\r\n"
    }
    text += "\r\n"
    send(Array(text.utf8) + (headOnly ? [] : response.body))
    server.count(status: response.status)
    if closes {
      startClosing()
    } else {
      self.head = nil
      servedCount += 1
      enter(.idle(served: servedCount))
      // A request that came in meanwhile, and what the socket held back.
      if let buffer = ev.bufferevent_get_input(bufferevent) { take(from: buffer, upTo: Int.max) }
      advance()
    }
  }

  /// Requests answered on this connection.
  private var servedCount = 0

  /// Fields the connection writes itself.
  private static let framingFields: Set<String> = [
    "content-length", "transfer-encoding", "connection",
  ]

  /// Starts a stream: the head, with chunked framing on HTTP/1.1 (and the end of the
  /// connection marking the end on HTTP/1.0). A `HEAD` request gets the head alone. With
  /// `keepsConnection`, an HTTP/1.1 connection serves the next request once it ended (an
  /// answer streamed because it is large, not a stream of events).
  func startStream(status: Int, headers: [(String, String)], keepsConnection: Bool = false) {
    guard let head else { return }
    var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
    for (name, value) in headers where !Self.framingFields.contains(name.lowercased()) {
      text += "\(name): \(value)\r\n"
    }
    if head.minorVersion == 1 && head.method != "HEAD" { text += "Transfer-Encoding: chunked\r\n" }
    keepsAfterStream = keepsConnection && head.minorVersion == 1 && head.keepAlive
    text += keepsAfterStream ? "\r\n" : "Connection: close\r\n\r\n"
    send(Array(text.utf8))
    server.count(status: status)
    if !keepsAfterStream { closesAfterAnswer = true }
    enter(.streaming)
    // Disable TCP's coalescing: each event goes out at once.
    var yes: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Holds the request open (a long poll).
  func hold() {
    enter(.streaming)
  }

  /// Whether stream chunks are framed (HTTP/1.1), or the bytes go as they are.
  private var framesChunks: Bool { head?.minorVersion == 1 }

  /// Sends a chunk of a started stream; returns the bytes waiting unsent after it.
  func sendChunk(_ bytes: [UInt8]) -> Int {
    guard phase == .streaming, !bytes.isEmpty, head?.method != "HEAD" else { return unsentBytes }
    guard framesChunks else {
      send(bytes)
      return unsentBytes
    }
    // One allocation: a stream's event goes to every stream of its list.
    var framed: [UInt8] = []
    framed.reserveCapacity(bytes.count + 20)
    framed += String(bytes.count, radix: 16).utf8
    framed.append(13)
    framed.append(10)
    framed += bytes
    framed.append(13)
    framed.append(10)
    send(framed)
    return unsentBytes
  }

  /// Ends a started stream: its last chunk, then the connection closes once it is sent
  /// (within `seconds`, for a client that does not read).
  func endStream(closeWithin seconds: Int) {
    guard phase == .streaming else { return }
    if framesChunks && head?.method != "HEAD" { send(Array("0\r\n\r\n".utf8)) }
    exchange = nil
    setDrainThreshold(0)
    guard keepsAfterStream, !closesAfterAnswer, !peerFinished else {
      return startClosing(within: seconds)
    }
    keepsAfterStream = false
    head = nil
    servedCount += 1
    enter(.idle(served: servedCount))
    if let buffer = ev.bufferevent_get_input(bufferevent) { take(from: buffer, upTo: Int.max) }
    advance()
  }

  /// Whether the connection serves another request after the current stream ends.
  private var keepsAfterStream = false

  /// Makes the connection tell its exchange when what waits unsent falls to `bytes` (0:
  /// when all is sent), rather than only when all is sent.
  func setDrainThreshold(_ bytes: Int) {
    ev.bufferevent_setwatermark(bufferevent, Int16(LISTSTORE_EV_WRITE), bytes, 0)
  }

  /// Bytes queued on the connection and not yet taken by the client.
  var unsentBytes: Int {
    guard let output = ev.bufferevent_get_output(bufferevent) else { return 0 }
    return ev.evbuffer_get_length(output)
  }

  /// Queues `bytes`; with nothing queued on a plain socket, sends what the socket takes
  /// at once (one system call, where libevent's own path switches the write event on and
  /// off again) and queues the rest behind it, so that the order holds.
  private func send(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    var sent = 0
    if !server.isTLS, unsentBytes == 0 {
      while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes {
          Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        if count > 0 {
          sent += count
        } else if count < 0 && errno == EINTR {
          continue
        } else {
          break  // Full, or failed: libevent finds the error when it writes, and closes.
        }
      }
    }
    guard sent < bytes.count else { return }
    bytes[sent...].withUnsafeBytes { rest in
      if let base = rest.baseAddress { _ = ev.bufferevent_write(bufferevent, base, rest.count) }
    }
    _ = ev.bufferevent_enable(bufferevent, Int16(LISTSTORE_EV_WRITE))
  }

  // MARK: - Closing

  /// Closes once what is queued is sent: its write side first, then a lingering read
  /// (what the client still sends is dropped) until it closes too, or the deadline.
  private func startClosing(within seconds: Int = 10) {
    exchange = nil
    enter(.closing)
    closingSeconds = max(1, seconds)
    unsentAtLastCheck = unsentBytes
    setDeadline(seconds: closingSeconds)
    if let buffer = ev.bufferevent_get_input(bufferevent) { drop(from: buffer) }
    input = []
    if unsentBytes == 0 { drained() }
  }

  private func drained() {
    switch phase {
    case .closing where unsentBytes == 0 && !lingering:
      lingering = true
      if server.isTLS {
        close()
      } else {
        _ = shutdown(fd, Int32(SHUT_WR))
        setDeadline(seconds: 2)
      }
    case .streaming:
      exchange?.drained()
    default:
      break
    }
  }

  private func event(_ events: Int16) {
    let eof = Int32(events) & LISTSTORE_BEV_EVENT_EOF != 0
    let error = Int32(events) & (LISTSTORE_BEV_EVENT_ERROR | LISTSTORE_BEV_EVENT_TIMEOUT) != 0
    if eof && !error && phase == .handling {
      // The client finished sending; its answer still goes out, then the connection ends.
      peerFinished = true
      return
    }
    if eof || error { close() }
  }

  /// Frees the connection now: what is queued is dropped.
  func close() {
    guard phase != .closed else { return }
    phase = .closed
    if let timer {
      _ = ev.event_del(timer)
      ev.event_free(timer)
      self.timer = nil
    }
    ev.bufferevent_setcb(bufferevent, nil, nil, nil, nil)
    ev.bufferevent_free(bufferevent)
    holder = .nobody
    let exchange = self.exchange
    self.exchange = nil
    exchange?.clientLeft()
    server.forget(self)
    let onClosed = self.onClosed
    self.onClosed = nil
    onClosed?()
  }

  /// Whether the connection waits for a request's head: new, or between requests.
  var isWaitingForHead: Bool {
    switch phase {
    case .idle(let served): served == 0
    case .head: true
    default: false
    }
  }

  /// Whether it is a kept-alive connection with nothing under way.
  var isIdleKeepAlive: Bool {
    if case .idle(let served) = phase { return served > 0 }
    return false
  }
}
