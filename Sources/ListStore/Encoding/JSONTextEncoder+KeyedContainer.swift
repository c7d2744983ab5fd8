import FoundationEssentials

extension JSONTextEncoder {
  /// Writes the fields of an object.
  struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    /// The encoder written to.
    let encoder: JSONTextEncoder
    /// The object's frame.
    let index: Int
    /// The object's frame id.
    let id: Int

    /// A container for the object in frame `index`.
    /// - Parameters:
    ///   - encoder: The encoder.
    ///   - index: The frame, or -1 for a container that only fails.
    ///   - id: The frame's id.
    init(_ encoder: JSONTextEncoder, _ index: Int, _ id: Int) {
      self.encoder = encoder
      self.index = index
      self.id = id
    }

    /// The keys of the object.
    var codingPath: [any CodingKey] { encoder.codingPath(through: index) }

    /// Enters the object and starts the field `key`.
    /// - Parameter key: The key.
    /// - Returns: The field's index.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private func begin(_ key: Key) throws -> Int {
      try encoder.enter(index, id)
      return try encoder.beginField(key.stringValue, in: index)
    }

    /// Ends the field started last.
    /// - Parameter field: Its index.
    private func end(_ field: Int) {
      encoder.fields[field].end = encoder.bytes.count
    }

    /// Writes `"key":null`.
    /// - Parameter key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encodeNil(forKey key: Key) throws {
      let field = try begin(key)
      encoder.writeNull()
      end(field)
    }

    /// Writes a `Bool` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Bool, forKey key: Key) throws {
      let field = try begin(key)
      encoder.writeBool(value)
      end(field)
    }

    /// Writes a `String` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: String, forKey key: Key) throws {
      let field = try begin(key)
      encoder.writeString(value)
      end(field)
    }

    /// Writes a `Double` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Double, forKey key: Key) throws {
      let field = try begin(key)
      try encoder.writeFloat(value)
      end(field)
    }

    /// Writes a `Float` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Float, forKey key: Key) throws {
      let field = try begin(key)
      try encoder.writeFloat(value)
      end(field)
    }

    /// Writes an integer field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: Int64, forKey key: Key) throws {
      let field = try begin(key)
      encoder.writeInteger(value)
      end(field)
    }

    /// Writes an unsigned integer field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: UInt64, forKey key: Key) throws {
      let field = try begin(key)
      encoder.writeInteger(value)
      end(field)
    }

    /// Writes an `Int` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int, forKey key: Key) throws {
      try encodeInteger(Int64(value), forKey: key)
    }

    /// Writes an `Int8` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int8, forKey key: Key) throws {
      try encodeInteger(Int64(value), forKey: key)
    }

    /// Writes an `Int16` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int16, forKey key: Key) throws {
      try encodeInteger(Int64(value), forKey: key)
    }

    /// Writes an `Int32` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int32, forKey key: Key) throws {
      try encodeInteger(Int64(value), forKey: key)
    }

    /// Writes an `Int64` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int64, forKey key: Key) throws {
      try encodeInteger(Int64(value), forKey: key)
    }

    /// Writes a `UInt` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt, forKey key: Key) throws {
      try encodeInteger(UInt64(value), forKey: key)
    }

    /// Writes a `UInt8` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
      try encodeInteger(UInt64(value), forKey: key)
    }

    /// Writes a `UInt16` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
      try encodeInteger(UInt64(value), forKey: key)
    }

    /// Writes a `UInt32` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
      try encodeInteger(UInt64(value), forKey: key)
    }

    /// Writes a `UInt64` field.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
      try encodeInteger(UInt64(value), forKey: key)
    }

    /// Writes a field of any other type.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up, or the value's error.
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
      let field = try begin(key)
      if try !encoder.writePrimitive(value) { try encoder.writeNested(value, key: key) }
      end(field)
    }

    /// Starts an object as the field `key`.
    /// - Parameters:
    ///   - keyType: Its key type.
    ///   - key: The key.
    /// - Returns: Its container.
    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
      do {
        let field = try begin(key)
        let (nested, id) = try encoder.push(key: key, isNestedContainer: true)
        encoder.frames[nested].kind = .keyed
        encoder.frames[nested].start = encoder.bytes.count
        encoder.frames[nested].firstField = encoder.fields.count
        encoder.frames[nested].parentField = field
        encoder.bytes.append(UInt8(ascii: "{"))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder, nested, id))
      } catch {
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder, -1, 0))
      }
    }

    /// Starts an array as the field `key`.
    /// - Parameter key: The key.
    /// - Returns: Its container.
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
      do {
        let field = try begin(key)
        let (nested, id) = try encoder.push(key: key, isNestedContainer: true)
        encoder.frames[nested].kind = .unkeyed
        encoder.frames[nested].start = encoder.bytes.count
        encoder.frames[nested].parentField = field
        encoder.bytes.append(UInt8(ascii: "["))
        return UnkeyedContainer(encoder, nested, id)
      } catch {
        return UnkeyedContainer(encoder, -1, 0)
      }
    }

    /// Not supported: gives the value up to `JSONEncoder`.
    /// - Returns: An encoder that only fails.
    mutating func superEncoder() -> any Encoder {
      _ = encoder.giveUp(unsupported: true)
      return encoder
    }

    /// Not supported: gives the value up to `JSONEncoder`.
    /// - Parameter key: The key.
    /// - Returns: An encoder that only fails.
    mutating func superEncoder(forKey key: Key) -> any Encoder {
      _ = encoder.giveUp(unsupported: true)
      return encoder
    }
  }
}
