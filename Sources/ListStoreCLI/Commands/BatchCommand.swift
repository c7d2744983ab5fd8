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
          try operation.perform(on: list, reporting: .nothing)
        } catch let error as OperationError {
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
