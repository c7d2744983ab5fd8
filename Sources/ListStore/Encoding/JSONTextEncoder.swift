import FoundationEssentials

/// Encodes `Encodable` values as JSON text written straight into a byte buffer, with
/// output byte for byte identical to `JSONEncoder` with
/// `[.withoutEscapingSlashes, .sortedKeys]` (the text ListStore stores).
///
/// It covers the common shapes: keyed containers (structs, `String`- and `Int`-keyed
/// dictionaries), unkeyed containers (arrays), single values (`String`, `Bool`, every
/// integer type up to 64 bits, `Double`, `Float`, `nil`) and nested containers used in
/// order. It gives up — ``encode(_:)`` returns `nil` and the caller falls back to
/// `JSONEncoder` for the whole value — on anything whose output it cannot guarantee to
/// be identical: the types `JSONEncoder` special-cases (`Date`, `Data`, `URL`,
/// `Decimal`), `superEncoder()`, keys that need escaping, a key written twice, a
/// container written to after the encoder moved on, a value that encodes nothing, very
/// deep nesting, and every error (non-finite floats, the value's own errors), so that
/// `JSONEncoder` reports them exactly as before.
///
/// One instance encodes one value at a time and is reused for many (it keeps its
/// buffers); it is not thread-safe. Its buffers skip the runtime's exclusivity checks
/// (`@exclusivity(unchecked)`, a tenth of the work per value otherwise): no access to
/// them spans a call into the value's own code.
///
/// Keys are sorted by their UTF-8 bytes, as swift-foundation's `JSONWriter` sorts them
/// outside Apple's frameworks; the differential tests pin that down.
final class JSONTextEncoder {
  /// What a frame has become so far.
  enum Kind {
    /// No container requested yet.
    case empty
    /// A JSON object: `{` written, fields follow.
    case keyed
    /// A JSON array: `[` written, elements follow.
    case unkeyed
    /// One value written through a single-value container.
    case single
  }

  /// One level of the value being written: a value's own encoder, or a nested container.
  struct Frame {
    /// What the frame has become.
    var kind: Kind = .empty
    /// Offset in ``bytes`` of the container's opening bracket.
    var start = 0
    /// Index in ``fields`` of this frame's first field (keyed frames).
    var firstField = 0
    /// Fields or elements written so far.
    var count = 0
    /// Tells this frame apart from earlier frames at the same depth.
    var id = 0
    /// Whether the frame is a nested container (closed when its parent is next written
    /// to) rather than the encoder of a value (closed when the value's `encode(to:)`
    /// returns).
    var isNestedContainer = false
    /// The field of the parent frame that a nested keyed container fills, or -1.
    var parentField = -1
    /// The key under which the frame's value sits, for `codingPath`.
    var key: (any CodingKey)?
  }

  /// A field of an object being written: `"key":value` lies at
  /// `keyStart - 1 ..< end` of ``bytes``.
  struct Field {
    /// Offset of the key's first byte (after its opening quote).
    var keyStart: Int
    /// Offset just past the key's last byte (its closing quote).
    var keyEnd: Int
    /// Offset just past the value; -1 while the value is being written.
    var end: Int
  }

  /// Thrown to stop encoding when the fast path gives up; never leaves the encoder.
  struct GiveUp: Error {}

  /// Nesting beyond this gives up (`JSONEncoder` refuses 512 levels of containers).
  static let maximumDepth = 256

  /// The JSON text of the value being written.
  @exclusivity(unchecked) var bytes: [UInt8] = []
  /// A copy of an object's fields while they are written back in key order.
  @exclusivity(unchecked) var scratch: [UInt8] = []
  /// The levels of the value being written, outermost first.
  @exclusivity(unchecked) var frames: [Frame] = []
  /// The fields of the open objects, innermost last.
  @exclusivity(unchecked) var fields: [Field] = []
  /// The next frame id.
  var nextID = 1
  /// Whether the current value gave up; once set, every operation throws or does nothing.
  var failed = false
  /// Whether the last value gave up because of a type `JSONEncoder` special-cases or a
  /// `superEncoder()`: the same type will do that again.
  var unsupportedShape = false

  /// Creates an encoder with empty buffers.
  init() {
    bytes.reserveCapacity(256)
    frames.reserveCapacity(8)
    fields.reserveCapacity(16)
  }

  /// The JSON text of `value`, or `nil` when the fast path cannot promise the same
  /// text as `JSONEncoder` (then use `JSONEncoder`, which also reports the errors).
  /// - Parameter value: The value to encode.
  /// - Returns: The JSON text, or `nil`.
  func encode<Value: Encodable>(_ value: Value) -> String? {
    bytes.removeAll(keepingCapacity: true)
    frames.removeAll(keepingCapacity: true)
    fields.removeAll(keepingCapacity: true)
    failed = false
    unsupportedShape = false
    do {
      if try writePrimitive(value) { return String(decoding: bytes, as: UTF8.self) }
      try writeNested(value, key: nil)
    } catch {
      failed = true
    }
    guard !failed, frames.isEmpty else { return nil }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Stops the value: marks it failed and returns the error to throw.
  /// - Parameter unsupported: Whether the reason is the value's type or shape.
  /// - Returns: The error.
  func giveUp(unsupported: Bool = false) -> GiveUp {
    failed = true
    if unsupported { unsupportedShape = true }
    return GiveUp()
  }

  // MARK: Frames

  /// Opens a frame on top of the others.
  /// - Parameters:
  ///   - key: The key under which its value sits, if any.
  ///   - isNestedContainer: Whether it is a nested container.
  /// - Returns: The frame's index and id.
  /// - Throws: ``JSONTextEncoder/GiveUp`` when the value nests too deeply.
  func push(key: (any CodingKey)?, isNestedContainer: Bool) throws -> (index: Int, id: Int) {
    guard frames.count < Self.maximumDepth else { throw giveUp() }
    let id = nextID
    nextID &+= 1
    frames.append(Frame(id: id, isNestedContainer: isNestedContainer, key: key))
    return (frames.count - 1, id)
  }

  /// Makes the frame `index` the innermost one, closing the nested containers above it
  /// (their parent has moved on), and checks that it is still the frame `id`.
  /// - Parameters:
  ///   - index: The frame's index.
  ///   - id: The frame's id.
  /// - Throws: ``GiveUp`` when the frame is gone or a value's encoder lies above it.
  func enter(_ index: Int, _ id: Int) throws {
    guard !failed, index >= 0, index < frames.count, frames[index].id == id else {
      throw giveUp()
    }
    while frames.count - 1 > index {
      guard frames[frames.count - 1].isNestedContainer else { throw giveUp() }
      try close()
    }
  }

  /// The innermost frame that is a value's encoder, after closing the nested containers
  /// above it; -1 after a failure.
  func currentValueFrame() -> Int {
    guard !failed else { return -1 }
    do {
      while let last = frames.last, last.isNestedContainer { try close() }
    } catch {
      return -1
    }
    return frames.count - 1
  }

  /// Closes the innermost frame: writes its closing bracket, puts an object's fields in
  /// key order, and ends the parent's field it filled.
  /// - Throws: ``GiveUp`` for a frame that wrote nothing or repeated a key.
  func close() throws {
    guard let frame = frames.popLast() else { throw giveUp() }
    switch frame.kind {
    case .empty:
      throw giveUp()
    case .single:
      guard frame.count == 1 else { throw giveUp() }
    case .unkeyed:
      bytes.append(UInt8(ascii: "]"))
    case .keyed:
      try sortFields(of: frame)
      fields.removeSubrange(frame.firstField...)
      bytes.append(UInt8(ascii: "}"))
    }
    if frame.parentField >= 0 { fields[frame.parentField].end = bytes.count }
  }

  /// Whether the key of `a` comes before the key of `b` in UTF-8 byte order; gives up on
  /// equal keys (a key written twice).
  /// - Parameters:
  ///   - a: A field.
  ///   - b: Another field of the same object.
  /// - Returns: Whether `a` sorts first.
  /// - Throws: ``JSONTextEncoder/GiveUp`` when the keys are equal.
  func precedes(_ a: Field, _ b: Field) throws -> Bool {
    let order = bytes.withUnsafeBufferPointer { buffer in
      let lhs = UnsafeBufferPointer(rebasing: buffer[a.keyStart..<a.keyEnd])
      let rhs = UnsafeBufferPointer(rebasing: buffer[b.keyStart..<b.keyEnd])
      for (left, right) in zip(lhs, rhs) where left != right { return left < right ? -1 : 1 }
      return lhs.count == rhs.count ? 0 : (lhs.count < rhs.count ? -1 : 1)
    }
    guard order != 0 else { throw giveUp() }
    return order < 0
  }

  /// Rewrites the fields of an object in key order, unless they already are.
  /// - Parameter frame: The object's frame, already popped.
  /// - Throws: ``GiveUp`` when a key repeats.
  func sortFields(of frame: Frame) throws {
    let first = frame.firstField
    let count = fields.count - first
    guard count > 1 else { return }
    var sorted = true
    for index in (first + 1)..<fields.count where try !precedes(fields[index - 1], fields[index]) {
      sorted = false
      break
    }
    if sorted { return }
    if count <= 16 {
      // Insertion sort in place: objects are small. Every field is compared with the one
      // that ends up before it, so a repeated key is found.
      for index in (first + 1)..<fields.count {
        let field = fields[index]
        var slot = index
        while slot > first, try precedes(field, fields[slot - 1]) {
          fields[slot] = fields[slot - 1]
          slot -= 1
        }
        fields[slot] = field
      }
    } else {
      var failed = false
      fields[first...].sort { a, b in
        do {
          return try precedes(a, b)
        } catch {
          failed = true
          return false
        }
      }
      if failed { throw giveUp() }
      for index in (first + 1)..<fields.count where try !precedes(fields[index - 1], fields[index])
      {
        throw giveUp()
      }
    }
    // The fields in key order take exactly the bytes they took: write them back in place.
    let body = frame.start + 1
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: bytes[body...])
    bytes.withUnsafeMutableBufferPointer { output in
      scratch.withUnsafeBufferPointer { input in
        guard let output = output.baseAddress, let input = input.baseAddress else { return }
        var position = body
        for index in first..<fields.count {
          if index > first {
            output[position] = UInt8(ascii: ",")
            position += 1
          }
          let field = fields[index]
          let start = field.keyStart - 1 - body
          let count = field.end - body - start
          (output + position).update(from: input + start, count: count)
          position += count
        }
      }
    }
  }

  /// The coding path of the frame `index`: the keys of it and of the frames around it.
  /// - Parameter index: A frame index, or -1 for none.
  /// - Returns: The keys, outermost first.
  func codingPath(through index: Int) -> [any CodingKey] {
    guard index >= 0, index < frames.count else { return [] }
    return frames[...index].compactMap(\.key)
  }

  // MARK: Writing

  /// Starts a field of the object in frame `index`: a comma if needed, then `"key":`.
  /// - Parameters:
  ///   - key: The key's text.
  ///   - index: The object's frame (already entered).
  /// - Returns: The field's index in ``fields``.
  /// - Throws: ``GiveUp`` when the key needs escaping.
  func beginField(_ key: String, in index: Int) throws -> Int {
    if frames[index].count > 0 { bytes.append(UInt8(ascii: ",")) }
    frames[index].count += 1
    bytes.append(UInt8(ascii: "\""))
    let keyStart = bytes.count
    var key = key
    let plain = key.withUTF8 { utf8 in
      for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
      {
        return false
      }
      bytes.append(contentsOf: utf8)
      return true
    }
    guard plain else { throw giveUp() }
    let keyEnd = bytes.count
    bytes.append(UInt8(ascii: "\""))
    bytes.append(UInt8(ascii: ":"))
    fields.append(Field(keyStart: keyStart, keyEnd: keyEnd, end: -1))
    return fields.count - 1
  }

  /// Starts an element of the array in frame `index`: a comma if needed.
  /// - Parameter index: The array's frame (already entered).
  /// - Returns: The element's position in the array.
  func beginElement(in index: Int) -> Int {
    let position = frames[index].count
    if position > 0 { bytes.append(UInt8(ascii: ",")) }
    frames[index].count += 1
    return position
  }

  /// Makes the frame `index` a single value, which it may be once.
  /// - Parameter index: The frame (already entered).
  /// - Throws: ``GiveUp`` when it already holds a value or a container.
  func beginSingle(in index: Int) throws {
    guard frames[index].kind == .empty else { throw giveUp() }
    frames[index].kind = .single
    frames[index].count = 1
  }

  /// Writes a value `JSONEncoder` writes itself (`String`, `Bool`, integers, floats),
  /// when `Value` is one of the common ones.
  /// - Parameter value: The value.
  /// - Returns: Whether it was written.
  /// - Throws: ``GiveUp`` for a non-finite float.
  func writePrimitive<Value: Encodable>(_ value: Value) throws -> Bool {
    if Value.self == String.self {
      writeString(unsafeBitCast(value, to: String.self))
    } else if Value.self == Int.self {
      writeInteger(Int64(unsafeBitCast(value, to: Int.self)))
    } else if Value.self == Bool.self {
      writeBool(unsafeBitCast(value, to: Bool.self))
    } else if Value.self == Double.self {
      try writeFloat(unsafeBitCast(value, to: Double.self))
    } else if Value.self == Int64.self {
      writeInteger(unsafeBitCast(value, to: Int64.self))
    } else {
      return false
    }
    return true
  }

  /// Writes any other value through its `encode(to:)`, in a frame of its own; gives up on
  /// the types `JSONEncoder` special-cases.
  /// - Parameters:
  ///   - value: The value.
  ///   - key: The key under which it sits, if any.
  /// - Throws: ``GiveUp``, or the value's own error.
  func writeNested<Value: Encodable>(_ value: Value, key: (any CodingKey)?) throws {
    if Value.self == Date.self || Value.self == Data.self || Value.self == URL.self
      || Value.self == Decimal.self
    {
      throw giveUp(unsupported: true)
    }
    let (index, id) = try push(key: key, isNestedContainer: false)
    do {
      try value.encode(to: self)
    } catch {
      failed = true
      throw error
    }
    try enter(index, id)
    try close()
  }

  /// Writes `null`.
  func writeNull() {
    bytes.append(contentsOf: "null".utf8)
  }

  /// Writes `true` or `false`.
  /// - Parameter value: The value.
  func writeBool(_ value: Bool) {
    bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
  }

  /// Writes a JSON string literal, escaped as `JSONEncoder` escapes it: quotes,
  /// backslashes and control characters; slashes and everything else verbatim.
  /// - Parameter value: The string.
  func writeString(_ value: String) {
    bytes.append(UInt8(ascii: "\""))
    var value = value
    value.withUTF8 { utf8 in
      var plainStart = 0
      for (offset, byte) in utf8.enumerated()
      where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart..<offset]))
        plainStart = offset + 1
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
          let hex = Array("0123456789abcdef".utf8)
          bytes.append(contentsOf: "u00".utf8)
          bytes.append(hex[Int(byte >> 4)])
          bytes.append(hex[Int(byte & 0x0F)])
        }
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart...]))
    }
    bytes.append(UInt8(ascii: "\""))
  }

  /// Writes an integer in decimal.
  /// - Parameter value: The integer (at most 64 bits).
  func writeInteger(_ value: Int64) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    writeInteger(value.magnitude)
  }

  /// Writes an unsigned integer in decimal.
  /// - Parameter value: The integer.
  func writeInteger(_ value: UInt64) {
    var rest = value
    // The digits from the right, on the stack, then appended at once.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var start = digits.count
      repeat {
        start -= 1
        digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
      } while rest > 0
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
    }
  }

  /// Writes a finite float as `JSONEncoder` does: its `description` without a
  /// trailing `.0`.
  /// - Parameter value: The float.
  /// - Throws: ``GiveUp`` for NaN and infinities, which `JSONEncoder` refuses.
  func writeFloat<Number: BinaryFloatingPoint & CustomStringConvertible>(_ value: Number) throws {
    guard value.isFinite else { throw giveUp() }
    let text = value.description.utf8
    var count = text.count
    if count >= 2, text.suffix(2).elementsEqual(".0".utf8) { count -= 2 }
    bytes.append(contentsOf: text.prefix(count))
  }
}
