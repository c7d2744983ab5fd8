import FoundationEssentials

/// The bearer tokens of `--tokens FILE`: one a line, `TOKEN read` or `TOKEN write`
/// (write implies read); blank lines and lines starting with `#` are skipped.
public struct Tokens: Sendable {
  /// What a token may do.
  public enum Access: Sendable, Comparable {
    case read, write
  }

  private var access: [String: Access] = [:]

  /// Tokens from `text`, the file's contents.
  /// - Throws: ``ServerError`` naming the line of a malformed entry.
  public init(parsing text: String, file: String) throws(ServerError) {
    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
      if words.isEmpty || words[0].hasPrefix("#") { continue }
      guard words.count == 2, let access = ["read": Access.read, "write": .write][String(words[1])]
      else {
        throw ServerError(
          "\(file), line \(number + 1): expected 'TOKEN read' or 'TOKEN write'")
      }
      self.access[String(words[0])] = access
    }
    guard !access.isEmpty else { throw ServerError("\(file) holds no token") }
  }

  /// Reads the tokens file at `path`.
  public init(contentsOf path: String) throws(ServerError) {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw ServerError("cannot read the tokens file \(path)")
    }
    try self.init(parsing: String(decoding: data, as: UTF8.self), file: path)
  }

  /// What `token` may do; `nil` for an unknown token.
  public func access(for token: String) -> Access? { access[token] }
}
