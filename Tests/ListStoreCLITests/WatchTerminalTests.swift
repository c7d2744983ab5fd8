import Foundation
import ListStore
import ListStorePostgreSQLTesting
import ListStoreTesting
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStoreCLI

/// `liststore watch` in a real terminal (tmux) while other processes change the list.
@Suite(
  .tmux,
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
    try tmux.waitFor(line: "watching; q or Ctrl-C to stop")

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

  /// On PostgreSQL, a lost connection to the server is the status line while it lasts,
  /// the list staying where it is, and the line says when the connection is back.
  @Test(.postgres) func aLostServerConnectionIsTheStatusLineUntilItIsBack() throws {
    defer { folder.remove() }
    // A server of its own: the test stops it.
    let server = try TestPostgresServer.start()
    defer { server.stop() }
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try tmux.type(
      "clear; '\(liststoreBinary)' --db '\(database.location)' watch demo; echo \"exit=$?\"")
    try tmux.waitFor(line: "watching; q or Ctrl-C to stop")
    try server.restart {
      try tmux.waitFor("the status line to say the connection is lost") { lines in
        lines.count > 4 && lines[1].hasPrefix("lost the connection to the server")
          && lines[2].isEmpty && lines[3].trimmingTrailingSpaces == "  [0] Cities"
          && lines[4].trimmingTrailingSpaces == "      0:0  Paris"
      }
    }
    try tmux.waitFor(line: "connected again; changes made meanwhile follow")
    expectSuccess(try liststore(["item", "add", "demo", "0", "Rome"], database: database.location))
    try tmux.waitFor(line: "1 item added")
    try tmux.waitFor(line: "      0:3  Rome")
    try tmux.send("q")
    try tmux.waitFor(line: "exit=0")
  }

  @Test func stopsAfterMaxEventsOrTimeout() throws {
    defer { folder.remove() }
    try cli("demo")
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try tmux.type("'\(liststoreBinary)' --db '\(db)' watch demo --max-events 1; echo \"exit=$?\"")
    try tmux.waitFor(line: "watching; q or Ctrl-C to stop")
    try cli("item", "rm", "demo", "0:0")
    try tmux.waitFor(line: "exit=0")
    try tmux.type("'\(liststoreBinary)' --db '\(db)' watch demo --timeout 0.2; echo \"exit=$?\"")
    try tmux.waitFor("a second exit") { lines in
      lines.filter { $0.trimmingTrailingSpaces.hasSuffix("exit=0") }.count == 2
    }
  }

  /// A list of one section "S" with `count` items `item 0`, `item 1`, …
  func makeTallList(_ name: String, count: Int) throws {
    let items = (0..<count).map { "\"item \($0)\"" }.joined(separator: ",")
    let result = try liststore(
      ["import", name, "-"], database: db,
      input: #"{"sections":[{"header":"S","items":["# + items + "]}]}")
    #expect(result.status == 0, "\(result)")
  }

  /// Starts `watch LIST` in the pane, saving the terminal's settings before and after.
  func startWatch(_ list: String, in tmux: Tmux) throws {
    try tmux.type(
      "clear; stty -g > before.txt; '\(liststoreBinary)' --db '\(db)' watch \(list); "
        + "echo \"exit=$?\"; stty -g > after.txt")
    try tmux.waitFor(line: "watching; q or Ctrl-C to stop")
  }

  /// After the watch ended: its status, and the terminal's settings as they were.
  func expectEnded(status: Int, in tmux: Tmux) throws {
    try tmux.waitFor(line: "exit=\(status)")
    try tmux.waitFor("the shell to save the terminal settings again") { _ in
      (fileBytes(folder.file("after.txt"))?.isEmpty == false)
    }
    #expect(fileBytes(folder.file("before.txt")) == fileBytes(folder.file("after.txt")))
  }

  @Test func scrollsAListTallerThanTheTerminalAndSaysWhatIsCut() throws {
    defer { folder.remove() }
    try makeTallList("tall", count: 40)
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startWatch("tall", in: tmux)
    // 24 lines: name, status, blank, 20 lines of the list, the hint.
    let keys = "↑/↓ PgUp/PgDn Home/End scroll   q quit"
    try tmux.waitFor(line: "lines 1–20 of 41 ↓   " + keys)
    try tmux.waitFor(line: "      0:18  item 18")
    #expect(try !tmux.capture().contains { $0.contains("item 19") })

    try tmux.send("End")
    try tmux.waitFor(line: "lines 22–41 of 41 ↑   " + keys)
    try tmux.waitFor(line: "      0:39  item 39")
    try tmux.send("Home")
    try tmux.waitFor(line: "lines 1–20 of 41 ↓   " + keys)
    try tmux.send("PageDown")
    try tmux.waitFor(line: "lines 20–39 of 41 ↑ ↓   " + keys)
    try tmux.send("j")
    try tmux.waitFor(line: "lines 21–40 of 41 ↑ ↓   " + keys)
    try tmux.send("k", "k", "Up")
    try tmux.waitFor(line: "lines 18–37 of 41 ↑ ↓   " + keys)
    try tmux.send("PageUp")
    try tmux.waitFor(line: "lines 1–20 of 41 ↓   " + keys)

    // Changes keep the scroll position; a list that fits says so.
    try tmux.send("End")
    try tmux.waitFor(line: "      0:39  item 39")
    let removed = try liststore(["item", "rm", "tall", "0:39"], database: db)
    #expect(removed.status == 0, "\(removed)")
    try tmux.waitFor(line: "1 item removed")
    try tmux.waitFor(line: "lines 21–40 of 40 ↑   " + keys)
    try tmux.waitFor(line: "      0:38  item 38")

    try tmux.send("q")
    try expectEnded(status: 0, in: tmux)
  }

  @Test func redrawsAtOnceWhenTheTerminalIsResized() throws {
    defer { folder.remove() }
    try makeTallList("tall", count: 40)
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startWatch("tall", in: tmux)
    try tmux.waitFor(line: "lines 1–20 of 41 ↓   ↑/↓ PgUp/PgDn Home/End scroll   q quit")
    // Nothing changes in the list: only the resize can redraw it.
    try tmux.resize(columns: 60, rows: 12)
    try tmux.waitFor(line: "lines 1–8 of 41 ↓   ↑/↓ PgUp/PgDn Home/End scroll   q quit")
    try tmux.waitFor(line: "      0:6   item 6")
    // Narrower than the hint: it wraps instead of being cut.
    try tmux.resize(columns: 30, rows: 12)
    try tmux.waitFor(line: "↑/↓ PgUp/PgDn Home/End scroll")
    try tmux.waitFor(line: "lines 1–6 of 41 ↓")
    try tmux.waitFor(line: "q quit")
    try tmux.send("q")
    try expectEnded(status: 0, in: tmux)
  }

  @Test func keysDoNotEchoAndControlLRedraws() throws {
    defer { folder.remove() }
    try cli("demo")
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startWatch("demo", in: tmux)
    let tty = try tmux.terminalDevice()
    // Raw mode while it runs: no echo, no line editing.
    let settings = try run("/bin/stty", ["-F", tty, "-a"]).stdout
    #expect(settings.contains("-echo ") && settings.contains("-icanon"), "\(settings)")

    try tmux.send("-l", "xyz")
    try cli("item", "add", "demo", "0", "Rome")
    try tmux.waitFor(line: "      0:3  Rome")
    #expect(try !tmux.capture().contains { $0.contains("xyz") })

    // Something else writes on the terminal; Ctrl-L draws the screen again.
    let handle = try #require(FileHandle(forWritingAtPath: tty))
    handle.write(Data("\u{1B}[5;1HGARBAGE GARBAGE".utf8))
    try handle.close()
    try tmux.waitFor("the garbage to show") { $0.contains { $0.contains("GARBAGE") } }
    try tmux.send("C-l")
    try tmux.waitFor("the garbage to go") { !$0.contains { $0.contains("GARBAGE") } }
    try tmux.waitFor(line: "      0:1  Berlin")

    try tmux.send("q")
    try expectEnded(status: 0, in: tmux)
  }

  @Test func controlCAndSignalsEndTheScreenCleanly() throws {
    defer { folder.remove() }
    try cli("demo")
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startWatch("demo", in: tmux)
    try tmux.send("C-c")
    try expectEnded(status: 0, in: tmux)

    for signal in [SIGTERM, SIGHUP, SIGINT] {
      try tmux.typeRecordingPID(database: db, "watch demo", in: folder)
      try tmux.waitFor(line: "watching; q or Ctrl-C to stop")
      #expect(kill(try recordedPID(in: folder), signal) == 0)
      try expectEnded(status: 0, in: tmux)
      try tmux.type("clear")
      try tmux.waitFor("the pane to clear") { !$0.contains { $0.hasPrefix("exit=") } }
    }
  }
}

/// The watch screen without a terminal: scrolling and the hint.
@Suite struct WatchScreenTests {
  func sections(items: Int) -> [StoredSection] {
    [
      StoredSection(
        row: StoredRow(id: 1, position: "a0", json: #"{"header":"S","footer":"end"}"#),
        items: (0..<items).map { StoredRow(id: Int64($0 + 1), position: "", json: "\($0)") })
    ]
  }

  @Test func aListThatFitsHasNoScrollHint() {
    let screen = WatchScreen(name: "l")
    screen.show(sections(items: 2), status: nil)
    let lines = screen.lines(for: TerminalSize(rows: 8, columns: 40)).map(\.text)
    #expect(
      lines == [
        "l", "watching; q or Ctrl-C to stop", "", "  [0] S", "      0:0  0", "      0:1  1",
        "      -- end", "q quit   Ctrl-L redraw",
      ])
    #expect(screen.handle(.down) == .continue)
    #expect(screen.top == 0)
  }

  @Test func scrollingStaysWithinTheList() {
    let screen = WatchScreen(name: "l")
    screen.show(sections(items: 10), status: "1 item added")  // 12 lines of list
    let size = TerminalSize(rows: 10, columns: 80)  // room for 6
    #expect(screen.lines(for: size).last?.text.hasPrefix("lines 1–6 of 12 ↓") == true)
    for (key, top) in [
      (Key.up, 0), (.down, 1), (.character("j"), 2), (.end, 6), (.down, 6), (.pageUp, 1),
      (.pageDown, 6), (.home, 0), (.character("G"), 6), (.character("k"), 5),
    ] {
      #expect(screen.handle(key) == .continue)
      #expect(screen.top == top, "\(key)")
      _ = screen.lines(for: size)
    }
    #expect(screen.lines(for: size).last?.text.hasPrefix("lines 6–11 of 12 ↑ ↓") == true)
    // The list shrinks: the view follows.
    screen.show(sections(items: 3), status: "7 items removed")
    let lines = screen.lines(for: size).map(\.text)
    #expect(screen.top == 0)
    #expect(lines[1] == "7 items removed")
    #expect(lines.count == 10)
    #expect(screen.handle(.control("l")) == .redraw)
    #expect(screen.handle(.character("q")) == .quit)
    #expect(screen.handle(.control("c")) == .quit)
  }
}
