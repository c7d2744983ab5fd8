import FoundationEssentials

/// Fast conversions between Swift strings and JSON string literals.
package enum JSONText {
  /// `text` as a JSON string literal: quotes, backslashes and control characters
  /// escaped, everything else (including non-ASCII) verbatim.
  package static func quote(_ text: String) -> String {
    var needsEscape = false
    for byte in text.utf8
    where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
      needsEscape = true
      break
    }
    guard needsEscape else { return "\"" + text + "\"" }
    var result = "\""
    result.reserveCapacity(text.utf8.count + 8)
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case "\u{08}": result += "\\b"
      case "\u{0C}": result += "\\f"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result + "\""
  }

  /// The string a JSON string literal denotes, or `nil` when `json` is not exactly
  /// one valid JSON string (surrounding white space allowed).
  package static func unquote(_ json: String) -> String? {
    var json = json
    return json.withUTF8 { unquote(bytes: $0) }
  }

  /// ``unquote(_:)`` over UTF-8 bytes.
  package static func unquote(bytes: UnsafeBufferPointer<UInt8>) -> String? {
    var start = 0
    var end = bytes.count
    while start < end, isSpace(bytes[start]) { start += 1 }
    while end > start, isSpace(bytes[end - 1]) { end -= 1 }
    guard end - start >= 2, bytes[start] == UInt8(ascii: "\""), bytes[end - 1] == UInt8(ascii: "\"")
    else { return nil }
    let body = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(end - 1)])
    // The common case: nothing escaped. (SQLite keeps text as UTF-8; anything else is
    // repaired rather than refused.)
    var plain = true
    for byte in body where byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") || byte < 0x20 {
      plain = false
      break
    }
    if plain { return String(decoding: body, as: UTF8.self) }
    var output: [UInt8] = []
    output.reserveCapacity(body.count)
    var index = 0
    while index < body.count {
      let byte = body[index]
      index += 1
      if byte == UInt8(ascii: "\"") || byte < 0x20 { return nil }
      guard byte == UInt8(ascii: "\\") else {
        output.append(byte)
        continue
      }
      guard index < body.count else { return nil }
      let escape = body[index]
      index += 1
      switch escape {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
      case UInt8(ascii: "b"): output.append(0x08)
      case UInt8(ascii: "f"): output.append(0x0C)
      case UInt8(ascii: "n"): output.append(0x0A)
      case UInt8(ascii: "r"): output.append(0x0D)
      case UInt8(ascii: "t"): output.append(0x09)
      case UInt8(ascii: "u"):
        guard var scalar = hex4(body, &index) else { return nil }
        if (0xD800..<0xDC00).contains(scalar) {
          // A high surrogate must be followed by an escaped low surrogate.
          guard index + 1 < body.count, body[index] == UInt8(ascii: "\\"),
            body[index + 1] == UInt8(ascii: "u")
          else { return nil }
          index += 2
          guard let low = hex4(body, &index), (0xDC00..<0xE000).contains(low) else { return nil }
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicode = Unicode.Scalar(scalar) else { return nil }
        output.append(contentsOf: String(Character(unicode)).utf8)
      default: return nil
      }
    }
    return String(validating: output, as: UTF8.self)
  }

  private static func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
  }

  private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, _ index: inout Int) -> UInt32? {
    guard index + 4 <= bytes.count else { return nil }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      index += 1
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: return nil
      }
      value = value << 4 | UInt32(digit)
    }
    return value
  }
}

extension JSONText {
  /// Appends `json` to `bytes` on one line: as it is when it holds no line break, else
  /// without white space outside strings (valid JSON stays valid).
  package static func appendSingleLine(_ json: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8])
  {
    if json.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
      appendWithoutWhiteSpace(json, to: &bytes)
    } else {
      bytes.append(contentsOf: json)
    }
  }

  /// `json` without white space outside strings, so that it fits on one line.
  /// Valid JSON stays valid; the cheap check for line breaks comes first.
  package static func singleLine(_ json: String) -> String {
    guard json.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return json }
    return withoutWhiteSpace(json)
  }

  /// `json` without any white space outside strings: the text SQLite's `json()` stores
  /// for it, so that JSON given as text compares equal to what is stored.
  package static func minified(_ json: String) -> String {
    guard json.utf8.contains(where: { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 })
    else { return json }
    return withoutWhiteSpace(json)
  }

  private static func withoutWhiteSpace(_ json: String) -> String {
    var output: [UInt8] = []
    output.reserveCapacity(json.utf8.count)
    appendWithoutWhiteSpace(json.utf8, to: &output)
    return String(decoding: output, as: UTF8.self)
  }

  /// Appends the bytes of JSON text to `output`, leaving out the white space outside its
  /// strings.
  /// - Parameters:
  ///   - json: UTF-8 JSON text.
  ///   - output: Where the bytes go.
  package static func appendWithoutWhiteSpace(
    _ json: some Sequence<UInt8>, to output: inout [UInt8]
  ) {
    var inString = false
    var escaped = false
    for byte in json {
      if inString {
        output.append(byte)
        if escaped {
          escaped = false
        } else if byte == UInt8(ascii: "\\") {
          escaped = true
        } else if byte == UInt8(ascii: "\"") {
          inString = false
        }
      } else if byte == UInt8(ascii: "\"") {
        inString = true
        output.append(byte)
      } else if byte != 0x20 && byte != 0x0A && byte != 0x0D && byte != 0x09 {
        output.append(byte)
      }
    }
  }
}
