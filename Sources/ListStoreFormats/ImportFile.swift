import ListStore

/// The file `import` reads: the object `export` writes, and the shorter forms people
/// write by hand.
///
/// ```json
/// {"list": "groceries",
///  "sections": [
///    {"header": "Fruit", "footer": "fresh", "items": ["apples", {"value": "pears"}]},
///    {"metadata": {"title": "Dairy", "cold": true}, "items": [{"id": 7, "value": 2}]}]}
/// ```
///
/// * The top level is an object with `sections` (an array) and optionally `list` (a
///   string: the CLI ignores it, giving the list the name on its command line; fixtures
///   use it as the list's name when they are given none).
/// * A section is an object with `header` (a string) and optionally `footer` (a string
///   or null), or with `metadata` (any JSON value, stored as it is; `header` and
///   `footer` beside it are ignored, as `export` writes them for reading); optionally
///   `items` (an array) and `id` (an integer, ignored).
/// * An item is any JSON value, stored as it is; an object with exactly the keys
///   `value`, or `id` and `value`, is a wrapper whose `value` is the item (`export`
///   writes items that way). To store such an object itself, wrap it once more.
/// * Values are stored as the text the file holds, so keys keep their order and
///   numbers their spelling; ids, when given, must not repeat.
///
/// Every problem is reported with its place: `FILE:LINE:COLUMN` for JSON syntax, and a
/// path such as `sections[2].items[5]` for a part of the wrong shape.
package struct ImportFile {
  /// A section to create: its metadata and its item values, as JSON text.
  package typealias Section = (metadata: String, items: [String])

  /// The `list` member of the file, if it has one.
  package var list: String?
  /// The sections, in order.
  package var sections: [Section]

  /// Reads an import file.
  /// - Parameters:
  ///   - bytes: The file's contents.
  ///   - name: How to call the file in messages (its path, or `-`).
  /// - Returns: The list's name, if the file gives one, and its sections.
  /// - Throws: ``ListStoreError/invalidImport(_:)`` naming the place and the expected shape.
  package static func parse(_ bytes: [UInt8], name: String) throws(ListStoreError) -> ImportFile {
    let displayName = name == "-" ? "standard input" : name
    let root: JSONSyntax.Node
    do {
      root = try JSONSyntax.parse(bytes)
    } catch {
      throw .invalidImport("\(displayName):\(error.line):\(error.column): \(error.message)")
    }
    var reader = Reader(bytes: bytes, name: displayName)
    return try reader.file(root)
  }

  /// Walks the parsed file, checking each part's shape.
  private struct Reader {
    let bytes: [UInt8]
    let name: String
    var sectionIDs = Set<Int64>()
    var itemIDs = Set<Int64>()

    static let fileShape =
      #"an object like {"sections": [{"header": "…", "items": […]}, …]}"#
    static let sectionShape =
      #"a section: an object with "header" (a string) and optionally "footer" and "items", "#
      + #"or with "metadata" (any JSON value) and optionally "items""#

    func failure(_ place: String, _ message: String) -> ListStoreError {
      .invalidImport("\(name): \(place): \(message)")
    }

    /// "expected X, got Y" for a part of the wrong kind.
    func mismatch(_ place: String, _ node: JSONSyntax.Node, expected: String) -> ListStoreError {
      failure(place, "expected \(expected); got \(node.kindDescription(in: bytes))")
    }

    /// The members of an object, refusing keys it does not know and keys given twice.
    func members(
      of node: JSONSyntax.Node, at place: String, known: [String], shape: String
    ) throws(ListStoreError) -> [String: JSONSyntax.Node] {
      guard case .object(let list) = node.kind else { throw mismatch(place, node, expected: shape) }
      var members: [String: JSONSyntax.Node] = [:]
      for (key, value) in list {
        guard known.contains(key) else {
          let hint = suggestion(for: key, among: known, prefix: "")
          throw failure(
            place,
            "unknown key \(quoted(key))"
              + (hint.isEmpty
                ? "; the keys are " + known.map(quoted).joined(separator: ", ") : hint))
        }
        guard members.updateValue(value, forKey: key) == nil else {
          throw failure(place, "the key \(quoted(key)) appears twice")
        }
      }
      return members
    }

    func array(_ node: JSONSyntax.Node, at place: String, of what: String) throws(ListStoreError)
      -> [JSONSyntax.Node]
    {
      guard case .array(let elements) = node.kind else {
        throw mismatch(place, node, expected: "an array of \(what)")
      }
      return elements
    }

    func string(_ node: JSONSyntax.Node, at place: String, nullable: Bool = false)
      throws(ListStoreError) -> String?
    {
      if nullable, case .null = node.kind { return nil }
      guard let text = node.string(in: bytes) else {
        throw mismatch(place, node, expected: nullable ? "a string or null" : "a string")
      }
      return text
    }

    /// An `id`, checked to be an integer that no other row of its kind in the file has.
    func id(_ node: JSONSyntax.Node, at place: String, seen: inout Set<Int64>, kind: String)
      throws(ListStoreError)
    {
      guard case .number = node.kind, let id = wholeNumber(node.text(in: bytes)), id > 0 else {
        throw mismatch(place, node, expected: "an integer id (1 or more)")
      }
      guard seen.insert(id).inserted else {
        throw failure(place, "repeats \(kind) id \(id); ids in a file must be unique")
      }
    }

    mutating func file(_ root: JSONSyntax.Node) throws(ListStoreError) -> ImportFile {
      let top = try members(
        of: root, at: "the top level", known: ["list", "sections"], shape: Self.fileShape)
      let list = try top["list"].flatMap { node throws(ListStoreError) in
        try string(node, at: "list")
      }
      guard let sections = top["sections"] else {
        throw failure("the top level", "missing \"sections\"; expected \(Self.fileShape)")
      }
      var result: [Section] = []
      for (index, node) in try array(sections, at: "sections", of: "sections").enumerated() {
        result.append(try section(node, at: "sections[\(index)]"))
      }
      return ImportFile(list: list, sections: result)
    }

    mutating func section(_ node: JSONSyntax.Node, at place: String) throws(ListStoreError)
      -> Section
    {
      let fields = try members(
        of: node, at: place, known: ["id", "header", "footer", "metadata", "items"],
        shape: Self.sectionShape)
      if let id = fields["id"] {
        try self.id(id, at: place + ".id", seen: &sectionIDs, kind: "section")
      }
      let header = try fields["header"].map { node throws(ListStoreError) in
        try string(node, at: place + ".header")
      }
      let footer = try fields["footer"].flatMap { node throws(ListStoreError) in
        try string(node, at: place + ".footer", nullable: true)
      }
      let metadata: String
      if let raw = fields["metadata"] {
        metadata = raw.text(in: bytes)
      } else if let header = header ?? nil {
        metadata = Rendering.metadataJSON(header: header, footer: footer).text
      } else {
        throw failure(place, "missing \"header\"; expected \(Self.sectionShape)")
      }
      var items: [String] = []
      if let list = fields["items"] {
        for (row, item) in try array(list, at: place + ".items", of: "items").enumerated() {
          items.append(try value(ofItem: item, at: place + ".items[\(row)]"))
        }
      }
      return (metadata, items)
    }

    /// The value of an item: the item itself, or the `value` of a wrapper object.
    mutating func value(ofItem node: JSONSyntax.Node, at place: String) throws(ListStoreError)
      -> String
    {
      guard case .object(let members) = node.kind,
        let value = members.first(where: { $0.key == "value" })?.value
      else { return node.text(in: bytes) }
      let keys = members.map(\.key).sorted()
      guard keys == ["value"] || keys == ["id", "value"] else { return node.text(in: bytes) }
      if let id = members.first(where: { $0.key == "id" })?.value {
        try self.id(id, at: place + ".id", seen: &itemIDs, kind: "item")
      }
      return value.text(in: bytes)
    }
  }
}
