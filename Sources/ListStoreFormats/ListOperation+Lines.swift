import ListStore

// MARK: - Operations as JSON lines

extension ListOperation {
  /// The keys each operation takes besides `op`, required ones first.
  package static let lineKeys: [String: (required: [String], optional: [String])] = [
    "item add": (["section", "value"], ["at", "before", "after"]),
    "item rm": (["item"], []),
    "item move": (["item"], ["to", "before", "after"]),
    "item set": (["item", "value"], []),
    "section add": (["header"], ["footer", "at", "before", "after"]),
    "section rm": (["section"], []),
    "section move": (["section"], ["to", "before", "after"]),
    "section set": (["section"], ["header", "footer"]),
  ]

  /// The operation a line of `batch` gives.
  package init(line: ArraySlice<UInt8>) throws(OperationError) {
    let bytes = Array(line)
    let node: JSONSyntax.Node
    do {
      node = try JSONSyntax.parse(bytes)
    } catch {
      throw OperationError(error.message, column: error.column)
    }
    func fail(_ message: String) -> OperationError { OperationError(message) }
    let example = #"{"op": "item add", "section": 0, "value": "x"}"#
    guard case .object(let list) = node.kind else {
      throw fail(
        "expected an operation, an object like \(example); got \(node.kindDescription(in: bytes))")
    }
    var members: [String: JSONSyntax.Node] = [:]
    for (key, value) in list {
      guard members.updateValue(value, forKey: key) == nil else {
        throw fail("the key \(quoted(key)) appears twice")
      }
    }
    guard let opNode = members["op"], let op = opNode.string(in: bytes) else {
      throw fail("missing \"op\", the operation; expected an object like \(example)")
    }
    guard let keys = Self.lineKeys[op] else {
      let names = Self.lineKeys.keys.sorted()
      let hint = suggestion(for: op, among: names, prefix: "")
      throw fail(
        "unknown operation \(quoted(op))"
          + (hint.isEmpty ? "; the operations are " + names.joined(separator: ", ") : hint))
    }
    for key in members.keys where key != "op" && !(keys.required + keys.optional).contains(key) {
      let hint = suggestion(for: key, among: keys.required + keys.optional, prefix: "")
      throw fail("\(quoted(op)) takes no \(quoted(key))" + hint)
    }
    let missing = keys.required.filter { members[$0] == nil }
    guard missing.isEmpty else {
      throw fail("\(quoted(op)) needs " + missing.map(quoted).joined(separator: " and "))
    }

    func text(_ key: String) throws(OperationError) -> String? {
      guard let node = members[key] else { return nil }
      guard let text = node.string(in: bytes) else {
        throw fail("\(quoted(key)) must be a string; got \(node.kindDescription(in: bytes))")
      }
      return text
    }
    func section(_ key: String) throws(OperationError) -> SectionAddress? {
      guard let node = members[key] else { return nil }
      if case .number = node.kind, let whole = wholeNumber(node.text(in: bytes)), whole >= 0,
        let index = Int(exactly: whole)
      {
        return .index(index)
      }
      if let text = node.string(in: bytes), let id = parseRowID(text) { return .id(id) }
      throw fail(
        "\(quoted(key)) must be a section: an index (0, 1, …) or an id like \"#42\"; got "
          + node.text(in: bytes))
    }
    func item(_ key: String) throws(OperationError) -> ItemAddress? {
      guard let node = members[key] else { return nil }
      if let text = node.string(in: bytes) {
        if let id = parseRowID(text) { return .id(id) }
        if let path = parseIndexPath(text) {
          return .path(section: path.section, row: path.row)
        }
      }
      throw fail(
        "\(quoted(key)) must be an item: \"SECTION:ROW\" (like \"0:1\") or an id like \"#42\"; "
          + "got \(node.text(in: bytes))")
    }
    func index(_ key: String) throws(OperationError) -> Int? {
      guard let node = members[key] else { return nil }
      guard case .number = node.kind, let whole = wholeNumber(node.text(in: bytes)), whole >= 0,
        let index = Int(exactly: whole)
      else {
        throw fail("\(quoted(key)) must be a zero-based index; got \(node.text(in: bytes))")
      }
      return index
    }
    func value() throws(OperationError) -> RawJSON {
      guard let node = members["value"] else { throw fail("\(quoted(op)) needs \"value\"") }
      return RawJSON(node.text(in: bytes))
    }
    func onePlace(_ names: [String]) throws(OperationError) -> String? {
      let given = names.filter { members[$0] != nil }
      guard given.count <= 1 else {
        throw fail(given.map(quoted).joined(separator: " and ") + " cannot be used together")
      }
      return given.first
    }
    /// What "at" names: a row or section by index, or by id (`"#ID"`: before it).
    func at() throws(OperationError) -> (id: Int64?, index: Int) {
      if let node = members["at"], let text = node.string(in: bytes),
        let id = parseRowID(text)
      {
        return (id, 0)
      }
      return (nil, try index("at") ?? 0)
    }
    func footer() throws(OperationError) -> String?? {
      guard let node = members["footer"] else { return .none }
      if case .null = node.kind { return .some(nil) }
      return .some(try text("footer"))
    }

    switch op {
    case "item add":
      var target = ItemTarget.end
      switch try onePlace(["at", "before", "after"]) {
      case "at":
        let at = try at()
        target = at.id.map { .before(.id($0)) } ?? .row(at.index)
      case "before": target = .before(try item("before") ?? .id(0))
      case "after": target = .after(try item("after") ?? .id(0))
      default: break
      }
      self = .addItem(
        section: try section("section") ?? .index(0), value: try value(), target: target)
    case "item rm":
      self = .removeItem(try item("item") ?? .id(0))
    case "item move":
      let move: ItemMove
      switch try onePlace(["to", "before", "after"]) {
      case "to":
        guard let text = try text("to"), let path = parseIndexPath(text) else {
          throw fail("\"to\" must be \"SECTION:ROW\", like \"1:0\"")
        }
        move = .path(section: path.section, row: path.row)
      case "before": move = .before(try item("before") ?? .id(0))
      case "after": move = .after(try item("after") ?? .id(0))
      default: throw fail("\"item move\" needs \"to\", \"before\" or \"after\"")
      }
      self = .moveItem(try item("item") ?? .id(0), to: move)
    case "item set":
      self = .setItem(try item("item") ?? .id(0), value: try value())
    case "section add":
      var target = SectionTarget.end
      switch try onePlace(["at", "before", "after"]) {
      case "at":
        let at = try at()
        target = at.id.map { .before(.id($0)) } ?? .index(at.index)
      case "before": target = .before(try section("before") ?? .index(0))
      case "after": target = .after(try section("after") ?? .index(0))
      default: break
      }
      self = .addSection(
        header: try text("header") ?? "", footer: try footer() ?? nil, target: target)
    case "section rm":
      self = .removeSection(try section("section") ?? .index(0))
    case "section move":
      let move: SectionMove
      switch try onePlace(["to", "before", "after"]) {
      case "to": move = .index(try index("to") ?? 0)
      case "before": move = .before(try section("before") ?? .index(0))
      case "after": move = .after(try section("after") ?? .index(0))
      default: throw fail("\"section move\" needs \"to\", \"before\" or \"after\"")
      }
      self = .moveSection(try section("section") ?? .index(0), to: move)
    default:  // section set
      let header = try text("header")
      let footer = try footer()
      guard header != nil || footer != nil else {
        throw fail("\"section set\" needs \"header\" or \"footer\" (null removes the footer)")
      }
      let change: FooterChange =
        switch footer {
        case .none: .keep
        case .some(nil): .remove
        case .some(let text?): .set(text)
        }
      self = .setSection(try section("section") ?? .index(0), header: header, footer: change)
    }
  }
}

extension ListOperation {
  /// The operation as a line of `batch` (the inverse of ``init(line:)``): what the CLI
  /// sends a server for an `item` or `section` command.
  package var line: String {
    func section(_ address: SectionAddress) -> String {
      switch address {
      case .index(let index): "\(index)"
      case .id(let id): "\"#\(id)\""
      }
    }
    func item(_ address: ItemAddress) -> String {
      switch address {
      case .path(let section, let row): "\"\(section):\(row)\""
      case .id(let id): "\"#\(id)\""
      }
    }
    var fields: [(String, String)]
    switch self {
    case .addSection(let header, let footer, let target):
      fields = [("op", "\"section add\""), ("header", JSONText.quote(header))]
      if let footer { fields.append(("footer", JSONText.quote(footer))) }
      switch target {
      case .end: break
      case .index(let index): fields.append(("at", "\(index)"))
      case .before(let neighbor): fields.append(("before", section(neighbor)))
      case .after(let neighbor): fields.append(("after", section(neighbor)))
      }
    case .removeSection(let address):
      fields = [("op", "\"section rm\""), ("section", section(address))]
    case .moveSection(let address, let move):
      fields = [("op", "\"section move\""), ("section", section(address))]
      switch move {
      case .index(let index): fields.append(("to", "\(index)"))
      case .before(let neighbor): fields.append(("before", section(neighbor)))
      case .after(let neighbor): fields.append(("after", section(neighbor)))
      }
    case .setSection(let address, let header, let footer):
      fields = [("op", "\"section set\""), ("section", section(address))]
      if let header { fields.append(("header", JSONText.quote(header))) }
      switch footer {
      case .keep: break
      case .set(let text): fields.append(("footer", JSONText.quote(text)))
      case .remove: fields.append(("footer", "null"))
      }
    case .addItem(let address, let value, let target):
      fields = [
        ("op", "\"item add\""), ("section", section(address)),
        ("value", JSONText.singleLine(value.text)),
      ]
      switch target {
      case .end: break
      case .row(let row): fields.append(("at", "\(row)"))
      case .before(let neighbor): fields.append(("before", item(neighbor)))
      case .after(let neighbor): fields.append(("after", item(neighbor)))
      }
    case .removeItem(let address):
      fields = [("op", "\"item rm\""), ("item", item(address))]
    case .moveItem(let address, let move):
      fields = [("op", "\"item move\""), ("item", item(address))]
      switch move {
      case .path(let section, let row): fields.append(("to", "\"\(section):\(row)\""))
      case .before(let neighbor): fields.append(("before", item(neighbor)))
      case .after(let neighbor): fields.append(("after", item(neighbor)))
      }
    case .setItem(let address, let value):
      fields = [
        ("op", "\"item set\""), ("item", item(address)), ("value", JSONText.singleLine(value.text)),
      ]
    }
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }
}
