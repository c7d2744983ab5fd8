internal import CLibEvent
import ListStore
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An HTTP request as the server's handlers see it: read whole by libevent, copied out
/// of its buffers on the loop's thread.
struct HTTPRequest: Sendable {
  /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD` or `OPTIONS`.
  var method: String
  /// The path, percent-decoded per segment by ``segments``.
  var path: String
  /// The query's parameters, percent-decoded (the last of a repeated name wins).
  var query: [String: String]
  /// The request headers the handlers read, by lowercased name.
  var headers: [String: String]
  var body: [UInt8]

  /// The path's segments, percent-decoded: `/v1/lists/a%20b` → `["v1", "lists", "a b"]`;
  /// `nil` when a segment is not valid percent-encoded UTF-8.
  var segments: [String]? {
    var result: [String] = []
    for part in path.split(separator: "/", omittingEmptySubsequences: true) {
      guard let decoded = percentDecoded(part) else { return nil }
      result.append(decoded)
    }
    return result
  }
}

/// A response: status, headers and body.
struct HTTPResponse: Sendable {
  var status: Int
  var headers: [(String, String)] = []
  var body: [UInt8] = []

  /// A JSON body.
  static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Self {
    Self(
      status: status,
      headers: [("Content-Type", "application/json; charset=utf-8")] + headers,
      body: Array(text.utf8))
  }

  /// Adds `fields` (`,"key":value…`) to a JSON object body, before its closing brace.
  mutating func insertFields(_ fields: String) {
    guard body.last == UInt8(ascii: "}") else { return }
    body.removeLast()
    body += Array(fields.utf8) + [UInt8(ascii: "}")]
  }

  /// The error body of the contract: `{"error": …, "code": …}`.
  static func error(
    _ status: Int, _ code: String, _ message: String, headers: [(String, String)] = [],
    detail: String? = nil
  )
    -> Self
  {
    json(
      status,
      "{\"error\":" + JSONText.quote(message) + ",\"code\":" + JSONText.quote(code)
        + (detail.map { ",\"detail\":" + $0 } ?? "") + "}",
      headers: headers)
  }
}

/// One request being answered. Made and answered on the loop's thread; other threads
/// answer it through ``respond(_:)`` and the stream methods, which hand the work to the
/// loop. libevent frees the request once it is answered (or once its client went away
/// and it is answered after all).
final class HTTPExchange: @unchecked Sendable {
  let server: HTTPServer
  /// Touched on the loop's thread only; `nil` once answered.
  private var request: OpaquePointer?
  /// Whether a stream's client went away (loop's thread only).
  private(set) var isClosed = false
  /// Whether a chunked answer was started (loop's thread only).
  private var streaming = false
  /// Called on the loop's thread when the client of a held request goes away.
  private var onClose: (() -> Void)?
  private var retainedForClose: Unmanaged<HTTPExchange>?

  init(server: HTTPServer, request: OpaquePointer) {
    self.server = server
    self.request = request
  }

  /// Answers with `response`, from any thread.
  func respond(_ response: HTTPResponse) {
    server.loop.execute { self.sendNow(response) }
  }

  /// Answers on the loop's thread.
  func sendNow(_ response: HTTPResponse) {
    guard let request else { return }
    let ev = server.ev
    detachCloseCallback()
    let headers = ev.evhttp_request_get_output_headers(request)
    for (name, value) in response.headers { _ = ev.evhttp_add_header(headers, name, value) }
    let buffer = ev.evbuffer_new()
    if let buffer, !response.body.isEmpty {
      response.body.withUnsafeBytes { bytes in
        if let base = bytes.baseAddress { _ = ev.evbuffer_add(buffer, base, bytes.count) }
      }
    }
    ev.evhttp_send_reply(request, Int32(response.status), reason(response.status), buffer)
    if let buffer { ev.evbuffer_free(buffer) }
    self.request = nil
    server.count(status: response.status)
  }

  /// Starts a chunked answer that stays open (a stream, a long poll), on the loop's
  /// thread; `onClose` runs there if the client goes away first.
  func startStream(
    status: Int, headers: [(String, String)], timeoutSeconds: Int32, onClose: @escaping () -> Void
  ) {
    guard let request else { return }
    let ev = server.ev
    let output = ev.evhttp_request_get_output_headers(request)
    for (name, value) in headers { _ = ev.evhttp_add_header(output, name, value) }
    if let connection = ev.evhttp_request_get_connection(request) {
      ev.evhttp_connection_set_timeout(connection, timeoutSeconds)
      // Each event goes out at once, not held back until the last one is acknowledged.
      if let bufferevent = ev.evhttp_connection_get_bufferevent(connection) {
        var yes: Int32 = 1
        _ = setsockopt(
          ev.bufferevent_getfd(bufferevent), Int32(IPPROTO_TCP), TCP_NODELAY, &yes,
          socklen_t(MemoryLayout<Int32>.size))
      }
    }
    watchClose(onClose)
    streaming = true
    ev.evhttp_send_reply_start(request, Int32(status), reason(status))
    server.count(status: status)
  }

  /// Holds the request without answering (a long poll), noticing its client leave.
  func hold(onClose: @escaping () -> Void) {
    watchClose(onClose)
  }

  private func watchClose(_ onClose: @escaping () -> Void) {
    guard let request, let connection = server.ev.evhttp_request_get_connection(request) else {
      return
    }
    self.onClose = onClose
    retainedForClose = Unmanaged.passRetained(self)
    server.ev.evhttp_connection_set_closecb(
      connection,
      { _, context in
        guard let context else { return }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(context).takeUnretainedValue()
        exchange.clientLeft()
      }, retainedForClose?.toOpaque())
  }

  private func clientLeft() {
    isClosed = true
    let onClose = self.onClose
    self.onClose = nil
    // The request is no longer on a connection: answering it frees it.
    if let request {
      server.ev.evhttp_send_reply_end(request)
      self.request = nil
    }
    retainedForClose?.release()
    retainedForClose = nil
    onClose?()
  }

  private func detachCloseCallback() {
    guard retainedForClose != nil else { return }
    if let request, let connection = server.ev.evhttp_request_get_connection(request) {
      server.ev.evhttp_connection_set_closecb(connection, nil, nil)
    }
    retainedForClose?.release()
    retainedForClose = nil
    onClose = nil
  }

  /// Sends a chunk of a started stream (loop's thread).
  /// - Returns: How many bytes wait unsent on the connection after it.
  @discardableResult
  func sendChunk(_ bytes: [UInt8]) -> Int {
    guard let request, !isClosed, !bytes.isEmpty else { return 0 }
    let ev = server.ev
    if !server.isTLS, let connection = ev.evhttp_request_get_connection(request),
      let bufferevent = ev.evhttp_connection_get_bufferevent(connection),
      let output = ev.bufferevent_get_output(bufferevent), ev.evbuffer_get_length(output) == 0
    {
      return sendDirectly(chunk: bytes, bufferevent: bufferevent)
    }
    guard let buffer = ev.evbuffer_new() else { return 0 }
    bytes.withUnsafeBytes { bytes in
      if let base = bytes.baseAddress { _ = ev.evbuffer_add(buffer, base, bytes.count) }
    }
    ev.evhttp_send_reply_chunk(request, buffer)
    ev.evbuffer_free(buffer)
    return unsentBytes
  }

  /// Sends a chunk straight to the socket of a connection with nothing queued, and
  /// queues on it what the socket does not take: one system call per chunk where
  /// libevent's own path would also switch the socket's write event on and off again
  /// (two more), which is most of a change's cost to a thousand streams. Ordering holds:
  /// nothing was queued before it, and what follows queues behind the rest.
  private func sendDirectly(chunk bytes: [UInt8], bufferevent: OpaquePointer) -> Int {
    let ev = server.ev
    var framed = Array((String(bytes.count, radix: 16) + "\r\n").utf8)
    framed.reserveCapacity(framed.count + bytes.count + 2)
    framed += bytes
    framed += [13, 10]
    let fd = ev.bufferevent_getfd(bufferevent)
    var sent = 0
    while sent < framed.count {
      let count = framed[sent...].withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
      }
      if count > 0 {
        sent += count
      } else if count < 0 && errno == EINTR {
        continue
      } else {
        // Full (or failed: libevent finds the error when it writes, and closes).
        break
      }
    }
    guard sent < framed.count else { return 0 }
    framed[sent...].withUnsafeBytes { rest in
      if let base = rest.baseAddress { _ = ev.bufferevent_write(bufferevent, base, rest.count) }
    }
    _ = ev.bufferevent_enable(bufferevent, Int16(LISTSTORE_EV_WRITE))
    return framed.count - sent
  }

  /// Bytes queued on the connection and not yet taken by the client.
  var unsentBytes: Int {
    guard let request, let connection = server.ev.evhttp_request_get_connection(request),
      let bufferevent = server.ev.evhttp_connection_get_bufferevent(connection),
      let output = server.ev.bufferevent_get_output(bufferevent)
    else { return 0 }
    return server.ev.evbuffer_get_length(output)
  }

  /// Ends a started stream (loop's thread); `closeWithin` bounds how long a client that
  /// does not read may keep the connection.
  func endStream(closeWithin seconds: Int32? = nil) {
    guard let request else { return }
    detachCloseCallback()
    if let seconds, let connection = server.ev.evhttp_request_get_connection(request) {
      server.ev.evhttp_connection_set_timeout(connection, seconds)
    }
    server.ev.evhttp_send_reply_end(request)
    self.request = nil
  }

  /// Ends the exchange from the server's side (loop's thread): a held request answers
  /// `response`, a started stream ends; either way the connection closes once what it
  /// holds is sent, and `closed` runs then (at once when the client is already gone).
  func finish(answering response: HTTPResponse, closed: @escaping () -> Void) {
    guard let request, !isClosed, let connection = server.ev.evhttp_request_get_connection(request)
    else { return closed() }
    if streaming {
      endStream(closeWithin: 5)
    } else {
      var response = response
      response.headers.append(("Connection", "close"))
      sendNow(response)
    }
    // libevent frees the connection once it has sent the rest, and calls this then.
    let box = Unmanaged.passRetained(ClosedCallback(closed))
    server.ev.evhttp_connection_set_closecb(
      connection,
      { _, context in
        guard let context else { return }
        let box = Unmanaged<ClosedCallback>.fromOpaque(context)
        box.takeUnretainedValue().run()
        box.release()
      }, box.toOpaque())
  }

  private final class ClosedCallback {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
  }

  private func reason(_ status: Int) -> String { HTTPServer.reasons[status] ?? "Status" }
}

/// libevent's HTTP server on one loop thread, handing each request to `handler`.
final class HTTPServer: @unchecked Sendable {
  let ev: LibEventFunctions
  let loop: EventLoop
  private var http: OpaquePointer?
  private var listener: Int32 = -1
  /// The bound address's port (useful when asked for port 0).
  private(set) var port: Int = 0
  let handler: @Sendable (HTTPRequest, HTTPExchange) -> Void
  /// Responses by status, for `/metrics`.
  let statusCounts = Locked<[Int: Int]>([:])
  /// Wraps each connection in TLS, when serving it.
  private let tls: TLSContext?
  /// Whether connections are TLS (their bytes go through libevent's OpenSSL filter).
  var isTLS: Bool { tls != nil }

  static let reasons: [Int: String] = [
    200: "OK", 201: "Created", 204: "No Content", 303: "See Other", 304: "Not Modified",
    400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    409: "Conflict", 411: "Length Required", 412: "Precondition Failed",
    413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
    500: "Internal Server Error", 503: "Service Unavailable",
  ]

  /// Binds `host:port` and prepares the server; ``run()`` serves.
  init(
    host: String, port: Int, maxBody: Int, tls: TLSFiles? = nil,
    handler: @escaping @Sendable (HTTPRequest, HTTPExchange) -> Void
  ) throws(ServerError) {
    let ev = try LibEvent.functions.get()
    self.tls = try tls.map { files throws(ServerError) in try TLSContext(files) }
    self.ev = ev
    loop = try EventLoop(ev)
    self.handler = handler
    listener = try Self.listen(host: host, port: port)
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    self.port = Self.port(of: address)
    guard let http = ev.evhttp_new(loop.base) else {
      close(listener)
      throw ServerError("libevent cannot start an HTTP server")
    }
    self.http = http
    ev.evhttp_set_max_body_size(http, maxBody)
    ev.evhttp_set_max_headers_size(http, 64 * 1024)
    ev.evhttp_set_timeout(http, 60)
    // GET, POST, HEAD, PUT, DELETE, OPTIONS and PATCH.
    ev.evhttp_set_allowed_methods(http, 1 | 2 | 4 | 8 | 16 | 32 | 256)
    ev.evhttp_set_gencb(
      http,
      { request, context in
        guard let context else { return }
        Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().received(request)
      }, Unmanaged.passUnretained(self).toOpaque())
    if self.tls != nil {
      ev.evhttp_set_bevcb(
        http,
        { base, context in
          guard let context else { return nil }
          let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
          return server.tls?.bufferevent(base: base)
        }, Unmanaged.passUnretained(self).toOpaque())
    }
    guard ev.evhttp_accept_socket_with_handle(http, listener) != nil else {
      throw ServerError("libevent cannot accept connections on \(host):\(port)")
    }
  }

  deinit {
    if let http { ev.evhttp_free(http) }
  }

  func count(status: Int) {
    statusCounts.withLock { $0[status, default: 0] += 1 }
  }

  /// Serves until ``stop()``; blocks the calling thread.
  func run() { loop.run() }

  /// Stops serving: no request is accepted any more, and ``run()`` returns.
  func stop() {
    loop.execute { [self] in
      if let http {
        ev.evhttp_free(http)
        self.http = nil
      }
    }
    loop.stop()
  }

  private func received(_ request: OpaquePointer) {
    let methods = [
      1: "GET", 2: "POST", 4: "HEAD", 8: "PUT", 16: "DELETE", 32: "OPTIONS", 256: "PATCH",
    ]
    let method = methods[Int(ev.evhttp_request_get_command(request))] ?? "OTHER"
    let uri = ev.evhttp_request_get_uri(request).map { String(cString: $0) } ?? "/"
    let (path, query) = Self.split(uri: uri)
    var headers: [String: String] = [:]
    let input = ev.evhttp_request_get_input_headers(request)
    for name in [
      "authorization", "content-type", "accept", "last-event-id", "if-match", "cookie",
      "content-length", "transfer-encoding", "x-requested-with",
    ] {
      if let value = ev.evhttp_find_header(input, name) { headers[name] = String(cString: value) }
    }
    var body: [UInt8] = []
    let buffer = ev.evhttp_request_get_input_buffer(request)
    let length = ev.evbuffer_get_length(buffer)
    if length > 0 {
      body = [UInt8](repeating: 0, count: length)
      body.withUnsafeMutableBytes { bytes in
        if let base = bytes.baseAddress { _ = ev.evbuffer_remove(buffer, base, length) }
      }
    }
    let exchange = HTTPExchange(server: self, request: request)
    handler(
      HTTPRequest(method: method, path: path, query: query, headers: headers, body: body), exchange)
  }

  /// `/a/b?x=1&y=2` → (`/a/b`, `["x": "1", "y": "2"]`).
  static func split(uri: String) -> (String, [String: String]) {
    guard let mark = uri.firstIndex(of: "?") else { return (uri, [:]) }
    var query: [String: String] = [:]
    for pair in uri[uri.index(after: mark)...].split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      guard let name = percentDecoded(parts[0], plusIsSpace: true) else { continue }
      query[name] = parts.count > 1 ? percentDecoded(parts[1], plusIsSpace: true) ?? "" : ""
    }
    return (String(uri[..<mark]), query)
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

/// Percent-decoding of a URL part; `nil` for a bad escape or bytes that are not UTF-8.
func percentDecoded<S: StringProtocol>(_ text: S, plusIsSpace: Bool = false) -> String? {
  var bytes: [UInt8] = []
  var iterator = Array(text.utf8).makeIterator()
  func hex(_ byte: UInt8?) -> UInt8? {
    guard let byte else { return nil }
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
  while let byte = iterator.next() {
    if byte == UInt8(ascii: "%") {
      guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
      bytes.append(high << 4 | low)
    } else if plusIsSpace && byte == UInt8(ascii: "+") {
      bytes.append(UInt8(ascii: " "))
    } else {
      bytes.append(byte)
    }
  }
  return String(validating: bytes, as: UTF8.self)
}
