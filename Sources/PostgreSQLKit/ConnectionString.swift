/// Reads connection strings in libpq's two forms — URIs (`postgresql://…`,
/// `postgres://…`) and keyword/value strings (`host=… password='…'`) — far enough to find
/// the passwords in them, without libpq, so that even a malformed string can be shown
/// safely.
///
/// Where the string is ambiguous the reading errs towards hiding more: an unterminated
/// quoted password hides the rest of the string, and in a URI everything between the
/// first `:` of the user part and the last `@` before the query is the password.
enum ConnectionString {
  /// What replaces a password.
  static let mask = "***"

  /// `text` with every password replaced by `***`.
  static func redacted(_ text: String) -> String {
    var result = ""
    for piece in pieces(of: text) {
      switch piece {
      case .plain(let part): result += part
      case .password: result += mask
      case .nested(let written, let decoded):
        let inner = redacted(decoded)
        result += inner == decoded ? written : inner
      }
    }
    return result
  }

  /// The passwords `text` sets, both as written and decoded (percent or backslash
  /// escapes), to scrub from messages that might quote them.
  static func passwords(in text: String) -> [String] {
    var found: [String] = []
    for piece in pieces(of: text) {
      switch piece {
      case .plain: break
      case .password(let written, let decoded): found += [written, decoded]
      case .nested(_, let decoded): found += passwords(in: decoded)
      }
    }
    return found.filter { !$0.isEmpty }
  }

  /// `message` with every occurrence of the passwords replaced.
  static func scrub(_ message: String, passwords: [String]) -> String {
    var message = message
    // Longest first, so that a password containing another is replaced whole.
    for password in passwords.sorted(by: { $0.count > $1.count }) {
      message = message.replacing(password, with: mask)
    }
    return message
  }

  private enum Piece {
    /// Text shown as it is.
    case plain(String)
    /// A password as written, and decoded.
    case password(written: String, decoded: String)
    /// A `dbname` value that is itself a connection string (libpq expands it in some
    /// contexts), redacted on its own.
    case nested(written: String, decoded: String)
  }

  private static func isURI(_ text: String) -> Bool {
    let lower = text.lowercased()
    return lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://")
  }

  /// Whether a `dbname` value is a connection string rather than a database name.
  private static func looksLikeConnectionString(_ value: String) -> Bool {
    isURI(value) || value.contains("=")
  }

  private static func pieces(of text: String) -> [Piece] {
    isURI(text) ? uriPieces(text) : keywordPieces(text)
  }

  // MARK: - URIs

  private static func uriPieces(_ text: String) -> [Piece] {
    let chars = Array(text)
    guard let schemeEnd = text.firstRange(of: "://") else { return [.plain(text)] }
    let start = text.distance(from: text.startIndex, to: schemeEnd.upperBound)
    let queryStart = chars[start...].firstIndex(of: "?") ?? chars.count
    var pieces: [Piece] = []
    var copied = 0
    if let at = chars[start..<queryStart].lastIndex(of: "@"),
      let colon = chars[start..<at].firstIndex(of: ":")
    {
      let written = String(chars[(colon + 1)..<at])
      pieces.append(.plain(String(chars[0...colon])))
      pieces.append(.password(written: written, decoded: percentDecoded(written)))
      copied = at
    }
    guard queryStart < chars.count else {
      pieces.append(.plain(String(chars[copied...])))
      return pieces
    }
    pieces.append(.plain(String(chars[copied...queryStart])))
    let query = chars[(queryStart + 1)...].split(separator: "&", omittingEmptySubsequences: false)
    for (offset, parameter) in query.enumerated() {
      if offset > 0 { pieces.append(.plain("&")) }
      guard let equals = parameter.firstIndex(of: "=") else {
        pieces.append(.plain(String(parameter)))
        continue
      }
      let key = percentDecoded(String(parameter[..<equals])).lowercased()
      let value = String(parameter[(equals + 1)...])
      pieces.append(.plain(String(parameter[...equals])))
      if key == "password" {
        pieces.append(.password(written: value, decoded: percentDecoded(value)))
      } else if key == "dbname", looksLikeConnectionString(percentDecoded(value)) {
        pieces.append(.nested(written: value, decoded: percentDecoded(value)))
      } else {
        pieces.append(.plain(value))
      }
    }
    return pieces
  }

  /// `text` with `%XX` escapes decoded; malformed escapes stay as they are.
  static func percentDecoded(_ text: String) -> String {
    var bytes: [UInt8] = []
    var utf8 = Array(text.utf8)[...]
    while let byte = utf8.popFirst() {
      if byte == UInt8(ascii: "%"), utf8.count >= 2,
        let high = hexDigitValue(utf8[utf8.startIndex]),
        let low = hexDigitValue(utf8[utf8.startIndex + 1])
      {
        bytes.append(high << 4 | low)
        utf8 = utf8.dropFirst(2)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  // MARK: - Keyword/value strings

  private static func keywordPieces(_ text: String) -> [Piece] {
    let chars = Array(text)
    var pieces: [Piece] = []
    var index = 0
    func skipSpaces() {
      while index < chars.count, chars[index].isWhitespace { index += 1 }
    }
    while index < chars.count {
      let keyStart = index
      skipSpaces()
      while index < chars.count, chars[index] != "=", !chars[index].isWhitespace { index += 1 }
      let key = String(chars[keyStart..<index]).trimmingWhitespace().lowercased()
      skipSpaces()
      guard index < chars.count, chars[index] == "=" else {
        // Not `key=value`: libpq refuses the string. After `password`, hide the rest.
        if key == "password" {
          pieces.append(.plain(String(chars[keyStart..<index])))
          if index < chars.count { pieces.append(.password(written: "", decoded: "")) }
        } else {
          pieces.append(.plain(String(chars[keyStart...])))
        }
        return pieces
      }
      index += 1
      skipSpaces()
      pieces.append(.plain(String(chars[keyStart..<index])))
      let valueStart = index
      var decoded = ""
      if index < chars.count, chars[index] == "'" {
        index += 1
        while index < chars.count, chars[index] != "'" {
          if chars[index] == "\\", index + 1 < chars.count { index += 1 }
          decoded.append(chars[index])
          index += 1
        }
        if index < chars.count { index += 1 }  // the closing quote
      } else {
        while index < chars.count, !chars[index].isWhitespace {
          if chars[index] == "\\", index + 1 < chars.count { index += 1 }
          decoded.append(chars[index])
          index += 1
        }
      }
      let written = String(chars[valueStart..<index])
      if key == "password" {
        pieces.append(.password(written: written, decoded: decoded))
      } else if key == "dbname", looksLikeConnectionString(decoded) {
        pieces.append(.nested(written: written, decoded: decoded))
      } else {
        pieces.append(.plain(written))
      }
    }
    return pieces
  }
}

extension String {
  fileprivate func trimmingWhitespace() -> String {
    String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
  }
}
