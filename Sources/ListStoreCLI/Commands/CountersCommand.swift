import Counters
import ListStore
import ListStoreFormats
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `counters` commands: the interactive screen of the counters example, and the same
/// actions without a terminal.
enum CountersCommand {
  static let listOption = OptionSpec(
    name: "list", valueName: "NAME", help: "The list holding the counters (default: counters).")

  static let row = ArgumentSpec(name: "ROW", help: "The counter's zero-based row.")

  static let screen = CommandSpec(
    path: ["counters"], abstract: "Count things on an interactive screen (the counters example).",
    discussion: """
      Shows the counters of the list (created on first use, one section "Counters" whose items
      are the values) and changes them as you type:

        Up/Down or k/j   select a counter        + - (or Right/Left)  change it by one
        Home/End, PgUp/PgDn  jump                a                    add a counter at 0
        d                delete it               q                    quit
        Ctrl-L           redraw

      Changes by other processes show up within a fraction of a second. Needs a terminal;
      scripts use the subcommands instead: counters show, counters add, counters inc ROW,
      counters dec ROW, counters rm ROW.
      """,
    options: [listOption], database: .writes, run: runScreen)

  static let add = CommandSpec(
    path: ["counters", "add"], abstract: "Add a counter at 0 (creating the list on first use).",
    options: [listOption], database: .writes,
    run: { invocation, context in
      let store = try CounterStore(repository: context.repository(), listName: listName(invocation))
      let id = try store.add()
      let row = try store.counters().firstIndex { $0.id == id } ?? 0
      context.out.line("added counter \(row) (id \(id)): number is 0")
    })

  static let increment = CommandSpec(
    path: ["counters", "inc"], abstract: "Add one to a counter.", arguments: [row],
    options: [listOption],
    run: { invocation, context in
      let row = try invocation.index("ROW")
      let value = try existingStore(invocation, context, row: row).increment(row: row)
      context.out.line("counter \(row): number is \(value)")
    })

  static let decrement = CommandSpec(
    path: ["counters", "dec"], abstract: "Subtract one from a counter.", arguments: [row],
    options: [listOption],
    run: { invocation, context in
      let row = try invocation.index("ROW")
      let value = try existingStore(invocation, context, row: row).decrement(row: row)
      context.out.line("counter \(row): number is \(value)")
    })

  static let remove = CommandSpec(
    path: ["counters", "rm"], abstract: "Delete a counter.", arguments: [row],
    options: [listOption],
    run: { invocation, context in
      let row = try invocation.index("ROW")
      try existingStore(invocation, context, row: row).delete(row: row)
      context.out.line("removed counter \(row)")
    })

  static let show = CommandSpec(
    path: ["counters", "show"], abstract: "Show the counters.",
    discussion: """
      With --json, prints {"list": NAME, "counters": [{"id": ID, "value": N}, ...]}.
      A list that does not exist yet shows no counters.
      """,
    options: [listOption, Commands.json], database: .reads,
    run: { invocation, context in
      let name = listName(invocation)
      let counters =
        try CounterStore.existing(repository: context.repository(), listName: name)?.counters()
        ?? []
      if invocation.flag("json") {
        let objects = counters.map { "{\"id\":\($0.id),\"value\":\($0.value)}" }
        context.out.line(
          "{\"list\":\(JSONText.quote(name)),\"counters\":[\(objects.joined(separator: ","))]}")
        return
      }
      guard !counters.isEmpty else {
        context.out.line("no counters yet; add one with 'liststore counters add'")
        return
      }
      let width = max(3, String(counters.count - 1).count)
      context.out.line("ROW".leftPadding(toLength: width) + "  VALUE")
      for (row, counter) in counters.enumerated() {
        context.out.line(String(row).leftPadding(toLength: width) + "  number is \(counter.value)")
      }
    })

  /// The `counters` commands, in the order `--help` lists them.
  static let all = [screen, add, increment, decrement, remove, show]

  // MARK: - Helpers

  private static func listName(_ invocation: Invocation) -> String {
    invocation.option("list") ?? CounterStore.defaultListName
  }

  /// The store of an existing list; a missing list has no counter at `row`.
  private static func existingStore(_ invocation: Invocation, _ context: Context, row: Int) throws
    -> CounterStore
  {
    let name = listName(invocation)
    guard let store = try CounterStore.existing(repository: context.repository(), listName: name)
    else { throw CounterError.rowOutOfRange(row: row, count: 0, list: name) }
    return store
  }

  // MARK: - The screen

  /// A command that needs a terminal and was not given one.
  struct NotATerminal: Error, CustomStringConvertible {
    /// Which stream is not a terminal.
    var stream: String

    var description: String {
      "'liststore counters' is interactive and \(stream) is not a terminal; "
        + "use 'liststore counters show', 'counters add', 'counters inc ROW', "
        + "'counters dec ROW' or 'counters rm ROW' instead"
    }
  }

  private static func runScreen(_ invocation: Invocation, _ context: Context) throws {
    // Refuse before touching the database.
    guard Terminal.isTerminal(STDIN_FILENO) else { throw NotATerminal(stream: "standard input") }
    guard Terminal.isTerminal(STDOUT_FILENO) else {
      throw NotATerminal(stream: "standard output")
    }
    let name = listName(invocation)
    let store = try CounterStore(repository: context.repository(), listName: name)
    let reader = try KeyReader(descriptor: STDIN_FILENO)
    let waker = reader.waker

    // The one place the screen's data comes from: the change feed, so commits by other
    // processes show up within milliseconds. Rows may arrive on any thread.
    let source = CounterSource(store: store)
    let controller = CountersController(store: store, snapshots: source.snapshots)
    let model = CountersScreen(
      controller: controller, readFailures: source.failures, listName: name, wake: waker.wake)

    var options = TerminalSession.Options()
    options.resizeWaker = waker
    let session = try TerminalSession(input: STDIN_FILENO, output: STDOUT_FILENO, options: options)
    defer { session.restore() }
    try source.start()
    defer { source.stop() }

    let screen = Screen(size: Terminal.size(of: STDOUT_FILENO))
    loop: while true {
      let size = Terminal.size(of: STDOUT_FILENO)
      screen.resize(to: size)
      model.update(size: size)
      screen.render(model.lines(for: size))
      switch try reader.next(timeout: .milliseconds(500)) {
      case .keys(let keys):
        for key in keys {
          model.update(size: size)
          switch model.handle(key) {
          case .continue: break
          case .redraw: screen.invalidate()
          case .quit: break loop
          case .interrupt:
            // Ctrl-C: leave as SIGINT would, so that a calling shell sees the interruption.
            source.stop()
            session.restore()
            signal(SIGINT, SIG_DFL)
            raise(SIGINT)
            break loop
          }
        }
      case .woken, .timedOut:
        continue
      case .endOfInput:
        break loop
      }
    }
  }
}

/// The counters screen without a terminal: keys in, lines out.
///
/// Rows come from the controller's `counters`, on any thread: they wait in an inbox (and the
/// `wake` closure wakes the loop) until the loop calls ``update(size:)``, which applies them between key presses, never while a tap is
/// being delivered. Each visible row has a ``CounterCell``; whenever the rows or the scroll
/// position change, the visible cells are reused for the rows they now show, as a table view
/// reloads its data.
final class CountersScreen {
  /// What a key asks the loop to do.
  enum Outcome: Equatable {
    /// Keep going.
    case `continue`
    /// Redraw everything.
    case redraw
    /// Leave normally.
    case quit
    /// Leave as interrupted (Ctrl-C).
    case interrupt
  }

  /// What other threads hand to the loop.
  private final class Inbox: Sendable {
    struct Contents: Sendable {
      var rows: [(id: Int64, value: Int)]?
      var readFailure: String?
    }

    let contents = Locked(Contents())
  }

  let controller: CountersController
  let listName: String
  private(set) var rows: [(id: Int64, value: Int)] = []
  private(set) var selection = 0
  private(set) var top = 0
  private(set) var cells: [CounterCell] = []
  /// The latest write failure, shown until the next key.
  private(set) var message: String?
  private var readFailure: String?
  private var selectsAddedRow = false
  private var visibleCount = 1
  private var needsReload = true
  private let inbox = Inbox()
  private let wake: @Sendable () -> Void
  private let bag = DisposeBag()

  /// Creates the screen.
  /// - Parameters:
  ///   - controller: The counters.
  ///   - readFailures: Why reading the list fails, `nil` once it works again (for example
  ///     ``CounterSource/failures``); shown on the status line.
  ///   - listName: The list's name, for the title.
  ///   - wake: Called, on any thread, when new rows or a read failure wait.
  init(
    controller: CountersController, readFailures: Observable<CounterError?>, listName: String,
    wake: @escaping @Sendable () -> Void
  ) {
    self.controller = controller
    self.listName = listName
    self.wake = wake
    let inbox = self.inbox
    controller.counters
      .subscribe(onNext: { rows in
        inbox.contents.withLock { $0.rows = rows }
        wake()
      })
      .disposed(by: bag)
    controller.failures
      .subscribe(onNext: { [unowned self] in self.message = "error: \($0)" })
      .disposed(by: bag)
    readFailures
      .subscribe(onNext: { failure in
        inbox.contents.withLock { $0.readFailure = failure.map { "error: \($0)" } }
        wake()
      })
      .disposed(by: bag)
  }

  /// Applies waiting rows, fits the view to `size`, and reuses the cells if anything moved.
  /// - Parameter size: The terminal's size.
  func update(size: TerminalSize) {
    let (newRows, failure) = inbox.contents.withLock { contents in
      defer { contents.rows = nil }
      return (contents.rows, contents.readFailure)
    }
    readFailure = failure
    if let newRows { apply(newRows) }
    // The title, a blank line, the status line and the hint take the rest.
    let visible = max(1, size.rows - 3 - hint(for: size).count)
    if visible != visibleCount {
      visibleCount = visible
      needsReload = true
    }
    var newTop = min(top, max(0, rows.count - visibleCount))
    if selection < newTop { newTop = selection }
    if selection >= newTop + visibleCount { newTop = selection - visibleCount + 1 }
    if newTop != top {
      top = newTop
      needsReload = true
    }
    if needsReload { reloadCells() }
  }

  private func apply(_ newRows: [(id: Int64, value: Int)]) {
    if newRows.elementsEqual(rows, by: ==) { return }
    let selectedID = rows.indices.contains(selection) ? rows[selection].id : nil
    let oldIDs = Set(rows.map(\.id))
    rows = newRows
    needsReload = true
    if selectsAddedRow, let added = rows.lastIndex(where: { !oldIDs.contains($0.id) }) {
      selection = added
      selectsAddedRow = false
    } else if let selectedID, let index = rows.firstIndex(where: { $0.id == selectedID }) {
      selection = index
    }
    selection = max(0, min(selection, rows.count - 1))
  }

  /// Reuses the visible cells for the rows they show now.
  private func reloadCells() {
    needsReload = false
    let shown = Array(rows.dropFirst(top).prefix(visibleCount))
    while cells.count < shown.count { cells.append(CounterCell()) }
    for (cell, row) in zip(cells, shown) {
      cell.prepareForReuse()
      controller.configure(cell, for: row)
    }
    for cell in cells.dropFirst(shown.count) { cell.prepareForReuse() }
  }

  /// The cell of the selected row, if there is one.
  private var selectedCell: CounterCell? {
    let index = selection - top
    guard rows.indices.contains(selection), cells.indices.contains(index) else { return nil }
    return cells[index]
  }

  /// Acts on one key.
  /// - Parameter key: The key pressed.
  /// - Returns: What the loop should do next.
  func handle(_ key: Key) -> Outcome {
    message = nil
    switch key {
    case .up, .character("k"):
      selection = max(0, selection - 1)
    case .down, .character("j"):
      selection = max(0, min(rows.count - 1, selection + 1))
    case .home, .character("g"):
      selection = 0
    case .end, .character("G"):
      selection = max(0, rows.count - 1)
    case .pageUp:
      selection = max(0, selection - visibleCount)
    case .pageDown:
      selection = max(0, min(rows.count - 1, selection + visibleCount))
    case .character("+"), .character("="), .right:
      selectedCell?.plus.onNext()
    case .character("-"), .character("_"), .left:
      selectedCell?.minus.onNext()
    case .character("d"), .delete:
      selectedCell?.delete.onNext()
    case .character("a"):
      selectsAddedRow = true
      controller.adds.onNext()
    case .character("q"), .character("Q"):
      return .quit
    case .control("c"):
      return .interrupt
    case .control("l"):
      return .redraw
    default:
      break
    }
    return .continue
  }

  /// The whole screen.
  /// - Parameter size: The terminal's size.
  /// - Returns: The lines, from the top.
  func lines(for size: TerminalSize) -> [ScreenLine] {
    let count = rows.count
    var title = "Counters in \(quoted(listName)): \(Rendering.counted(count, "counter"))"
    if count > visibleCount {
      title += " (\(top)–\(min(count, top + visibleCount) - 1) shown)"
    }
    var lines: [ScreenLine] = [ScreenLine(title), ""]
    if rows.isEmpty {
      lines.append("  No counters yet. Press a to add one.")
    }
    let width = String(max(0, count - 1)).count
    for (offset, cell) in cells.prefix(min(visibleCount, count - top)).enumerated() {
      let row = top + offset
      let selected = row == selection
      let text =
        (selected ? "> " : "  ") + String(row).leftPadding(toLength: width) + "  "
        + cell.label.value
      lines.append(ScreenLine(text, isHighlighted: selected))
    }
    let hint = hint(for: size)
    let body = max(size.rows - 1 - hint.count, lines.count)
    while lines.count < body { lines.append("") }
    lines.append(ScreenLine(message ?? readFailure ?? ""))
    lines += hint.map { ScreenLine($0) }
    return lines
  }

  /// The keys, on as many lines as the width needs (the screen leaves the last column
  /// free).
  private func hint(for size: TerminalSize) -> [String] {
    Rendering.wrap(
      ["↑/↓ select", "+ - change", "a add", "d delete", "q quit"], separator: "   ",
      width: size.columns - 1)
  }
}
