import ListStore

/// An HTTP request as the server's handlers see it: its head checked and its body read
/// whole by the server's connection (``HTTPConnection``), on the loop's thread.
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

/// The reason phrase of a status.
func reasonPhrase(_ status: Int) -> String {
  switch status {
  case 100: "Continue"
  case 200: "OK"
  case 201: "Created"
  case 204: "No Content"
  case 303: "See Other"
  case 304: "Not Modified"
  case 400: "Bad Request"
  case 401: "Unauthorized"
  case 403: "Forbidden"
  case 404: "Not Found"
  case 405: "Method Not Allowed"
  case 408: "Request Timeout"
  case 409: "Conflict"
  case 411: "Length Required"
  case 412: "Precondition Failed"
  case 413: "Content Too Large"
  case 415: "Unsupported Media Type"
  case 417: "Expectation Failed"
  case 422: "Unprocessable Content"
  case 429: "Too Many Requests"
  case 431: "Request Header Fields Too Large"
  case 500: "Internal Server Error"
  case 501: "Not Implemented"
  case 503: "Service Unavailable"
  case 505: "HTTP Version Not Supported"
  default: "Status"
  }
}

/// `/a/b?x=1&y=2` → (`/a/b`, `["x": "1", "y": "2"]`); an absolute-form target
/// (`http://host/a`) gives its path.
func splitTarget(_ target: String) -> (path: String, query: [String: String]) {
  var uri = Substring(target)
  for scheme in ["http://", "https://"] where uri.lowercased().hasPrefix(scheme) {
    uri = uri.dropFirst(scheme.count)
    uri = uri.firstIndex(of: "/").map { uri[$0...] } ?? "/"
  }
  guard let mark = uri.firstIndex(of: "?") else { return (String(uri), [:]) }
  var query: [String: String] = [:]
  for pair in uri[uri.index(after: mark)...].split(separator: "&") {
    let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
    guard let name = percentDecoded(parts[0], plusIsSpace: true) else { continue }
    query[name] = parts.count > 1 ? percentDecoded(parts[1], plusIsSpace: true) ?? "" : ""
  }
  return (String(uri[..<mark]), query)
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
