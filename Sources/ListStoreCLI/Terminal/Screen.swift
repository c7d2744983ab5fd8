import ListStoreFormats
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

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
