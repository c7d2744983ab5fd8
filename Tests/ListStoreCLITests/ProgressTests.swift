import Foundation
import TestSupport
import Testing

/// The progress line of `import`, `export`, `backup`, `check` and `batch`, on a real
/// terminal (tmux): drawn on standard error once the work takes long enough, redrawn
/// while the command waits, erased at the end; never with `--quiet` or off a terminal.
@Suite(
  .tmux,
  .timeLimit(.minutes(2)))
struct ProgressTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("progress.sqlite") }

  /// A list "big" of 3,000 items, its export in `big.json` and 300 operations in
  /// `ops.jsonl`.
  func makeFiles() throws {
    let items = (0..<3000).map { "\"item \($0)\"" }.joined(separator: ",")
    let result = try liststore(
      ["import", "big", "-"], database: db,
      input: #"{"sections":[{"header":"S","items":["# + items + "]}]}")
    #expect(result.status == 0, "\(result)")
    try Data(try liststore(["export", "big"], database: db).stdout.utf8).write(
      to: URL(fileURLWithPath: folder.file("big.json")))
    let operations = (0..<300).map { #"{"op": "item set", "item": "0:\#($0)", "value": \#($0)}"# }
    try Data(operations.joined(separator: "\n").utf8).write(
      to: URL(fileURLWithPath: folder.file("ops.jsonl")))
  }

  /// Runs `arguments` in the pane with everything the pane receives logged, and returns
  /// the log once the command ended.
  func logged(_ arguments: String, in tmux: Tmux, name: String, environment: String = "")
    throws -> String
  {
    let log = folder.file("\(name).log")
    try tmux.logOutput(to: log)
    defer { try? tmux.stopLogging() }
    try tmux.type(
      "clear; \(environment) '\(liststoreBinary)' --db '\(db)' \(arguments); echo \"exit=$?\"")
    try tmux.waitFor("\(name) to end") { lines in lines.contains { $0.hasPrefix("exit=") } }
    var text = ""
    let deadline = Date().addingTimeInterval(10)
    repeat {
      text = String(decoding: fileBytes(log) ?? Data(), as: UTF8.self)
    } while !text.contains("exit=0") && Date() < deadline && usleep(20_000) == 0
    #expect(text.contains("exit=0"), "\(name): \(text.suffix(300).debugDescription)")
    return text
  }

  @Test func eachLongCommandDrawsOneLineAndErasesItUnlessQuiet() throws {
    defer { folder.remove() }
    try makeFiles()
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    // Wide enough for the whole line, whatever the length of the temporary folder's path
    // (the line is cut to the terminal's width).
    try tmux.resize(columns: 220, rows: 24)
    let commands: [(String, String)] = [
      ("import copy big.json", "importing \"copy\": "),
      ("export big > out.json", "exporting \"big\": "),
      ("backup copy.sqlite", "backing up "),
      ("check", "checking "),
      ("batch big ops.jsonl", "applying operations to \"big\": "),
    ]
    for (index, (arguments, label)) in commands.enumerated() {
      // At once (no delay): the line is drawn, then erased before the command's output.
      let text = try logged(
        arguments, in: tmux, name: "drawn-\(index)", environment: "LISTSTORE_PROGRESS_DELAY=0")
      let drawn = try #require(text.range(of: "\r" + label, options: .backwards), "\(arguments)")
      let rest = text[drawn.upperBound...]
      let erased = try #require(rest.range(of: "\r\u{1B}[K"), "\(arguments): not erased")
      #expect(!rest[erased.upperBound...].contains(label), "\(arguments)")
      #expect(text.contains("/s"), "\(arguments): no rate in \(text.debugDescription)")
      try tmux.waitFor("the line erased") { lines in !lines.contains { $0.contains(label) } }

      // With --quiet: nothing.
      let quiet = arguments.replacingOccurrences(of: "copy", with: "quiet") + " --quiet"
      let quietText = try logged(
        quiet.replacingOccurrences(of: " > out.json --quiet", with: " --quiet > out.json"),
        in: tmux, name: "quiet-\(index)", environment: "LISTSTORE_PROGRESS_DELAY=0")
      #expect(!quietText.contains("\r" + label), "\(quiet)")
    }
    #expect(fileBytes(folder.file("out.json"))?.count ?? 0 > 30_000)
  }

  @Test func theLineAppearsAfterASecondAndIsRedrawnWhileTheCommandWaits() throws {
    defer { folder.remove() }
    try makeFiles()
    let fifo = folder.file("ops.fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try tmux.type("clear; '\(liststoreBinary)' --db '\(db)' batch big ops.fifo; echo \"exit=$?\"")
    // The command opens the FIFO for reading; opening it for writing meets it.
    let writer = try #require(FileHandle(forWritingAtPath: fifo))
    let remove = #"{"op": "item rm", "item": "0:0"}"# + "\n"
    writer.write(Data(String(repeating: remove, count: 3).utf8))
    // Blocked on the next line, the batch has taken over a second: the line shows. (It
    // reads everything before it writes: no other writer waits for this FIFO.)
    try tmux.waitFor("the progress line") { lines in
      lines.contains { $0.hasPrefix("reading operations for \"big\": 3 lines, ") }
    }
    writer.write(Data(remove.utf8))
    try writer.close()
    try tmux.waitFor(line: "applied 4 operations to \"big\"")
    try tmux.waitFor(line: "exit=0")
    let lines = try tmux.capture()
    #expect(
      !lines.contains { $0.contains("applying operations") || $0.contains("reading operations") },
      "\(lines)")
    #expect(try liststore(["show", "big"], database: db).lines[2] == "      0:0     item 4")
  }

  @Test func noLineWhenStandardErrorIsNotATerminal() throws {
    defer { folder.remove() }
    try makeFiles()
    let result = try liststore(
      ["import", "again", folder.file("big.json")], database: db,
      environment: ["LISTSTORE_PROGRESS_DELAY": "0"])
    expectSuccess(result)
    let exported = try liststore(
      ["export", "big"], database: db, environment: ["LISTSTORE_PROGRESS_DELAY": "0"])
    expectSuccess(exported)
  }
}

extension Tmux {
  /// Appends everything the pane's programs write (escape sequences included) to `path`.
  func logOutput(to path: String) throws {
    _ = try run(tmux, ["-L", socket, "pipe-pane", "-t", "main", "-o", "cat >> '\(path)'"])
  }

  /// Stops ``logOutput(to:)``.
  func stopLogging() throws {
    _ = try run(tmux, ["-L", socket, "pipe-pane", "-t", "main"])
  }
}
