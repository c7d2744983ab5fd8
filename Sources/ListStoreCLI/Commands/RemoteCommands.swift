import CurlKit
import ListStore
import ListStoreClient
import ListStoreFormats

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The commands run against a server (`--db http://HOST:PORT`): each sends what the local
/// command would do to the server's API (docs/http.md) and prints exactly what the local
/// command prints, from what the server answers. The operations run there by the same code
/// as here (ListStoreFormats), so their lines and errors are the same.
enum RemoteCommands {
  /// The remote runs, by command.
  static let runs: [[String]: @Sendable (Invocation, Context) throws -> Void] = [
    ["lists"]: lists,
    ["list", "create"]: createList,
    ["list", "rm"]: removeList,
    ["list", "rename"]: renameList,
    ["section", "add"]: operation, ["section", "rm"]: operation, ["section", "move"]: operation,
    ["section", "set"]: operation, ["item", "add"]: operation, ["item", "rm"]: operation,
    ["item", "move"]: operation, ["item", "set"]: operation,
    ["show"]: show,
    ["export"]: export,
    ["import"]: importList,
    ["batch"]: batch,
    ["watch"]: WatchCommand.runRemote,
  ]

  /// Commands that touch no database: they run the same whatever the location.
  static let local: Set<[String]> = [["completion"], ["man"]]

  /// `specs` with their remote runs.
  static func attached(to specs: [CommandSpec]) -> [CommandSpec] {
    specs.map { spec in
      var spec = spec
      spec.remote = local.contains(spec.path) ? spec.run : runs[spec.path]
      return spec
    }
  }

  // MARK: Requests

  /// The error a failed response stands for: the store's own error where the body names one
  /// (so that the command explains it as on the file), the missing or unknown token as
  /// such, else the server's sentence.
  static func failure(_ response: HTTPClient.Response, _ context: Context) throws -> any Error {
    if response.status == 401 || WireFormat.listStoreError(fromErrorBody: response.body) != nil {
      return try context.remote().error(for: response)
    }
    return CommandError(RemoteRepository.message(of: response))
  }

  /// Sends a request and returns the response when its status is one of `statuses`;
  /// otherwise fails with the sentence of its error body, which for the store's own
  /// errors is what the local command prints.
  static func send(
    _ context: Context, _ method: String, _ path: String, body: [UInt8]? = nil,
    contentType: String = "application/json", expecting statuses: Set<Int>
  ) throws -> HTTPClient.Response {
    let response = try context.remote().exchange(
      method, path, body: body, contentType: contentType)
    guard statuses.contains(response.status) else {
      if WireFormat.listStoreError(fromErrorBody: response.body) == nil,
        let reason = WireFormat.text("reason", in: response.body)
      {
        throw CommandError(reason)
      }
      throw try failure(response, context)
    }
    return response
  }

  /// The path of the list the command names; no list is named "".
  static func listPath(_ invocation: Invocation, argument: String = "LIST") throws -> String {
    let name = invocation.argument(argument)
    guard !name.isEmpty else { throw ListStoreError.listNotFound(name: name) }
    return RemoteRepository.listPath(name)
  }

  // MARK: Lists

  private static func lists(_ invocation: Invocation, _ context: Context) throws {
    let response = try send(context, "GET", "/v1/lists", expecting: [200])
    Commands.printLists(try WireFormat.lists(response.body), invocation, context)
  }

  private static func createList(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.argument("NAME")
    try checkListName(name)
    _ = try send(context, "PUT", try listPath(invocation, argument: "NAME"), expecting: [201])
    context.out.line("created list \(quoted(name))")
  }

  private static func removeList(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.argument("NAME")
    _ = try send(context, "DELETE", listPath(invocation, argument: "NAME"), expecting: [204])
    context.out.line("removed list \(quoted(name))")
  }

  private static func renameList(_ invocation: Invocation, _ context: Context) throws {
    let (name, newName) = (invocation.argument("NAME"), invocation.argument("NEW_NAME"))
    _ = try send(
      context, "PATCH", listPath(invocation, argument: "NAME"),
      body: Array("{\"name\":\(JSONText.quote(newName))}".utf8), expecting: [200])
    context.out.line("renamed list \(quoted(name)) to \(quoted(newName))")
  }

  // MARK: Rows

  /// An `item` or `section` command: the operation as a batch of one, whose line the
  /// server answers.
  private static func operation(_ invocation: Invocation, _ context: Context) throws {
    // The command line is checked before the server is asked.
    let operation = try ListOperation(invocation)
    let response = try send(
      context, "POST", listPath(invocation) + "/batch?report=message",
      body: Array((operation.line + "\n").utf8), contentType: "application/x-ndjson",
      expecting: [200])
    guard let message = WireFormat.texts("messages", in: response.body)?.first else {
      throw CommandError("the server did not say what it did (is it an older liststore?)")
    }
    context.out.line(message)
  }

  // MARK: Reading

  private static func show(_ invocation: Invocation, _ context: Context) throws {
    if invocation.flag("json") {
      try writeSnapshot(invocation, context)
      return
    }
    let response = try send(context, "GET", listPath(invocation), expecting: [200])
    let snapshot = try WireFormat.snapshot(response.body)
    Rendering.text(list: snapshot.name, sections: Rendering.stored(snapshot.sections)).forEach(
      context.out.line)
  }

  private static func export(_ invocation: Invocation, _ context: Context) throws {
    try writeSnapshot(invocation, context)
  }

  /// The `show --json` object as the server's snapshot has it, written as it arrives:
  /// the snapshot is that object with `,"seq":S` before its closing brace.
  private static func writeSnapshot(_ invocation: Invocation, _ context: Context) throws {
    context.out.flush()
    var output = ByteOutput(descriptor: STDOUT_FILENO)
    // The last bytes, held back until the end shows where `,"seq"` starts.
    var tail: [UInt8] = []
    let holdBack = 64
    var written = 0
    do {
      try context.remote().download(listPath(invocation)) { bytes in
        tail += bytes
        if tail.count > holdBack {
          written += tail.count - holdBack
          let ready = tail.count - holdBack
          tail.withUnsafeBufferPointer {
            output.appendRaw(UnsafeBufferPointer(rebasing: $0[..<ready]))
          }
          tail.removeFirst(ready)
        }
      }
    } catch let error as ListStoreError {
      if written > 0 {
        // Part of the list is out already: say that it is cut short, not that nothing
        // happened.
        output.flush()
        let cause: String
        switch error {
        case .connectionLost(let location): cause = "the connection to \(location) was lost"
        default: cause = "\(error)"
        }
        throw CommandError(
          "\(cause) after \(written) bytes of the list: what was printed is incomplete JSON; "
            + "run the command again")
      }
      if case .server(_, let message) = error { throw CommandError(message) }
      throw error
    }
    let marker = Array(",\"seq\":".utf8)
    guard let start = tail.lastRange(of: marker)?.lowerBound, tail.last == UInt8(ascii: "}")
    else {
      throw CommandError(
        "the server's snapshot does not end with its seq (is it an older liststore?)")
    }
    tail.withUnsafeBufferPointer { output.appendRaw(UnsafeBufferPointer(rebasing: $0[..<start])) }
    output.append("}\n")
    output.flush()
  }

  // MARK: Writing many rows

  private static func importList(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.argument("LIST")
    let path = invocation.argument("FILE")
    try checkListName(name)
    // The file is read and checked here, so that its errors are the local command's.
    let body = try readWhole(path) { ListStoreError.invalidImport("cannot read \(path): \($0)") }
    var counts = CountingSink()
    var reader = ImportReader(stream: JSONStream(bytes: body), name: path)
    try reader.read(into: &counts)
    if invocation.flag("replace") {
      let response = try send(
        context, "PUT", listPath(invocation) + "/contents", body: body, expecting: [200])
      context.out.line(
        ImportCommand.summary(
          sections: WireFormat.counts("sections", in: response.body),
          items: WireFormat.counts("items", in: response.body), list: name, file: path))
      return
    }
    let response = try context.remote().exchange("PUT", listPath(invocation), body: body)
    if response.status == 409 {
      throw CommandError(
        "a list named \(quoted(name)) already exists; choose another name, or make it equal "
          + "to the file with --replace (which writes only what differs)")
    }
    guard response.status == 201 else {
      throw try failure(response, context)
    }
    context.out.line(
      "imported \(quoted(name)): \(Rendering.counted(reader.sections, "section")), "
        + Rendering.counted(reader.items, "item"))
  }

  private static func batch(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.argument("LIST")
    let path = invocation.arguments["FILE"] ?? "-"
    let input = try readWhole(path) { CommandError("cannot read \(path): \($0)") }
    // Each line is checked here, as the local command does, and sent with its number.
    var lines: [UInt8] = []
    var numbers: [Int] = []
    var number = 0
    for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
      number += 1
      guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
      do {
        _ = try ListOperation(line: line)
      } catch {
        throw BatchCommand.LineError(
          line: number, file: path, message: error.message, column: error.column)
      }
      lines += line + [0x0A]
      numbers.append(number)
    }
    let response = try context.remote().exchange(
      "POST", listPath(invocation) + "/batch", body: lines, contentType: "application/x-ndjson")
    guard response.status == 200 else {
      if let operation = WireFormat.number("operation", in: response.body),
        numbers.indices.contains(Int(operation) - 1),
        let reason = WireFormat.text("reason", in: response.body)
      {
        throw BatchCommand.LineError(
          line: numbers[Int(operation) - 1], file: path, message: reason)
      }
      throw try failure(response, context)
    }
    context.out.line(
      "applied \(Rendering.counted(numbers.count, "operation")) to \(quoted(name))")
  }

  /// The whole of a file, or of standard input for `-`.
  private static func readWhole(_ path: String, failure: (String) -> any Error) throws
    -> [UInt8]
  {
    let input = try ImportCommand.Input.open(path, failure: failure)
    defer { input.close() }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(input.descriptor, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count >= 0 else { throw failure(String(cString: strerror(errno))) }
      if count == 0 { break }
      bytes += chunk[..<count]
    }
    return bytes
  }
}

extension Array where Element == UInt8 {
  /// The range of the last occurrence of `pattern`.
  func lastRange(of pattern: [UInt8]) -> Range<Int>? {
    guard pattern.count <= count else { return nil }
    var start = count - pattern.count
    while start >= 0 {
      if self[start..<start + pattern.count].elementsEqual(pattern) {
        return start..<start + pattern.count
      }
      start -= 1
    }
    return nil
  }
}
