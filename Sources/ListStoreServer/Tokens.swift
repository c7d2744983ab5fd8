import FoundationEssentials

/// The bearer tokens of `--tokens FILE`: one a line, `TOKEN read` or `TOKEN write` (write
/// implies read), optionally limited to some lists — `TOKEN read groceries,todo`,
/// `TOKEN write *` — with names percent-encoded; a token on several lines has what they
/// give together. Blank lines and lines starting with `#` are skipped.
public struct Tokens: Sendable, Equatable {
  /// The lists a permission covers.
  public enum Scope: Sendable, Equatable {
    /// Every list, those made later included.
    case all
    /// The lists of these names.
    case lists(Set<String>)

    /// No list.
    public static let none = Scope.lists([])

    /// Whether the scope covers the list `name`.
    /// - Parameter name: A list's name.
    /// - Returns: Whether it is in the scope.
    public func covers(_ name: String) -> Bool {
      switch self {
      case .all: true
      case .lists(let names): names.contains(name)
      }
    }

    /// The lists of both.
    func union(_ other: Scope) -> Scope {
      switch (self, other) {
      case (.all, _), (_, .all): .all
      case (.lists(let a), .lists(let b)): .lists(a.union(b))
      }
    }

    /// Whether it covers no list.
    var isEmpty: Bool { self == .none }
  }

  /// What a token may do: read the lists of one scope, and write those of another, which
  /// it may read too.
  public struct Grant: Sendable, Equatable {
    /// The lists it may read.
    public var read: Scope
    /// The lists it may change, create, rename or delete.
    public var write: Scope

    /// Everything: what every request may do on a server without tokens.
    public static let everything = Grant(read: .all, write: .all)

    /// Makes a grant.
    /// - Parameters:
    ///   - read: The lists it may read.
    ///   - write: The lists it may write (read too).
    public init(read: Scope, write: Scope) {
      self.read = read.union(write)
      self.write = write
    }

    /// Whether it may read the list `name`.
    /// - Parameter name: A list's name.
    /// - Returns: Whether the list is in its read scope.
    public func mayRead(_ name: String) -> Bool { read.covers(name) }

    /// Whether it may write the list `name`.
    /// - Parameter name: A list's name.
    /// - Returns: Whether the list is in its write scope.
    public func mayWrite(_ name: String) -> Bool { write.covers(name) }
  }

  private var grants: [String: Grant] = [:]

  /// Tokens from `text`, the file's contents.
  /// - Parameters:
  ///   - text: The file's text.
  ///   - file: Its name, for errors.
  /// - Throws: ``ServerError`` naming the line of a malformed entry.
  public init(parsing text: String, file: String) throws(ServerError) {
    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
      if words.isEmpty || words[0].hasPrefix("#") { continue }
      let place = "\(file), line \(number + 1)"
      guard words.count == 2 || words.count == 3, words[1] == "read" || words[1] == "write"
      else {
        throw ServerError(
          "\(place): expected 'TOKEN read' or 'TOKEN write', optionally followed by the lists "
            + "it covers: '*', or names separated by commas (percent-encoded)")
      }
      let scope = try words.count == 3 ? Self.scope(String(words[2]), at: place) : .all
      let grant =
        words[1] == "write" ? Grant(read: scope, write: scope) : Grant(read: scope, write: .none)
      let token = String(words[0])
      let earlier = grants[token]
      grants[token] = Grant(
        read: (earlier?.read ?? .none).union(grant.read),
        write: (earlier?.write ?? .none).union(grant.write))
    }
    guard !grants.isEmpty else { throw ServerError("\(file) holds no token") }
  }

  /// The scope of a line: `*`, or names separated by commas, each percent-encoded.
  private static func scope(_ text: String, at place: String) throws(ServerError) -> Scope {
    if text == "*" { return .all }
    var names: Set<String> = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
      guard !part.isEmpty, let name = percentDecoded(part), !name.isEmpty else {
        throw ServerError(
          "\(place): \(String(part).debugDescription) is not a list name (percent-encoded; "
            + "names are separated by commas, without spaces)")
      }
      names.insert(name)
    }
    return .lists(names)
  }

  /// Reads the tokens file at `path`.
  /// - Parameter path: The file.
  /// - Throws: ``ServerError`` when it cannot be read, or holds a malformed line.
  public init(contentsOf path: String) throws(ServerError) {
    guard let data = FileManager.default.contents(atPath: path) else {
      let reason =
        !FileManager.default.fileExists(atPath: path)
        ? "there is no such file" : "it is not a file this process may read"
      throw ServerError("cannot read the tokens file \(path): \(reason)")
    }
    try self.init(parsing: String(decoding: data, as: UTF8.self), file: path)
  }

  /// What `token` may do; `nil` for an unknown token.
  /// - Parameter token: A token, as a request sent it.
  /// - Returns: Its grant.
  public func grant(for token: String) -> Grant? { grants[token] }
}
