import Foundation
import TestSupport
import Testing

/// `liststore watch` in a real terminal (tmux) while other processes change the list.
@Suite(
  .enabled(if: tmuxPath != nil, "tmux is not installed: the terminal tests need it"),
  .timeLimit(.minutes(1)))
struct WatchTerminalTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("watch.sqlite") }

  func cli(_ arguments: String...) throws {
    let result = try liststore(arguments, database: db)
    #expect(result.status == 0, "\(result)")
  }

  @Test func redrawsInPlaceAsOtherProcessesChangeTheList() throws {
    defer { folder.remove() }
    try cli("demo")
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try tmux.type("'\(liststoreBinary)' --db '\(db)' watch demo; echo \"exit=$?\"")
    try tmux.waitFor(line: "      0:2  Copenhagen")
    try tmux.waitFor(line: "watching; Ctrl-C to stop")

    try cli("item", "add", "demo", "0", "Rome", "--at", "1")
    try tmux.waitFor(line: "1 item added")
    try tmux.waitFor(line: "      0:1  Rome")
    try tmux.waitFor(line: "      0:3  Copenhagen")

    try cli("item", "move", "demo", "0:0", "0:3")
    try tmux.waitFor(line: "1 item moved")
    try tmux.waitFor(line: "      0:3  Paris")

    _ = try run("/usr/bin/sqlite3", [db, "DELETE FROM items WHERE value = '\"Berlin\"'"])
    try tmux.waitFor(line: "1 item removed")
    try tmux.waitFor("Berlin to disappear") { lines in !lines.contains { $0.contains("Berlin") } }
    try tmux.waitFor(line: "      0:2  Paris")

    try cli("section", "add", "demo", "Towns", "--footer", "small")
    try tmux.waitFor(line: "  [1] Towns")
    try tmux.waitFor(line: "      -- small")

    // Ctrl-C ends it cleanly and gives the terminal back.
    try tmux.send("C-c")
    try tmux.waitFor(line: "exit=0")
    try tmux.waitFor("the list to leave the screen") { lines in
      !lines.contains { $0.contains("Copenhagen") }
    }
  }

  @Test func stopsAfterMaxEventsOrTimeout() throws {
    defer { folder.remove() }
    try cli("demo")
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try tmux.type("'\(liststoreBinary)' --db '\(db)' watch demo --max-events 1; echo \"exit=$?\"")
    try tmux.waitFor(line: "watching; Ctrl-C to stop")
    try cli("item", "rm", "demo", "0:0")
    try tmux.waitFor(line: "exit=0")
    try tmux.type("'\(liststoreBinary)' --db '\(db)' watch demo --timeout 0.2; echo \"exit=$?\"")
    try tmux.waitFor("a second exit") { lines in lines.filter { $0 == "exit=0" }.count == 2 }
  }
}
