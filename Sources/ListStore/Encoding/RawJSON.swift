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
