import FoundationEssentials

extension JSONTextEncoder {
  /// Writes the one value of a frame.
  struct SingleContainer: SingleValueEncodingContainer {
    /// The encoder written to.
    let encoder: JSONTextEncoder
    /// The value's frame.
    let index: Int
    /// The value's frame id.
    let id: Int

    /// A container for the value of frame `index`.
    /// - Parameters:
    ///   - encoder: The encoder.
    ///   - index: The frame, or -1 for a container that only fails.
    ///   - id: The frame's id.
    init(_ encoder: JSONTextEncoder, _ index: Int, _ id: Int) {
      self.encoder = encoder
      self.index = index
      self.id = id
    }

    /// The keys of the value.
    var codingPath: [any CodingKey] { encoder.codingPath(through: index) }

    /// Enters the frame and makes it a single value.
    private func begin() throws {
      try encoder.enter(index, id)
      try encoder.beginSingle(in: index)
    }

    /// Writes `null`.
    mutating func encodeNil() throws {
      try begin()
      encoder.writeNull()
    }

    /// Writes a `Bool`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Bool) throws {
      try begin()
      encoder.writeBool(value)
    }

    /// Writes a `String`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: String) throws {
      try begin()
      encoder.writeString(value)
    }

    /// Writes a `Double`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Double) throws {
      try begin()
      try encoder.writeFloat(value)
    }

    /// Writes a `Float`.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    mutating func encode(_ value: Float) throws {
      try begin()
      try encoder.writeFloat(value)
    }

    /// Writes an integer.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: Int64) throws {
      try begin()
      encoder.writeInteger(value)
    }

    /// Writes an unsigned integer.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up.
    private mutating func encodeInteger(_ value: UInt64) throws {
      try begin()
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

    /// Writes a value of any other type, in a frame of its own with the same path.
    /// - Parameter value: The value.
    /// - Throws: ``JSONTextEncoder/GiveUp`` where the fast path gives up, or the value's error.
    mutating func encode<T: Encodable>(_ value: T) throws {
      try begin()
      if try !encoder.writePrimitive(value) { try encoder.writeNested(value, key: nil) }
    }
  }
}
