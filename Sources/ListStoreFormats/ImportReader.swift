import ListStore

/// What an import file holds, handed over in order as it is read.
package protocol ImportSink {
  /// A section begins. `metadata` is its metadata when the file gave it before the
  /// section's items (else the final metadata comes with ``endSection(metadata:)``).
  mutating func beginSection(id: Int64?, metadata: String?) throws
  /// An item of the current section: its compact JSON text, and its id in the file.
  mutating func item(_ value: ArraySlice<UInt8>, id: Int64?) throws
  /// The current section ends; `metadata` is its final metadata.
  mutating func endSection(metadata: String) throws
}

/// The file `import` reads: the object `export` writes, and the shorter forms people
/// write by hand, read as a stream (a file of any size, in bounded memory).
///
/// ```json
/// {"list": "groceries",
///  "sections": [
///    {"header": "Fruit", "footer": "fresh", "items": ["apples", {"value": "pears"}]},
///    {"metadata": {"title": "Dairy", "cold": true}, "items": [{"id": 7, "value": 2}]}]}
/// ```
///
/// * The top level is an object with `sections` (an array) and optionally `list` (a
///   string, ignored: the list gets the name given on the command line).
/// * A section is an object with `header` (a string) and optionally `footer` (a string
///   or null), or with `metadata` (any JSON value, stored as it is; `header` and
///   `footer` beside it are ignored, as `export` writes them for reading); optionally
///   `items` (an array) and `id` (an integer).
/// * An item is any JSON value, stored as it is; an object with exactly the keys
///   `value`, or `id` and `value`, is a wrapper whose `value` is the item (`export`
///   writes items that way). To store such an object itself, wrap it once more.
/// * Values are stored as the text the file holds, without the white space between
///   tokens, so keys keep their order and numbers their spelling; ids, when given, must
///   not repeat.
///
/// Every problem is reported with its place: `FILE:LINE:COLUMN` for JSON syntax, and a
/// path such as `sections[2].items[5]` for a part of the wrong shape. A syntax error
/// anywhere in the file is reported before a shape error.
package struct ImportReader {
  package let stream: JSONStream
  /// The file as messages name it.
  package let name: String
  private var sectionIDs = Set<Int64>()
  private var itemIDs = Set<Int64>()
  /// Sections and items read so far.
  package private(set) var sections = 0
  package private(set) var items = 0
  /// Called every few thousand items, with the items and bytes read so far.
  package var progress: ((Int, Int) -> Void)?

  package init(stream: JSONStream, name: String) {
    self.stream = stream
    self.name = name == "-" ? "standard input" : name
  }

  static let fileShape = #"an object like {"sections": [{"header": "…", "items": […]}, …]}"#
  static let sectionShape =
    #"a section: an object with "header" (a string) and optionally "footer" and "items", "#
    + #"or with "metadata" (any JSON value) and optionally "items""#

  /// A part of the file of the wrong shape.
  private struct ShapeError: Error {
    var place: String
    var message: String
  }

  /// Reads the whole file into `sink`.
  /// - Throws: ``ListStoreError/invalidImport(_:)`` naming the place, or what `sink`
  ///   throws.
  package mutating func read<Sink: ImportSink>(into sink: inout Sink) throws {
    do {
      try file(&sink)
    } catch let error as JSONStream.Failure {
      throw ListStoreError.invalidImport("\(name):\(error.line):\(error.column): \(error.message)")
    } catch let shape as ShapeError {
      // A syntax error further on is the one to report.
      do {
        try stream.skipToEnd()
      } catch {
        throw ListStoreError.invalidImport(
          "\(name):\(error.line):\(error.column): \(error.message)")
      }
      throw ListStoreError.invalidImport("\(name): \(shape.place): \(shape.message)")
    }
  }

  // MARK: Shapes

  /// What a value whose first token is `token` is, in plain words.
  private func kind(_ token: JSONStream.Token) -> String {
    switch token {
    case .beginObject: "an object"
    case .beginArray: "an array"
    case .string: "a string"
    case .number: "the number \(String(decoding: stream.scalar, as: UTF8.self))"
    case .literal: String(decoding: stream.scalar, as: UTF8.self)
    default: "nothing"
    }
  }

  private func mismatch(_ place: String, _ token: JSONStream.Token, expected: String) -> ShapeError
  {
    ShapeError(place: place, message: "expected \(expected); got \(kind(token))")
  }

  /// Checks a member's key: known, and not given before.
  private func check(
    key: String, at place: String, known: [String], seen: inout Set<String>
  ) throws {
    guard known.contains(key) else {
      let hint = suggestion(for: key, among: known, prefix: "")
      throw ShapeError(
        place: place,
        message: "unknown key \(quoted(key))"
          + (hint.isEmpty ? "; the keys are " + known.map(quoted).joined(separator: ", ") : hint))
    }
    guard seen.insert(key).inserted else {
      throw ShapeError(place: place, message: "the key \(quoted(key)) appears twice")
    }
  }

  /// An integer id whose first token was just read.
  private func id(_ token: JSONStream.Token, at place: String) throws -> Int64 {
    guard token == .number, let id = wholeNumber(String(decoding: stream.scalar, as: UTF8.self)),
      id > 0
    else {
      throw mismatch(place, token, expected: "an integer id (1 or more)")
    }
    return id
  }

  /// `id`, checked to be new among `seen`. Static: a method of `self` given one of its
  /// own sets `inout` works on a copy of `self`, and the set is copied at every insert.
  private static func unique(
    _ id: Int64, among seen: inout Set<Int64>, at place: String, kind: String
  ) throws -> Int64 {
    guard seen.insert(id).inserted else {
      throw ShapeError(
        place: place, message: "repeats \(kind) id \(id); ids in a file must be unique")
    }
    return id
  }

  private func string(_ token: JSONStream.Token, at place: String, nullable: Bool = false) throws
    -> String?
  {
    if nullable, token == .literal, stream.scalar == Array("null".utf8) { return nil }
    guard token == .string,
      let text = stream.scalar.withUnsafeBufferPointer({
        JSONText.unquote(bytes: $0)
      })
    else { throw mismatch(place, token, expected: nullable ? "a string or null" : "a string") }
    return text
  }

  private mutating func file<Sink: ImportSink>(_ sink: inout Sink) throws {
    let first = try stream.next()
    guard first == .beginObject else {
      throw mismatch("the top level", first, expected: Self.fileShape)
    }
    var seen = Set<String>()
    while case .key(let key) = try stream.next() {
      try check(key: key, at: "the top level", known: ["list", "sections"], seen: &seen)
      let value = try stream.next()
      if key == "list" {
        _ = try string(value, at: "list")
        continue
      }
      guard value == .beginArray else {
        throw mismatch("sections", value, expected: "an array of sections")
      }
      var index = 0
      while true {
        let token = try stream.next()
        if token == .endArray { break }
        guard token == .beginObject else {
          throw mismatch("sections[\(index)]", token, expected: Self.sectionShape)
        }
        try section(at: "sections[\(index)]", into: &sink)
        index += 1
      }
    }
    guard seen.contains("sections") else {
      throw ShapeError(
        place: "the top level", message: "missing \"sections\"; expected \(Self.fileShape)")
    }
    _ = try stream.next()  // The end, or a syntax error for anything after the object.
  }

  /// A section whose `{` was just read.
  private mutating func section<Sink: ImportSink>(at place: String, into sink: inout Sink) throws {
    var seen = Set<String>()
    var id: Int64?
    var header: String?
    var footer: String?
    var metadata: String?
    var begun = false
    /// The metadata known so far.
    func current() throws -> String? {
      if let metadata { return metadata }
      return header.map { Rendering.metadataJSON(header: $0, footer: footer).text }
    }
    while case .key(let key) = try stream.next() {
      try check(
        key: key, at: place, known: ["id", "header", "footer", "metadata", "items"], seen: &seen)
      switch key {
      case "id":
        id = try Self.unique(
          try self.id(try stream.next(), at: place + ".id"), among: &sectionIDs,
          at: place + ".id", kind: "section")
      case "header":
        header = try string(try stream.next(), at: place + ".header")
      case "footer":
        footer = try string(try stream.next(), at: place + ".footer", nullable: true)
      case "metadata":
        stream.capturing = true
        stream.capture.removeAll(keepingCapacity: true)
        let token = try stream.next()
        let start = stream.tokenStart
        try stream.skipValue(startingWith: token)
        metadata = String(decoding: stream.capture[start...], as: UTF8.self)
        stream.capturing = false
      default:  // "items"
        let token = try stream.next()
        guard token == .beginArray else {
          throw mismatch(place + ".items", token, expected: "an array of items")
        }
        try sink.beginSection(id: id, metadata: try current())
        begun = true
        try items(at: place + ".items", into: &sink)
      }
    }
    guard let final = try current() else {
      throw ShapeError(place: place, message: "missing \"header\"; expected \(Self.sectionShape)")
    }
    if !begun { try sink.beginSection(id: id, metadata: final) }
    try sink.endSection(metadata: final)
    sections += 1
  }

  /// The items of an array whose `[` was just read.
  private mutating func items<Sink: ImportSink>(at place: String, into sink: inout Sink) throws {
    stream.capturing = true
    defer { stream.capturing = false }
    var row = 0
    while true {
      stream.capture.removeAll(keepingCapacity: true)
      let token = try stream.next()
      if token == .endArray { return }
      let start = stream.tokenStart
      var value = start..<start
      var id: Int64?
      if token == .beginObject {
        // A wrapper ({"value": …} or {"id": …, "value": …}), or an object value.
        var keys: [String] = []
        var wrapped: Range<Int>?
        var idToken: (JSONStream.Token, [UInt8])?
        while case .key(let key) = try stream.next() {
          keys.append(key)
          let first = try stream.next()
          let valueStart = stream.tokenStart
          if key == "id" { idToken = (first, stream.scalar) }
          try stream.skipValue(startingWith: first)
          if key == "value" { wrapped = valueStart..<stream.capture.count }
        }
        value = start..<stream.capture.count
        keys.sort()
        if let wrapped, keys == ["value"] || keys == ["id", "value"] {
          value = wrapped
          if let (first, text) = idToken {
            let place = place + "[\(row)].id"
            id = try Self.unique(
              try self.id(first, text: text, at: place), among: &itemIDs, at: place,
              kind: "item")
          }
        }
      } else {
        try stream.skipValue(startingWith: token)
        value = start..<stream.capture.count
      }
      try sink.item(stream.capture[value], id: id)
      row += 1
      items += 1
      if items & 0xFFF == 0 { progress?(items, stream.offset) }
    }
  }

  /// ``id(_:at:)`` for a token read earlier, whose text was `text`.
  private func id(_ token: JSONStream.Token, text: [UInt8], at place: String) throws -> Int64 {
    guard token == .number, let id = wholeNumber(String(decoding: text, as: UTF8.self)), id > 0
    else {
      let described =
        token == .number
        ? "the number \(String(decoding: text, as: UTF8.self))"
        : token == .literal ? String(decoding: text, as: UTF8.self) : self.kind(token)
      throw ShapeError(
        place: place, message: "expected an integer id (1 or more); got \(described)")
    }
    return id
  }
}

/// Keeps what it is given, with the file's ids: the state `--replace` syncs to.
package struct CollectingSink: ImportSink {
  package private(set) var sections: [Observable2DArraySection<RawJSON, RawJSON>] = []
  private var items = ItemList<RawJSON>()
  private var id: Int64 = 0

  package init() {}

  package mutating func beginSection(id: Int64?, metadata: String?) {
    self.id = id ?? 0
  }

  package mutating func item(_ value: ArraySlice<UInt8>, id: Int64?) {
    items.append(RawJSON(String(decoding: value, as: UTF8.self)), id: id ?? 0)
  }

  package mutating func endSection(metadata: String) {
    sections.append(Observable2DArraySection(id: id, metadata: RawJSON(metadata), items: items))
    items = ItemList()
  }
}

extension Repository {
  /// Makes list `name` (created if missing) equal to `sections` in one transaction,
  /// writing only what differs (`import --replace`, `PUT …/contents`).
  /// - Returns: What changed.
  /// - Throws: ``ListStoreError`` when the list cannot be read or written.
  package func replaceContents(
    ofList name: String, with sections: [Observable2DArraySection<RawJSON, RawJSON>]
  ) throws -> Changeset<RawJSON, RawJSON> {
    try write { () throws -> Changeset<RawJSON, RawJSON> in
      let list: StoredList<RawJSON, RawJSON>
      do {
        list = try self.list(name, metadata: RawJSON.self, item: RawJSON.self)
      } catch ListStoreError.listNotFound {
        list = try createList(name, metadata: RawJSON.self, item: RawJSON.self)
      }
      return try list.replace(with: sections)
    }
  }
}
