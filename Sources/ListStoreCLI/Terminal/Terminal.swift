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
