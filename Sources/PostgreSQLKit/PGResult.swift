internal import CLibPQ

/// The rows a query returned, in PostgreSQL's text format.
///
/// Rows and columns are numbered from 0. A result is independent of its connection:
/// it stays readable after the connection runs other queries or closes, and it is
/// freed when the last reference goes. Reading a row or column out of range is a
/// programmer error and traps; a value of the wrong type throws.
///
/// ```swift
/// let rows = try db.query("SELECT id, value FROM items WHERE section_id = $1", sectionID)
/// for row in 0..<rows.rowCount {
///   print(try rows.int64(row: row, column: 0), rows.string(row: row, column: 1))
/// }
/// ```
public final class PGResult: @unchecked Sendable {
  // Sendable: libpq never changes a PGresult after handing it over, and this class
  // only reads it, so any number of threads may read it at once; PQclear runs once,
  // in deinit, when no reference is left.
  let handle: OpaquePointer
  /// libpq's functions, from the connection that returned the result.
  let pq: LibPQFunctions

  /// The number of rows.
  public let rowCount: Int
  /// The number of columns in each row.
  public let columnCount: Int

  init(handle: OpaquePointer, pq: LibPQFunctions) {
    self.handle = handle
    self.pq = pq
    rowCount = Int(pq.PQntuples(handle))
    columnCount = Int(pq.PQnfields(handle))
  }

  deinit { pq.PQclear(handle) }

  /// How many rows an `INSERT`, `UPDATE`, `DELETE`, `MERGE`, `COPY` or similar command
  /// affected (what PostgreSQL reports in the command tag); 0 for other commands.
  public var rowsAffected: Int {
    guard let tag = pq.PQcmdTuples(handle) else { return 0 }
    return Int(String(cString: tag)) ?? 0
  }

  /// The command tag, such as `INSERT 0 1` or `SELECT 3`.
  public var commandTag: String {
    pq.PQcmdStatus(handle).map { String(cString: $0) } ?? ""
  }

  /// The name of a column.
  /// - Parameter column: The 0-based column index.
  /// - Returns: Its name as the query gave it.
  public func columnName(at column: Int) -> String {
    check(column: column)
    return pq.PQfname(handle, Int32(column)).map { String(cString: $0) } ?? ""
  }

  /// The index of the column with a name.
  /// - Parameter name: The column's name.
  /// - Returns: The 0-based index of the first column with that name, or `nil`.
  public func columnIndex(named name: String) -> Int? {
    let index = Int(pq.PQfnumber(handle, "\"" + name.replacing("\"", with: "\"\"") + "\""))
    return index >= 0 ? index : nil
  }

  private func check(column: Int) {
    precondition(column >= 0 && column < columnCount, "column \(column) is out of range")
  }

  private func check(row: Int, column: Int) {
    precondition(row >= 0 && row < rowCount, "row \(row) is out of range")
    check(column: column)
  }

  // MARK: - Values

  /// Whether a value is `NULL`.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: `true` for `NULL`.
  public func isNull(row: Int, column: Int) -> Bool {
    check(row: row, column: column)
    return pq.PQgetisnull(handle, Int32(row), Int32(column)) == 1
  }

  /// Calls `body` with a value's UTF-8 text, without copying it; the bytes are valid
  /// only during the call. `NULL` reads as empty.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  ///   - body: Reads the bytes.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws.
  public func withUTF8<R>(
    row: Int, column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R
  ) rethrows -> R {
    check(row: row, column: column)
    let count = Int(pq.PQgetlength(handle, Int32(row), Int32(column)))
    guard let value = pq.PQgetvalue(handle, Int32(row), Int32(column)), count > 0 else {
      return try body(UnsafeBufferPointer(start: nil, count: 0))
    }
    return try UnsafeRawPointer(value).withMemoryRebound(to: UInt8.self, capacity: count) {
      try body(UnsafeBufferPointer(start: $0, count: count))
    }
  }

  /// A value as text; `NULL` reads as "".
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The text; invalid UTF-8 is repaired with U+FFFD.
  public func string(row: Int, column: Int) -> String {
    withUTF8(row: row, column: column) { String(decoding: $0, as: UTF8.self) }
  }

  /// A value as text, or `nil` for `NULL`.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The text or `nil`.
  public func optionalString(row: Int, column: Int) -> String? {
    isNull(row: row, column: column) ? nil : string(row: row, column: column)
  }

  /// A value as a 64-bit integer.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The integer.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for `NULL` or text that is not an
  ///   integer in range.
  public func int64(row: Int, column: Int) throws -> Int64 {
    guard let value = try optionalInt64(row: row, column: column) else {
      throw unexpected("NULL", expected: "an integer", row: row, column: column)
    }
    return value
  }

  /// A value as a 64-bit integer, or `nil` for `NULL`.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The integer or `nil`.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for text that is not an integer in range.
  public func optionalInt64(row: Int, column: Int) throws -> Int64? {
    if isNull(row: row, column: column) { return nil }
    guard let value = withUTF8(row: row, column: column, Self.parseInt64) else {
      throw unexpected(
        "\"\(string(row: row, column: column))\"", expected: "an integer", row: row,
        column: column)
    }
    return value
  }

  /// A value as an `Int`.
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The integer.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for `NULL` or text that is not an
  ///   integer in range.
  public func int(row: Int, column: Int) throws -> Int {
    Int(try int64(row: row, column: column))
  }

  /// A value as a Boolean (PostgreSQL's `t` and `f`).
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The Boolean.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for `NULL` or anything but `t` and `f`.
  public func bool(row: Int, column: Int) throws -> Bool {
    if !isNull(row: row, column: column) {
      switch string(row: row, column: column) {
      case "t", "true": return true
      case "f", "false": return false
      default: break
      }
    }
    throw unexpected(
      describe(row: row, column: column), expected: "a Boolean", row: row, column: column)
  }

  /// A value as a floating-point number (`Infinity`, `-Infinity` and `NaN` included).
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The number.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for `NULL` or text that is not a number.
  public func double(row: Int, column: Int) throws -> Double {
    if !isNull(row: row, column: column), let value = Double(string(row: row, column: column)) {
      return value
    }
    throw unexpected(
      describe(row: row, column: column), expected: "a number", row: row, column: column)
  }

  /// A `bytea` value's bytes (from PostgreSQL's hex text format, `\x…`).
  /// - Parameters:
  ///   - row: The 0-based row index.
  ///   - column: The 0-based column index.
  /// - Returns: The bytes.
  /// - Throws: ``PGError`` (`.unexpectedValue`) for `NULL` or text not in hex format.
  public func bytes(row: Int, column: Int) throws -> [UInt8] {
    let bytes: [UInt8]? =
      isNull(row: row, column: column)
      ? nil : withUTF8(row: row, column: column, Self.parseHexBytes)
    guard let bytes else {
      throw unexpected(
        describe(row: row, column: column), expected: "bytea in hex format", row: row,
        column: column)
    }
    return bytes
  }

  private func describe(row: Int, column: Int) -> String {
    isNull(row: row, column: column) ? "NULL" : "\"\(string(row: row, column: column))\""
  }

  private func unexpected(_ found: String, expected: String, row: Int, column: Int) -> PGError {
    PGError(
      kind: .unexpectedValue,
      message: "column \(column) (\(columnName(at: column))) of row \(row) holds \(found), "
        + "not \(expected)")
  }

  /// An optional sign and decimal digits, within Int64's range.
  static func parseInt64(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
    var digits = bytes[...]
    let negative = digits.first == UInt8(ascii: "-")
    if negative || digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
    guard !digits.isEmpty else { return nil }
    var value: Int64 = 0
    for byte in digits {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      // Accumulate negatively so that Int64.min fits.
      let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
      let (next, overflow2) = shifted.subtractingReportingOverflow(
        Int64(byte - UInt8(ascii: "0")))
      guard !overflow, !overflow2 else { return nil }
      value = next
    }
    if negative { return value }
    return value == .min ? nil : -value
  }

  /// `\x` followed by pairs of hex digits.
  static func parseHexBytes(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
    guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"),
      text.count % 2 == 0
    else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity((text.count - 2) / 2)
    var index = 2
    while index < text.count {
      guard let high = hexDigitValue(text[index]), let low = hexDigitValue(text[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }
}

/// The value of a hexadecimal digit, or `nil` for another byte.
func hexDigitValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
  default: return nil
  }
}
