import Foundation
import TestSupport
import Testing

/// The command lines of README.md and docs/cli.md, run as a reader would: in order, in a
/// folder of their own, on a fresh database (`$LISTSTORE_DB`), with the built `liststore`
/// first on `PATH`.
///
/// * A `sh` block of the README is a list of commands, each of which must succeed.
/// * A `text` block of docs/cli.md whose lines start with `$ ` is a transcript: each
///   `$ ` line runs, and the lines after it (up to the next `$ `) are exactly what it
///   prints, standard output and standard error together. It must fail when they hold
///   an `error:` line and succeed otherwise.
/// * A block that cannot run as written says so in an HTML comment on the line above
///   it: `<!-- not run: why -->` skips it; `<!-- not run: lines starting "A", "B": why -->`
///   skips those lines and runs the rest.
/// * A block under `<!-- file: NAME -->` is a file the commands after it use: it is
///   written to `NAME` in the folder when the reading reaches it.
/// * `liststore serve … &` starts a server of the test's own on a free port (the lines
///   after it reach it where they name `localhost:8040`), stopped when the reading ends; a
///   `curl` line after it must print no `"error"`, and the JSON object it prints must have
///   the keys its `# {"key":…}` comment shows; a `curl -sN` change stream is read until
///   its first event and until a change made then reaches it.
@Suite struct DocumentedCommandsTests {
  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

  /// One fenced block: its language, its lines and which of them the document says not
  /// to run (all of them: `nil` prefixes).
  struct Block {
    var language: String
    var lines: [String]
    /// The first line's number in the document (1-based).
    var line: Int
    /// Not run at all.
    var skipped = false
    /// Lines starting with one of these are not run.
    var skippedPrefixes: [String] = []
    /// The file the block is the content of.
    var file: String?

    func runs(_ line: String) -> Bool {
      !skipped && !skippedPrefixes.contains { line.hasPrefix($0) }
    }

    /// Its command lines, with the number of the line each starts on (1-based): a line
    /// ending in `\` goes on on the next; blank lines are left out.
    var commands: [(line: Int, text: String)] {
      var commands: [(line: Int, text: String)] = []
      var pending: (line: Int, text: String)?
      for (offset, line) in lines.enumerated() {
        var command = pending ?? (self.line + offset, "")
        if line.hasSuffix("\\") {
          command.text += line.dropLast() + " "
          pending = command
          continue
        }
        pending = nil
        command.text += command.text.isEmpty ? line : line.trimmingCharacters(in: .whitespaces)
        if !command.text.trimmingCharacters(in: .whitespaces).isEmpty { commands.append(command) }
      }
      return commands
    }
  }

  /// The fenced blocks of a Markdown document, with their markers.
  static func blocks(of document: String) throws -> [Block] {
    let lines = try String(contentsOfFile: root + "/" + document, encoding: .utf8)
      .components(separatedBy: "\n")
    var blocks: [Block] = []
    var current: Block?
    var marker: String?
    for (index, line) in lines.enumerated() {
      if var block = current {
        if line.hasPrefix("```") {
          blocks.append(block)
          current = nil
        } else {
          block.lines.append(line)
          current = block
        }
        continue
      }
      if line.hasPrefix("```") {
        var block = Block(language: String(line.dropFirst(3)), lines: [], line: index + 2)
        if let marker, marker.hasPrefix("<!-- file: ") {
          block.file = String(marker.dropFirst("<!-- file: ".count).dropLast(" -->".count))
        } else if let marker {
          let (skipsAll, prefixes) = parse(marker: marker)
          block.skipped = skipsAll
          block.skippedPrefixes = prefixes
        }
        current = block
      }
      marker = line.hasPrefix("<!-- not run") || line.hasPrefix("<!-- file: ") ? line : nil
    }
    return blocks
  }

  /// What a marker skips: everything, or the lines with the quoted prefixes.
  static func parse(marker: String) -> (all: Bool, prefixes: [String]) {
    guard marker.hasPrefix("<!-- not run: lines starting ") else { return (true, []) }
    let quoted = marker.split(separator: "\"", omittingEmptySubsequences: false)
    // Between the first quote and the colon after the last: every other piece.
    let prefixes = stride(from: 1, to: quoted.count - 1, by: 2).map { String(quoted[$0]) }
    return (false, prefixes)
  }

  /// A folder with a fresh database where documented commands run.
  final class Sandbox {
    let folder = TemporaryDirectory()
    var environment: [String: String] {
      let binaries = URL(fileURLWithPath: liststoreBinary).deletingLastPathComponent().path
      return [
        "PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        "LISTSTORE_DB": folder.file("lists.sqlite"),
        "XDG_DATA_HOME": folder.file("data"),
      ]
    }

    /// Runs a command line with `/bin/sh` in the folder; standard error after output is
    /// merged into one stream, as a terminal shows it.
    func run(_ command: String) throws -> ProcessResult {
      try TestSupport.run(
        "/usr/bin/timeout", ["60", "/bin/sh", "-c", command + " 2>&1"],
        environment: environment, workingDirectory: folder.path)
    }

    /// The server a documented `liststore serve` line started.
    var server: ServerProcess?

    /// Stops the server, if one was started.
    func remove() {
      server?.stop()
      server = nil
      folder.remove()
    }

    /// Runs a documented command line as the suite's documentation says, recording what
    /// fails at `place`.
    func runDocumented(_ line: String, at place: String) throws {
      let command = line.components(separatedBy: "  #").first ?? line
      let comment = line.components(separatedBy: "  #").dropFirst().joined(separator: "  #")
        .trimmingCharacters(in: .whitespaces)
      if command.hasPrefix("liststore serve") {
        let arguments = command.dropFirst("liststore serve".count)
          .split(separator: " ").map(String.init).filter { $0 != "&" }
        server?.stop()
        server = try ServerProcess(
          location: environment["LISTSTORE_DB"] ?? "", arguments: arguments,
          environment: environment, workingDirectory: folder.path)
        return
      }
      guard let server else {
        let result = try run(command)
        #expect(result.status == 0, "\(place): \(line)\n\(result.stdout)")
        return
      }
      let reaching = command.replacingOccurrences(
        of: "localhost:8040", with: "127.0.0.1:\(server.port)")
      if reaching.hasPrefix("curl -sN") {
        try readStream(reaching, at: place)
        return
      }
      let result = try run(reaching)
      #expect(result.status == 0, "\(place): \(line)\n\(result.stdout)")
      #expect(!result.stdout.contains("\"error\""), "\(place): \(line)\n\(result.stdout)")
      guard comment.hasPrefix("{") else { return }
      let shown = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
      let keys = comment.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }
        .map { String($0.element) }
      #expect(
        (shown as? [String: Any]).map { Set($0.keys) } == Set(keys),
        "\(place): \(line)\nprinted \(result.stdout), not \(comment)")
    }

    /// Follows a documented change stream until its first event, makes a change to its
    /// list, and expects the change on the stream.
    private func readStream(_ command: String, at place: String) throws {
      let stream = try TestSupport.WatchProcess(
        ["/bin/sh", "-c", "exec " + command], environment: environment,
        workingDirectory: folder.path)
      defer { stream.stop(signal: SIGKILL) }
      let first = stream.wait { lines, _ in !EventStreamClient.parse(lines).isEmpty }
      #expect(first, "\(place): \(command) sent no event: \(stream.lines) \(stream.errors)")
      let list =
        command.components(separatedBy: "/v1/lists/").last?
        .components(separatedBy: "/").first ?? ""
      let value = "from-another-shell-\(UUID().uuidString.prefix(8))"
      let added = try run("liststore item add \(list) 0 \(value)")
      #expect(added.status == 0, "\(place): \(added.stdout)")
      let reached = stream.wait { lines, _ in
        EventStreamClient.parse(lines).contains { $0.event == "changes" && $0.data.contains(value) }
      }
      #expect(reached, "\(place): the stream did not show a change: \(stream.lines)")
    }
  }

  @Test(arguments: [("README.md", 25), ("docs/http.md", 4)])
  func theShellBlocksRunInOrderOnAFreshDatabase(document: String, atLeast: Int) throws {
    let sandbox = Sandbox()
    defer { sandbox.remove() }
    let blocks = try Self.blocks(of: document).filter { $0.language == "sh" }
    var ran = 0
    for block in blocks {
      for command in block.commands where block.runs(command.text) {
        try sandbox.runDocumented(command.text, at: "\(document):\(command.line)")
        ran += 1
      }
    }
    // The walkthrough at least: a marker that skipped it all would pass vacuously.
    #expect(ran >= atLeast, "only \(ran) commands of \(document) ran")
  }

  @Test func theTranscriptsOfTheCLIGuideRunInOrderWithTheOutputsShown() throws {
    let sandbox = Sandbox()
    defer { sandbox.folder.remove() }
    var ran = 0
    for block in try Self.blocks(of: "docs/cli.md") {
      if let file = block.file {
        try Data(block.lines.map { $0 + "\n" }.joined().utf8).write(
          to: URL(fileURLWithPath: sandbox.folder.file(file)))
      }
      guard block.language == "text" else { continue }
      var index = 0
      while index < block.lines.count {
        let line = block.lines[index]
        index += 1
        guard line.hasPrefix("$ ") else { continue }
        var expected: [String] = []
        while index < block.lines.count, !block.lines[index].hasPrefix("$ ") {
          expected.append(block.lines[index])
          index += 1
        }
        guard block.runs(line) else { continue }
        let command = String(line.dropFirst(2))
        let result = try sandbox.run(command)
        ran += 1
        let place = "docs/cli.md:\(block.line + index - expected.count - 1): \(command)"
        var printed = result.stdout.components(separatedBy: "\n")
        if printed.last == "" { printed.removeLast() }
        #expect(printed == expected, "\(place)")
        let fails = expected.contains { $0.hasPrefix("error: ") }
        #expect((result.status != 0) == fails, "\(place): status \(result.status)")
      }
    }
    #expect(ran >= 15, "only \(ran) commands of docs/cli.md ran")
  }
}
