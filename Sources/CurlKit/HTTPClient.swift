internal import CLibCurl
import Synchronization

/// An HTTP/1.1 client over one connection at a time (one libcurl easy handle, which keeps
/// its connection alive between requests): requests and streams run one after another,
/// blocking the calling thread; ``cancel()`` ends the transfer under way from any thread.
///
/// ```swift
/// let client = try HTTPClient()
/// let response = try client.perform(.init(method: "GET", url: "http://127.0.0.1:8040/healthz"))
/// print(response.status, String(decoding: response.body, as: UTF8.self))  // 200 ok
/// ```
///
/// It is thread-safe: a transfer waits for the one under way to end.
public final class HTTPClient: Sendable {
  /// One request.
  public struct Request: Sendable {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`.
    public var method: String
    /// The absolute URL, percent-encoded.
    public var url: String
    /// Header fields, in order.
    public var headers: [(name: String, value: String)]
    /// The body, if any.
    public var body: [UInt8]?
    /// How long the whole exchange may take; `nil` for no limit (a stream, a large
    /// import).
    public var timeout: Duration?
    /// How long the connection may stay silent (no byte either way) before it counts as
    /// lost: a stream whose server sends a keep-alive every 15 s wants less than a request
    /// the server may spend minutes on (a large import).
    public var silenceLimit: Duration = .seconds(600)

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - url: The absolute URL.
    ///   - headers: Header fields.
    ///   - body: The body.
    ///   - timeout: The limit on the whole exchange.
    public init(
      method: String, url: String, headers: [(name: String, value: String)] = [],
      body: [UInt8]? = nil, timeout: Duration? = nil
    ) {
      self.method = method
      self.url = url
      self.headers = headers
      self.body = body
      self.timeout = timeout
    }
  }

  /// A response.
  public struct Response: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields by lowercased name (the last one of a repeated name).
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Header fields by lowercased name.
    ///   - body: The body.
    public init(status: Int, headers: [String: String], body: [UInt8]) {
      self.status = status
      self.headers = headers
      self.body = body
    }
  }

  /// How long connecting may take.
  public static let connectLimit: Duration = .seconds(10)

  /// libcurl's functions, on the heap where the C helpers take their table's address.
  private let table: FunctionTable
  /// The easy handle, behind its lock; one transfer at a time.
  private let handle: Mutex<Handle>
  /// The transfer under way, to cancel it from another thread, and whether ``cancel()`` was
  /// called (which ends every later transfer at once too).
  private let current = Mutex<(transfer: Transfer?, cancelled: Bool)>((nil, false))
  /// A file of certificate authorities to trust instead of the system's, if any.
  private let authorities: String?

  /// Creates a client.
  ///
  /// - Parameter certificateAuthorities: A PEM file of the authorities to trust for
  ///   `https://` (a server's self-signed certificate, say); `nil` for the system's.
  /// - Throws: ``HTTPClientError`` when libcurl is missing or cannot start.
  public init(certificateAuthorities: String? = nil) throws(HTTPClientError) {
    let table = try LibCurl.functions.get()
    guard let easy = table.functions.curl_easy_init() else {
      throw HTTPClientError(.unavailable, "libcurl could not make a connection handle")
    }
    self.table = table
    handle = Mutex(Handle(pointer: easy))
    authorities = certificateAuthorities
  }

  deinit {
    handle.withLock { table.functions.curl_easy_cleanup($0.pointer) }
  }

  /// Sends a request and reads its whole response.
  ///
  /// - Parameter request: The request.
  /// - Returns: The response, whatever its status.
  /// - Throws: ``HTTPClientError`` when no response arrived whole.
  public func perform(_ request: Request) throws(HTTPClientError) -> Response {
    var body: [UInt8] = []
    let head = try stream(request) { bytes in
      body.append(contentsOf: bytes)
      return true
    }
    return Response(status: head.status, headers: head.headers, body: body)
  }

  /// Sends a request and hands the response's body to `onData` as it arrives, until the
  /// response ends, `onData` returns `false`, or ``cancel()`` is called.
  ///
  /// - Parameters:
  ///   - request: The request.
  ///   - onResponse: Called with the status and headers once they arrived, before any body;
  ///     returning `false` ends the transfer there.
  ///   - onData: Called with each piece of the body; returning `false` ends the transfer.
  /// - Returns: The status and headers (the body is `onData`'s).
  /// - Throws: ``HTTPClientError`` when the exchange failed (``HTTPClientError/Kind/cancelled``
  ///   after ``cancel()``), but not when a callback ended it.
  @discardableResult
  public func stream(
    _ request: Request, onResponse: (Int, [String: String]) -> Bool = { _, _ in true },
    onData: ([UInt8]) -> Bool
  ) throws(HTTPClientError) -> Response {
    try withoutActuallyEscaping(onResponse) { onResponse throws(HTTPClientError) in
      try withoutActuallyEscaping(onData) { onData throws(HTTPClientError) in
        let transfer = Transfer(onResponse: onResponse, onData: onData)
        try handle.withLock { handle throws(HTTPClientError) in
          let cancelled = current.withLock { current in
            current.transfer = transfer
            return current.cancelled
          }
          defer { current.withLock { $0.transfer = nil } }
          guard !cancelled else { throw HTTPClientError(.cancelled, "the transfer was cancelled") }
          try run(request, transfer, on: handle.pointer)
        }
        return Response(status: transfer.status, headers: transfer.headers, body: [])
      }
    }
  }

  /// Ends the transfer under way, if any, and every later one, from any thread: they fail
  /// with ``HTTPClientError/Kind/cancelled``, the one under way within about a second.
  public func cancel() {
    current.withLock { current in
      current.cancelled = true
      current.transfer?.cancelled.store(true, ordering: .relaxed)
    }
  }

  private func run(_ request: Request, _ transfer: Transfer, on easy: UnsafeMutableRawPointer)
    throws(HTTPClientError)
  {
    let curl = table.functions
    curl.curl_easy_reset(easy)
    // The options point into this call's memory (the error buffer, the callbacks'
    // context): none may outlive it.
    defer { curl.curl_easy_reset(easy) }
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(
      capacity: Int(LISTSTORE_CURL_ERROR_SIZE))
    errorBuffer.initialize(repeating: 0, count: Int(LISTSTORE_CURL_ERROR_SIZE))
    defer { errorBuffer.deallocate() }
    var headerList: OpaquePointer? = nil
    // No `Expect: 100-continue` pause before a body.
    for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
      headerList = line.withCString { curl.curl_slist_append(headerList, $0) }
    }
    defer { curl.curl_slist_free_all(headerList) }
    let context = Unmanaged.passUnretained(transfer).toOpaque()

    let table = self.table.pointer
    func setLong(_ option: Int32, _ value: Int) {
      _ = liststore_curl_setopt_long(table, easy, option, value)
    }
    func setText(_ option: Int32, _ value: String) {
      // libcurl copies string options.
      _ = value.withCString { liststore_curl_setopt_pointer(table, easy, option, $0) }
    }
    _ = liststore_curl_setopt_pointer(table, easy, LISTSTORE_CURLOPT_ERRORBUFFER, errorBuffer)
    setText(LISTSTORE_CURLOPT_URL, request.url)
    setLong(LISTSTORE_CURLOPT_NOSIGNAL, 1)
    setLong(LISTSTORE_CURLOPT_TCP_NODELAY, 1)
    setLong(LISTSTORE_CURLOPT_CONNECTTIMEOUT_MS, milliseconds(Self.connectLimit))
    setLong(LISTSTORE_CURLOPT_LOW_SPEED_LIMIT, 1)
    setLong(LISTSTORE_CURLOPT_LOW_SPEED_TIME, Int(request.silenceLimit.components.seconds))
    if let timeout = request.timeout {
      setLong(LISTSTORE_CURLOPT_TIMEOUT_MS, milliseconds(timeout))
    }
    if let authorities {
      // These authorities alone: not the system's folder of them too.
      setText(LISTSTORE_CURLOPT_CAINFO, authorities)
      _ = liststore_curl_setopt_pointer(table, easy, LISTSTORE_CURLOPT_CAPATH, nil)
    }
    _ = liststore_curl_setopt_pointer(
      table, easy, LISTSTORE_CURLOPT_HTTPHEADER, UnsafeRawPointer(headerList))
    _ = liststore_curl_setopt_write_function(
      table, easy, LISTSTORE_CURLOPT_HEADERFUNCTION, Transfer.headerCallback)
    _ = liststore_curl_setopt_pointer(table, easy, LISTSTORE_CURLOPT_HEADERDATA, context)
    _ = liststore_curl_setopt_write_function(
      table, easy, LISTSTORE_CURLOPT_WRITEFUNCTION, Transfer.writeCallback)
    _ = liststore_curl_setopt_pointer(table, easy, LISTSTORE_CURLOPT_WRITEDATA, context)
    setLong(LISTSTORE_CURLOPT_NOPROGRESS, 0)
    _ = liststore_curl_setopt_xferinfo_function(table, easy, Transfer.progressCallback)
    _ = liststore_curl_setopt_pointer(table, easy, LISTSTORE_CURLOPT_XFERINFODATA, context)
    switch request.method {
    case "GET": setLong(LISTSTORE_CURLOPT_HTTPGET, 1)
    case "HEAD": setLong(LISTSTORE_CURLOPT_NOBODY, 1)
    default: setText(LISTSTORE_CURLOPT_CUSTOMREQUEST, request.method)
    }
    let code: Int32 = {
      guard let body = request.body else { return curl.curl_easy_perform(easy) }
      return body.withUnsafeBytes { bytes in
        _ = liststore_curl_setopt_off_t(
          table, easy, LISTSTORE_CURLOPT_POSTFIELDSIZE_LARGE, Int64(bytes.count))
        // A body must not be NULL even when empty, or libcurl reads it as a C string.
        let empty: [UInt8] = [0]
        return empty.withUnsafeBytes { placeholder in
          _ = liststore_curl_setopt_pointer(
            table, easy, LISTSTORE_CURLOPT_POSTFIELDS,
            bytes.count > 0 ? bytes.baseAddress : placeholder.baseAddress)
          return curl.curl_easy_perform(easy)
        }
      }
    }()
    if code == LISTSTORE_CURLE_OK || transfer.endedByCallback { return }
    let detail = String(cString: errorBuffer)
    let reason = detail.isEmpty ? String(cString: curl.curl_easy_strerror(code)) : detail
    throw HTTPClientError(Self.kind(of: code, transfer), reason)
  }

  private static func kind(of code: Int32, _ transfer: Transfer) -> HTTPClientError.Kind {
    switch code {
    case LISTSTORE_CURLE_ABORTED_BY_CALLBACK: .cancelled
    case LISTSTORE_CURLE_COULDNT_CONNECT, LISTSTORE_CURLE_COULDNT_RESOLVE_HOST: .unreachable
    case LISTSTORE_CURLE_OPERATION_TIMEDOUT: transfer.status == 0 ? .unreachable : .timedOut
    case LISTSTORE_CURLE_PARTIAL_FILE, LISTSTORE_CURLE_GOT_NOTHING, LISTSTORE_CURLE_SEND_ERROR,
      LISTSTORE_CURLE_RECV_ERROR:
      .connectionLost
    case LISTSTORE_CURLE_SSL_CONNECT_ERROR, LISTSTORE_CURLE_SSL_CERTPROBLEM,
      LISTSTORE_CURLE_PEER_FAILED_VERIFICATION, LISTSTORE_CURLE_SSL_CACERT_BADFILE:
      .certificate
    default: .other
    }
  }

  private func milliseconds(_ duration: Duration) -> Int {
    Int(duration.components.seconds) * 1000
      + Int(duration.components.attoseconds / 1_000_000_000_000_000)
  }
}

/// libcurl's function table on the heap, where the C helpers take its address.
///
/// `@unchecked Sendable`: written once when made, only read after (function pointers).
final class FunctionTable: @unchecked Sendable {
  let pointer: UnsafeMutablePointer<LibCurlFunctions>

  init(_ functions: LibCurlFunctions) {
    pointer = .allocate(capacity: 1)
    pointer.initialize(to: functions)
  }

  var functions: LibCurlFunctions { pointer.pointee }

  deinit {
    pointer.deallocate()
  }
}

/// The easy handle, owned by the client's lock.
struct Handle: @unchecked Sendable {
  // Only used while the client's mutex is held.
  let pointer: UnsafeMutableRawPointer
}

/// One transfer's callbacks and what they gathered, reached from libcurl's C callbacks
/// through their context pointer.
///
/// `@unchecked Sendable`: everything but `cancelled` is touched only by the thread that
/// runs the transfer (libcurl calls back on it); `cancelled` is atomic.
final class Transfer: @unchecked Sendable {
  let onResponse: (Int, [String: String]) -> Bool
  let onData: ([UInt8]) -> Bool
  let cancelled = Atomic<Bool>(false)
  var status = 0
  var headers: [String: String] = [:]
  var headersDone = false
  /// Whether a callback asked to stop (not an error).
  var endedByCallback = false

  init(onResponse: @escaping (Int, [String: String]) -> Bool, onData: @escaping ([UInt8]) -> Bool) {
    self.onResponse = onResponse
    self.onData = onData
  }

  /// A header line: the status line, a field, or the blank line after them.
  func header(_ line: String) -> Bool {
    // The line's end, as bytes: "\r\n" is one Character to a String.
    var bytes = Array(line.utf8)
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
    let trimmed = String(decoding: bytes, as: UTF8.self)
    if trimmed.hasPrefix("HTTP/") {
      // A new response (after a 100 Continue, say) starts over.
      let parts = trimmed.split(separator: " ", maxSplits: 2)
      status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
      headers = [:]
      headersDone = false
      return true
    }
    if trimmed.isEmpty {
      guard status >= 200, !headersDone else { return true }
      headersDone = true
      if !onResponse(status, headers) {
        endedByCallback = true
        return false
      }
      return true
    }
    guard let colon = trimmed.firstIndex(of: ":") else { return true }
    let name = trimmed[..<colon].lowercased()
    let value = trimmed[trimmed.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
    headers[name] = String(value)
    return true
  }

  static let headerCallback: liststore_curl_write_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = String(
      decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    return transfer.header(line) ? length : 0
  }

  static let writeCallback: liststore_curl_write_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: length))
    if transfer.onData(bytes) { return length }
    transfer.endedByCallback = true
    return 0
  }

  static let progressCallback: liststore_curl_xferinfo_callback = { context, _, _, _, _ in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.cancelled.load(ordering: .relaxed) ? 1 : 0
  }
}

/// Why an HTTP exchange failed, in words a person can act on.
public struct HTTPClientError: Error, CustomStringConvertible, Sendable {
  /// What kind of failure it is.
  public enum Kind: Sendable, Equatable {
    /// libcurl is missing or could not start.
    case unavailable
    /// The server could not be reached (no answer, refused, unknown host).
    case unreachable
    /// The connection broke, or went silent, before the response ended.
    case connectionLost
    /// The exchange took longer than its request allowed.
    case timedOut
    /// ``HTTPClient/cancel()`` ended it.
    case cancelled
    /// The server's TLS certificate could not be verified (self-signed, say, or for
    /// another name), or the TLS handshake failed.
    case certificate
    /// Anything else (a malformed URL, say).
    case other
  }

  /// What kind of failure it is.
  public var kind: Kind
  /// What went wrong.
  public var description: String

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - kind: What kind of failure it is.
  ///   - description: What went wrong.
  public init(_ kind: Kind, _ description: String) {
    self.kind = kind
    self.description = description
  }
}
