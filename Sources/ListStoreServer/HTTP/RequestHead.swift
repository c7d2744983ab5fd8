/// A request's head — request line and header fields — parsed by the rules of RFC 9112,
/// strictly where a lenient reading lets two parsers disagree about where a request ends
/// (request smuggling): one `Content-Length` value or a list of equal ones, no
/// `Transfer-Encoding` other than `chunked`, never both, no line folding, no control
/// characters in values, no bare CR, no white space before a field's colon, one `Host`.
struct RequestHead: Equatable, Sendable {
  /// How the body is delimited.
  enum Framing: Equatable, Sendable {
    /// No body.
    case none
    /// `Content-Length` bytes.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
  }

  /// The method, as sent (methods are case-sensitive).
  var method: String
  /// The request target as sent: `/path?query`.
  var target: String
  /// `1` for HTTP/1.1, `0` for HTTP/1.0.
  var minorVersion: Int
  /// The fields in order, names lowercased, values without surrounding white space.
  var fields: [(name: String, value: String)]
  /// How the body is delimited.
  var framing: Framing
  /// Whether the connection may carry another request after this one.
  var keepAlive: Bool
  /// Whether the client waits for `100 Continue` before sending its body.
  var expectsContinue: Bool

  /// The value of field `name` (lowercase); repeated fields joined with `, `.
  func field(_ name: String) -> String? {
    let values = fields.filter { $0.name == name }.map(\.value)
    return values.isEmpty ? nil : values.joined(separator: ", ")
  }

  static func == (lhs: RequestHead, rhs: RequestHead) -> Bool {
    lhs.method == rhs.method && lhs.target == rhs.target && lhs.minorVersion == rhs.minorVersion
      && lhs.fields.map(\.name) == rhs.fields.map(\.name)
      && lhs.fields.map(\.value) == rhs.fields.map(\.value) && lhs.framing == rhs.framing
      && lhs.keepAlive == rhs.keepAlive && lhs.expectsContinue == rhs.expectsContinue
  }
}

/// Why a head cannot be served: the status to answer (the connection then closes, since
/// where the request ends is unknown) and a sentence for the error body.
struct HeadError: Error, Equatable, Sendable {
  var status: Int
  var code: String
  var message: String

  init(_ status: Int, _ code: String, _ message: String) {
    self.status = status
    self.code = code
    self.message = message
  }

  static func bad(_ message: String) -> HeadError { HeadError(400, "badRequest", message) }
}

extension RequestHead {
  /// What parsing the start of a connection's input gives.
  enum Parsed: Equatable {
    /// The head is not complete yet (and within the size limit so far).
    case incomplete
    /// A head, and how many bytes of the input it took (its empty line included).
    case head(RequestHead, length: Int)
  }

  /// Parses the head at the start of `input`.
  ///
  /// Empty lines before the request line are skipped (RFC 9112 §2.2). Lines end with CRLF
  /// or a bare LF; a bare CR anywhere is refused.
  ///
  /// - Parameters:
  ///   - input: The bytes received so far.
  ///   - limit: The largest head accepted, in bytes.
  /// - Returns: ``Parsed/incomplete`` or the head.
  /// - Throws: ``HeadError`` for a head that is malformed, ambiguous or too large.
  static func parse(_ input: some Collection<UInt8>, limit: Int) throws(HeadError) -> Parsed {
    let bytes = Array(input.prefix(limit + 1))
    // The end of the head: an empty line.
    var lines: [ArraySlice<UInt8>] = []
    var start = 0
    var index = 0
    var end: Int?
    while index < bytes.count {
      let byte = bytes[index]
      if byte == 0x0D {
        guard index + 1 < bytes.count else { break }  // CR LF may be split across reads.
        guard bytes[index + 1] == 0x0A else { throw .bad("a bare CR in the request head") }
      }
      if byte == 0x0A {
        let lineEnd = index > start && bytes[index - 1] == 0x0D ? index - 1 : index
        let line = bytes[start..<lineEnd]
        if line.isEmpty {
          if !lines.isEmpty {
            end = index + 1
            break
          }
        } else {
          lines.append(line)
        }
        start = index + 1
      }
      index += 1
    }
    guard let end else {
      if bytes.count > limit {
        throw HeadError(431, "headTooLarge", "the request head is over \(limit) bytes")
      }
      return .incomplete
    }
    if end > limit {
      throw HeadError(431, "headTooLarge", "the request head is over \(limit) bytes")
    }
    return .head(try head(of: lines), length: end)
  }

  private static func head(of lines: [ArraySlice<UInt8>]) throws(HeadError) -> RequestHead {
    guard let requestLine = lines.first else { throw .bad("the request has no request line") }
    let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
      throw .bad("the request line must be METHOD TARGET HTTP/1.1, each part once")
    }
    guard parts[0].allSatisfy(isTokenByte) else { throw .bad("the method is not a token") }
    guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
      throw .bad("the request target holds white space or control characters")
    }
    let minorVersion: Int
    let version = String(decoding: parts[2], as: UTF8.self)
    switch version {
    case "HTTP/1.1": minorVersion = 1
    case "HTTP/1.0": minorVersion = 0
    case _ where version.hasPrefix("HTTP/"):
      throw HeadError(505, "httpVersionNotSupported", "only HTTP/1.1 and HTTP/1.0 are served")
    default:
      throw .bad("the request line must end with the version, HTTP/1.1")
    }
    var fields: [(name: String, value: String)] = []
    for line in lines.dropFirst() {
      guard let first = line.first, first != 0x20, first != 0x09 else {
        throw .bad("a header field is folded onto a second line (obsolete line folding)")
      }
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
        throw .bad("a header line has no colon")
      }
      let name = line[line.startIndex..<colon]
      guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
        throw .bad("a header field's name is not a token (or has white space before its colon)")
      }
      let value = line[line.index(after: colon)...].drop { $0 == 0x20 || $0 == 0x09 }
      var trimmed = value
      while let last = trimmed.last, last == 0x20 || last == 0x09 { trimmed.removeLast() }
      guard trimmed.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else {
        throw .bad("the value of \(String(decoding: name, as: UTF8.self)) holds control characters")
      }
      fields.append(
        (
          String(decoding: name, as: UTF8.self).lowercased(),
          String(decoding: trimmed, as: UTF8.self)
        ))
    }
    var head = RequestHead(
      method: String(decoding: parts[0], as: UTF8.self),
      target: String(decoding: parts[1], as: UTF8.self), minorVersion: minorVersion,
      fields: fields, framing: .none, keepAlive: minorVersion == 1, expectsContinue: false)
    try head.decideFraming()
    let hosts = fields.filter { $0.name == "host" }
    if minorVersion == 1 && hosts.count != 1 {
      throw .bad("an HTTP/1.1 request needs exactly one Host field, not \(hosts.count)")
    }
    let connection = (head.field("connection") ?? "").lowercased()
      .split(separator: ",").map { $0.trimmingCharacters(" \t") }
    if connection.contains("close") { head.keepAlive = false }
    if minorVersion == 0 && connection.contains("keep-alive") { head.keepAlive = true }
    if let expect = head.field("expect") {
      guard expect.lowercased() == "100-continue" else {
        throw HeadError(417, "expectationFailed", "Expect: \(expect) is not supported")
      }
      head.expectsContinue = minorVersion == 1
    }
    return head
  }

  /// `framing`, from `Content-Length` and `Transfer-Encoding`.
  private mutating func decideFraming() throws(HeadError) {
    let encodings = fields.filter { $0.name == "transfer-encoding" }
    let lengths = fields.filter { $0.name == "content-length" }
    if !encodings.isEmpty {
      guard lengths.isEmpty else {
        throw .bad("a request cannot have both Transfer-Encoding and Content-Length")
      }
      guard minorVersion == 1 else { throw .bad("HTTP/1.0 has no Transfer-Encoding") }
      let codings = encodings.flatMap { $0.value.split(separator: ",") }
        .map { $0.trimmingCharacters(" \t").lowercased() }
      guard codings == ["chunked"] else {
        throw HeadError(
          501, "notImplemented",
          "Transfer-Encoding \(encodings.map(\.value).joined(separator: ", ")) is not supported; "
            + "send chunked, or a Content-Length")
      }
      framing = .chunked
      return
    }
    guard !lengths.isEmpty else { return }
    var length: Int?
    for value in lengths.flatMap({
      $0.value.split(separator: ",", omittingEmptySubsequences: false)
    }) {
      let text = value.trimmingCharacters(" \t")
      guard !text.isEmpty, text.utf8.count <= 18,
        text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
        let number = Int(text)
      else {
        throw .bad("Content-Length must be a whole number of bytes; got \(text.debugDescription)")
      }
      if let length, length != number {
        throw .bad("the request has two different Content-Lengths")
      }
      length = number
    }
    framing = length.map { $0 > 0 ? .length($0) : .none } ?? .none
  }
}

/// Whether `byte` may be in a token (RFC 9110 §5.6.2): a method or a field name.
private func isTokenByte(_ byte: UInt8) -> Bool {
  switch byte {
  case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
    UInt8(ascii: "0")...UInt8(ascii: "9"):
    true
  default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
  }
}

extension Substring {
  /// Without the leading and trailing characters of `characters`.
  func trimmingCharacters(_ characters: String) -> String {
    let set = Set(characters)
    return String(self.drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
  }
}

extension String {
  /// Without the leading and trailing characters of `characters`.
  func trimmingCharacters(_ characters: String) -> String {
    self[...].trimmingCharacters(characters)
  }
}
