import Counters
import Foundation
import ListStore
import ListStoreTesting
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStoreCLI

// MARK: - The screen without a terminal

@Suite struct CountersScreenTests {
  let folder = TemporaryDirectory()
  var path: String { folder.file("screen.sqlite") }

  /// A screen over a real store, driven the way the terminal loop drives it.
  final class Harness {
    let store: CounterStore
    let source: CounterSource
    let model: CountersScreen
    var size = TerminalSize(rows: 10, columns: 60)

    init(path: String) throws {
      store = try CounterStore(repository: try Repository(path: path))
      source = CounterSource(store: store)
      let controller = CountersController(store: store, snapshots: source.snapshots)
      model = CountersScreen(
        controller: controller, readFailures: source.failures, listName: "counters", wake: {})
      source.refresh()
      model.update(size: size)
    }

    /// Presses the keys as one read, then refreshes as the loop does.
    @discardableResult
    func press(_ keys: Key...) -> [CountersScreen.Outcome] {
      var outcomes: [CountersScreen.Outcome] = []
      for key in keys {
        model.update(size: size)
        outcomes.append(model.handle(key))
      }
      source.refresh()
      model.update(size: size)
      return outcomes
    }

    /// The counter rows as shown, `>` marking the selection.
    var shown: [String] {
      model.lines(for: size).map(\.text).filter { $0.contains("number is") }
    }

    var lines: [String] { model.lines(for: size).map(\.text) }
  }

  @Test func startsEmptyAndSaysHowToAdd() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    #expect(
      harness.lines == [
        "Counters in \"counters\": 0 counters", "", "  No counters yet. Press a to add one.", "",
        "", "", "", "", "", "↑/↓ select   + - change   a add   d delete   q quit",
      ])
  }

  @Test func addsSelectsChangesAndDeletesCounters() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    harness.press(.character("a"), .character("a"))
    #expect(harness.shown == ["  0  number is 0", "> 1  number is 0"])
    harness.press(.character("+"), .character("+"), .up, .character("-"))
    #expect(harness.shown == ["> 0  number is -1", "  1  number is 2"])
    #expect(harness.model.lines(for: harness.size)[2].isHighlighted)
    harness.press(.character("j"), .character("="), .character("k"), .character("d"))
    #expect(harness.shown == ["> 0  number is 3"])
    #expect(try harness.store.counters().map(\.value) == [3])
    harness.press(.character("d"), .character("d"), .character("+"))  // extra keys do nothing
    #expect(harness.shown.isEmpty)
    #expect(try harness.store.counters().isEmpty)
  }

  @Test func showsChangesFromElsewhereAndKeepsTheSelectedCounter() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    harness.press(.character("a"), .character("a"), .character("k"))
    let other = try CounterStore(repository: try Repository(path: path))
    let first = try other.id(atRow: 0)
    try other.set(row: 1, to: 8)
    try other.delete(row: 0)
    try other.add(4)
    harness.source.refresh()
    harness.model.update(size: harness.size)
    #expect(harness.shown == ["> 0  number is 8", "  1  number is 4"])
    #expect(!(try harness.store.counters().contains { $0.id == first }))
    harness.press(.character("+"))
    #expect(try harness.store.counters().map(\.value) == [9, 4])
  }

  @Test func scrollsToKeepTheSelectionVisible() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    harness.size = TerminalSize(rows: 7, columns: 60)  // three rows of counters
    for value in 0..<6 { try harness.store.add(value) }
    harness.source.refresh()
    harness.model.update(size: harness.size)
    #expect(harness.shown == ["> 0  number is 0", "  1  number is 1", "  2  number is 2"])
    #expect(harness.lines[0] == "Counters in \"counters\": 6 counters (0–2 shown)")
    harness.press(.down, .down, .down, .down)
    #expect(harness.shown == ["  2  number is 2", "  3  number is 3", "> 4  number is 4"])
    harness.press(.character("+"))
    #expect(try harness.store.counters().map(\.value) == [0, 1, 2, 3, 5, 5])
    harness.press(.end)
    #expect(harness.shown.last == "> 5  number is 5")
    harness.press(.pageUp)
    #expect(harness.shown.first == "> 2  number is 2")
    harness.press(.home, .character("+"))
    #expect(harness.shown.first == "> 0  number is 1")
    #expect(harness.lines.count == 7)
  }

  @Test func reportsFailuresOnTheStatusLine() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    harness.press(.character("a"))
    let id = try harness.store.id(atRow: 0)
    try harness.store.delete(id: id)  // as another process would, unseen yet
    _ = harness.model.handle(.character("+"))
    #expect(harness.lines[8] == "error: no counter with id \(id) in \"counters\"")
    harness.press(.character("x"))  // any key clears it
    #expect(harness.lines[8] == "")

    let raw = try Repository(path: path).list(
      "counters", metadata: RawJSON.self, item: RawJSON.self)
    try raw.appendItem(RawJSON("\"lots\""), toSection: 0)
    harness.source.refresh()
    harness.model.update(size: harness.size)
    #expect(harness.lines[8].hasPrefix("error: counter 0 (id "))
    #expect(harness.lines[8].contains("not a whole number"))
  }

  @Test func quitInterruptAndRedrawKeys() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    #expect(
      harness.press(.character("q"), .control("c"), .control("l"), .up) == [
        .quit, .interrupt, .redraw, .continue,
      ])
  }

  @Test func reusedCellsNeverReportForTheirOldRows() throws {
    defer { folder.remove() }
    let harness = try Harness(path: path)
    harness.size = TerminalSize(rows: 6, columns: 60)  // two rows of counters
    for value in [10, 20, 30] { try harness.store.add(value) }
    harness.source.refresh()
    harness.model.update(size: harness.size)
    let firstCell = harness.model.cells[0]
    harness.press(.end)  // scrolls: the first cell now shows row 1
    #expect(harness.model.top == 1)
    #expect(firstCell.label.value == "number is 20")
    firstCell.plus.onNext()
    harness.press()
    #expect(try harness.store.counters().map(\.value) == [10, 21, 30])
  }
}

// MARK: - The commands as a process

@Suite struct CountersCLITests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("counters.sqlite") }

  @discardableResult
  func cli(_ arguments: String...) throws -> ProcessResult {
    try liststore(arguments, database: db)
  }

  @Test func subcommandsAddChangeRemoveAndShowCounters() throws {
    defer { folder.remove() }
    // Reading counters creates no database at a mistyped path.
    let missing = try cli("counters", "show")
    #expect(missing.status == 1, "\(missing)")
    #expect(missing.stderr.hasPrefix("error: there is no ListStore database at "), "\(missing)")
    #expect(!FileManager.default.fileExists(atPath: db))
    expectSuccess(try cli("list", "create", "other"))
    #expect(
      try cli("counters", "show").lines == [
        "no counters yet; add one with 'liststore counters add'"
      ])
    #expect(
      try cli("counters", "show", "--json").stdout == "{\"list\":\"counters\",\"counters\":[]}\n")
    #expect(try cli("counters", "add").lines == ["added counter 0 (id 1): number is 0"])
    #expect(try cli("counters", "add").lines == ["added counter 1 (id 2): number is 0"])
    #expect(try cli("counters", "inc", "0").lines == ["counter 0: number is 1"])
    #expect(try cli("counters", "inc", "0").lines == ["counter 0: number is 2"])
    #expect(try cli("counters", "dec", "1").lines == ["counter 1: number is -1"])
    #expect(
      try cli("counters", "show").lines == ["ROW  VALUE", "  0  number is 2", "  1  number is -1"])
    let json = try cli("counters", "show", "--json")
    expectSuccess(json)
    #expect(
      json.stdout
        == "{\"list\":\"counters\",\"counters\":[{\"id\":1,\"value\":2},{\"id\":2,\"value\":-1}]}\n"
    )
    #expect(try cli("counters", "rm", "0").lines == ["removed counter 0"])
    // The list itself, as every other command sees it.
    #expect(
      try cli("show", "counters", "--json").stdout
        == "{\"list\":\"counters\",\"sections\":[{\"id\":1,\"header\":\"Counters\",\"footer\":null,\"items\":[{\"id\":2,\"value\":-1}]}]}\n"
    )
    #expect(try cli("show", "counters").lines == ["counters", "  [0] Counters", "      0:0  -1"])
  }

  @Test func listOptionChoosesTheList() throws {
    defer { folder.remove() }
    expectSuccess(try cli("counters", "add", "--list", "laps"))
    expectSuccess(try cli("counters", "inc", "0", "--list", "laps"))
    #expect(try cli("counters", "show", "--list", "laps", "--json").stdout.contains("\"value\":1"))
    #expect(try cli("lists").lines.contains { $0.hasPrefix("laps") })
    #expect(!(try cli("lists").stdout.contains("counters")))
  }

  @Test func valuesSetByOtherCommandsAreRead() throws {
    defer { folder.remove() }
    expectSuccess(try cli("counters", "add"))
    expectSuccess(try cli("item", "set", "counters", "0:0", "41"))  // a string, as typed
    #expect(try cli("counters", "inc", "0").lines == ["counter 0: number is 42"])
    #expect(try cli("show", "counters", "--json").stdout.contains("{\"id\":1,\"value\":42}"))
    expectSuccess(try cli("item", "set", "counters", "0:0", "many"))
    let failed = try cli("counters", "show")
    #expect(failed.status == 1, "\(failed)")
    #expect(failed.stdout.isEmpty)
    #expect(
      failed.stderr
        == "error: counter 0 (id 1) of \"counters\" holds \"many\", not a whole number; "
        + "fix it with: liststore item set counters 0:0 0 --json\n")
  }

  @Test(arguments: [
    (["counters", "inc", "0"], "counter 0 does not exist: \"counters\" has no counters"),
    (["counters", "rm", "3"], "counter 3 does not exist: \"counters\" has no counters"),
  ])
  func missingCountersFailWithoutCreatingTheList(arguments: [String], message: String) throws {
    defer { folder.remove() }
    expectSuccess(try cli("list", "create", "other"))
    let result = try liststore(arguments, database: db)
    #expect(result.status == 1, "\(result)")
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.hasPrefix("error: " + message), "\(result)")
    #expect(try cli("lists", "--json").stdout.contains("\"counters\"") == false)
  }

  @Test(arguments: [
    (["counters", "inc"], "missing ROW"),
    (["counters", "dec", "x"], "ROW must be a zero-based index"),
    (["counters", "rm", "-1"], "ROW must be a zero-based index"),
    (["counters", "add", "5"], "unexpected argument \"5\""),
    (["counters", "show", "--jsn"], "did you mean '--json'?"),
    (["counters", "--lst", "x"], "did you mean '--list'?"),
  ])
  func malformedCommandLinesExitWith64(arguments: [String], message: String) throws {
    defer { folder.remove() }
    let result = try liststore(arguments, database: db)
    #expect(result.status == 64, "\(result)")
    #expect(result.stderr.contains(message), "\(result)")
    #expect(!FileManager.default.fileExists(atPath: db))
  }

  @Test func bothTheScreenAndItsSubcommandsHaveHelp() throws {
    defer { folder.remove() }
    let screen = try cli("counters", "--help")
    expectSuccess(screen)
    #expect(screen.stdout.hasPrefix("Count things on an interactive screen"))
    #expect(screen.stdout.contains("USAGE: liststore counters [--list NAME]"))
    #expect(screen.stdout.contains("counters inc ROW"))
    for (words, usage) in [
      (["counters", "add"], "liststore counters add [--list NAME]"),
      (["counters", "inc"], "liststore counters inc ROW [--list NAME]"),
      (["counters", "dec"], "liststore counters dec ROW [--list NAME]"),
      (["counters", "rm"], "liststore counters rm ROW [--list NAME]"),
      (["counters", "show"], "liststore counters show [--list NAME] [--json]"),
    ] {
      let help = try liststore(words + ["--help"], database: db)
      expectSuccess(help)
      #expect(help.stdout.contains("USAGE: " + usage), "\(help)")
    }
    #expect(!FileManager.default.fileExists(atPath: db))
  }

  @Test func theScreenRefusesWhenStandardInputIsNoTerminal() throws {
    defer { folder.remove() }
    let result = try cli("counters")
    #expect(result.status == 1, "\(result)")
    #expect(result.stdout.isEmpty)
    #expect(
      result.stderr
        == "error: 'liststore counters' is interactive and standard input is not a terminal; "
        + "use 'liststore counters show', 'counters add', 'counters inc ROW', "
        + "'counters dec ROW' or 'counters rm ROW' instead\n")
    #expect(!FileManager.default.fileExists(atPath: db))
  }
}

// MARK: - The screen in a real terminal

/// The path of `tmux`, if it is installed.
let tmuxPath: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
  .split(separator: ":").map { "\($0)/tmux" }
  .first { FileManager.default.isExecutableFile(atPath: $0) }

extension Trait where Self == ConditionTrait {
  /// Runs the suite where tmux is installed; else skips it, naming the package (and with
  /// `LISTSTORE_REQUIRE_ALL=1`, runs it and fails).
  static var tmux: Self {
    let reason = "tmux is not installed: the terminal tests need it (apt-get install tmux)"
    return .enabled(
      if: Prerequisites.check(tmuxPath != nil, reason: reason), Comment(rawValue: reason))
  }
}

/// A tmux server of its own (a unique `-L` socket) running `/bin/sh` in an 80×24 window.
final class Tmux {
  let socket = "liststore-test-\(UUID().uuidString.prefix(8))"
  let tmux: String
  private(set) var serverPID: Int32 = 0

  init(tmux: String, directory: String) throws {
    self.tmux = tmux
    let status = try spawnDaemonStarter(
      tmux,
      [
        "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "-s",
        "main", "-c", directory, "env PS1='$ ' /bin/sh",
      ])
    guard status == 0 else { throw TmuxError(description: "tmux new-session: status \(status)") }
    let pid = try run(tmux, ["-L", socket, "display-message", "-p", "#{pid}"])
    serverPID = Int32(pid.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
  }

  deinit {
    _ = try? run(tmux, ["-L", socket, "kill-server"])
    if serverPID > 0 { kill(serverPID, SIGKILL) }
    let folder = ProcessInfo.processInfo.environment["TMUX_TMPDIR"] ?? "/tmp"
    try? FileManager.default.removeItem(atPath: "\(folder)/tmux-\(getuid())/\(socket)")
  }

  struct TmuxError: Error, CustomStringConvertible {
    var description: String
  }

  /// Sends keys by tmux name (`Down`, `C-c`, `Enter`) or as literal characters.
  func send(_ keys: String...) throws {
    _ = try run(tmux, ["-L", socket, "send-keys", "-t", "main"] + keys)
  }

  /// Types `command` into the shell and presses Enter.
  func type(_ command: String) throws {
    _ = try run(tmux, ["-L", socket, "send-keys", "-t", "main", "-l", command])
    try send("Enter")
  }

  /// Resizes the window, as a user dragging the terminal's corner would (the program gets
  /// SIGWINCH).
  func resize(columns: Int, rows: Int) throws {
    _ = try run(
      tmux, ["-L", socket, "resize-window", "-t", "main", "-x", "\(columns)", "-y", "\(rows)"])
  }

  /// The pane's terminal device, e.g. `/dev/pts/3`.
  func terminalDevice() throws -> String {
    try run(tmux, ["-L", socket, "display-message", "-p", "-t", "main", "#{pane_tty}"]).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The pane's lines now.
  func capture() throws -> [String] {
    try run(tmux, ["-L", socket, "capture-pane", "-p", "-t", "main"]).lines
  }

  /// Polls the pane until `condition` holds, for up to `seconds`.
  func waitFor(
    seconds: Double = TestLimits.eventSeconds, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: ([String]) -> Bool
  ) throws {
    let deadline = Date().addingTimeInterval(seconds)
    var lines = try capture()
    while !condition(lines) && Date() < deadline {
      usleep(30_000)
      lines = try capture()
    }
    #expect(
      condition(lines), "waited for \(what); the pane shows:\n\(lines.joined(separator: "\n"))",
      sourceLocation: sourceLocation)
  }

  /// Polls until some line of the pane is exactly `line` (trailing spaces ignored).
  func waitFor(line: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try waitFor("the line \(line.debugDescription)", sourceLocation: sourceLocation) { lines in
      // The shell may print its prompt first when a signal ended the command.
      lines.contains {
        $0.trimmingTrailingSpaces == line || $0.trimmingTrailingSpaces == "$ " + line
      }
    }
  }
}

extension Tmux {
  /// Types a command line that runs `liststore --db DATABASE ARGUMENTS` with its process id
  /// saved in `pid.txt` (`exec` keeps the shell's), the terminal's settings in `before.txt`
  /// and `after.txt` around it, and `exit=STATUS` echoed after it.
  func typeRecordingPID(database: String, _ arguments: String, in folder: TemporaryDirectory)
    throws
  {
    try? FileManager.default.removeItem(atPath: folder.file("after.txt"))
    try? FileManager.default.removeItem(atPath: folder.file("pid.txt"))
    try type(
      "clear; stty -g > before.txt; sh -c 'echo $$ > pid.txt; exec \"$0\" --db \"$1\" "
        + "\(arguments)' '\(liststoreBinary)' '\(database)'; echo \"exit=$?\"; stty -g > after.txt")
  }
}

/// The process id a command typed by ``Tmux/typeRecordingPID(database:_:in:)`` saved, once
/// the program shows that it runs.
func recordedPID(in folder: TemporaryDirectory) throws -> Int32 {
  let text = String(decoding: fileBytes(folder.file("pid.txt")) ?? Data(), as: UTF8.self)
  return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
}

/// Runs a program that starts a daemon (`tmux new-session` starts the tmux server) and waits
/// for it.
///
/// Not through Foundation's `Process`: it learns that a child exited when a descriptor it
/// handed the child closes, and the daemon would inherit that descriptor (and the pipes of any
/// process another test is starting), so waiting would never end. Here the child gets no
/// descriptor above 2, and no blocked signals (a test thread blocks some, and the daemon must
/// still obey SIGTERM).
/// - Returns: The program's exit status.
func spawnDaemonStarter(_ executable: String, _ arguments: [String]) throws -> Int32 {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  for descriptor: Int32 in 0...2 {
    posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_RDWR, 0)
  }
  typealias CloseFrom =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32)
    -> Int32
  if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
    _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
  } else {
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
      posix_spawn_file_actions_addclose(&actions, descriptor)
    }
  }
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var noSignals = sigset_t()
  sigemptyset(&noSignals)
  posix_spawnattr_setsigmask(&attributes, &noSignals)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

  let argv = ([executable] + arguments).map { strdup($0) } + [nil]
  defer { for pointer in argv { free(pointer) } }
  var pid: pid_t = 0
  let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
  guard spawned == 0 else {
    throw Tmux.TmuxError(
      description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
  }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  return (status >> 8) & 0xFF
}

extension String {
  var trimmingTrailingSpaces: String {
    String(self[..<(lastIndex { $0 != " " }.map(index(after:)) ?? startIndex)])
  }
}

@Suite(
  .tmux,
  .timeLimit(.minutes(1)))
struct CountersTerminalTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("tty.sqlite") }

  func startScreen(in tmux: Tmux) throws {
    try tmux.type(
      "stty -g > before.txt; '\(liststoreBinary)' --db '\(db)' counters; "
        + "echo \"exit=$?\"; stty -g > after.txt")
    try tmux.waitFor(line: "Counters in \"counters\": 0 counters")
  }

  /// The counters as stored, `[id, value]` each, read through the CLI.
  func stored() throws -> [[Int]] {
    let result = try liststore(["counters", "show", "--json"], database: db)
    let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    let counters = object?["counters"] as? [[String: Int]] ?? []
    return counters.map { [$0["id"] ?? -1, $0["value"] ?? -1] }
  }

  func expectTerminalRestored(exit status: Int, in tmux: Tmux) throws {
    try tmux.waitFor(line: "exit=\(status)")
    try tmux.waitFor("the shell to save the terminal settings again") { _ in
      FileManager.default.fileExists(atPath: folder.file("after.txt"))
        && (fileBytes(folder.file("after.txt"))?.isEmpty == false)
    }
    #expect(fileBytes(folder.file("before.txt")) == fileBytes(folder.file("after.txt")))
    try tmux.type("echo shell-is-back")
    try tmux.waitFor(line: "shell-is-back")
  }

  @Test func keysChangeTheScreenAndTheDatabase() throws {
    defer { folder.remove() }
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startScreen(in: tmux)
    try tmux.waitFor(line: "  No counters yet. Press a to add one.")

    try tmux.send("a", "a")
    try tmux.waitFor(line: "> 1  number is 0")
    try tmux.send("+", "+", "Up", "-")
    try tmux.waitFor(line: "> 0  number is -1")
    try tmux.waitFor(line: "  1  number is 2")
    #expect(try stored() == [[1, -1], [2, 2]])

    try tmux.send("Down", "d")
    try tmux.waitFor(line: "Counters in \"counters\": 1 counter")
    try tmux.waitFor(line: "> 0  number is -1")
    #expect(try stored() == [[1, -1]])

    // Other processes' changes show up while the screen runs.
    _ = try liststore(["counters", "add"], database: db)
    _ = try liststore(["item", "set", "counters", "0:0", "5"], database: db)
    try tmux.waitFor(line: "> 0  number is 5")
    try tmux.waitFor(line: "  1  number is 0")
    try tmux.send("j", "+", "+", "+")
    try tmux.waitFor(line: "> 1  number is 3")
    let final = try stored()
    #expect(final.map { $0[1] } == [5, 3])
    #expect(final.first?[0] == 1)  // the same counter all along
    let pane = try tmux.capture()
    #expect(pane.first == "Counters in \"counters\": 2 counters")
    #expect(pane.last?.hasPrefix("↑/↓ select") == true)

    try tmux.send("q")
    try expectTerminalRestored(exit: 0, in: tmux)
    #expect(try stored() == final)
  }

  @Test func countersSurviveARestart() throws {
    defer { folder.remove() }
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    try startScreen(in: tmux)
    try tmux.send("a", "+", "+", "+", "a", "-")
    try tmux.waitFor(line: "> 1  number is -1")
    try tmux.send("q")
    try tmux.waitFor(line: "exit=0")

    try tmux.type("clear; '\(liststoreBinary)' --db '\(db)' counters; echo \"again=$?\"")
    try tmux.waitFor(line: "> 0  number is 3")
    try tmux.waitFor(line: "  1  number is -1")
    try tmux.send("+")
    try tmux.waitFor(line: "> 0  number is 4")
    try tmux.send("q")
    try tmux.waitFor(line: "again=0")
    #expect(try stored() == [[1, 4], [2, -1]])
  }

  @Test func signalsAndControlCRestoreTheTerminal() throws {
    defer { folder.remove() }
    let tmux = try Tmux(tmux: tmuxPath ?? "tmux", directory: folder.path)
    // Signals from outside: the handler restores the terminal and exits with 128 + signal.
    for (number, status) in [(SIGTERM, 143), (SIGHUP, 129), (SIGINT, 130)] {
      try tmux.typeRecordingPID(database: db, "counters", in: folder)
      try tmux.waitFor(line: "Counters in \"counters\": 0 counters")
      #expect(kill(try recordedPID(in: folder), number) == 0)
      try expectTerminalRestored(exit: status, in: tmux)
    }

    // Ctrl-C, read as a key in raw mode, ends the program as SIGINT would: the shell then
    // abandons the rest of a command line, so the status is asked for on the next one.
    try FileManager.default.removeItem(atPath: folder.file("after.txt"))
    try tmux.type("clear; stty -g > before.txt")
    try tmux.type("'\(liststoreBinary)' --db '\(db)' counters")
    try tmux.waitFor(line: "Counters in \"counters\": 0 counters")
    try tmux.send("a")
    try tmux.waitFor(line: "> 0  number is 0")
    try tmux.send("C-c")
    try tmux.waitFor("the screen to close") { lines in
      !lines.contains { $0.hasPrefix("Counters in") }
    }
    try tmux.type("echo \"exit=$?\"; stty -g > after.txt")
    try expectTerminalRestored(exit: 130, in: tmux)
    #expect(try stored() == [[1, 0]])
  }
}
