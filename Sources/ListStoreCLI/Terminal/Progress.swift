import Dispatch
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One self-updating line on standard error while long work goes on: what is done, of
/// how much, how fast, and how long is left.
///
/// It appears only when standard error is a terminal, the command was not given
/// `--quiet`, and the work has taken more than ``delay`` (about a second; the
/// environment's `LISTSTORE_PROGRESS_DELAY` changes it); it is redrawn ten times a
/// second (also while the work waits for input or output) and erased by ``finish()``.
///
/// ```swift
/// let progress = ProgressLine.start("exporting \"big\"", unit: "item", total: 1_000_000, context)
/// progress?.advance(to: 500_000)
/// progress?.finish()
/// ```
///
/// `@unchecked Sendable`: what changes is in `state`, behind its lock; `timer` is set up
/// before it starts and only cancelled afterwards, and its handler runs on `queue`.
final class ProgressLine: @unchecked Sendable {
  private struct State {
    var done = 0
    var total: Int?
    /// Work measured in another unit (bytes of a file) for the share done, when the
    /// total of `done` is not known.
    var share: (done: Int, total: Int)?
    var drawn = false
    var finished = false
  }

  private let label: String
  private let unit: String
  private let started = DispatchTime.now()
  private let delay: Double
  private let state: Locked<State>
  private let timer: any DispatchSourceTimer
  private let queue = DispatchQueue(label: "liststore.progress")

  private init(label: String, unit: String, total: Int?, delay: Double) {
    self.label = label
    self.unit = unit
    self.delay = delay
    state = Locked(State(total: total))
    timer = DispatchSource.makeTimerSource(queue: queue)
  }

  /// A progress line for `label`, or `nil` when none is to be shown: standard error is
  /// not a terminal, or the command has `--quiet`.
  /// - Parameters:
  ///   - label: What is being done, e.g. `importing "big"`.
  ///   - unit: What is counted, singular (`item`, `line`, `page`).
  ///   - total: How many there are, if known.
  ///   - invocation: The command, for `--quiet`.
  ///   - context: The command's context, for the environment.
  /// - Returns: The line, already counting time; `nil` when none is to be shown.
  static func start(
    _ label: String, unit: String, total: Int?, invocation: Invocation, context: Context
  ) -> ProgressLine? {
    guard !invocation.flag("quiet"), Terminal.isTerminal(STDERR_FILENO) else { return nil }
    // Checked before the command ran (Context.checkEnvironment).
    let delay = (try? context.progressDelay()) ?? 1
    let line = ProgressLine(label: label, unit: unit, total: total, delay: delay)
    // Without a delay the line is there from the start, however short the work.
    if delay == 0 { line.queue.sync { line.draw() } }
    line.timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
    line.timer.setEventHandler { [weak line] in line?.draw() }
    line.timer.resume()
    return line
  }

  /// Sets what is done.
  func advance(to done: Int) {
    state.withLock { $0.done = done }
  }

  /// Sets what is done, and the share of the whole it is by another measure (bytes read
  /// of a file whose item count is not known).
  func advance(to done: Int, share: Int, of whole: Int) {
    state.withLock {
      $0.done = done
      $0.share = whole > 0 ? (share, whole) : nil
    }
  }

  /// Sets the total, once it is known.
  func setTotal(_ total: Int) {
    state.withLock { $0.total = total }
  }

  /// Stops redrawing and erases the line.
  func finish() {
    timer.cancel()
    // A draw under way ends first; none starts after.
    queue.sync {}
    let drawn = state.withLock { state -> Bool in
      state.finished = true
      return state.drawn
    }
    if drawn { Terminal.write("\r\u{1B}[K", to: STDERR_FILENO) }
  }

  private func draw() {
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    guard elapsed >= delay else { return }
    let snapshot = state.withLock { state -> State? in
      guard !state.finished else { return nil }
      state.drawn = true
      return state
    }
    guard let snapshot else { return }
    let text = Self.text(
      label: label, unit: unit, done: snapshot.done, total: snapshot.total,
      share: snapshot.share, elapsed: elapsed)
    let width = Terminal.size(of: STDERR_FILENO).columns - 1
    Terminal.write(
      "\r" + Self.cut(text, to: width) + "\u{1B}[K", to: STDERR_FILENO)
  }

  /// The line: `importing "big": 120,000 / 1,000,000 items (12 %), 45,000 items/s, 20 s left`.
  static func text(
    label: String, unit: String, done: Int, total: Int?, share: (done: Int, total: Int)?,
    elapsed: Double
  ) -> String {
    var text = label + ": " + grouped(done)
    if let total { text += " / " + grouped(total) }
    text += " " + unit + (total ?? done == 1 ? "" : "s")
    let fraction: Double? =
      if let total, total > 0 {
        Double(done) / Double(total)
      } else if let share {
        Double(share.done) / Double(share.total)
      } else {
        nil
      }
    if let fraction { text += " (\(Int((min(fraction, 1) * 100).rounded(.down))) %)" }
    if elapsed > 0 {
      text += ", " + grouped(Int((Double(done) / elapsed).rounded())) + " \(unit)s/s"
    }
    if let fraction, fraction > 0.001, fraction < 1 {
      text += ", " + duration(elapsed * (1 - fraction) / fraction) + " left"
    }
    return text
  }

  /// `1234567` as `1,234,567`.
  static func grouped(_ number: Int) -> String {
    let digits = Array(String(number.magnitude))
    var result = ""
    for (index, digit) in digits.enumerated() {
      if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
      result.append(digit)
    }
    return (number < 0 ? "-" : "") + result
  }

  /// `42 s`, `3 min 5 s`, `2 h 10 min`.
  static func duration(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded(.up))
    if whole < 60 { return "\(whole) s" }
    if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
    return "\(whole / 3600) h \(whole % 3600 / 60) min"
  }

  /// `text` cut to `width` terminal cells.
  static func cut(_ text: String, to width: Int) -> String {
    guard Terminal.displayWidth(of: text) > width else { return text }
    var result = ""
    var used = 0
    for character in text {
      let cells = Terminal.width(of: character)
      if used + cells > width { break }
      result.append(character)
      used += cells
    }
    return result
  }
}
