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
  }

  @Test func theReadmesCommandsRunInOrderOnAFreshDatabase() throws {
    let sandbox = Sandbox()
    defer { sandbox.folder.remove() }
    let blocks = try Self.blocks(of: "README.md").filter { $0.language == "sh" }
    var ran = 0
    for block in blocks {
      for (offset, line) in block.lines.enumerated()
      where block.runs(line) && !line.trimmingCharacters(in: .whitespaces).isEmpty {
        let result = try sandbox.run(line)
        ran += 1
        #expect(
          result.status == 0, "README.md:\(block.line + offset): \(line)\n\(result.stdout)")
      }
    }
    // The walkthrough at least: a marker that skipped it all would pass vacuously.
    #expect(ran >= 20, "only \(ran) commands of the README ran")
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
