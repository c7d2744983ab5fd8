import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

// Lists, sections and items: one request, one transaction.
extension ListServer {
  func list(_ name: String) throws -> StoredList<RawJSON, RawJSON> {
    try repository.list(name, metadata: RawJSON.self, item: RawJSON.self)
  }

  /// Runs `body` as one transaction and returns its result with the position of its
  /// commit. With `list`, the request's `If-Match: "S"` is checked first, in the same
  /// transaction: 412 when the list changed after `S` or that can no longer be told.
  func written<Result: Sendable>(
    _ request: HTTPRequest? = nil, _ list: StoredList<RawJSON, RawJSON>? = nil,
    _ body: () throws -> Result
  ) throws -> (result: Result, seq: Int64) {
    let expected = try request.flatMap(Self.ifMatch)
    return try repository.write {
      if let expected, let list {
        switch try list.hasChanged(after: expected) {
        case false?: break
        case true?:
          throw APIFailure(
            412, "preconditionFailed",
            "\(quoted(list.name)) changed after \(expected): read it again and retry")
        case nil:
          throw APIFailure(
            412, "preconditionFailed",
            "whether \(quoted(list.name)) changed after \(expected) can no longer be told: "
              + "read it again and retry")
        }
      }
      let result = try body()
      return (result, try repository.changeLogPosition())
    }
  }

  /// The seq of `If-Match: "S"` (or `W/"S"`, or `S`); `nil` without the header or for `*`.
  static func ifMatch(_ request: HTTPRequest) throws -> Int64? {
    guard var text = request.headers["if-match"]?.trimmingSpaces() else { return nil }
    if text == "*" { return nil }
    if text.hasPrefix("W/") { text.removeFirst(2) }
    if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
      text = String(text.dropFirst().dropLast())
    }
    guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let seq = Int64(text)
    else {
      throw APIFailure(
        400, "badRequest",
        "If-Match must be a snapshot's ETag, like \"42\" (the list's seq); got \(request.headers["if-match"] ?? "")"
      )
    }
    return seq
  }

  /// `PATCH /v1/lists/NAME` with `{"name": NEW}`: renames the list.
  func renameList(_ name: String, _ request: HTTPRequest, grant: Tokens.Grant) throws
    -> HTTPResponse
  {
    let body = try JSONBody(request, keys: ["name"])
    guard let newName = try body.text("name") else {
      throw APIFailure(400, "badRequest", "give the list's new \"name\"")
    }
    // Both names must be in the token's write scope.
    try Self.requireWrite(newName, grant)
    try checkListName(newName)
    let list = try list(name)
    let seq = try written(request, list) { try repository.renameList(name, to: newName) }.seq
    // No list has the old name any more: its streams end as a deletion's do, and its feed
    // (which follows the list by id) goes, so that a new list of that name gets its own.
    feeds.withLock { $0.removeValue(forKey: name) }?.end(.deleted)
    return .json(200, "{\"list\":" + JSONText.quote(newName) + ",\"seq\":\(seq)}")
  }

  func createList(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    if bodyIsBlank(request) {
      let seq = try written { _ = try repository.createList(name) }.seq
      return .json(201, "{\"list\":" + JSONText.quote(name) + ",\"seq\":\(seq)}")
    }
    try requireJSON(request)
    let file = try ImportFile.parse(request.body, name: "the body")
    let seq = try written { _ = try repository.createList(name, contents: file.sections) }.seq
    return .json(201, "{\"list\":" + JSONText.quote(name) + ",\"seq\":\(seq)}")
  }

  func addSection(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let body = try JSONBody(request, keys: ["header", "footer", "metadata"])
    let metadata = try body.metadata()
    let list = try list(name)
    let placement = try Placement(request.query)
    let (id, seq) = try written(request, list) { () throws -> Int64 in
      switch placement {
      case .end: try list.appendSection(metadata)
      case .at(let index): try list.insert(section: metadata, at: index)
      case .before(let neighbor): try list.insert(section: metadata, before: neighbor)
      case .after(let neighbor): try list.insert(section: metadata, after: neighbor)
      }
    }
    return .json(201, "{\"id\":\(id),\"seq\":\(seq)}")
  }

  /// `POST …/sections/ID/items`, or `POST …/items?before=ID` (or `after`) without a
  /// section: the neighbour's.
  func addItem(_ name: String, section: Int64?, _ request: HTTPRequest) throws
    -> HTTPResponse
  {
    let body = try JSONBody(request, keys: ["value"])
    let value = try body.required("value")
    let list = try list(name)
    let placement = try Placement(request.query)
    if section == nil, case .end = placement {
      throw APIFailure(
        400, "badRequest",
        "name the neighbour with ?before=ID or ?after=ID, or post to …/sections/ID/items")
    }
    if section == nil, case .at = placement {
      throw APIFailure(400, "badRequest", "?at=ROW needs a section: post to …/sections/ID/items")
    }
    let (id, seq) = try written(request, list) { () throws -> Int64 in
      switch placement {
      case .end: try list.appendItem(value, toSectionWithID: section ?? 0)
      case .at(let row):
        try list.insert(item: value, atRow: row, inSectionWithID: section ?? 0)
      case .before(let neighbor): try list.insert(item: value, before: neighbor)
      case .after(let neighbor): try list.insert(item: value, after: neighbor)
      }
    }
    return .json(201, "{\"id\":\(id),\"seq\":\(seq)}")
  }

  func changeItem(_ name: String, id: Int64, _ request: HTTPRequest) throws -> HTTPResponse {
    let body = try JSONBody(request, keys: ["value", "section", "at", "before", "after"])
    let value = body.optional("value")
    let move = try body.move()
    guard value != nil || move != nil else {
      throw APIFailure(
        400, "badRequest",
        "give \"value\", or a move: \"section\" with \"at\", \"before\" or \"after\"")
    }
    let list = try list(name)
    let seq = try written(request, list) {
      if let value { try list.replaceItem(id: id, with: value) }
      if let move {
        switch move.placement {
        case .before(let neighbor): try list.moveItem(id: id, before: neighbor)
        case .after(let neighbor): try list.moveItem(id: id, after: neighbor)
        case .at(let row):
          let section = try list.index(ofSectionWithID: move.section ?? 0)
          try list.moveItem(id: id, to: IndexPath(item: row, section: section))
        case .end:
          let sectionID = move.section ?? 0
          let section = try list.index(ofSectionWithID: sectionID)
          let count = try list.numberOfItems(inSection: section)
          let current = try list.sectionID(ofItem: id)
          try list.moveItem(
            id: id,
            to: IndexPath(item: current == sectionID ? count - 1 : count, section: section))
        }
      }
    }.seq
    return .json(200, "{\"seq\":\(seq)}")
  }

  func changeSection(_ name: String, id: Int64, _ request: HTTPRequest) throws
    -> HTTPResponse
  {
    let body = try JSONBody(
      request, keys: ["header", "footer", "metadata", "at", "before", "after"])
    let metadata = body.hasMetadata ? try body.metadata() : nil
    let placement = try Placement(body: body)
    guard metadata != nil || placement != .end else {
      throw APIFailure(
        400, "badRequest",
        "give \"header\"/\"footer\" or \"metadata\", or a move: \"at\", \"before\" or \"after\"")
    }
    let list = try list(name)
    let seq = try written(request, list) {
      if let metadata { try list.setMetadata(metadata, forSectionWithID: id) }
      switch placement {
      case .end: break
      case .at(let index): try list.moveSection(id: id, to: index)
      case .before(let neighbor): try list.moveSection(id: id, before: neighbor)
      case .after(let neighbor): try list.moveSection(id: id, after: neighbor)
      }
    }.seq
    return .json(200, "{\"seq\":\(seq)}")
  }

  func id(_ text: String, _ kind: String) throws -> Int64 {
    guard let id = Int64(text), id > 0 else {
      throw APIFailure(
        404, "notFound", "no \(kind) with id \(text): ids are positive whole numbers")
    }
    return id
  }
}
