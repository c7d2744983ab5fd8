/// A value as sent to PostgreSQL for one `$n` parameter.
///
/// Text goes in PostgreSQL's text format, which the server parses for the parameter's
/// type (so `"42"` serves an `integer` parameter); bytes go in binary format, which
/// suits `bytea` parameters.
public enum PGParameter: Sendable, Hashable {
  /// SQL `NULL`.
  case null
  /// A value in text format. It must not contain a NUL character (PostgreSQL text
  /// cannot hold one); such a value is refused with ``PGError/Kind/misuse``.
  case text(String)
  /// A value in binary format, such as the raw bytes of a `bytea`.
  case binary([UInt8])
}

/// A value that can be passed as a query parameter.
///
/// ```swift
/// try db.run("UPDATE items SET value = $1 WHERE id = $2", "Paris", 42)
/// try db.run("UPDATE items SET note = $1", Optional<String>.none)  // NULL
/// ```
public protocol PGBindable {
  /// The value as a parameter.
  var postgresParameter: PGParameter { get }
}

extension PGParameter: PGBindable {
  /// The parameter itself.
  public var postgresParameter: PGParameter { self }
}

extension String: PGBindable {
  /// The text.
  public var postgresParameter: PGParameter { .text(self) }
}

extension Substring: PGBindable {
  /// The text.
  public var postgresParameter: PGParameter { .text(String(self)) }
}

extension Int64: PGBindable {
  /// The integer in decimal.
  public var postgresParameter: PGParameter { .text(String(self)) }
}

extension Int: PGBindable {
  /// The integer in decimal.
  public var postgresParameter: PGParameter { .text(String(self)) }
}

extension Int32: PGBindable {
  /// The integer in decimal.
  public var postgresParameter: PGParameter { .text(String(self)) }
}

extension Bool: PGBindable {
  /// `true` or `false`.
  public var postgresParameter: PGParameter { .text(self ? "true" : "false") }
}

extension Double: PGBindable {
  /// The shortest decimal that reads back as the same number; `Infinity`,
  /// `-Infinity` and `NaN` as PostgreSQL spells them.
  public var postgresParameter: PGParameter {
    if isNaN { return .text("NaN") }
    if isInfinite { return .text(self < 0 ? "-Infinity" : "Infinity") }
    return .text(description)
  }
}

extension Array: PGBindable where Element == UInt8 {
  /// The bytes, in binary format (for `bytea`).
  public var postgresParameter: PGParameter { .binary(self) }
}

extension Optional: PGBindable where Wrapped: PGBindable {
  /// The wrapped value's parameter, or `NULL`.
  public var postgresParameter: PGParameter {
    switch self {
    case .none: return .null
    case .some(let value): return value.postgresParameter
    }
  }
}

/// Parameters laid out for libpq: every value in one buffer, text values followed by a
/// NUL, with their formats and lengths.
struct EncodedParameters {
  private var storage: [UInt8] = []
  private var offsets: [Int?] = []
  private(set) var lengths: [Int32] = []
  private(set) var formats: [Int32] = []

  var count: Int { offsets.count }

  /// Encodes `values`.
  /// - Throws: ``PGError`` (`.misuse`) for text with a NUL character.
  init(_ values: [any PGBindable], sql: String) throws {
    offsets.reserveCapacity(values.count)
    for (index, value) in values.enumerated() {
      switch value.postgresParameter {
      case .null:
        offsets.append(nil)
        lengths.append(0)
        formats.append(0)
      case .text(let text):
        let start = storage.count
        storage.append(contentsOf: text.utf8)
        guard !storage[start...].contains(0) else {
          throw PGError(
            kind: .misuse, message: "parameter $\(index + 1) contains a NUL character", sql: sql)
        }
        storage.append(0)
        offsets.append(start)
        lengths.append(try Self.length(storage.count - start - 1, index: index, sql: sql))
        formats.append(0)
      case .binary(let bytes):
        let start = storage.count
        storage.append(contentsOf: bytes)
        offsets.append(start)
        lengths.append(try Self.length(bytes.count, index: index, sql: sql))
        formats.append(1)
      }
    }
  }

  private static func length(_ count: Int, index: Int, sql: String) throws -> Int32 {
    guard let length = Int32(exactly: count) else {
      throw PGError(
        kind: .misuse, message: "parameter $\(index + 1) is larger than 2 GB", sql: sql)
    }
    return length
  }

  /// Calls `body` with the parameter count, value pointers, lengths and formats, valid
  /// only during the call.
  func withUnsafePointers<R>(
    _ body: (
      Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
    ) throws -> R
  ) rethrows -> R {
    try storage.withUnsafeBytes { bytes in
      let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
      // A non-nil pointer for an empty value: libpq reads a nil pointer as NULL.
      let empty: StaticString = ""
      let emptyPointer = UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
      let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
        guard let offset else { return nil }
        guard let base else { return emptyPointer }
        return UnsafePointer(base + offset)
      }
      return try pointers.withUnsafeBufferPointer { values in
        try lengths.withUnsafeBufferPointer { lengths in
          try formats.withUnsafeBufferPointer { formats in
            try body(Int32(count), values.baseAddress, lengths.baseAddress, formats.baseAddress)
          }
        }
      }
    }
  }
}
