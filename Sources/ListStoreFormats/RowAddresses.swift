/// A section as the command line, `batch` and the HTTP API name it: by index, or by id
/// (`#42`).
package enum SectionAddress: Equatable, Sendable {
  case index(Int)
  case id(Int64)
}

/// An item as the command line, `batch` and the HTTP API name it: by index path (`0:1`),
/// or by id (`#42`).
package enum ItemAddress: Equatable, Sendable {
  case path(section: Int, row: Int)
  case id(Int64)
}

/// The id of `#42`, if `text` is one (a positive number in ASCII digits after `#`).
package func parseRowID(_ text: String) -> Int64? {
  guard text.hasPrefix("#"), let id = Int64(text.dropFirst()), id > 0,
    text.dropFirst().allSatisfy(\.isASCII)
  else { return nil }
  return id
}

/// `0:1` as (0, 1): two zero-based numbers, no signs.
package func parseIndexPath(_ text: String) -> (section: Int, row: Int)? {
  let parts = text.split(separator: ":", omittingEmptySubsequences: false)
  guard parts.count == 2, let section = Int(parts[0]), let row = Int(parts[1]), section >= 0,
    row >= 0, !parts[0].hasPrefix("+"), !parts[1].hasPrefix("+")
  else { return nil }
  return (section, row)
}

/// An operation that cannot be read or carried out, in words for the person who wrote it.
package struct OperationError: Error, CustomStringConvertible {
  /// What is wrong.
  package var message: String
  /// The column of a JSON syntax error in the operation's line.
  package var column: Int?

  package init(_ message: String, column: Int? = nil) {
    self.message = message
    self.column = column
  }

  package var description: String { message }
}
