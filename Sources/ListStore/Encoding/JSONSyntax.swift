/// A JSON parser that keeps where every value is in its text, for the CLI's two needs:
/// errors that point at a line and column (or a place like `sections[2].items[5]`), and
/// values passed through as the very text the user wrote, so keys keep their order and
/// numbers their spelling.
///
/// It accepts RFC 8259 JSON and refuses, besides syntax errors, a number too large for a
/// 64-bit float (`1e400`): valid JSON that no reader of the database could use.
///
/// ```swift
/// let bytes = Array(#"{"name": "kiwi", "count": 3}"#.utf8)
/// let node = try JSONSyntax.parse(bytes)
/// node.text(in: bytes)  // {"name": "kiwi", "count": 3}, as written
/// ```
package enum JSONSyntax {
  /// One parsed value and where it is.
  package struct Node {
    /// What kind of value it is, with its children.
    package indirect enum Kind {
      case null
      case bool(Bool)
      case number
      /// A string; its contents are read with ``JSONSyntax/Node/string(in:)``.
      case string
      case array([Node])
      /// Members in the order written; a key may repeat.
      case object([(key: String, value: Node)])
    }

    package var kind: Kind
    /// The value's bytes in the parsed text, without surrounding white space.
    package var range: Range<Int>

    /// The value as written.
    package func text(in bytes: [UInt8]) -> String {
      String(decoding: bytes[range], as: UTF8.self)
    }

    /// The string a `.string` node denotes; `nil` for other kinds.
    package func string(in bytes: [UInt8]) -> String? {
      guard case .string = kind else { return nil }
      return bytes[range].withUnsafeBufferPointer { JSONText.unquote(bytes: $0) }
    }

    /// What the value is, in plain words: "a string", "the number 5", "an object", …
    package func kindDescription(in bytes: [UInt8]) -> String {
      switch kind {
      case .null: "null"
      case .bool(let value): value ? "true" : "false"
      case .number: "the number \(text(in: bytes))"
      case .string: "a string"
      case .array: "an array"
      case .object: "an object"
      }
    }
  }

  /// Where and why parsing stopped.
  package struct SyntaxError: Error {
    /// What is wrong, e.g. `expected ',' or ']' after an array element`.
    package var message: String
    /// The byte offset of the problem.
    package var offset: Int
    /// The line, counted from 1.
    package var line: Int
    /// The column in characters, counted from 1.
    package var column: Int
    /// Whether the text is valid JSON whose number is too large to use.
    package var isNumberOutOfRange = false

    /// A failure `message` at `offset`, which is on `line` at `column`.
    package init(
      message: String, offset: Int, line: Int, column: Int, isNumberOutOfRange: Bool = false
    ) {
      self.message = message
      self.offset = offset
      self.line = line
      self.column = column
      self.isNumberOutOfRange = isNumberOutOfRange
    }

    /// "line 3, column 14", or "column 14" for one-line text.
    package func place(in bytes: [UInt8]) -> String {
      bytes.contains(0x0A) ? "line \(line), column \(column)" : "column \(column)"
    }
  }

  /// How deeply arrays and objects may nest; deeper input is refused rather than
  /// exhausting the stack.
  package static let maximumDepth = 512

  /// Parses one JSON value, allowing white space around it.
  /// - Parameter bytes: UTF-8 text.
  /// - Returns: The value with the places of its parts.
  /// - Throws: ``SyntaxError`` naming the line and column of the first problem.
  package static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> Node {
    var parser = Parser(bytes: bytes)
    // A byte order mark, which some editors write, is not part of the value.
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
    do throws(Failure) {
      parser.skipSpace()
      guard parser.index < bytes.count else {
        throw Failure(message: "no JSON value (the input is empty)", offset: parser.index)
      }
      let node = try parser.value(depth: 0)
      parser.skipSpace()
      if parser.index < bytes.count {
        throw Failure(
          message: "unexpected \(parser.describeByte()) after the JSON value; only one value is "
            + "allowed", offset: parser.index)
      }
      return node
    } catch {
      let (line, column) = position(of: error.offset, in: bytes)
      throw SyntaxError(
        message: error.message, offset: error.offset, line: line, column: column,
        isNumberOutOfRange: error.isNumberOutOfRange)
    }
  }

  /// Whether `text` is exactly one JSON value (white space around it allowed).
  package static func isJSON(_ text: String) -> Bool {
    (try? parse(Array(text.utf8))) != nil
  }

  /// The line and column (from 1, in characters) of a byte offset.
  package static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
    var line = 1
    var column = 1
    for byte in bytes[..<min(offset, bytes.count)] {
      if byte == 0x0A {
        line += 1
        column = 1
      } else if byte & 0xC0 != 0x80 {
        column += 1  // Not a UTF-8 continuation byte: a new character.
      }
    }
    return (line, column)
  }

  private struct Failure: Error {
    var message: String
    var offset: Int
    var isNumberOutOfRange = false
  }

  private struct Parser {
    let bytes: [UInt8]
    var index = 0

    mutating func skipSpace() {
      while index < bytes.count,
        bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D
          || bytes[index] == 0x09
      {
        index += 1
      }
    }

    func describeByte() -> String {
      guard index < bytes.count else { return "end of input" }
      let byte = bytes[index]
      if (0x21...0x7E).contains(byte) { return "'\(Character(Unicode.Scalar(byte)))'" }
      if byte < 0x20 || byte == 0x7F { return "control character 0x\(String(byte, radix: 16))" }
      if byte == 0x20 { return "space" }
      let end = bytes[index...].dropFirst().firstIndex { $0 & 0xC0 != 0x80 } ?? bytes.count
      return String(validating: bytes[index..<end], as: UTF8.self).map { "'\($0)'" }
        ?? "byte 0x\(String(byte, radix: 16, uppercase: true)) (not UTF-8)"
    }

    mutating func value(depth: Int) throws(Failure) -> Node {
      let start = index
      switch bytes[index] {
      case UInt8(ascii: "{"): return try container(.object, depth: depth)
      case UInt8(ascii: "["): return try container(.array, depth: depth)
      case UInt8(ascii: "\""):
        try string()
        return Node(kind: .string, range: start..<index)
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        try number()
        return Node(kind: .number, range: start..<index)
      case UInt8(ascii: "t"):
        try literal("true")
        return Node(kind: .bool(true), range: start..<index)
      case UInt8(ascii: "f"):
        try literal("false")
        return Node(kind: .bool(false), range: start..<index)
      case UInt8(ascii: "n"):
        try literal("null")
        return Node(kind: .null, range: start..<index)
      default:
        throw Failure(
          message: "unexpected \(describeByte()); expected a JSON value (a string in double "
            + "quotes, a number, true, false, null, an array or an object)", offset: index)
      }
    }

    mutating func literal(_ word: String) throws(Failure) {
      let start = index
      // The whole word as written: `nul`, `nulls` or `not` are all a misspelt `null` or an
      // unquoted string.
      var end = start
      while end < bytes.count, Self.isLetter(bytes[end]) { end += 1 }
      guard bytes[start..<end].elementsEqual(word.utf8) else {
        let written = String(decoding: bytes[start..<min(end, start + 40)], as: UTF8.self)
        throw Failure(
          message: "unexpected \(quoted(written)); expected a JSON value such as \(word) (strings "
            + "need double quotes)", offset: start)
      }
      index = end
    }

    static func isLetter(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    mutating func digits() -> Int {
      let start = index
      while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
      return index - start
    }

    mutating func number() throws(Failure) {
      let start = index
      if bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard index < bytes.count, Self.isDigit(bytes[index]) else {
        throw Failure(message: "a number needs a digit after '-'", offset: index)
      }
      if bytes[index] == UInt8(ascii: "0") {
        index += 1
        if index < bytes.count, Self.isDigit(bytes[index]) {
          throw Failure(message: "a number cannot start with 0 followed by digits", offset: start)
        }
      } else {
        _ = digits()
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
        index += 1
        guard digits() > 0 else {
          throw Failure(message: "a number needs digits after its decimal point", offset: index)
        }
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")
      {
        index += 1
        if index < bytes.count,
          bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
        {
          index += 1
        }
        guard digits() > 0 else {
          throw Failure(message: "a number needs digits in its exponent", offset: index)
        }
      }
      let text = String(decoding: bytes[start..<index], as: UTF8.self)
      guard let value = Double(text), value.isFinite else {
        throw Failure(
          message: "the number \(text) is valid JSON but out of range: numbers must fit in a "
            + "64-bit float (up to about ±1.8e308)", offset: start, isNumberOutOfRange: true)
      }
    }

    mutating func string() throws(Failure) {
      let start = index
      index += 1  // The opening quote.
      while index < bytes.count {
        let byte = bytes[index]
        switch byte {
        case UInt8(ascii: "\""):
          index += 1
          return
        case UInt8(ascii: "\\"):
          index += 1
          guard index < bytes.count else { break }
          switch bytes[index] {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 1
          case UInt8(ascii: "u"):
            index += 1
            for _ in 0..<4 {
              guard index < bytes.count, bytes[index].isHexDigit else {
                throw Failure(message: "\\u needs four hexadecimal digits", offset: index)
              }
              index += 1
            }
          default:
            throw Failure(
              message: "unknown escape \\\(describeByte().trimmingQuotes) in a string",
              offset: index - 1)
          }
        case 0x00..<0x20:
          throw Failure(
            message: "\(describeByte()) inside a string; write it escaped (\\n, \\t, \\u0000)",
            offset: index)
        case 0x80...:
          let length =
            byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
          let end = min(index + length, bytes.count)
          guard length > 1, String(validating: bytes[index..<end], as: UTF8.self) != nil else {
            throw Failure(message: "a string holds bytes that are not UTF-8", offset: index)
          }
          index = end
        default:
          index += 1
        }
      }
      throw Failure(message: "a string is not closed (a \" is missing)", offset: start)
    }

    /// Arrays and objects, which differ only in that an object's members have keys.
    enum Container {
      case array, object

      var name: String { self == .array ? "array" : "object" }
      var closer: UInt8 { self == .array ? UInt8(ascii: "]") : UInt8(ascii: "}") }
      var element: String { self == .array ? "an array element" : "an object member" }
    }

    mutating func container(_ kind: Container, depth: Int) throws(Failure) -> Node {
      let start = index
      guard depth < maximumDepth else {
        throw Failure(
          message: "arrays and objects nest more than \(maximumDepth) deep", offset: start)
      }
      index += 1
      let closer = Character(Unicode.Scalar(kind.closer))
      let notClosed = Failure(
        message: "the \(kind.name) is not closed (a \(closer) is missing)", offset: start)
      var elements: [Node] = []
      var members: [(key: String, value: Node)] = []
      skipSpace()
      if index < bytes.count, bytes[index] == kind.closer {
        index += 1
      } else {
        while true {
          skipSpace()
          guard index < bytes.count else { throw notClosed }
          if bytes[index] == kind.closer {
            throw Failure(
              message: "a ',' before '\(closer)' (JSON allows no trailing comma)", offset: index)
          }
          if kind == .object {
            let key = try self.key()
            skipSpace()
            guard index < bytes.count else { throw notClosed }
            members.append((key, try value(depth: depth + 1)))
          } else {
            elements.append(try value(depth: depth + 1))
          }
          skipSpace()
          guard index < bytes.count else { throw notClosed }
          if bytes[index] == kind.closer {
            index += 1
            break
          }
          guard bytes[index] == UInt8(ascii: ",") else {
            throw Failure(
              message: "unexpected \(describeByte()); expected ',' or '\(closer)' after "
                + kind.element, offset: index)
          }
          index += 1
        }
      }
      return Node(kind: kind == .array ? .array(elements) : .object(members), range: start..<index)
    }

    /// An object member's key and the colon after it.
    mutating func key() throws(Failure) -> String {
      guard bytes[index] == UInt8(ascii: "\"") else {
        throw Failure(
          message: "unexpected \(describeByte()); expected a key in double quotes", offset: index)
      }
      let keyStart = index
      try string()
      let key =
        bytes[keyStart..<index].withUnsafeBufferPointer { JSONText.unquote(bytes: $0) } ?? ""
      skipSpace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
        throw Failure(
          message: "unexpected \(describeByte()); expected ':' after the key \(quoted(key))",
          offset: index)
      }
      index += 1
      return key
    }
  }
}

extension UInt8 {
  fileprivate var isHexDigit: Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
      || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
      || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
  }
}

extension String {
  fileprivate var trimmingQuotes: String {
    hasPrefix("'") && hasSuffix("'") && count >= 2 ? String(dropFirst().dropLast()) : self
  }
}

/// The whole number a JSON number's text stands for: `42`, and also `42.0` or `4.2e1`
/// (JSON Schema's integers, as generators and other languages write them) up to 2^53,
/// where a double is still exact; `nil` for a fraction or a number out of range.
/// - Parameter text: A JSON number's text.
/// - Returns: The number.
package func wholeNumber(_ text: some StringProtocol) -> Int64? {
  if let value = Int64(text) { return value }
  guard text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }),
    let double = Double(text), double.rounded() == double, abs(double) <= 9_007_199_254_740_992
  else { return nil }
  return Int64(double)
}
