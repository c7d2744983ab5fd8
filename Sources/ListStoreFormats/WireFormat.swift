import FoundationEssentials
import ListStore
import Observable2D

/// The JSON of `liststore serve` read back: snapshots, changesets, list summaries and
/// error bodies, as a remote client (the CLI over HTTP, the Swift client) receives them
/// (docs/http.md). Values and metadata stay the JSON text the server sent.
package enum WireFormat {
  /// A list as a snapshot shows it: its sections with their ids, and the `seq` it reflects.
  package struct Snapshot: Sendable {
    /// The list's name.
    package var name: String
    /// The position in the database's commit order the snapshot reflects.
    package var seq: Int64
    /// The sections, metadata and values as JSON text.
    package var sections: [Observable2DArraySection<RawJSON, RawJSON>]
  }

  /// Why a body could not be read.
  package struct Malformed: Error, CustomStringConvertible {
    package var description: String

    init(_ description: String) { self.description = description }
  }

  /// Reads a snapshot object: `{"list", "seq", "sections": [{"id", "header", "footer",
  /// "metadata"?, "items": [{"id", "value"}]}]}`.
  package static func snapshot(_ bytes: [UInt8]) throws(Malformed) -> Snapshot {
    let root = try parse(bytes)
    let fields = try object(root, bytes, "the snapshot")
    let name = try string(fields["list"], bytes, "the snapshot's list")
    let seq = fields["seq"].flatMap { try? int64($0, bytes, "seq") } ?? 0
    guard case .array(let nodes)? = fields["sections"]?.kind else {
      throw Malformed("the snapshot has no sections array")
    }
    var sections: [Observable2DArraySection<RawJSON, RawJSON>] = []
    for node in nodes {
      let section = try object(node, bytes, "a section")
      let (id, metadata) = try sectionFields(section, bytes)
      sections.append(
        Observable2DArraySection(id: id, metadata: metadata, items: try items(section, bytes)))
    }
    return Snapshot(name: name, seq: seq, sections: sections)
  }

  /// Reads a changeset object (a `changes` event's data, or a `watch --json` line's
  /// `"changes"` value).
  package static func changeset(_ bytes: [UInt8]) throws(Malformed)
    -> Changeset<RawJSON, RawJSON>
  {
    try changeset(try parse(bytes), bytes)
  }

  /// Reads the changeset object `node` of `bytes`.
  package static func changeset(_ node: JSONSyntax.Node, _ bytes: [UInt8]) throws(Malformed)
    -> Changeset<RawJSON, RawJSON>
  {
    let fields = try object(node, bytes, "the changes")
    var changeset = Changeset<RawJSON, RawJSON>()
    for entry in try entries(fields["deletedSections"], bytes) {
      changeset.deletedSections.append(
        .init(index: try int(entry["index"], bytes), id: try int64(entry["id"], bytes, "id")))
    }
    for entry in try entries(fields["insertedSections"], bytes) {
      let (id, metadata) = try sectionFields(entry, bytes)
      changeset.insertedSections.append(
        .init(
          index: try int(entry["index"], bytes), id: id, metadata: metadata,
          items: try items(entry, bytes)))
    }
    for entry in try entries(fields["movedSections"], bytes) {
      let (id, metadata) = try sectionFields(entry, bytes)
      changeset.movedSections.append(
        .init(
          from: try int(entry["from"], bytes), to: try int(entry["to"], bytes), id: id,
          metadata: metadata))
    }
    for entry in try entries(fields["updatedSections"], bytes) {
      let (id, metadata) = try sectionFields(entry, bytes)
      changeset.updatedSections.append(
        .init(index: try int(entry["index"], bytes), id: id, metadata: metadata))
    }
    for entry in try entries(fields["deletedItems"], bytes) {
      changeset.deletedItems.append(
        .init(at: try path(entry["at"], bytes), id: try int64(entry["id"], bytes, "id")))
    }
    for entry in try entries(fields["insertedItems"], bytes) {
      changeset.insertedItems.append(
        .init(
          at: try path(entry["at"], bytes), id: try int64(entry["id"], bytes, "id"),
          value: try raw(entry["value"], bytes)))
    }
    for entry in try entries(fields["movedItems"], bytes) {
      changeset.movedItems.append(
        .init(
          from: try path(entry["from"], bytes), to: try path(entry["to"], bytes),
          id: try int64(entry["id"], bytes, "id"), value: try raw(entry["value"], bytes)))
    }
    for entry in try entries(fields["updatedItems"], bytes) {
      changeset.updatedItems.append(
        .init(
          at: try path(entry["at"], bytes), id: try int64(entry["id"], bytes, "id"),
          value: try raw(entry["value"], bytes)))
    }
    return changeset
  }

  /// Reads `{"lists": [{"id", "name", "sections", "items"}]}`.
  package static func lists(_ bytes: [UInt8]) throws(Malformed) -> [ListSummary] {
    let fields = try object(try parse(bytes), bytes, "the lists")
    var summaries: [ListSummary] = []
    for entry in try entries(fields["lists"], bytes) {
      summaries.append(
        ListSummary(
          id: try int64(entry["id"], bytes, "id"), name: try string(entry["name"], bytes, "name"),
          sectionCount: try int(entry["sections"], bytes), itemCount: try int(entry["items"], bytes)
        ))
    }
    return summaries
  }

  /// An error body's sentence and code, `{"error", "code"}`; `nil` when the body is not one.
  package static func error(_ bytes: [UInt8]) -> (message: String, code: String)? {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the error"),
      let message = try? string(fields["error"], bytes, "error")
    else { return nil }
    return (message, (try? string(fields["code"], bytes, "code")) ?? "")
  }

  /// The string field `name` of an object body, `nil` when it has none.
  package static func text(_ name: String, in bytes: [UInt8]) -> String? {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the body"),
      let node = fields[name]
    else { return nil }
    return node.string(in: bytes)
  }

  /// The strings of array field `name` of an object body (a batch's `messages`).
  package static func texts(_ name: String, in bytes: [UInt8]) -> [String]? {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the body"),
      case .array(let nodes)? = fields[name]?.kind
    else { return nil }
    return nodes.compactMap { $0.string(in: bytes) }
  }

  /// The whole numbers of object field `name` of an object body, by key (a replace's
  /// `"items": {"added": 2, …}`).
  package static func counts(_ name: String, in bytes: [UInt8]) -> [String: Int] {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the body"),
      let node = fields[name], let members = try? object(node, bytes, name)
    else { return [:] }
    return members.compactMapValues { (try? int64($0, bytes, name)).map(Int.init) }
  }

  /// The whole number of field `name` of an object body, `nil` when it has none.
  package static func number(_ name: String, in bytes: [UInt8]) -> Int64? {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the body"),
      let node = fields[name]
    else { return nil }
    return try? int64(node, bytes, name)
  }

  /// The whole numbers of array field `name` of an object body (a batch's `ids`).
  package static func numbers(_ name: String, in bytes: [UInt8]) -> [Int64]? {
    guard let root = try? parse(bytes), let fields = try? object(root, bytes, "the body"),
      case .array(let nodes)? = fields[name]?.kind
    else { return nil }
    return nodes.compactMap { try? int64($0, bytes, name) }
  }

  // MARK: Pieces

  private static func parse(_ bytes: [UInt8]) throws(Malformed) -> JSONSyntax.Node {
    do {
      return try JSONSyntax.parse(bytes)
    } catch {
      throw Malformed("the server's answer is not JSON: \(error.message) \(error.place(in: bytes))")
    }
  }

  private static func object(_ node: JSONSyntax.Node, _ bytes: [UInt8], _ what: String)
    throws(Malformed) -> [String: JSONSyntax.Node]
  {
    guard case .object(let members) = node.kind else {
      throw Malformed("\(what) is \(node.kindDescription(in: bytes)), not an object")
    }
    var fields: [String: JSONSyntax.Node] = [:]
    for member in members { fields[member.key] = member.value }
    return fields
  }

  private static func entries(_ node: JSONSyntax.Node?, _ bytes: [UInt8]) throws(Malformed)
    -> [[String: JSONSyntax.Node]]
  {
    guard let node else { return [] }
    guard case .array(let nodes) = node.kind else {
      throw Malformed("expected an array, found \(node.kindDescription(in: bytes))")
    }
    var result: [[String: JSONSyntax.Node]] = []
    for entry in nodes { result.append(try object(entry, bytes, "an entry")) }
    return result
  }

  private static func string(_ node: JSONSyntax.Node?, _ bytes: [UInt8], _ what: String)
    throws(Malformed) -> String
  {
    guard let node, let text = node.string(in: bytes) else {
      throw Malformed("\(what) is missing or not a string")
    }
    return text
  }

  private static func int64(_ node: JSONSyntax.Node?, _ bytes: [UInt8], _ what: String)
    throws(Malformed) -> Int64
  {
    guard let node, case .number = node.kind, let value = Int64(node.text(in: bytes)) else {
      throw Malformed("\(what) is missing or not a whole number")
    }
    return value
  }

  private static func int(_ node: JSONSyntax.Node?, _ bytes: [UInt8]) throws(Malformed) -> Int {
    Int(try int64(node, bytes, "an index"))
  }

  private static func path(_ node: JSONSyntax.Node?, _ bytes: [UInt8]) throws(Malformed)
    -> IndexPath
  {
    guard let node, case .array(let parts) = node.kind, parts.count == 2 else {
      throw Malformed("an index path is missing or not [section, row]")
    }
    return IndexPath(indexes: [try int(parts[0], bytes), try int(parts[1], bytes)])
  }

  private static func raw(_ node: JSONSyntax.Node?, _ bytes: [UInt8]) throws(Malformed) -> RawJSON {
    guard let node else { throw Malformed("a value is missing") }
    return RawJSON(node.text(in: bytes))
  }

  /// A section's id and metadata: `"metadata"` when given, else `{"header", "footer"}`.
  private static func sectionFields(_ fields: [String: JSONSyntax.Node], _ bytes: [UInt8])
    throws(Malformed) -> (id: Int64, metadata: RawJSON)
  {
    let id = try int64(fields["id"], bytes, "a section's id")
    if let metadata = fields["metadata"] { return (id, RawJSON(metadata.text(in: bytes))) }
    let header = fields["header"].flatMap { $0.string(in: bytes) } ?? ""
    let footer = fields["footer"].flatMap { $0.string(in: bytes) }
    return (id, Rendering.metadataJSON(header: header, footer: footer))
  }

  private static func items(_ fields: [String: JSONSyntax.Node], _ bytes: [UInt8])
    throws(Malformed) -> ItemList<RawJSON>
  {
    var items = ItemList<RawJSON>()
    for entry in try entries(fields["items"], bytes) {
      items.append(try raw(entry["value"], bytes), id: try int64(entry["id"], bytes, "id"))
    }
    return items
  }
}

// MARK: - Errors, field by field

extension WireFormat {
  /// The fields of `error` that a client needs to rebuild it (an error body's `"detail"`),
  /// for the errors a request can meet; `nil` for the others, which a client sees as a
  /// message only.
  package static func detail(of error: ListStoreError) -> String? {
    func fields(_ name: String, _ pairs: [(String, String)] = []) -> String {
      "{\"case\":\"\(name)\"" + pairs.map { ",\"\($0.0)\":\($0.1)" }.joined() + "}"
    }
    let q = JSONText.quote
    switch error {
    case .listNotFound(let name): return fields("listNotFound", [("name", q(name))])
    case .listExists(let name): return fields("listExists", [("name", q(name))])
    case .emptyName: return fields("emptyName")
    case .invalidName(let name): return fields("invalidName", [("name", q(name))])
    case .sectionOutOfRange(let index, let count):
      return fields("sectionOutOfRange", [("index", "\(index)"), ("count", "\(count)")])
    case .itemOutOfRange(let section, let row, let count):
      return fields(
        "itemOutOfRange", [("section", "\(section)"), ("row", "\(row)"), ("count", "\(count)")])
    case .insertionOutOfRange(let section, let row, let limit):
      return fields(
        "insertionOutOfRange",
        [("section", "\(section)"), ("row", "\(row)"), ("limit", "\(limit)")])
    case .sectionInsertionOutOfRange(let index, let limit):
      return fields("sectionInsertionOutOfRange", [("index", "\(index)"), ("limit", "\(limit)")])
    case .invalidIndexPath(let path): return fields("invalidIndexPath", [("text", q(path))])
    case .sectionNotFound(let id): return fields("sectionNotFound", [("id", "\(id)")])
    case .itemNotFound(let id): return fields("itemNotFound", [("id", "\(id)")])
    case .duplicateID(let kind, let id):
      return fields("duplicateID", [("kind", q(kind)), ("id", "\(id)")])
    case .invalidJSON(let detail): return fields("invalidJSON", [("text", q(detail))])
    case .invalidImport(let detail): return fields("invalidImport", [("text", q(detail))])
    case .encodingFailed(let detail): return fields("encodingFailed", [("text", q(detail))])
    case .decodingFailed(let detail): return fields("decodingFailed", [("text", q(detail))])
    case .notSupported(let detail): return fields("notSupported", [("text", q(detail))])
    default: return nil
    }
  }

  /// The error an error body's `"detail"` names, when it names one.
  package static func listStoreError(fromErrorBody bytes: [UInt8]) -> ListStoreError? {
    guard let root = try? parse(bytes), let body = try? object(root, bytes, "the error"),
      let node = body["detail"], let detail = try? object(node, bytes, "the detail"),
      let name = try? string(detail["case"], bytes, "case")
    else { return nil }
    func text(_ key: String) -> String? { try? string(detail[key], bytes, key) }
    func number(_ key: String) -> Int? { (try? int64(detail[key], bytes, key)).map(Int.init) }
    func id() -> Int64? { try? int64(detail["id"], bytes, "id") }
    switch name {
    case "listNotFound": return text("name").map { .listNotFound(name: $0) }
    case "listExists": return text("name").map { .listExists(name: $0) }
    case "emptyName": return .emptyName
    case "invalidName": return text("name").map { .invalidName($0) }
    case "sectionOutOfRange":
      guard let index = number("index"), let count = number("count") else { return nil }
      return .sectionOutOfRange(index: index, count: count)
    case "itemOutOfRange":
      guard let section = number("section"), let row = number("row"), let count = number("count")
      else { return nil }
      return .itemOutOfRange(section: section, row: row, count: count)
    case "insertionOutOfRange":
      guard let section = number("section"), let row = number("row"), let limit = number("limit")
      else { return nil }
      return .insertionOutOfRange(section: section, row: row, limit: limit)
    case "sectionInsertionOutOfRange":
      guard let index = number("index"), let limit = number("limit") else { return nil }
      return .sectionInsertionOutOfRange(index: index, limit: limit)
    case "invalidIndexPath": return text("text").map { .invalidIndexPath($0) }
    case "sectionNotFound": return id().map { .sectionNotFound(id: $0) }
    case "itemNotFound": return id().map { .itemNotFound(id: $0) }
    case "duplicateID":
      guard let kind = text("kind"), let id = id() else { return nil }
      return .duplicateID(kind: kind, id: id)
    case "invalidJSON": return text("text").map { .invalidJSON($0) }
    case "invalidImport": return text("text").map { .invalidImport($0) }
    case "encodingFailed": return text("text").map { .encodingFailed($0) }
    case "decodingFailed": return text("text").map { .decodingFailed($0) }
    case "notSupported": return text("text").map { .notSupported($0) }
    default: return nil
    }
  }
}
