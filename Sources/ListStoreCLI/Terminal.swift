// Terminal machinery for full-screen commands (`liststore counters`, `liststore watch`):
//
// * `Terminal`: is a descriptor a terminal, its size, writing, escape sequences;
// * `TerminalSession`: raw mode, alternate screen and hidden cursor, restored on every way out,
//   including SIGINT, SIGTERM and SIGHUP;
// * `Key` and `KeyDecoder`: bytes to keys, arrows included;
// * `KeyReader` and `Waker`: waiting for keys, a deadline, or another thread;
// * `Screen`: frames of lines, drawn by rewriting only the lines that changed.
//
// A typical loop:
//
//     let session = try TerminalSession()
//     defer { session.restore() }
//     let reader = try KeyReader()
//     let screen = Screen(size: Terminal.size())
//     while true {
//       screen.resize(to: Terminal.size())
//       screen.render(lines())
//       guard case .keys(let keys) = try reader.next(timeout: .milliseconds(500)) else { continue }
//       if keys.contains(.character("q")) { break }
//     }

import ListStoreFormats
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// MARK: - Terminal

/// The size of a terminal, in character cells.
struct TerminalSize: Hashable, Sendable {
  /// The number of lines.
  var rows: Int
  /// The number of columns.
  var columns: Int

  /// The size assumed when the terminal does not say: 80 columns, 24 lines.
  static let fallback = TerminalSize(rows: 24, columns: 80)
}

/// Facts about terminals and the escape sequences the screen uses (VT100/xterm, understood by
/// every terminal emulator in use, tmux included).
enum Terminal {
  /// Whether `descriptor` is a terminal.
  static func isTerminal(_ descriptor: Int32) -> Bool {
    isatty(descriptor) == 1
  }

  /// The size of the terminal on `descriptor` (`TIOCGWINSZ`), or ``TerminalSize/fallback`` when
  /// it is not a terminal or reports no size.
  static func size(of descriptor: Int32 = STDOUT_FILENO) -> TerminalSize {
    var size = winsize()
    guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else {
      return .fallback
    }
    return TerminalSize(rows: Int(size.ws_row), columns: Int(size.ws_col))
  }

  /// Writes all of `text` to `descriptor`, retrying after interruptions; gives up silently when
  /// the descriptor is closed.
  static func write(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
    writeAll(text, to: descriptor)
  }

  /// How many cells `character` takes on a terminal: 2 for East Asian wide characters and
  /// emoji (also a symbol made emoji by U+FE0F), else 1.
  static func width(of character: Character) -> Int {
    let scalars = character.unicodeScalars
    guard let scalar = scalars.first?.value else { return 1 }
    switch scalar {
    case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F,
      0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F680...0x1F6FF, 0x1F900...0x1F9FF,
      0x1FA70...0x1FAFF, 0x20000...0x3FFFD:
      return 2
    default:
      return scalars.contains("\u{FE0F}") ? 2 : 1
    }
  }

  /// How many cells `text` takes on a terminal: the sum of its characters' widths.
  static func displayWidth(of text: String) -> Int {
    text.reduce(0) { $0 + width(of: $1) }
  }

  /// Switches to the alternate screen, which the terminal swaps back on ``leaveAlternateScreen``.
  static let enterAlternateScreen = "\u{1B}[?1049h"
  /// Switches back to the normal screen, as it was before ``enterAlternateScreen``.
  static let leaveAlternateScreen = "\u{1B}[?1049l"
  /// Hides the cursor.
  static let hideCursor = "\u{1B}[?25l"
  /// Shows the cursor.
  static let showCursor = "\u{1B}[?25h"
  /// Moves the cursor home and clears the screen.
  static let clearScreen = "\u{1B}[H\u{1B}[2J"
  /// Clears from the cursor to the end of the line.
  static let clearToEndOfLine = "\u{1B}[K"
  /// Starts reverse video.
  static let reverseVideo = "\u{1B}[7m"
  /// Ends every text attribute.
  static let resetAttributes = "\u{1B}[0m"

  /// Moves the cursor to a cell.
  /// - Parameters:
  ///   - row: The line, counted from 1.
  ///   - column: The column, counted from 1.
  /// - Returns: The escape sequence.
  static func moveCursor(row: Int, column: Int = 1) -> String {
    "\u{1B}[\(row);\(column)H"
  }
}

/// Writes all of `text`, retrying after interruptions, until done or the descriptor fails.
private func writeAll(_ text: String, to descriptor: Int32) {
  var text = text
  text.withUTF8 { bytes in
    var offset = 0
    while offset < bytes.count {
      let written = write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { return }
      offset += written
    }
  }
}

/// Why a terminal could not be set up.
struct TerminalError: Error, CustomStringConvertible {
  /// What went wrong.
  var description: String
}

// MARK: - Session

/// Raw mode for a full-screen command, undone on every way out.
///
/// Creating a session saves the terminal's settings, switches input to raw mode (no echo, no
/// line editing, no signals from keys: Ctrl-C arrives as `.control("c")`), and by default
/// switches to the alternate screen and hides the cursor. ``restore()`` undoes all of it; it
/// runs at the latest in `deinit`, so `defer { session.restore() }` covers thrown errors.
///
/// While a session is active, SIGINT, SIGTERM and SIGHUP restore the terminal and end the
/// process with status 130, 143 and 129 (128 + the signal), unless ``Options/signalWaker`` asks
/// for them to wake the loop instead. Only one session may be active at a time.
///
/// It does not cover a crash or SIGKILL; `stty sane` repairs the terminal then.
final class TerminalSession {
  /// What a session changes besides raw input.
  struct Options: Sendable {
    /// Draw on the alternate screen, leaving the normal one as it was.
    var alternateScreen = true
    /// Hide the cursor.
    var hideCursor = true
    /// Keep Ctrl-C, Ctrl-Z and Ctrl-\ as signals instead of keys.
    var keysSendSignals = false
    /// Woken on SIGWINCH, so a loop waiting for keys redraws at the new size at once.
    var resizeWaker: Waker?
    /// When set, SIGINT, SIGTERM and SIGHUP wake it instead of ending the process, so the
    /// loop can end as it ends normally; ``TerminalSession/receivedSignal`` tells which came.
    var signalWaker: Waker?

    /// The defaults: alternate screen, hidden cursor, signal keys read as keys.
    init() {}
  }

  /// The terminal read.
  let input: Int32
  /// The terminal written.
  let output: Int32
  private let leave: String
  /// Kept alive while their descriptors may be written by the signal handlers.
  private let resizeWaker: Waker?
  private let signalWaker: Waker?
  private var isActive = true
  private var previousHandlers: [(Int32, (@convention(c) (Int32) -> Void)?)] = []

  /// The signals that restore the terminal and end the process.
  static let endingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

  /// The ending signal that arrived while ``Options/signalWaker`` was set, if any.
  var receivedSignal: Int32? {
    let number = SignalRestore.receivedSignal.load(ordering: .relaxed)
    return number == 0 ? nil : number
  }

  /// Enters raw mode.
  ///
  /// - Parameters:
  ///   - input: The terminal to read; standard input by default.
  ///   - output: The terminal to draw on; standard output by default.
  ///   - options: What else to change.
  /// - Throws: ``TerminalError`` when `input` is not a terminal; nothing was changed then.
  init(
    input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO, options: Options = Options()
  ) throws(TerminalError) {
    var original = termios()
    guard tcgetattr(input, &original) == 0 else {
      throw TerminalError(description: "standard input is not a terminal")
    }
    self.input = input
    self.output = output
    self.resizeWaker = options.resizeWaker
    self.signalWaker = options.signalWaker
    var enter = ""
    var leave = ""
    if options.alternateScreen {
      enter += Terminal.enterAlternateScreen
      leave = Terminal.leaveAlternateScreen + leave
    }
    if options.hideCursor {
      enter += Terminal.hideCursor
      leave = Terminal.showCursor + leave
    }
    self.leave = Terminal.resetAttributes + leave

    var raw = original
    raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
    raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN)
    if !options.keysSendSignals { raw.c_lflag &= ~tcflag_t(ISIG) }
    raw.c_cflag |= tcflag_t(CS8)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }

    // The handler's state is complete before any handler can run.
    SignalRestore.arm(
      input: input, output: output, attributes: original, leave: self.leave,
      resizeDescriptor: options.resizeWaker?.writeDescriptor ?? -1,
      signalDescriptor: options.signalWaker?.writeDescriptor ?? -1)
    for number in Self.endingSignals {
      previousHandlers.append((number, signal(number, restoreTerminalAndExit)))
    }
    if options.resizeWaker != nil {
      previousHandlers.append((SIGWINCH, signal(SIGWINCH, wakeOnResize)))
    }
    _ = tcsetattr(input, TCSADRAIN, &raw)
    Terminal.write(enter, to: output)
  }

  deinit {
    restore()
  }

  /// Restores the terminal as it was and the signal handlers as they were; later calls do
  /// nothing.
  func restore() {
    guard isActive else { return }
    isActive = false
    Terminal.write(leave, to: output)
    SignalRestore.restoreAttributes()
    SignalRestore.disarm()
    for (number, handler) in previousHandlers.reversed() {
      _ = signal(number, handler)
    }
    previousHandlers = []
  }
}

/// What the signal handlers need, kept where they can read it without allocating or locking.
///
/// Set by ``TerminalSession`` before it installs the handlers and cleared after it removes
/// them; handlers only read it. `nonisolated(unsafe)` because a signal handler cannot take a
/// lock: the order of those writes is what makes it safe.
private enum SignalRestore {
  nonisolated(unsafe) static var isArmed = false
  nonisolated(unsafe) static var input: Int32 = -1
  nonisolated(unsafe) static var output: Int32 = -1
  nonisolated(unsafe) static var resizeDescriptor: Int32 = -1
  nonisolated(unsafe) static var signalDescriptor: Int32 = -1
  /// Written by the handler: an atomic store is async-signal-safe.
  static let receivedSignal = Atomic<Int32>(0)
  nonisolated(unsafe) static let attributes = UnsafeMutablePointer<termios>.allocate(capacity: 1)
  nonisolated(unsafe) static var leave = UnsafeMutableBufferPointer<UInt8>(start: nil, count: 0)

  static func arm(
    input: Int32, output: Int32, attributes: termios, leave: String, resizeDescriptor: Int32,
    signalDescriptor: Int32
  ) {
    precondition(!isArmed, "Only one TerminalSession may be active at a time")
    self.input = input
    self.output = output
    self.resizeDescriptor = resizeDescriptor
    self.signalDescriptor = signalDescriptor
    receivedSignal.store(0, ordering: .relaxed)
    self.attributes.initialize(to: attributes)
    self.leave.deallocate()  // The previous session's; no handler can read it now.
    let bytes = Array(leave.utf8)
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    _ = buffer.initialize(from: bytes)
    self.leave = buffer
    isArmed = true
  }

  static func disarm() {
    isArmed = false
    resizeDescriptor = -1
    signalDescriptor = -1
  }

  /// Puts the saved settings back; async-signal-safe.
  static func restoreAttributes() {
    _ = tcsetattr(input, TCSADRAIN, attributes)
  }
}

/// SIGINT, SIGTERM, SIGHUP: restore the terminal, then end with 128 + the signal; or, when the
/// session asked for it, record the signal and wake its loop. Only async-signal-safe calls
/// (`write`, `tcsetattr`, `_exit`, an atomic store).
private func restoreTerminalAndExit(_ signal: Int32) {
  if SignalRestore.isArmed && SignalRestore.signalDescriptor >= 0 {
    SignalRestore.receivedSignal.store(signal, ordering: .relaxed)
    var byte: UInt8 = 1
    _ = write(SignalRestore.signalDescriptor, &byte, 1)
    return
  }
  if SignalRestore.isArmed {
    if let base = SignalRestore.leave.baseAddress {
      _ = write(SignalRestore.output, base, SignalRestore.leave.count)
    }
    _ = tcsetattr(SignalRestore.input, TCSANOW, SignalRestore.attributes)
  }
  _exit(128 + signal)
}

/// SIGWINCH: wake the loop waiting for keys. Only `write`, which is async-signal-safe.
private func wakeOnResize(_ signal: Int32) {
  let descriptor = SignalRestore.resizeDescriptor
  guard descriptor >= 0 else { return }
  var byte: UInt8 = 1
  _ = write(descriptor, &byte, 1)
}

// MARK: - Keys

/// A key press, decoded from the bytes a terminal sends.
enum Key: Hashable, Sendable {
  /// A printable character, space included.
  case character(Character)
  /// Arrow up (`ESC [ A` or `ESC O A`).
  case up
  /// Arrow down (`ESC [ B` or `ESC O B`).
  case down
  /// Arrow right (`ESC [ C` or `ESC O C`).
  case right
  /// Arrow left (`ESC [ D` or `ESC O D`).
  case left
  /// Home.
  case home
  /// End.
  case end
  /// Page up.
  case pageUp
  /// Page down.
  case pageDown
  /// Insert.
  case insert
  /// Delete (forward).
  case delete
  /// Return or enter.
  case enter
  /// Tab.
  case tab
  /// Backspace.
  case backspace
  /// Escape on its own.
  case escape
  /// A control key: `.control("c")` for Ctrl-C.
  case control(Character)
  /// A sequence this decoder does not know, with its bytes.
  case unknown([UInt8])
}

/// Turns the bytes a terminal sends into keys, keeping an unfinished sequence for the next
/// bytes.
///
/// A lone ESC is ambiguous (the start of an arrow, or the Escape key): ``decode(_:)`` keeps it
/// pending, and ``flush()`` reports it as `.escape` once no more bytes came in a short while.
struct KeyDecoder {
  private var pending: [UInt8] = []

  /// Whether bytes of an unfinished key are waiting.
  var hasPending: Bool { !pending.isEmpty }

  /// Decodes `bytes` after what was pending.
  /// - Parameter bytes: The bytes read.
  /// - Returns: The complete keys, in order; an unfinished one stays pending.
  mutating func decode(_ bytes: some Sequence<UInt8>) -> [Key] {
    pending.append(contentsOf: bytes)
    var keys: [Key] = []
    var index = 0
    while index < pending.count {
      guard let (key, length) = Self.key(in: pending[index...]) else { break }
      keys.append(key)
      index += length
    }
    pending.removeFirst(index)
    return keys
  }

  /// Ends what is pending: a lone ESC becomes `.escape`, anything else `.unknown`.
  /// - Returns: The keys that were pending.
  mutating func flush() -> [Key] {
    guard !pending.isEmpty else { return [] }
    var keys: [Key] = []
    if pending.first == 0x1B {
      keys.append(.escape)
      pending.removeFirst()
      keys += decode([])
    }
    if !pending.isEmpty {
      keys.append(.unknown(pending))
      pending = []
    }
    return keys
  }

  /// The key at the start of `bytes` and its length, or `nil` when it is unfinished.
  private static func key(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let start = bytes.startIndex
    let first = bytes[start]
    switch first {
    case 0x1B:
      return escapeSequence(in: bytes)
    case 0x0D, 0x0A:
      return (.enter, 1)
    case 0x09:
      return (.tab, 1)
    case 0x7F, 0x08:
      return (.backspace, 1)
    case 0x01...0x1A:
      return (.control(Character(Unicode.Scalar(first + 0x60))), 1)
    case 0x00, 0x1C...0x1F:
      return (.control(Character(Unicode.Scalar(first + 0x40))), 1)
    case 0x20...0x7E:
      return (.character(Character(Unicode.Scalar(first))), 1)
    default:
      return utf8Character(in: bytes)
    }
  }

  private static func escapeSequence(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let start = bytes.startIndex
    guard bytes.count > 1 else { return nil }
    switch bytes[start + 1] {
    case UInt8(ascii: "["):
      // CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one final byte.
      var index = start + 2
      while index < bytes.endIndex, (0x20...0x3F).contains(bytes[index]) { index += 1 }
      guard index < bytes.endIndex else { return nil }
      let final = bytes[index]
      let length = index - start + 1
      guard (0x40...0x7E).contains(final) else {
        return (.unknown(Array(bytes.prefix(length))), length)
      }
      let parameters = String(decoding: bytes[(start + 2)..<index], as: UTF8.self)
      let first = parameters.split(separator: ";").first.map(String.init) ?? ""
      let key: Key? =
        switch (final, first) {
        case (UInt8(ascii: "A"), _): .up
        case (UInt8(ascii: "B"), _): .down
        case (UInt8(ascii: "C"), _): .right
        case (UInt8(ascii: "D"), _): .left
        case (UInt8(ascii: "H"), _): .home
        case (UInt8(ascii: "F"), _): .end
        case (UInt8(ascii: "~"), "1"), (UInt8(ascii: "~"), "7"): .home
        case (UInt8(ascii: "~"), "4"), (UInt8(ascii: "~"), "8"): .end
        case (UInt8(ascii: "~"), "2"): .insert
        case (UInt8(ascii: "~"), "3"): .delete
        case (UInt8(ascii: "~"), "5"): .pageUp
        case (UInt8(ascii: "~"), "6"): .pageDown
        default: nil
        }
      return (key ?? .unknown(Array(bytes.prefix(length))), length)
    case UInt8(ascii: "O"):
      // SS3, sent for arrows in "application cursor keys" mode.
      guard bytes.count > 2 else { return nil }
      let key: Key? =
        switch bytes[start + 2] {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "H"): .home
        case UInt8(ascii: "F"): .end
        default: nil
        }
      return (key ?? .unknown(Array(bytes.prefix(3))), 3)
    default:
      // ESC followed by anything else: Escape, then that key (Alt+key reads as both).
      return (.escape, 1)
    }
  }

  private static func utf8Character(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let first = bytes[bytes.startIndex]
    let length: Int
    switch first {
    case 0xC2...0xDF: length = 2
    case 0xE0...0xEF: length = 3
    case 0xF0...0xF4: length = 4
    default: return (.unknown([first]), 1)
    }
    guard bytes.count >= length else { return nil }
    let sequence = Array(bytes.prefix(length))
    guard let text = String(validating: sequence, as: UTF8.self), let character = text.first
    else { return (.unknown(sequence), length) }
    return (.character(character), length)
  }
}

// MARK: - Reading

/// Wakes a ``KeyReader`` from another thread, or from a signal handler: a pipe whose read end
/// the reader waits on.
final class Waker: Sendable {
  /// The end the reader waits on.
  let readDescriptor: Int32
  /// The end ``wake()`` writes to.
  let writeDescriptor: Int32

  /// Creates the pipe.
  /// - Throws: ``TerminalError`` when the process is out of descriptors.
  init() throws(TerminalError) {
    var descriptors: [Int32] = [-1, -1]
    guard pipe(&descriptors) == 0 else {
      throw TerminalError(description: "cannot create a pipe: \(String(cString: strerror(errno)))")
    }
    for descriptor in descriptors {
      _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
      _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }
    readDescriptor = descriptors[0]
    writeDescriptor = descriptors[1]
  }

  deinit {
    close(readDescriptor)
    close(writeDescriptor)
  }

  /// Wakes the reader; wakes that come before it looks are merged into one. Safe from any
  /// thread.
  func wake() {
    var byte: UInt8 = 1
    _ = write(writeDescriptor, &byte, 1)  // A full pipe already holds a wake.
  }

  /// Empties the pipe.
  func drain() {
    var buffer = [UInt8](repeating: 0, count: 64)
    while buffer.withUnsafeMutableBytes({ read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {}
  }
}

/// Waits for keys on a terminal, for a timeout, or for a ``Waker``.
final class KeyReader {
  /// What ended a wait.
  enum Event: Equatable {
    /// Keys were pressed.
    case keys([Key])
    /// The timeout passed.
    case timedOut
    /// ``waker`` was woken.
    case woken
    /// The input was closed.
    case endOfInput
  }

  /// The descriptor read.
  let descriptor: Int32
  /// Wakes ``next(timeout:)`` from another thread.
  let waker: Waker
  /// How long to wait for the rest of an escape sequence before a lone ESC counts as Escape.
  var escapeDelay: Duration = .milliseconds(40)
  private var decoder = KeyDecoder()

  /// Creates a reader.
  /// - Parameters:
  ///   - descriptor: The terminal to read; standard input by default.
  ///   - waker: What wakes ``next(timeout:)`` from other threads; a new one by default.
  /// - Throws: ``TerminalError`` when the waker's pipe cannot be made.
  init(descriptor: Int32 = STDIN_FILENO, waker: Waker? = nil) throws(TerminalError) {
    self.descriptor = descriptor
    if let waker {
      self.waker = waker
    } else {
      self.waker = try Waker()
    }
  }

  /// Waits until keys arrive, `timeout` passes, or ``waker`` is woken.
  /// - Parameter timeout: How long to wait at most; `nil` waits without a limit.
  /// - Returns: What ended the wait. Keys win over a wake that came at the same time.
  /// - Throws: ``TerminalError`` when the terminal cannot be read.
  func next(timeout: Duration?) throws(TerminalError) -> Event {
    var fds = [
      pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
      pollfd(fd: waker.readDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    let ready = poll(&fds, 2, timeout.map(Self.milliseconds) ?? -1)
    if ready < 0 {
      if errno == EINTR { return .woken }
      throw TerminalError(description: "cannot wait for input: \(String(cString: strerror(errno)))")
    }
    if fds[1].revents != 0 { waker.drain() }
    if fds[0].revents != 0 {
      guard var keys = try readKeys() else { return .endOfInput }
      // An unfinished escape sequence: wait briefly for its rest.
      while decoder.hasPending {
        var more = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        if poll(&more, 1, Self.milliseconds(escapeDelay)) > 0, let rest = try readKeys() {
          keys += rest
        } else {
          keys += decoder.flush()
        }
      }
      return keys.isEmpty ? .woken : .keys(keys)
    }
    return ready == 0 ? .timedOut : .woken
  }

  /// The keys in what can be read now; `nil` at the end of input.
  private func readKeys() throws(TerminalError) -> [Key]? {
    var buffer = [UInt8](repeating: 0, count: 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 && (errno == EINTR || errno == EAGAIN) { return [] }
      if count < 0 {
        throw TerminalError(
          description: "cannot read the terminal: \(String(cString: strerror(errno)))")
      }
      if count == 0 { return nil }
      return decoder.decode(buffer[0..<count])
    }
  }

  private static func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    return Int32(clamping: max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
  }
}

// MARK: - Screen

/// One line of a frame: text, optionally in reverse video.
struct ScreenLine: Hashable, Sendable, ExpressibleByStringLiteral {
  /// The text; control characters are shown as escapes, and it is cut to the screen's width.
  var text: String
  /// Whether to draw it in reverse video (a selection bar).
  var isHighlighted = false

  /// A line.
  /// - Parameters:
  ///   - text: The text.
  ///   - isHighlighted: Whether to draw it in reverse video.
  init(_ text: String, isHighlighted: Bool = false) {
    self.text = text
    self.isHighlighted = isHighlighted
  }

  /// A plain line from a literal.
  /// - Parameter value: The text.
  init(stringLiteral value: String) {
    self.init(value)
  }
}

/// Draws frames of lines on a terminal, rewriting only the lines that differ from the frame
/// before.
///
/// Each ``render(_:)`` takes the whole screen as lines, from the top. The first frame (and the
/// first after ``invalidate()`` or a resize) clears the screen and draws every line; later
/// frames move the cursor to each changed line (`ESC [ row ; 1 H`), write it, and clear the
/// rest of it (`ESC [ K`). Lines beyond the screen's height are dropped, and each line is cut
/// one column short of the width so that the terminal never wraps or scrolls.
///
/// ```swift
/// let screen = Screen(size: Terminal.size())
/// screen.render(["Counters", "> number is 1"])
/// screen.render(["Counters", "> number is 2"])  // rewrites line 2 only
/// ```
final class Screen {
  /// The size frames are fitted to.
  private(set) var size: TerminalSize
  private var previous: [ScreenLine]?
  private let write: (String) -> Void

  /// Creates a screen.
  /// - Parameters:
  ///   - size: The terminal's size.
  ///   - write: Where the escape sequences and text go; standard output by default.
  init(size: TerminalSize, write: @escaping (String) -> Void = { Terminal.write($0) }) {
    self.size = size
    self.write = write
  }

  /// Draws `lines`, writing only what changed since the last frame.
  /// - Parameter lines: The whole screen, from the top.
  func render(_ lines: [ScreenLine]) {
    let output = frame(lines)
    if !output.isEmpty { write(output) }
  }

  /// Draws plain lines, as the other `render(_:)` does.
  /// - Parameter lines: The whole screen, from the top.
  func render(_ lines: [String]) {
    render(lines.map { ScreenLine($0) })
  }

  /// What ``render(_:)`` writes for `lines`; the screen then takes `lines` as drawn.
  /// - Parameter lines: The whole screen, from the top.
  /// - Returns: The escape sequences and text; empty when nothing changed.
  func frame(_ lines: [ScreenLine]) -> String {
    let fitted = lines.prefix(size.rows).map { fit($0) }
    var output = ""
    let old: [ScreenLine]
    if let previous {
      old = previous
    } else {
      output += Terminal.clearScreen
      old = []
    }
    let blank = ScreenLine("")
    for row in 0..<max(fitted.count, old.count) {
      let line = row < fitted.count ? fitted[row] : blank
      let before = row < old.count ? old[row] : blank
      guard line != before else { continue }
      output += Terminal.moveCursor(row: row + 1)
      if line.isHighlighted {
        output += Terminal.reverseVideo + line.text + Terminal.resetAttributes
      } else {
        output += line.text
      }
      output += Terminal.clearToEndOfLine
    }
    previous = fitted
    return output
  }

  /// Makes the next frame redraw everything (after the screen was disturbed, or for Ctrl-L).
  func invalidate() {
    previous = nil
  }

  /// Fits later frames to `size`, redrawing everything when it changed.
  /// - Parameter size: The terminal's size now.
  func resize(to size: TerminalSize) {
    guard size != self.size else { return }
    self.size = size
    invalidate()
  }

  /// `line` with visible control characters, cut to one column less than the width.
  private func fit(_ line: ScreenLine) -> ScreenLine {
    let limit = max(0, size.columns - 1)
    var text = ""
    var width = 0
    for character in Rendering.visible(line.text) {
      let cells = Self.width(of: character)
      if width + cells > limit { break }
      text.append(character)
      width += cells
    }
    return ScreenLine(text, isHighlighted: line.isHighlighted)
  }

  /// How many cells `character` takes: 2 for East Asian wide characters and emoji, else 1.
  static func width(of character: Character) -> Int {
    Terminal.width(of: character)
  }
}
