import FoundationEssentials

/// A JSON value kept as its text, passed through the store without decoding.
///
/// Use it as the `Item` or `Metadata` of a list to read and write the stored JSON
/// verbatim (the CLI does). Writing it stores the text minified by SQLite's `json()`;
/// invalid JSON is refused with ``ListStoreError/invalidJSON(_:)``.
public struct RawJSON: Codable, Hashable, Sendable, CustomStringConvertible {
  /// The JSON text.
  public var text: String

  /// Wraps JSON text. It is validated when written to the store.
  /// - Parameter text: A JSON value: `"Paris"`, `42`, `{"name": "Paris"}`, …
  public init(_ text: String) { self.text = text }

  /// The JSON text.
  public var description: String { text }

  /// Decodes any JSON value and keeps it as compact text.
  /// - Parameter decoder: The decoder to read from.
  /// - Throws: `DecodingError` when the input is not JSON.
  public init(from decoder: any Decoder) throws {
    self.text = try JSONValue(from: decoder).jsonText
  }

  /// Encodes the JSON value the text holds.
  /// - Parameter encoder: The encoder to write to.
  /// - Throws: `EncodingError` when the text is not valid JSON.
  public func encode(to encoder: any Encoder) throws {
    let value: JSONValue
    do {
      value = try JSONValue.parse(text)
    } catch {
      throw EncodingError.invalidValue(
        text, .init(codingPath: encoder.codingPath, debugDescription: "not valid JSON"))
    }
    try value.encode(to: encoder)
  }
}

/// The metadata of a section as the CLI writes it: a header and an optional footer,
/// stored as `{"header": "Cities", "footer": "That's it"}`.
public struct SectionMetadata: Codable, Hashable, Sendable {
  /// The section's title.
  public var header: String
  /// The text under the section, if any.
  public var footer: String?

  /// Creates metadata.
  /// - Parameters:
  ///   - header: The section's title.
  ///   - footer: The text under the section, or `nil`.
  public init(header: String, footer: String? = nil) {
    self.header = header
    self.footer = footer
  }

  private enum CodingKeys: String, CodingKey {
    case header, footer
  }

  /// Decodes `{"header": …, "footer": …}`; a missing footer reads as `nil`.
  /// - Parameter decoder: The decoder to read from.
  /// - Throws: `DecodingError` when `header` is missing or not a string.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    header = try container.decode(String.self, forKey: .header)
    footer = try container.decodeIfPresent(String.self, forKey: .footer)
  }

  /// Encodes both keys, with `null` for a missing footer, so every reader of the
  /// table sees the same shape.
  /// - Parameter encoder: The encoder to write to.
  /// - Throws: `EncodingError` from the encoder.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(header, forKey: .header)
    try container.encode(footer, forKey: .footer)
  }
}

/// A decoded JSON value, for reading JSON whose shape is not known in advance.
package enum JSONValue: Codable, Hashable, Sendable {
  case null
  case bool(Bool)
  case integer(Int64)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  package init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(Bool.self) {
      self = .bool(value)
    } else if let value = try? container.decode(Int64.self) {
      self = .integer(value)
    } else if let value = try? container.decode(Double.self) {
      self = .number(value)
    } else if let value = try? container.decode(String.self) {
      self = .string(value)
    } else if let value = try? container.decode([JSONValue].self) {
      self = .array(value)
    } else {
      self = .object(try container.decode([String: JSONValue].self))
    }
  }

  package func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .bool(let value): try container.encode(value)
    case .integer(let value): try container.encode(value)
    case .number(let value): try container.encode(value)
    case .string(let value): try container.encode(value)
    case .array(let value): try container.encode(value)
    case .object(let value): try container.encode(value)
    }
  }

  /// Parses JSON text.
  package static func parse(_ text: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
  }

  /// Compact JSON text; object keys sorted so equal values print equally.
  package var jsonText: String {
    switch self {
    case .null: "null"
    case .bool(let value): value ? "true" : "false"
    case .integer(let value): String(value)
    case .number(let value):
      value.isFinite
        ? (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)")
        : "null"
    case .string(let value): JSONText.quote(value)
    case .array(let values): "[" + values.map(\.jsonText).joined(separator: ",") + "]"
    case .object(let members):
      "{"
        + members.sorted { $0.key < $1.key }.map {
          JSONText.quote($0.key) + ":" + $0.value.jsonText
        }
        .joined(separator: ",") + "}"
    }
  }
}

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

/// Encodes Swift values into the JSON text of the `value` and `metadata` columns and
/// back, with fast paths for `String` and ``RawJSON``.
@usableFromInline
package enum ValueCoder {
  /// The JSON text ListStore stores for `value`.
  package static func encode<Value: Encodable>(_ value: Value) throws(ListStoreError) -> String {
    try encoder(for: Value.self)(value)
  }

  /// An encoder of `Value`s into JSON text, chosen once per type rather than per
  /// value; general `Codable` types go through one ``JSONTextEncoder``, falling back to
  /// one `JSONEncoder` (made when first needed) for what it does not cover.
  static func encoder<Value: Encodable>(for type: Value.Type) -> (Value) throws(ListStoreError) ->
    String
  {
    if Value.self == String.self {
      return { value throws(ListStoreError) in JSONText.quote(value as? String ?? "") }
    }
    if Value.self == RawJSON.self {
      return { value throws(ListStoreError) in (value as? RawJSON)?.text ?? "null" }
    }
    if Value.self == SectionMetadata.self {
      return { value throws(ListStoreError) in
        guard let metadata = value as? SectionMetadata else { return "null" }
        // The shape the CLI writes, header first.
        return "{\"header\":" + JSONText.quote(metadata.header) + ",\"footer\":"
          + (metadata.footer.map(JSONText.quote) ?? "null") + "}"
      }
    }
    let fast = JSONTextEncoder()
    var fallback: JSONEncoder?
    return { value throws(ListStoreError) in
      // The fast path writes the same text as `JSONEncoder`; once a value's type or
      // shape made it give up, the rest of the batch goes straight to `JSONEncoder`.
      if !fast.unsupportedShape, let text = fast.encode(value) { return text }
      let encoder = fallback ?? makeJSONEncoder()
      fallback = encoder
      do {
        return String(decoding: try encoder.encode(value), as: UTF8.self)
      } catch {
        throw .encodingFailed("\(error)")
      }
    }
  }

  /// The `JSONEncoder` whose text ListStore stores, which ``JSONTextEncoder`` reproduces.
  /// - Returns: An encoder with sorted keys (equal values are stored as equal text) and
  ///   slashes unescaped.
  static func makeJSONEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
    return encoder
  }

  /// The text of `value` from the fast path alone, or `nil` where it would fall back to
  /// `JSONEncoder` (for tests comparing the two).
  /// - Parameter value: The value.
  /// - Returns: The JSON text, or `nil`.
  package static func fastEncode<Value: Encodable>(_ value: Value) -> String? {
    JSONTextEncoder().encode(value)
  }

  /// The text `JSONEncoder` gives `value` with ListStore's options, or `nil` when it
  /// throws (for tests comparing it with the fast path).
  /// - Parameter value: The value.
  /// - Returns: The JSON text, or `nil`.
  package static func referenceEncode<Value: Encodable>(_ value: Value) -> String? {
    (try? makeJSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Encodes many values with one encoder.
  static func encodeAll<Value: Encodable>(_ values: [Value]) throws(ListStoreError) -> [String] {
    let encode = encoder(for: Value.self)
    var texts: [String] = []
    texts.reserveCapacity(values.count)
    for value in values { texts.append(try encode(value)) }
    return texts
  }

  /// A decoder of `Value`s from JSON text given as UTF-8 bytes, chosen once per type
  /// rather than per value (the fast paths test the type only here).
  @usableFromInline
  static func decoder<Value: Decodable>(for type: Value.Type) -> (UnsafeBufferPointer<UInt8>) throws
    -> Value
  {
    let strings: (UnsafeBufferPointer<UInt8>) throws -> String = { bytes in
      guard let text = JSONText.unquote(bytes: bytes) else {
        throw ListStoreError.decodingFailed(
          "String from \(String(decoding: bytes.prefix(80), as: UTF8.self))")
      }
      return text
    }
    if let decode = strings as? (UnsafeBufferPointer<UInt8>) throws -> Value { return decode }
    let raw: (UnsafeBufferPointer<UInt8>) throws -> RawJSON = {
      RawJSON(String(decoding: $0, as: UTF8.self))
    }
    if let decode = raw as? (UnsafeBufferPointer<UInt8>) throws -> Value { return decode }
    let decoder = JSONDecoder()
    return { bytes in try decoder.decode(Value.self, from: Data(bytes)) }
  }

  static func decode<Value: Decodable>(_ type: Value.Type, from json: String) throws(ListStoreError)
    -> Value
  {
    var json = json
    do {
      return try json.withUTF8 { try decoder(for: Value.self)($0) }
    } catch let error as ListStoreError {
      throw error
    } catch {
      throw .decodingFailed("\(Value.self) from \(json.prefix(80)): \(error)")
    }
  }
}

extension JSONText {
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
