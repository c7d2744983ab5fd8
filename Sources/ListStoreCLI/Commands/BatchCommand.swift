import ListStore
import ListStoreFormats

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `liststore batch`: operations read one per line (JSON lines), applied to one list in
/// one transaction.
enum BatchCommand {
  static let spec = CommandSpec(
    path: ["batch"], abstract: "Apply operations from JSON lines, all in one transaction.",
    discussion: """
      Each line is one operation of the 'item' and 'section' commands, as a JSON object:
        {"op": "item add", "section": 0, "value": "apples", "at": 0}
        {"op": "item add", "section": "#3", "value": {"n": 1}, "after": "#42"}
        {"op": "item rm", "item": "0:1"}
        {"op": "item move", "item": "#42", "to": "1:0"}     (or "before"/"after": ITEM)
        {"op": "item set", "item": "#42", "value": "pears"}
        {"op": "section add", "header": "Dairy", "footer": "cold", "at": 1}
        {"op": "section rm", "section": "#3"}
        {"op": "section move", "section": 0, "to": 2}         (or "before"/"after": SECTION)
        {"op": "section set", "section": 1, "header": "Fruit", "footer": null}
      A section is an index or "#ID", an item "SECTION:ROW" or "#ID"; a value is any JSON
      value (no --json needed); "footer": null removes the footer. Blank lines are skipped.
      Everything happens in one transaction: watchers see one change, and a line that fails
      (bad JSON, an unknown operation, a row that does not exist) changes nothing at all;
      the error names its line.
      """,
    arguments: [
      Commands.list,
      ArgumentSpec(
        name: "FILE", help: "The file of operations, or - (the default) for standard input.",
        isOptional: true),
    ],
    options: [ImportCommand.quiet],
    run: run)

  /// A line that cannot be applied.
  struct LineError: Error, CustomStringConvertible {
    var line: Int
    var file: String
    var message: String
    /// The column of a JSON syntax error.
    var column: Int?

    var description: String {
      "line \(line)" + (column.map { ", column \($0)" } ?? "")
        + (file == "-" ? "" : " of \(file)") + " (nothing was applied): \(message)"
    }
  }

  private static func run(_ invocation: Invocation, _ context: Context) throws {
    let path = invocation.arguments["FILE"] ?? "-"
    let list = try context.list(invocation.argument("LIST"))
    // Read inside the write transaction, so kept whole first when it is not a file: a
    // slow or interactive writer of standard input must not hold every writer back.
    var input = try ImportCommand.Input.open(path) { CommandError("cannot read \(path): \($0)") }
    defer { input.close() }
    if !input.isRegularFile {
      let reading = ProgressLine.start(
        "reading operations for \(quoted(list.name))", unit: "line", total: nil,
        invocation: invocation, context: context)
      defer { reading?.finish() }
      let spooled = try input.spooled { reading?.advance(to: $0) }
      input.close()
      input = spooled
    }
    let progress = ProgressLine.start(
      "applying operations to \(quoted(list.name))", unit: "line", total: nil,
      invocation: invocation, context: context)
    defer { progress?.finish() }
    var applied = 0
    try context.repository().write {
      var lines = LineReader(descriptor: input.descriptor)
      var number = 0
      while let line = try lines.next() {
        number += 1
        if let progress {
          if let size = input.size {
            progress.advance(to: number, share: lines.offset, of: size)
          } else {
            progress.advance(to: number)
          }
        }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
        do {
          let operation = try ListOperation(line: line)
          try operation.perform(on: list, confirming: false)
        } catch let error as LineError {
          throw LineError(line: number, file: path, message: error.message, column: error.column)
        } catch let error as UsageError {
          throw LineError(line: number, file: path, message: error.message)
        } catch {
          throw LineError(line: number, file: path, message: "\(error)")
        }
        applied += 1
      }
    }
    context.out.line(
      "applied \(Rendering.counted(applied, "operation")) to \(quoted(list.name))")
  }
}

/// Lines of a file descriptor, read a chunk at a time.
struct LineReader {
  let descriptor: Int32
  private var buffer: [UInt8] = []
  private var start = 0
  private var atEnd = false
  /// Bytes of the input consumed so far.
  private(set) var offset = 0

  init(descriptor: Int32) { self.descriptor = descriptor }

  /// The next line without its line break, or `nil` at the end.
  mutating func next() throws -> ArraySlice<UInt8>? {
    while true {
      if let newline = buffer[start...].firstIndex(of: 0x0A) {
        let line = buffer[start..<newline]
        offset += newline + 1 - start
        start = newline + 1
        return line
      }
      if atEnd {
        guard start < buffer.count else { return nil }
        let line = buffer[start...]
        offset += buffer.count - start
        start = buffer.count
        return line
      }
      buffer.removeSubrange(0..<start)
      start = 0
      var chunk = [UInt8](repeating: 0, count: 1 << 16)
      let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw CommandError("cannot read the operations: \(String(cString: strerror(errno)))")
      }
      if count == 0 { atEnd = true }
      buffer += chunk[0..<count]
    }
  }
}

// MARK: - Operations as JSON lines

extension ListOperation {
  /// The keys each operation takes besides `op`, required ones first.
  static let lineKeys: [String: (required: [String], optional: [String])] = [
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
  init(line: ArraySlice<UInt8>) throws {
    let bytes = Array(line)
    let node: JSONSyntax.Node
    do {
      node = try JSONSyntax.parse(bytes)
    } catch {
      throw BatchCommand.LineError(
        line: 0, file: "", message: error.message, column: error.column)
    }
    func fail(_ message: String) -> BatchCommand.LineError {
      BatchCommand.LineError(line: 0, file: "", message: message)
    }
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
      let hint = Commands.parser.suggestion(op, among: names, prefix: "")
      throw fail(
        "unknown operation \(quoted(op))"
          + (hint.isEmpty ? "; the operations are " + names.joined(separator: ", ") : hint))
    }
    for key in members.keys where key != "op" && !(keys.required + keys.optional).contains(key) {
      let hint = Commands.parser.suggestion(key, among: keys.required + keys.optional, prefix: "")
      throw fail("\(quoted(op)) takes no \(quoted(key))" + hint)
    }
    let missing = keys.required.filter { members[$0] == nil }
    guard missing.isEmpty else {
      throw fail("\(quoted(op)) needs " + missing.map(quoted).joined(separator: " and "))
    }

    func text(_ key: String) throws -> String? {
      guard let node = members[key] else { return nil }
      guard let text = node.string(in: bytes) else {
        throw fail("\(quoted(key)) must be a string; got \(node.kindDescription(in: bytes))")
      }
      return text
    }
    func section(_ key: String) throws -> SectionAddress? {
      guard let node = members[key] else { return nil }
      if case .number = node.kind, let index = Int(node.text(in: bytes)), index >= 0 {
        return .index(index)
      }
      if let text = node.string(in: bytes), let id = Invocation.parseID(text) { return .id(id) }
      throw fail(
        "\(quoted(key)) must be a section: an index (0, 1, …) or an id like \"#42\"; got "
          + node.text(in: bytes))
    }
    func item(_ key: String) throws -> ItemAddress? {
      guard let node = members[key] else { return nil }
      if let text = node.string(in: bytes) {
        if let id = Invocation.parseID(text) { return .id(id) }
        if let path = Invocation.parsePath(text) {
          return .path(section: path.section, row: path.row)
        }
      }
      throw fail(
        "\(quoted(key)) must be an item: \"SECTION:ROW\" (like \"0:1\") or an id like \"#42\"; "
          + "got \(node.text(in: bytes))")
    }
    func index(_ key: String) throws -> Int? {
      guard let node = members[key] else { return nil }
      guard case .number = node.kind, let index = Int(node.text(in: bytes)), index >= 0 else {
        throw fail("\(quoted(key)) must be a zero-based index; got \(node.text(in: bytes))")
      }
      return index
    }
    func value() throws -> RawJSON {
      guard let node = members["value"] else { throw fail("\(quoted(op)) needs \"value\"") }
      return RawJSON(node.text(in: bytes))
    }
    func onePlace(_ names: [String]) throws -> String? {
      let given = names.filter { members[$0] != nil }
      guard given.count <= 1 else {
        throw fail(given.map(quoted).joined(separator: " and ") + " cannot be used together")
      }
      return given.first
    }
    /// What "at" names: a row or section by index, or by id (`"#ID"`: before it).
    func at() throws -> (id: Int64?, index: Int) {
      if let node = members["at"], let text = node.string(in: bytes),
        let id = Invocation.parseID(text)
      {
        return (id, 0)
      }
      return (nil, try index("at") ?? 0)
    }
    func footer() throws -> String?? {
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
        guard let text = try text("to"), let path = Invocation.parsePath(text) else {
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
