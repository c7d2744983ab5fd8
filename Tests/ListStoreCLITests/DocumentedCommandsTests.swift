import Foundation
import TestSupport
import Testing

/// The command lines of README.md, docs/http.md and docs/cli.md, run as a reader would: in
/// order, in a folder of their own, with the built `liststore` first on `PATH`.
///
/// * The `sh` blocks of README.md and docs/http.md run after the README's set-up command
///   (`liststore demo`, on the default database), each block as one bash script that stops
///   at the first failing command, in one shell: a block starts in the folder, and with
///   the variables, that the one before it left. Then all of it runs a second time, as for
///   a reader who comes back. (``Sandbox/read(_:)`` says which lines the harness runs
///   itself: a server, a `curl` line checked against its comment, a change stream.)
/// * A `text` block of docs/cli.md whose lines start with `$ ` is a transcript: each
///   `$ ` line runs, and the lines after it (up to the next `$ `) are exactly what it
///   prints, standard output and standard error together. It must fail when they hold
///   an `error:` line and succeed otherwise.
/// * A block that cannot run as written says so in an HTML comment on the line above
///   it: `<!-- not run: why -->` skips it; `<!-- not run: lines starting "A", "B": why -->`
///   skips those lines and runs the rest.
/// * A block under `<!-- file: NAME -->` is a file the commands after it use: it is
///   written to `NAME` in the folder when the reading reaches it.
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

  /// A reader's shell: a folder of its own (also its home, data folder and `TMPDIR`), the
  /// built `liststore` first on `PATH`, and no `LISTSTORE_DB` until a command exports one.
  /// Each script runs where the one before it left off, with the variables it exported, as
  /// commands typed into one shell do.
  final class Sandbox {
    let folder = TemporaryDirectory()
    private var stateFile: String { folder.file(".shell-state") }
    private var directoryFile: String { folder.file(".shell-directory") }

    init() {
      for name in ["home", "data", "tmp"] {
        try? FileManager.default.createDirectory(
          atPath: folder.file(name), withIntermediateDirectories: true)
      }
    }

    var environment: [String: String] {
      let binaries = URL(fileURLWithPath: liststoreBinary).deletingLastPathComponent().path
      return [
        "PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        "HOME": folder.file("home"),
        "XDG_DATA_HOME": folder.file("data"),
        "TMPDIR": folder.file("tmp"),
      ]
    }

    /// Runs a command line with `/bin/sh` in the sandbox's folder, on the database
    /// `database` (the transcripts' own); standard error after output, merged, as a
    /// terminal shows them.
    func run(_ command: String, database: String) throws -> ProcessResult {
      try TestSupport.run(
        "/usr/bin/timeout", ["60", "/bin/sh", "-c", command + " 2>&1"],
        environment: environment.merging(["LISTSTORE_DB": database]) { $1 },
        workingDirectory: folder.path)
    }

    /// Runs `lines` as one bash script in the reader's shell, stopping at the first that
    /// fails (`set -e`); standard error merged into standard output. The script's line
    /// `n` is `lines[n - 2]`: the first holds the set-up.
    func script(_ lines: [String]) throws -> ProcessResult {
      let setUp =
        "unset LISTSTORE_DB LISTSTORE_TOKEN; if [ -f '\(stateFile)' ]; then . '\(stateFile)'; fi; "
        + "cd \"$(cat '\(directoryFile)' 2>/dev/null || echo '\(folder.path)')\"; "
        + "trap 'echo \"stopped at script line $LINENO\"' ERR; set -e"
      let keep = "export -p > '\(stateFile)'; pwd > '\(directoryFile)'"
      let text = ([setUp] + lines + [keep]).joined(separator: "\n")
      return try TestSupport.run(
        "/usr/bin/timeout", ["120", "/bin/bash", "-c", text + " 2>&1"],
        environment: environment, workingDirectory: folder.path)
    }

    /// A variable of the reader's shell, as the scripts so far left it.
    func variable(_ name: String) throws -> String? {
      let result = try script(["printf '%s' \"${\(name)-}\""])
      return result.stdout.isEmpty ? nil : result.stdout
    }

    /// The reader's current folder.
    var directory: String {
      (try? String(contentsOfFile: directoryFile, encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? folder.path
    }

    /// The server a documented `liststore serve` line started.
    var server: ServerProcess?

    /// Stops the server, if one was started.
    func stopServer() {
      server?.stop()
      server = nil
    }

    /// Stops the server, if one was started, and removes the folder.
    func remove() {
      stopServer()
      folder.remove()
    }

    /// Runs a document's `sh` blocks as a reader does, each as one script (`set -e`) in
    /// one shell, recording what fails; returns the number of commands run.
    ///
    /// The harness itself runs the lines a script cannot: `liststore serve … &` starts a
    /// server on a free port (lines after it reach it where they name `localhost:8040`) on
    /// the shell's `$LISTSTORE_DB`; `kill %1` stops it; a `curl` line must print no
    /// `"error"`, and the JSON object it prints must have the keys its `# {"key":…}`
    /// comment shows; a `curl -sN` change stream is read until its first event and until
    /// a change made then reaches it.
    func read(_ document: String) throws -> Int {
      var ran = 0
      for block in try DocumentedCommandsTests.blocks(of: document) where block.language == "sh" {
        var pending: [(line: Int, text: String)] = []
        func flush() throws {
          guard !pending.isEmpty else { return }
          defer { pending = [] }
          let result = try script(pending.map(\.text))
          var place = "\(document):\(pending[0].line)"
          if let last = result.stdout.components(separatedBy: "stopped at script line ").last,
            result.status != 0, let line = Int(last.prefix { $0.isNumber }),
            pending.indices.contains(line - 2)
          {
            place = "\(document):\(pending[line - 2].line): \(pending[line - 2].text)"
          }
          #expect(result.status == 0, "\(place)\n\(result.stdout)")
        }
        for command in block.commands where block.runs(command.text) {
          ran += 1
          let text = command.text
          let place = "\(document):\(command.line)"
          if text.hasPrefix("liststore serve") {
            try flush()
            try startServer(text, at: place)
          } else if text.hasPrefix("kill %1") {
            try flush()
            stopServer()
          } else if text.hasPrefix("curl"), server != nil {
            try flush()
            try curl(text, at: place)
          } else {
            pending.append((command.line, reaching(text)))
          }
        }
        try flush()
      }
      return ran
    }

    /// The line with `localhost:8040` pointing at the sandbox's server.
    private func reaching(_ line: String) -> String {
      guard let server else { return line }
      return line.replacingOccurrences(of: "localhost:8040", with: "127.0.0.1:\(server.port)")
    }

    private func startServer(_ line: String, at place: String) throws {
      let command = line.components(separatedBy: "  #").first ?? line
      let arguments = command.dropFirst("liststore serve".count)
        .split(separator: " ").map(String.init).filter { $0 != "&" }
      stopServer()
      let location =
        try variable("LISTSTORE_DB")
        ?? folder.file("data/liststore/liststore.sqlite")
      server = try ServerProcess(
        location: location, arguments: arguments, environment: environment,
        workingDirectory: directory)
    }

    private func curl(_ line: String, at place: String) throws {
      let command = reaching(line.components(separatedBy: "  #").first ?? line)
      let comment = line.components(separatedBy: "  #").dropFirst().joined(separator: "  #")
        .trimmingCharacters(in: .whitespaces)
      if command.hasPrefix("curl -sN") {
        try readStream(command, at: place)
        return
      }
      let result = try script([command])
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
        workingDirectory: directory)
      defer { stream.stop(signal: SIGKILL) }
      let first = stream.wait { lines, _ in !EventStreamClient.parse(lines).isEmpty }
      #expect(first, "\(place): \(command) sent no event: \(stream.lines) \(stream.errors)")
      let list =
        command.components(separatedBy: "/v1/lists/").last?
        .components(separatedBy: "/").first ?? ""
      let value = "from-another-shell-\(UUID().uuidString.prefix(8))"
      let added = try script(["liststore item add \(list) 0 \(value)"])
      #expect(added.status == 0, "\(place): \(added.stdout)")
      let reached = stream.wait { lines, _ in
        EventStreamClient.parse(lines).contains { $0.event == "changes" && $0.data.contains(value) }
      }
      #expect(reached, "\(place): the stream did not show a change: \(stream.lines)")
    }
  }

  /// The README's set-up command, then its shell blocks and those of docs/http.md, each
  /// as one script in one shell, as a reader runs them; and all of it again, as a reader
  /// who comes back does.
  @Test func theShellBlocksRunInOrderAfterTheSetUpCommandAndAgain() throws {
    let sandbox = Sandbox()
    defer { sandbox.remove() }
    let setUp = try sandbox.script(["liststore demo"])
    #expect(setUp.status == 0, "\(setUp.stdout)")
    for pass in 1...2 {
      let readme = try sandbox.read("README.md")
      // The walkthrough at least: a marker that skipped it all would pass vacuously.
      #expect(readme >= 30, "pass \(pass): only \(readme) commands of README.md ran")
      sandbox.stopServer()
      let http = try sandbox.read("docs/http.md")
      #expect(http >= 4, "pass \(pass): only \(http) commands of docs/http.md ran")
      sandbox.stopServer()
    }
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
        let result = try sandbox.run(command, database: sandbox.folder.file("lists.sqlite"))
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
