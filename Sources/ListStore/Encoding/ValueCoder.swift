import FoundationEssentials

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

  package static func decode<Value: Decodable>(_ type: Value.Type, from json: String)
    throws(ListStoreError)
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
