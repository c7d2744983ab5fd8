import ListStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A JSON tokenizer that reads a file descriptor a chunk at a time, so that a file of
/// any size is read in bounded memory: what `import` parses with.
///
/// It accepts and refuses exactly what ``JSONSyntax`` does, with the same messages, and
/// keeps the line and column of where it is (counted as it goes, so a file is never read
/// twice to report an error). While ``capturing`` is on, every byte of the text outside
/// white space is appended to ``capture``: the compact text of the values read, as
/// SQLite's `json()` would store them.
///
/// ```swift
/// let stream = JSONStream(descriptor: fd)
/// while try stream.next() != .end { … }
/// ```
package final class JSONStream {
  /// One piece of JSON text.
  package enum Token: Equatable {
    case beginObject, endObject, beginArray, endArray
    /// An object member's key (its colon read too); the member's value comes next.
    case key(String)
    /// A string; its text (with quotes) is ``scalar``.
    case string
    /// A number; its text is ``scalar``.
    case number
    /// `true`, `false` or `null`; its text is ``scalar``.
    case literal
    /// The end of the input, after the one top-level value.
    case end
  }

  /// What `next()` expects in the innermost open container.
  private enum State {
    /// Right after `{` or `[`.
    case opened
    /// After an element: `,` or the closer.
    case afterElement
    /// After an object member's key and colon: its value.
    case afterKey
  }

  /// A place in the input, with what its line and column need.
  private struct Mark {
    var offset: Int
    var line: Int
    var lineStart: Int
    var continuationBytes: Int
  }

  private struct Container {
    var isObject: Bool
    /// Where its `{` or `[` is.
    var start: Mark
    var state: State
  }

  private let descriptor: Int32
  /// A copy of everything read is written here, when set (standard input read twice).
  private var buffer: [UInt8]
  /// The next byte to read in `buffer`, and the end of the bytes read into it.
  private var index = 0
  private var count = 0
  /// The offset in the input of `buffer[0]`.
  private var base = 0
  private var atEndOfInput = false
  private var stack: [Container] = []
  private var started = false
  private var finished = false

  /// Whether compact text is being appended to ``capture``.
  package var capturing = false
  /// The compact text read while ``capturing``.
  package var capture: [UInt8] = []
  /// Where the last token's text begins in ``capture``.
  package private(set) var tokenStart = 0
  /// The text of the last string, number or literal token.
  package private(set) var scalar: [UInt8] = []

  /// The line (from 1) and the start offset of the line being read, and the UTF-8
  /// continuation bytes read on it, for columns in characters.
  private var line = 1
  private var lineStart = 0
  private var continuationBytes = 0

  /// A failure: a message and where, as ``JSONSyntax/SyntaxError`` gives it.
  package typealias Failure = JSONSyntax.SyntaxError

  /// Reads from `descriptor` (not closed here).
  package init(descriptor: Int32, chunkSize: Int = 1 << 20) {
    self.descriptor = descriptor
    buffer = [UInt8](repeating: 0, count: chunkSize)
  }

  /// Reads `bytes`, the whole input (a request's body).
  package init(bytes: [UInt8]) {
    descriptor = -1
    buffer = bytes
    count = bytes.count
    atEndOfInput = true
  }

  /// The number of bytes read so far.
  package var offset: Int { base + index }

  /// How deeply the current position is nested in arrays and objects.
  package var depth: Int { stack.count }

  // MARK: Reading bytes

  /// Makes at least `wanted` bytes available from `index`, unless the input ends first.
  /// - Returns: Whether they are.
  @discardableResult
  private func ensure(_ wanted: Int) throws(Failure) -> Bool {
    if count - index >= wanted { return true }
    if atEndOfInput { return false }
    // Keep the unread bytes, at the front.
    if index > 0 {
      let remaining = count - index
      buffer.withUnsafeMutableBufferPointer { bytes in
        guard let start = bytes.baseAddress else { return }
        memmove(start, start + index, remaining)
      }
      base += index
      count = remaining
      index = 0
    }
    while count < wanted && !atEndOfInput {
      if count == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
      let read = buffer.withUnsafeMutableBufferPointer { bytes in
        Glibc.read(descriptor, bytes.baseAddress.map { $0 + count }, bytes.count - count)
      }
      if read < 0 {
        if errno == EINTR { continue }
        throw failure("cannot read: \(String(cString: strerror(errno)))")
      }
      if read == 0 {
        atEndOfInput = true
        break
      }
      count += read
    }
    return count - index >= wanted
  }

  /// The next byte, or `nil` at the end of the input.
  @inline(__always)
  private func peek() throws(Failure) -> UInt8? {
    if index < count { return buffer[index] }
    return try ensure(1) ? buffer[index] : nil
  }

  /// Consumes one significant byte, capturing it.
  @inline(__always)
  private func consume(_ byte: UInt8) {
    index += 1
    if capturing { capture.append(byte) }
  }

  private func skipSpace() throws(Failure) {
    while true {
      while index < count {
        let byte = buffer[index]
        guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
        index += 1
        if byte == 0x0A {
          line += 1
          lineStart = base + index
          continuationBytes = 0
        }
      }
      guard try ensure(1) else { return }
    }
  }

  // MARK: Errors

  /// The current place.
  private func mark() -> Mark {
    Mark(
      offset: offset, line: line, lineStart: lineStart, continuationBytes: continuationBytes)
  }

  /// A failure at `place` (the current one by default).
  private func failure(_ message: String, at place: Mark? = nil, numberOutOfRange: Bool = false)
    -> Failure
  {
    let place = place ?? mark()
    // Columns count characters: bytes on the line, less UTF-8 continuation bytes.
    let column = place.offset - place.lineStart - place.continuationBytes + 1
    return Failure(
      message: message, offset: place.offset, line: place.line, column: max(column, 1),
      isNumberOutOfRange: numberOutOfRange)
  }

  /// A failure one byte before the current place (on the same line).
  private func failureBefore(_ message: String) -> Failure {
    var place = mark()
    place.offset -= 1
    return failure(message, at: place)
  }

  /// The byte at the current position in words, as ``JSONSyntax`` says it.
  private func describeByte() -> String {
    _ = try? ensure(4)
    guard index < count else { return "end of input" }
    let byte = buffer[index]
    if (0x21...0x7E).contains(byte) { return "'\(Character(Unicode.Scalar(byte)))'" }
    if byte < 0x20 || byte == 0x7F { return "control character 0x\(String(byte, radix: 16))" }
    if byte == 0x20 { return "space" }
    var end = index + 1
    while end < count && end < index + 4 && buffer[end] & 0xC0 == 0x80 { end += 1 }
    return String(validating: buffer[index..<end], as: UTF8.self).map { "'\($0)'" }
      ?? "byte 0x\(String(byte, radix: 16, uppercase: true)) (not UTF-8)"
  }

  private func notClosed(_ container: Container) -> Failure {
    let closer = container.isObject ? "}" : "]"
    return failure(
      "the \(container.isObject ? "object" : "array") is not closed (a \(closer) is missing)",
      at: container.start)
  }

  // MARK: Tokens

  /// The next token.
  /// - Throws: ``Failure`` at the first problem.
  package func next() throws(Failure) -> Token {
    if !started {
      started = true
      if try ensure(3), buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF {
        index = 3  // A byte order mark, which some editors write.
        continuationBytes += 2
      }
      try skipSpace()
      guard try peek() != nil else { throw failure("no JSON value (the input is empty)") }
      return try value()
    }
    guard var top = stack.last else {
      if !finished {
        finished = true
        try skipSpace()
        if try peek() != nil {
          throw failure(
            "unexpected \(describeByte()) after the JSON value; only one value is allowed")
        }
      }
      return .end
    }
    let closer = top.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
    switch top.state {
    case .afterKey:
      top.state = .afterElement
      stack[stack.count - 1] = top
      try skipSpace()
      guard try peek() != nil else { throw notClosed(top) }
      return try value()
    case .opened:
      try skipSpace()
      guard let byte = try peek() else { throw notClosed(top) }
      if byte == closer { return close(closer) }
    case .afterElement:
      try skipSpace()
      guard let byte = try peek() else { throw notClosed(top) }
      if byte == closer { return close(closer) }
      guard byte == UInt8(ascii: ",") else {
        throw failure(
          "unexpected \(describeByte()); expected ',' or '\(Character(Unicode.Scalar(closer)))' "
            + "after \(top.isObject ? "an object member" : "an array element")")
      }
      consume(byte)
      try skipSpace()
      guard let next = try peek() else { throw notClosed(top) }
      if next == closer {
        throw failure(
          "a ',' before '\(Character(Unicode.Scalar(closer)))' (JSON allows no trailing comma)")
      }
    }
    // An element.
    if top.isObject {
      top.state = .afterKey
      stack[stack.count - 1] = top
      return try key()
    }
    top.state = .afterElement
    stack[stack.count - 1] = top
    return try value()
  }

  private func close(_ closer: UInt8) -> Token {
    tokenStart = capture.count
    consume(closer)
    stack.removeLast()
    return closer == UInt8(ascii: "}") ? .endObject : .endArray
  }

  /// Reads tokens until the end of the input, checking its syntax.
  package func skipToEnd() throws(Failure) {
    while try next() != .end {}
  }

  /// Reads the rest of the value whose first token was just read (nothing for a scalar).
  package func skipValue(startingWith token: Token) throws(Failure) {
    guard token == .beginObject || token == .beginArray else { return }
    let depth = stack.count
    while stack.count >= depth { _ = try next() }
  }

  private func key() throws(Failure) -> Token {
    guard try peek() == UInt8(ascii: "\"") else {
      throw failure("unexpected \(describeByte()); expected a key in double quotes")
    }
    tokenStart = capture.count
    try string()
    let key = scalar.withUnsafeBufferPointer { JSONText.unquote(bytes: $0) } ?? ""
    try skipSpace()
    guard try peek() == UInt8(ascii: ":") else {
      throw failure("unexpected \(describeByte()); expected ':' after the key \(quoted(key))")
    }
    consume(UInt8(ascii: ":"))
    return .key(key)
  }

  /// A value at the current (non-space) byte.
  private func value() throws(Failure) -> Token {
    guard let byte = try peek() else { throw failure("no JSON value") }
    tokenStart = capture.count
    switch byte {
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      guard stack.count < JSONSyntax.maximumDepth else {
        throw failure("arrays and objects nest more than \(JSONSyntax.maximumDepth) deep")
      }
      let isObject = byte == UInt8(ascii: "{")
      stack.append(Container(isObject: isObject, start: mark(), state: .opened))
      consume(byte)
      return isObject ? .beginObject : .beginArray
    case UInt8(ascii: "\""):
      try string()
      return .string
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      try number()
      return .number
    case UInt8(ascii: "t"):
      try literal("true")
      return .literal
    case UInt8(ascii: "f"):
      try literal("false")
      return .literal
    case UInt8(ascii: "n"):
      try literal("null")
      return .literal
    default:
      throw failure(
        "unexpected \(describeByte()); expected a JSON value (a string in double quotes, a "
          + "number, true, false, null, an array or an object)")
    }
  }

  /// Appends the scalar's byte to ``scalar`` (and ``capture``) and moves on.
  @inline(__always)
  private func take(_ byte: UInt8) {
    scalar.append(byte)
    consume(byte)
  }

  private func literal(_ word: String) throws(Failure) {
    let start = mark()
    scalar.removeAll(keepingCapacity: true)
    // The whole word as written: `nul`, `nulls` or `not` are all a misspelt `null` or an
    // unquoted string.
    var written: [UInt8] = []
    while let next = try peek(), Self.isLetter(next), written.count <= 40 {
      written.append(next)
      take(next)
    }
    guard written.elementsEqual(word.utf8) else {
      throw failure(
        "unexpected \(quoted(String(decoding: written, as: UTF8.self))); expected a JSON value "
          + "such as \(word) (strings need double quotes)", at: start)
    }
  }

  private static func isLetter(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
      || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
  }

  private static func isDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
  }

  private func digits() throws(Failure) -> Int {
    var taken = 0
    while let byte = try peek(), Self.isDigit(byte) {
      take(byte)
      taken += 1
    }
    return taken
  }

  private func number() throws(Failure) {
    let start = mark()
    scalar.removeAll(keepingCapacity: true)
    if try peek() == UInt8(ascii: "-") { take(UInt8(ascii: "-")) }
    guard let first = try peek(), Self.isDigit(first) else {
      throw failure("a number needs a digit after '-'")
    }
    if first == UInt8(ascii: "0") {
      take(first)
      if let next = try peek(), Self.isDigit(next) {
        throw failure("a number cannot start with 0 followed by digits", at: start)
      }
    } else {
      _ = try digits()
    }
    if try peek() == UInt8(ascii: ".") {
      take(UInt8(ascii: "."))
      guard try digits() > 0 else {
        throw failure("a number needs digits after its decimal point")
      }
    }
    if let byte = try peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
      take(byte)
      if let sign = try peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
        take(sign)
      }
      guard try digits() > 0 else { throw failure("a number needs digits in its exponent") }
    }
    // Integers of up to 15 digits always fit; longer numbers and fractions are checked.
    if scalar.count > 15 || scalar.contains(where: { !Self.isDigit($0) && $0 != UInt8(ascii: "-") })
    {
      let text = String(decoding: scalar, as: UTF8.self)
      guard let value = Double(text), value.isFinite else {
        throw failure(
          "the number \(text) is valid JSON but out of range: numbers must fit in a "
            + "64-bit float (up to about ±1.8e308)", at: start, numberOutOfRange: true)
      }
    }
  }

  private func string() throws(Failure) {
    let start = mark()
    scalar.removeAll(keepingCapacity: true)
    take(UInt8(ascii: "\""))
    while true {
      // The common case, in a tight loop: plain ASCII.
      while index < count {
        let byte = buffer[index]
        guard
          byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"")
            && byte != UInt8(ascii: "\\")
        else { break }
        take(byte)
      }
      guard let byte = try peek() else {
        throw failure("a string is not closed (a \" is missing)", at: start)
      }
      switch byte {
      case UInt8(ascii: "\""):
        take(byte)
        return
      case UInt8(ascii: "\\"):
        take(byte)
        guard let escape = try peek() else {
          throw failure("a string is not closed (a \" is missing)", at: start)
        }
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
          UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
          take(escape)
        case UInt8(ascii: "u"):
          take(escape)
          for _ in 0..<4 {
            guard let digit = try peek(), Self.isHexDigit(digit) else {
              throw failure("\\u needs four hexadecimal digits")
            }
            take(digit)
          }
        default:
          let described = describeByte()
          let bare =
            described.hasPrefix("'") && described.hasSuffix("'") && described.count >= 2
            ? String(described.dropFirst().dropLast()) : described
          throw failureBefore("unknown escape \\\(bare) in a string")
        }
      case 0x00..<0x20:
        throw failure(
          "\(describeByte()) inside a string; write it escaped (\\n, \\t, \\u0000)")
      case 0x20..<0x80:
        take(byte)  // Plain ASCII at the end of a chunk read.
      default:
        // A multi-byte UTF-8 character, checked whole.
        let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
        try ensure(length)
        let end = min(index + length, count)
        guard length > 1, String(validating: buffer[index..<end], as: UTF8.self) != nil else {
          throw failure("a string holds bytes that are not UTF-8")
        }
        for position in index..<end { take(buffer[position]) }
        continuationBytes += length - 1
      }
    }
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
      || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
  }
}
