import ListStoreFormats

extension Rendering {
  /// `pieces` joined by `separator` into lines at most `width` terminal cells wide, breaking
  /// only between pieces (a piece wider than `width` gets a line of its own).
  static func wrap(_ pieces: [String], separator: String = " ", width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for piece in pieces {
      let joined = line.isEmpty ? piece : line + separator + piece
      if !line.isEmpty && Terminal.displayWidth(of: joined) > width {
        lines.append(line)
        line = piece
      } else {
        line = joined
      }
    }
    if !line.isEmpty { lines.append(line) }
    return lines
  }

  /// "1 section", "2 sections": a count with its noun, plural when it is not one.
  static func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
  }
}
