import ListStore
import ListStoreFormats

/// A request's JSON object body, parsed once, with its members by name.
struct JSONBody {
  let bytes: [UInt8]
  private var members: [String: JSONSyntax.Node] = [:]

  /// Parses the body, refusing keys other than `keys` (a misspelt one would otherwise be
  /// ignored without a word).
  init(_ request: HTTPRequest, keys: [String]) throws {
    try requireJSON(request)
    bytes = request.body
    if bytes.isEmpty { return }
    let root: JSONSyntax.Node
    do {
      root = try JSONSyntax.parse(bytes)
    } catch {
      throw APIFailure(
        400, "badRequest",
        "the body is not valid JSON: \(error.message) at \(error.place(in: bytes))")
    }
    guard case .object(let pairs) = root.kind else {
      throw APIFailure(
        400, "badRequest", "the body must be a JSON object, not \(root.kindDescription(in: bytes))")
    }
    for (key, value) in pairs {
      guard keys.contains(key) else {
        let hint = suggestion(for: key, among: keys, prefix: "", usingSynonyms: false)
        throw APIFailure(
          400, "badRequest",
          "unknown key \(quoted(key)) in the body"
            + (hint.isEmpty
              ? "; it takes " + keys.map { "\"\($0)\"" }.joined(separator: ", ") : hint))
      }
      members[key] = value
    }
  }

  /// A member's parsed node, or `nil` when it is absent.
  func node(_ key: String) -> JSONSyntax.Node? { members[key] }

  /// A member's JSON text, compact, or `nil` when it is absent.
  func optional(_ key: String) -> RawJSON? {
    members[key].map { RawJSON(JSONText.singleLine($0.text(in: bytes))) }
  }

  func required(_ key: String) throws -> RawJSON {
    guard let value = optional(key) else {
      throw APIFailure(400, "badRequest", "the body needs \"\(key)\"")
    }
    return value
  }

  /// A string member; `nil` when absent.
  func text(_ key: String) throws -> String? {
    guard let node = members[key] else { return nil }
    guard let text = node.string(in: bytes) else {
      throw APIFailure(400, "badRequest", "\"\(key)\" must be a string")
    }
    return text
  }

  /// A whole number member; `nil` when absent.
  func integer(_ key: String) throws -> Int64? {
    guard let node = members[key] else { return nil }
    guard case .number = node.kind, let value = wholeNumber(node.text(in: bytes)) else {
      throw APIFailure(400, "badRequest", "\"\(key)\" must be a whole number")
    }
    return value
  }

  var hasMetadata: Bool {
    members["metadata"] != nil || members["header"] != nil || members["footer"] != nil
  }

  /// A section's metadata: `{"metadata": any}`, or `{"header": "…", "footer": "…"|null}`.
  func metadata() throws -> RawJSON {
    // Checked also beside "metadata", which they then give way to.
    if let header = members["header"], header.string(in: bytes) == nil {
      throw APIFailure(400, "badRequest", "\"header\" must be a string")
    }
    var footer: String?
    if let node = members["footer"] {
      if case .null = node.kind {
      } else if let text = node.string(in: bytes) {
        footer = text
      } else {
        throw APIFailure(400, "badRequest", "\"footer\" must be a string or null")
      }
    }
    if let metadata = optional("metadata") { return metadata }
    guard let header = members["header"], let text = header.string(in: bytes) else {
      throw APIFailure(400, "badRequest", "a section needs \"header\" (a string) or \"metadata\"")
    }
    return Rendering.metadataJSON(header: text, footer: footer)
  }

  /// An item's move: `"section"` with `"at"` or alone (to its end), or `"before"` or
  /// `"after"` a neighbour (whose section it is; `"section"` may be given too).
  func move() throws -> (section: Int64?, placement: Placement)? {
    let section = try integer("section")
    if let section, section <= 0 {
      throw APIFailure(
        400, "badRequest", "\"section\" must be a section's id: a positive whole number")
    }
    let placement = try Placement(body: self)
    switch placement {
    case .before, .after:
      return (section, placement)
    case .at, .end:
      guard let section else {
        if members["at"] != nil {
          throw APIFailure(
            400, "badRequest", "a move needs \"section\", the id of the section to move to")
        }
        return nil
      }
      return (section, placement)
    }
  }

  fileprivate func placementMembers() throws -> (at: Int64?, before: Int64?, after: Int64?) {
    (try integer("at"), try integer("before"), try integer("after"))
  }
}

/// Where a new or moved row goes: at the end, at an index, or next to a row by id.
enum Placement: Equatable {
  case end
  case at(Int)
  case before(Int64)
  case after(Int64)

  /// From `?at=N`, `?before=ID` or `?after=ID`.
  init(_ query: [String: String]) throws {
    func number(_ key: String) throws -> Int64? {
      guard let text = query[key] else { return nil }
      guard let value = Int64(text) else {
        throw APIFailure(400, "badRequest", "\(key)=\(text) must be a whole number")
      }
      return value
    }
    try self.init(at: number("at"), before: number("before"), after: number("after"))
  }

  /// From a body's `"at"`, `"before"` or `"after"`.
  init(body: JSONBody) throws {
    let members = try body.placementMembers()
    try self.init(at: members.at, before: members.before, after: members.after)
  }

  private init(at: Int64?, before: Int64?, after: Int64?) throws {
    switch (at, before, after) {
    case (nil, nil, nil): self = .end
    case (let at?, nil, nil):
      guard at >= 0, at <= Int64(Int32.max) else {
        throw APIFailure(422, "unprocessable", "at=\(at) is out of range: use a zero-based index")
      }
      self = .at(Int(at))
    case (nil, let before?, nil):
      guard before > 0 else { throw Self.notAnID("before", before) }
      self = .before(before)
    case (nil, nil, let after?):
      guard after > 0 else { throw Self.notAnID("after", after) }
      self = .after(after)
    default:
      throw APIFailure(400, "badRequest", "give one of at, before and after")
    }
  }

  private static func notAnID(_ key: String, _ value: Int64) -> APIFailure {
    APIFailure(400, "badRequest", "\(key)=\(value) must be an id: a positive whole number")
  }
}

/// The media type of the request's body, lowercased, without parameters (`""` for none).
func mediaType(_ request: HTTPRequest) -> String {
  guard let type = request.headers["content-type"] else { return "" }
  return type.split(separator: ";").first.map { String($0).trimmingSpaces().lowercased() } ?? ""
}

/// Whether the request's body is empty or only white space (a request without one).
func bodyIsBlank(_ request: HTTPRequest) -> Bool {
  request.body.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
}

/// Refuses a body that says it is not JSON (a body without a type is taken as JSON).
func requireJSON(_ request: HTTPRequest, alsoAccepting other: String? = nil) throws {
  try requireLength(request)
  let media = mediaType(request)
  guard !request.body.isEmpty, !media.isEmpty else { return }
  guard media == "application/json" || media.hasSuffix("+json") else {
    throw APIFailure(
      415, "unsupportedMediaType",
      "send the body as application/json" + (other.map { " or \($0)" } ?? "") + ", not \(media)")
  }
}

/// Refuses a request that may carry a body but says neither its length nor that it is
/// chunked: HTTP/1.1 reads such a request as one without a body, so a body sent that
/// way would be read as the next request. The answer closes the connection.
func requireLength(_ request: HTTPRequest) throws {
  guard request.body.isEmpty, request.headers["content-length"] == nil,
    request.headers["transfer-encoding"] == nil
  else { return }
  throw APIFailure(
    411, "lengthRequired",
    "\(request.method) \(request.path) needs a body, sent with Content-Length or chunked encoding",
    headers: [("Connection", "close")])
}
