import FoundationEssentials

extension JSONTextEncoder {
  /// The key of an array element in a coding path, named as `JSONEncoder` names it.
  struct IndexKey: CodingKey {
    /// `Index n`.
    var stringValue: String { "Index \(position)" }
    /// The position.
    var intValue: Int? { position }
    /// The element's position in its array.
    let position: Int

    /// The key of the element at `position`.
    /// - Parameter position: The position.
    init(_ position: Int) { self.position = position }

    /// Not used: index keys are made from positions.
    /// - Parameter stringValue: Ignored.
    init?(stringValue: String) { nil }

    /// The key of the element at `intValue`.
    /// - Parameter intValue: The position.
    init?(intValue: Int) { self.position = intValue }
  }

  /// Writes the elements of an array.
  struct UnkeyedContainer: UnkeyedEncodingContainer {
    /// The encoder written to.
    let encoder: JSONTextEncoder
    /// The array's frame.
    let index: Int
    /// The array's frame id.
    let id: Int

    /// A container for the array in frame `index`.
    /// - Parameters:
    ///   - encoder: The encoder.
    ///   - index: The frame, or -1 for a container that only fails.
    ///   - id: The frame's id.
    init(_ encoder: JSONTextEncoder, _ index: Int, _ id: Int) {
      self.encoder = encoder
      self.index = index
      self.id = id
    }

    /// The keys of the array.
    var codingPath: [any CodingKey] { encoder.codingPath(through: index) }

    /// The number of elements written.
    var count: Int {
      guard index >= 0, index < encoder.frames.count, encoder.frames[index].id == id else {
        return 0
      }
      return encoder.frames[index].count
    }

    /// Enters the array and starts an element.
    /// - Returns: The element's position.
    private func begin() throws -> Int {
      try encoder.enter(index, id)
      return encoder.beginElement(in: index)
    }

    /// Writes `null`.
    mutating func encodeNil() throws {
      _ = try begin()
      encoder.writeNull()
    }

    /// Writes a `Bool`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Bool) throws {
      _ = try begin()
      encoder.writeBool(value)
    }

    /// Writes a `String`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: String) throws {
      _ = try begin()
      encoder.writeString(value)
    }

    /// Writes a `Double`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Double) throws {
      _ = try begin()
      try encoder.writeFloat(value)
    }

    /// Writes a `Float`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Float) throws {
      _ = try begin()
      try encoder.writeFloat(value)
    }

    /// Writes an integer.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: Int64) throws {
      _ = try begin()
      encoder.writeInteger(value)
    }

    /// Writes an unsigned integer.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: UInt64) throws {
      _ = try begin()
      encoder.writeInteger(value)
    }

    /// Writes an `Int`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int) throws { try encodeInteger(Int64(value)) }
    /// Writes an `Int8`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int8) throws { try encodeInteger(Int64(value)) }
    /// Writes an `Int16`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int16) throws { try encodeInteger(Int64(value)) }
    /// Writes an `Int32`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int32) throws { try encodeInteger(Int64(value)) }
    /// Writes an `Int64`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Int64) throws { try encodeInteger(Int64(value)) }
    /// Writes a `UInt`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt) throws { try encodeInteger(UInt64(value)) }
    /// Writes a `UInt8`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt8) throws { try encodeInteger(UInt64(value)) }
    /// Writes a `UInt16`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt16) throws { try encodeInteger(UInt64(value)) }
    /// Writes a `UInt32`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt32) throws { try encodeInteger(UInt64(value)) }
    /// Writes a `UInt64`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: UInt64) throws { try encodeInteger(UInt64(value)) }

    /// Writes an element of any other type.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up, or the value's error.
    mutating func encode<T: Encodable>(_ value: T) throws {
      let position = try begin()
      if try !encoder.writePrimitive(value) {
        try encoder.writeNested(value, key: IndexKey(position))
      }
    }

    /// Starts an object as the next element.
    /// - Parameter keyType: Its key type.
    /// - Returns: Its container.
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
      -> KeyedEncodingContainer<NestedKey>
    {
      do {
        let position = try begin()
        let (nested, id) = try encoder.push(key: IndexKey(position), isNestedContainer: true)
        encoder.frames[nested].kind = .keyed
        encoder.frames[nested].start = encoder.bytes.count
        encoder.frames[nested].firstField = encoder.fields.count
        encoder.bytes.append(UInt8(ascii: "{"))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder, nested, id))
      } catch {
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder, -1, 0))
      }
    }

    /// Starts an array as the next element.
    /// - Returns: Its container.
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
      do {
        let position = try begin()
        let (nested, id) = try encoder.push(key: IndexKey(position), isNestedContainer: true)
        encoder.frames[nested].kind = .unkeyed
        encoder.frames[nested].start = encoder.bytes.count
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
  }
}
