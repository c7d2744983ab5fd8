import CurlKit
import Dispatch
public import ListStore
import ListStoreFormats
import Synchronization

/// A ListStore server (`liststore serve`), reached over HTTP: its lists, read and written
/// with `async` calls that fail with the same ``ListStoreError`` cases a local repository
/// throws, and observed into the same `Observable2DArray` (``RemoteList/observe()``).
///
/// ```swift
/// let server = try RemoteRepository(url: "http://127.0.0.1:8040", token: "s3cret")
/// let cities = server.list("cities", metadata: SectionMetadata.self, item: City.self)
/// let section = try await cities.appendSection(SectionMetadata(header: "Cities"))
/// try await cities.appendItem(City(name: "Paris"), toSectionWithID: section)
/// ```
///
/// Requests go over kept-alive connections, as many at once as calls are under way. The
/// networking library (libcurl) is loaded when the first request is made.
public final class RemoteRepository: Sendable {
  /// The server's address, as given (without a trailing `/`, nor the API's `/v1`).
  public let location: String
  let token: String?
  let certificateAuthorities: String?
  /// Idle connections, kept for the next request.
  private let idle = Mutex<[HTTPClient]>([])

  /// Makes a client of the server at `url`; nothing is sent yet.
  ///
  /// - Parameters:
  ///   - url: `http://HOST:PORT` or `https://HOST:PORT`, optionally with a path prefix
  ///     (behind a proxy); a trailing `/v1`, the API's own prefix, is left out.
  ///   - token: The bearer token, when the server needs one.
  ///   - certificateAuthorities: A PEM file of the authorities to trust for `https://`
  ///     (a self-signed server's certificate), instead of the system's.
  /// - Throws: ``ListStoreError/notSupported(_:)`` when `url` is not an `http://` or
  ///   `https://` URL.
  public init(url: String, token: String? = nil, certificateAuthorities: String? = nil)
    throws(ListStoreError)
  {
    guard Self.isRemoteLocation(url), !url.contains(" ") else {
      throw .notSupported("\(url) is not an http:// or https:// URL of a ListStore server")
    }
    var trimmed = url
    while trimmed.hasSuffix("/") { trimmed.removeLast() }
    // The API's own prefix, given as part of the address, is the client's to add.
    if trimmed.lowercased().hasSuffix("/v1") {
      trimmed.removeLast(3)
      while trimmed.hasSuffix("/") { trimmed.removeLast() }
    }
    // The address of a list or of a route, pasted from a page or a `curl` line.
    let afterScheme = trimmed.split(separator: "/", omittingEmptySubsequences: false).dropFirst(3)
    if afterScheme.contains(where: { $0 == "v1" || $0 == "lists" }) {
      let server = trimmed.split(separator: "/", omittingEmptySubsequences: false).prefix(3)
        .joined(separator: "/")
      throw .notSupported(
        "\(url) is the address of a list or a route; give the server's own address, "
          + "like \(server)")
    }
    location = trimmed
    self.token = token.flatMap { $0.isEmpty ? nil : $0 }
    self.certificateAuthorities = certificateAuthorities
  }

  /// Whether `location` names a server (`http://…` or `https://…`) rather than a database.
  public static func isRemoteLocation(_ location: String) -> Bool {
    let lowered = location.lowercased()
    return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
  }

  /// The lists, with their sizes.
  ///
  /// - Returns: The lists, by name.
  /// - Throws: ``ListStoreError`` when the server cannot be reached or refuses.
  public func lists() async throws(ListStoreError) -> [ListSummary] {
    try await background { () throws(ListStoreError) in try self.listsNow() }
  }

  /// Creates an empty list.
  ///
  /// - Parameter name: A new, unique, non-empty name.
  /// - Throws: ``ListStoreError/listExists(name:)`` when the name is taken.
  public func createList(_ name: String) async throws(ListStoreError) {
    try await background { () throws(ListStoreError) in
      _ = try self.send("PUT", Self.listPath(name), expecting: [201])
    }
  }

  /// Deletes a list with all its sections and items.
  ///
  /// - Parameter name: The list's name.
  /// - Throws: ``ListStoreError/listNotFound(name:)`` when there is none.
  public func deleteList(_ name: String) async throws(ListStoreError) {
    try await background { () throws(ListStoreError) in
      _ = try self.send("DELETE", Self.listPath(name), expecting: [204])
    }
  }

  /// A list of the server, with values and metadata decoded as the given types; nothing is
  /// sent until it is read, written or observed.
  ///
  /// - Parameters:
  ///   - name: The list's name.
  ///   - metadata: The type of its sections' metadata.
  ///   - item: The type of its items.
  /// - Returns: The list.
  public func list<Metadata: Codable & Sendable, Item: Codable & Sendable>(
    _ name: String, metadata: Metadata.Type = Metadata.self, item: Item.Type = Item.self
  ) -> RemoteList<Metadata, Item> {
    RemoteList(repository: self, name: name)
  }

  // MARK: Requests

  /// The lists, on the calling thread.
  package func listsNow() throws(ListStoreError) -> [ListSummary] {
    let response = try send("GET", "/v1/lists", expecting: [200])
    do {
      return try WireFormat.lists(response.body)
    } catch {
      throw .server(location: location, message: error.description)
    }
  }

  /// `/v1/lists/NAME`, the name percent-encoded.
  package static func listPath(_ name: String) -> String {
    "/v1/lists/" + percentEncoded(name)
  }

  /// Sends a request on the calling thread and returns the response when its status is one
  /// of `expecting`; any other status becomes the error its body names.
  package func send(
    _ method: String, _ path: String, body: [UInt8]? = nil,
    contentType: String = "application/json", ifMatch: Int64? = nil,
    expecting statuses: Set<Int>
  ) throws(ListStoreError) -> HTTPClient.Response {
    let response = try exchange(
      method, path, body: body, contentType: contentType, ifMatch: ifMatch)
    guard statuses.contains(response.status) else { throw error(for: response) }
    return response
  }

  /// Sends a request on the calling thread and returns the response, whatever its status.
  package func exchange(
    _ method: String, _ path: String, body: [UInt8]? = nil,
    contentType: String = "application/json", ifMatch: Int64? = nil
  ) throws(ListStoreError) -> HTTPClient.Response {
    var headers: [(name: String, value: String)] = [("Accept", "application/json")]
    if body != nil { headers.append(("Content-Type", contentType)) }
    if let ifMatch { headers.append(("If-Match", "\"\(ifMatch)\"")) }
    return try perform(
      HTTPClient.Request(
        method: method, url: location + path, headers: headers + authorization, body: body))
  }

  /// Sends a GET on the calling thread and hands its body to `onData` as it arrives; a
  /// status other than 200 becomes its error, as ``error(for:)``.
  package func download(_ path: String, onData: ([UInt8]) -> Void) throws(ListStoreError) {
    let client = try connection()
    var status = 0
    var failure: [UInt8] = []
    do {
      try client.stream(
        HTTPClient.Request(
          method: "GET", url: location + path,
          headers: [("Accept", "application/json")] + authorization),
        onResponse: { code, _ in
          status = code
          return true
        },
        onData: { bytes in
          if status == 200 { onData(bytes) } else { failure += bytes }
          return true
        })
    } catch {
      throw transportError(error)
    }
    keep(client)
    guard status == 200 else {
      let response = HTTPClient.Response(status: status, headers: [:], body: failure)
      throw error(for: response)
    }
  }

  /// The `Authorization` header, when there is a token.
  package var authorization: [(name: String, value: String)] {
    token.map { [("Authorization", "Bearer \($0)")] } ?? []
  }

  /// How many idle connections are kept for later requests.
  static let idleLimit = 4

  /// Performs a request on an idle connection, or a new one.
  private func perform(_ request: HTTPClient.Request) throws(ListStoreError) -> HTTPClient.Response
  {
    let client = try connection()
    do {
      let response = try client.perform(request)
      keep(client)
      return response
    } catch {
      throw transportError(error, writing: request.method != "GET" && request.method != "HEAD")
    }
  }

  /// Keeps a connection for the next request, unless enough are kept.
  private func keep(_ client: HTTPClient) {
    idle.withLock { idle in
      if idle.count < Self.idleLimit { idle.append(client) }
    }
  }

  /// A connection of its own, for a stream that holds it while it lasts.
  package func connection() throws(ListStoreError) -> HTTPClient {
    if let client = idle.withLock({ $0.popLast() }) { return client }
    do {
      return try HTTPClient(certificateAuthorities: certificateAuthorities)
    } catch {
      throw transportError(error)
    }
  }

  /// The error users see for a failed exchange. A write whose connection broke before the
  /// answer may or may not have been made: the error says so.
  package func transportError(_ error: HTTPClientError, writing: Bool = false) -> ListStoreError {
    switch error.kind {
    case .unavailable: return .notSupported(error.description)
    case .connectionLost, .timedOut, .cancelled:
      guard writing else { return .connectionLost(location: location) }
      return .server(
        location: location,
        message:
          "the connection broke before the answer came (\(error.description)): the change may "
          + "or may not have been made; read the list to see")
    case .certificate:
      return .server(
        location: location,
        message:
          "cannot verify the server's TLS certificate (\(error.description)); for a server with "
          + "a certificate of its own (self-signed), set LISTSTORE_CA_FILE to that certificate "
          + "or to the authority that signed it (RemoteRepository(url:token:certificateAuthorities:) "
          + "in Swift)")
    case .unreachable, .other:
      return .serverUnreachable(location: location, reason: error.description)
    }
  }

  /// The error a response that is not a success stands for: the very ``ListStoreError``
  /// the server met when its body names one, else one with the server's sentence.
  package func error(for response: HTTPClient.Response) -> ListStoreError {
    if let error = WireFormat.listStoreError(fromErrorBody: response.body) { return error }
    let message =
      WireFormat.error(response.body)?.message
      ?? "answered \(response.status) \(String(decoding: response.body.prefix(200), as: UTF8.self))"
    switch response.status {
    case 401: return .authenticationFailed(location: location)
    case 403: return .permissionDenied(location: location, detail: message)
    default: return .server(location: location, message: message)
    }
  }

  /// The sentence a response that is not a success carries, as the server wrote it.
  package static func message(of response: HTTPClient.Response) -> String {
    WireFormat.error(response.body)?.message
      ?? "the server answered \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))"
  }

  /// Runs blocking work off the caller's thread and awaits it.
  func background<Result: Sendable>(
    _ work: @escaping @Sendable () throws(ListStoreError) -> Result
  ) async throws(ListStoreError) -> Result {
    let result = await withCheckedContinuation {
      (continuation: CheckedContinuation<Swift.Result<Result, ListStoreError>, Never>) in
      DispatchQueue.global().async {
        do throws(ListStoreError) {
          continuation.resume(returning: .success(try work()))
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    return try result.get()
  }
}

/// `text` percent-encoded for a path segment or a query value: everything but unreserved
/// characters (RFC 3986), and `.` too, so that a list named `.` or `..` is not a dot
/// segment that the URL's path would lose.
package func percentEncoded(_ text: String) -> String {
  var encoded = ""
  for byte in text.utf8 {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
      UInt8(ascii: "~"):
      encoded.unicodeScalars.append(Unicode.Scalar(byte))
    default:
      let hex = Array("0123456789ABCDEF".utf8)
      encoded += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
    }
  }
  return encoded
}
