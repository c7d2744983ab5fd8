import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `watch` on a terminal, without the terminal: the list as text under its name and a
/// status line, scrolled by keys, with a hint line that says what is cut.
///
/// ```text
/// groceries                         ← the list's name
/// 1 item added                      ← what changed last
///
///   [0] Fruit                       ← the list, scrolled (arrows, j/k, PgUp/PgDn, Home/End)
///       0:0  apples
/// lines 1–2 of 40 ↓   ↑/↓ PgUp/PgDn Home/End scroll   q quit
/// ```
///
/// The loop calls ``lines(for:)`` for each frame and ``handle(_:)`` for each key; the
/// scroll position is kept within the list, also when it shrinks or the terminal does.
final class WatchScreen {
  /// What a key asks the loop to do.
  enum Outcome: Equatable {
    /// Keep going.
    case `continue`
    /// Redraw everything (Ctrl-L).
    case redraw
    /// Stop watching (q, or Ctrl-C read as a key).
    case quit
  }

  let name: String
  /// What changed last, or how to stop before anything changed.
  private(set) var status = "watching; q or Ctrl-C to stop"
  /// Why the database's server is out of reach, while it is: shown in place of `status`.
  private(set) var connectionProblem: String?
  /// The list's lines below its name.
  private(set) var body: [String] = []
  /// The first body line shown.
  private(set) var top = 0
  /// How many body lines the last frame had room for.
  private var height = 1

  init(name: String) { self.name = name }

  /// Shows the list as it is now.
  /// - Parameters:
  ///   - sections: The list.
  ///   - status: What changed, or `nil` to keep the status line.
  func show(_ sections: [StoredSection], status: String?) {
    body = Array(Rendering.text(list: name, sections: sections).dropFirst())
    if let status { self.status = status }
  }

  /// Shows that the connection to the server was lost (`reason`), or that it is back
  /// (`nil`).
  func connection(lost reason: String?) {
    if reason == nil && connectionProblem != nil {
      status = "connected again; changes made meanwhile follow"
    }
    connectionProblem = reason.map { "\($0); reconnecting, changes will follow" }
  }

  /// Acts on one key.
  func handle(_ key: Key) -> Outcome {
    switch key {
    case .up, .character("k"): top -= 1
    case .down, .character("j"): top += 1
    case .pageUp, .character("b"): top -= max(1, height - 1)
    case .pageDown, .character(" "), .character("f"): top += max(1, height - 1)
    case .home, .character("g"): top = 0
    case .end, .character("G"): top = body.count
    case .character("q"), .character("Q"), .control("c"), .control("d"): return .quit
    case .control("l"): return .redraw
    default: break
    }
    clampTop()
    return .continue
  }

  /// The whole screen for a terminal of `size`.
  func lines(for size: TerminalSize) -> [ScreenLine] {
    // The name, the status, a blank line; then the body; then the hint, whose length
    // depends on the room left for the body: settle both (two rounds at most change it).
    var hint = hint(width: size.columns - 1, cut: false)
    for _ in 0..<3 {
      height = max(1, size.rows - 3 - hint.count)
      clampTop()
      let next = self.hint(width: size.columns - 1, cut: body.count > height)
      if next.count == hint.count {
        hint = next
        break
      }
      hint = next
    }
    height = max(1, size.rows - 3 - hint.count)
    clampTop()
    var lines = [
      ScreenLine(Rendering.visible(name)), ScreenLine(connectionProblem ?? status), "",
    ]
    lines += body.dropFirst(top).prefix(height).map { ScreenLine($0) }
    while lines.count < size.rows - hint.count { lines.append("") }
    lines += hint.map { ScreenLine($0) }
    return lines
  }

  private func clampTop() {
    top = max(0, min(top, body.count - height))
  }

  /// The keys, and when the list is cut, which of its lines are shown and on which side
  /// more wait.
  private func hint(width: Int, cut: Bool) -> [String] {
    guard cut else {
      return Rendering.wrap(["q quit", "Ctrl-L redraw"], separator: "   ", width: width)
    }
    let last = min(body.count, top + height)
    let more = (top > 0 ? " ↑" : "") + (last < body.count ? " ↓" : "")
    return Rendering.wrap(
      [
        "lines \(top + 1)–\(last) of \(body.count)\(more)", "↑/↓ PgUp/PgDn Home/End scroll",
        "q quit",
      ], separator: "   ", width: width)
  }
}

/// The terminal side of `watch`: raw mode, keys, resizes and signals, with the list's
/// snapshots and changes handed over from the change feed's threads.
final class WatchScreenLoop: WatchPrinter, Sendable {
  /// What the feed's threads leave for the loop: the latest list and what changed.
  private struct Inbox: Sendable {
    var sections: [StoredSection]?
    var status: String?
    /// News of the connection: lost (the reason), or back (`.some(nil)`).
    var connection: String??
  }

  let name: String
  private let inbox = Locked(Inbox())
  /// Wakes the loop: new rows, an ending, a resize or a signal.
  let waker: Waker

  init(name: String) throws(TerminalError) {
    self.name = name
    waker = try Waker()
  }

  func start(_ sections: [Observable2DArraySection<RawJSON, RawJSON>]) {
    let stored = Self.stored(sections)
    inbox.withLock { $0.sections = stored }
    waker.wake()
  }

  func print(_ event: Observable2DArrayEvent<RawJSON, RawJSON>) {
    let stored = Self.stored(event.sections)
    let summary = Rendering.summary(of: event.changeset)
    inbox.withLock {
      $0.sections = stored
      $0.status = summary
    }
    waker.wake()
  }

  /// Shows that the connection to the server was lost (`reason`) or is back (`nil`).
  func connection(lost reason: String?) {
    inbox.withLock { $0.connection = .some(reason) }
    waker.wake()
  }

  /// Draws the list until a key, a signal or `ending` says to stop, or `deadline` passes.
  /// - Parameters:
  ///   - deadline: When to stop, if ever.
  ///   - isEnding: Whether the watch ended for another reason (checked after each wake).
  /// - Returns: Whether the deadline passed.
  /// - Throws: ``TerminalError`` when the terminal cannot be set up or read.
  func run(deadline: ContinuousClock.Instant?, isEnding: () -> Bool) throws(TerminalError)
    -> Bool
  {
    let reader = try KeyReader(descriptor: STDIN_FILENO, waker: waker)
    var options = TerminalSession.Options()
    options.resizeWaker = waker
    options.signalWaker = waker
    let session = try TerminalSession(input: STDIN_FILENO, output: STDOUT_FILENO, options: options)
    defer { session.restore() }
    let model = WatchScreen(name: name)
    let screen = Screen(size: Terminal.size(of: STDOUT_FILENO))
    while true {
      let news = inbox.withLock { inbox in
        defer { inbox = Inbox() }
        return inbox
      }
      if let connection = news.connection { model.connection(lost: connection) }
      if let sections = news.sections { model.show(sections, status: news.status) }
      let size = Terminal.size(of: STDOUT_FILENO)
      screen.resize(to: size)
      screen.render(model.lines(for: size))
      if isEnding() || session.receivedSignal != nil { return false }
      let timeout = deadline.map { $0 - .now }
      if let timeout, timeout <= .zero { return true }
      // The feed's threads and the signal handlers wake `waker`, which the reader waits on
      // besides the keys (and drains when it fires).
      switch try reader.next(timeout: timeout) {
      case .keys(let keys):
        for key in keys {
          switch model.handle(key) {
          case .continue: break
          case .redraw: screen.invalidate()
          case .quit: return false
          }
        }
      case .woken, .timedOut:
        continue
      case .endOfInput:
        return false
      }
    }
  }
}
