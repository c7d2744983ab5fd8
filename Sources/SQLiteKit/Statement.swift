internal import CSQLite

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A compiled SQL statement with typed parameter binding and column reading.
///
/// Parameters are numbered from 1 as in SQLite; columns from 0. A statement keeps its
/// connection alive and is finalized when it is deinitialised (or when its connection
/// closes, for cached statements).
///
/// ```swift
/// let insert = try db.prepare("INSERT INTO items(section_id, value) VALUES (?, ?)")
/// try insert.bind(sectionID, at: 1)
/// try insert.bind("Paris", at: 2)
/// try insert.run()
/// ```
public final class Statement {
  let handle: OpaquePointer
  /// The connection. Unowned so that its statement cache (which holds statements) is
  /// no reference cycle: cached statements are finalized before the connection goes.
  private unowned let connection: Connection
  /// Keeps the connection alive for statements the caller owns (``Connection/prepare(_:)``).
  private let owner: Connection?
  // Unchecked, as ``Connection/rowsRead`` is: a statement is used by one thread at a
  // time, and this is read at every step, where a dynamic exclusivity check costs more.
  @exclusivity(unchecked) private var isFinalized = false

  /// The SQL text the statement was compiled from.
  public let sql: String

  init(handle: OpaquePointer, connection: Connection, sql: String, keepsConnectionAlive: Bool) {
    self.handle = handle
    self.connection = connection
    self.owner = keepsConnectionAlive ? connection : nil
    self.sql = sql
  }

  deinit { finalize() }

  func finalize() {
    guard !isFinalized else { return }
    isFinalized = true
    sqlite3_finalize(handle)
  }

  private func checkUsable() throws {
    guard !isFinalized, !connection.isClosed else {
      throw SQLiteError(
        code: .misuse, message: "statement used after its connection closed", sql: sql)
    }
  }

  private func checkBind(_ status: Int32) throws {
    guard status == SQLITE_OK else { throw connection.lastError(status, sql: sql) }
  }

  // MARK: - Binding

  /// The number of `?` parameters in the statement.
  public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

  /// Binds an integer.
  /// - Parameters:
  ///   - value: The value.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(_ value: Int64, at index: Int32) throws {
    try checkBind(sqlite3_bind_int64(handle, index, value))
  }

  /// Binds a floating-point number.
  /// - Parameters:
  ///   - value: The value.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(_ value: Double, at index: Int32) throws {
    try checkBind(sqlite3_bind_double(handle, index, value))
  }

  /// Binds text; SQLite keeps its own copy, so `value` may go away afterwards.
  ///
  /// Text without a NUL character is bound NUL-terminated (length -1): SQLite then keeps
  /// its copy terminated, and SQL functions that read the value as text (those in
  /// triggers and `CHECK` constraints: `length`, `GLOB`, `json_valid` …) use it as it is.
  /// Bound with an explicit length, each such call made a terminated copy of its own.
  /// - Parameters:
  ///   - value: The text, stored as UTF-8.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`, `SQLITE_TOOBIG`).
  public func bind(_ value: String, at index: Int32) throws {
    let count = value.utf8.count
    let status = value.withCString { text in
      if count <= Int32.max, strlen(text) == count {
        return sqlite3_bind_text(handle, index, text, -1, csqlite_transient())
      }
      // A NUL inside the text: only the explicit length keeps what follows it.
      return sqlite3_bind_text64(
        handle, index, text, UInt64(count), csqlite_transient(), UInt8(SQLITE_UTF8))
    }
    try checkBind(status)
  }

  /// Binds a BLOB.
  /// - Parameters:
  ///   - value: The bytes.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`, `SQLITE_TOOBIG`).
  public func bind(blob value: [UInt8], at index: Int32) throws {
    let status = value.withUnsafeBytes { bytes in
      sqlite3_bind_blob64(
        handle, index, bytes.baseAddress, UInt64(bytes.count), csqlite_transient())
    }
    try checkBind(status)
  }

  /// Binds SQL `NULL`.
  /// - Parameter index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bindNull(at index: Int32) throws {
    try checkBind(sqlite3_bind_null(handle, index))
  }

  /// Binds any bindable value.
  /// - Parameters:
  ///   - value: The value; `nil` binds `NULL`.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` for an index out of range.
  public func bind(_ value: (any SQLiteBindable)?, at index: Int32) throws {
    if let value { try value.bind(to: self, at: index) } else { try bindNull(at: index) }
  }

  /// Binds `values` to parameters 1, 2, …, after clearing earlier bindings.
  /// - Parameter values: One value per parameter.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) when the count does not match.
  public func bind(_ values: [any SQLiteBindable]) throws {
    guard values.count == parameterCount else {
      throw SQLiteError(
        code: .range,
        message: "statement has \(parameterCount) parameters, \(values.count) values given",
        sql: sql)
    }
    sqlite3_clear_bindings(handle)
    for (offset, value) in values.enumerated() { try value.bind(to: self, at: Int32(offset + 1)) }
  }

  // MARK: - Stepping

  /// Advances to the next row.
  /// - Returns: `true` when a row is ready to read, `false` when the statement is done.
  /// - Throws: ``SQLiteError`` when execution fails (the statement is then reset).
  @discardableResult
  public func step() throws -> Bool {
    try checkUsable()
    let status = sqlite3_step(handle)
    switch status {
    case SQLITE_ROW:
      connection.rowsRead &+= 1
      return true
    case SQLITE_DONE: return false
    default:
      let error = connection.lastError(status, sql: sql)
      sqlite3_reset(handle)
      throw error
    }
  }

  /// Runs the statement to completion, ignoring rows, then resets it.
  /// - Throws: ``SQLiteError`` when execution fails.
  public func run() throws {
    defer { sqlite3_reset(handle) }
    while try step() {}
  }

  /// Steps through every row, calling `body` with the statement positioned on it,
  /// then resets the statement.
  /// - Parameter body: Reads the current row's columns.
  /// - Throws: ``SQLiteError``, or what `body` throws.
  public func forEachRow(_ body: (Statement) throws -> Void) throws {
    defer { sqlite3_reset(handle) }
    while try step() { try body(self) }
  }

  /// Steps through every remaining row, calling `body` with its integer column 0 and
  /// the UTF-8 bytes of its text column 1 (valid only during the call): a bulk read
  /// that checks the statement once, not at every row.
  /// - Parameter body: Takes one row's two columns.
  /// - Throws: ``SQLiteError`` when execution fails (the statement is then reset), or
  ///   what `body` throws.
  public func forEachIntegerAndText(
    _ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void
  ) throws {
    try checkUsable()
    var rows = 0
    defer { connection.rowsRead &+= rows }
    while true {
      let status = sqlite3_step(handle)
      guard status == SQLITE_ROW else {
        if status == SQLITE_DONE { return }
        let error = connection.lastError(status, sql: sql)
        sqlite3_reset(handle)
        throw error
      }
      rows &+= 1
      let text = sqlite3_column_text(handle, 1)
      let count = Int(sqlite3_column_bytes(handle, 1))
      try body(
        sqlite3_column_int64(handle, 0),
        UnsafeBufferPointer(start: text, count: text == nil ? 0 : count))
    }
  }

  /// Makes the statement ready to run again, keeping its bindings.
  public func reset() {
    guard !isFinalized else { return }
    sqlite3_reset(handle)
  }

  /// Sets every parameter back to `NULL`.
  public func clearBindings() {
    guard !isFinalized else { return }
    sqlite3_clear_bindings(handle)
  }

  // MARK: - Columns

  /// The number of columns in a result row.
  public var columnCount: Int { Int(sqlite3_column_count(handle)) }

  /// The name of a result column.
  /// - Parameter index: The 0-based column index.
  /// - Returns: The column's name.
  public func columnName(at index: Int32) -> String {
    sqlite3_column_name(handle, index).map { String(cString: $0) } ?? ""
  }

  /// Whether the column of the current row is `NULL`.
  /// - Parameter index: The 0-based column index.
  /// - Returns: `true` for `NULL`.
  public func isNull(at index: Int32) -> Bool {
    sqlite3_column_type(handle, index) == SQLITE_NULL
  }

  /// The column of the current row as an integer (`NULL` reads as 0).
  /// - Parameter index: The 0-based column index.
  /// - Returns: The value, converted by SQLite's rules.
  public func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

  /// The column of the current row as an `Int` (`NULL` reads as 0).
  /// - Parameter index: The 0-based column index.
  /// - Returns: The value, converted by SQLite's rules.
  public func int(at index: Int32) -> Int { Int(sqlite3_column_int64(handle, index)) }

  /// The column of the current row as a double (`NULL` reads as 0).
  /// - Parameter index: The 0-based column index.
  /// - Returns: The value, converted by SQLite's rules.
  public func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

  /// The column of the current row as text (`NULL` reads as "").
  /// - Parameter index: The 0-based column index.
  /// - Returns: The UTF-8 text; invalid sequences are repaired with U+FFFD.
  public func string(at index: Int32) -> String {
    guard let text = sqlite3_column_text(handle, index) else { return "" }
    let count = Int(sqlite3_column_bytes(handle, index))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
  }

  /// The column of the current row as text, or `nil` for `NULL`.
  /// - Parameter index: The 0-based column index.
  /// - Returns: The text or `nil`.
  public func optionalString(at index: Int32) -> String? {
    isNull(at: index) ? nil : string(at: index)
  }

  /// The column of the current row as an integer, or `nil` for `NULL`.
  /// - Parameter index: The 0-based column index.
  /// - Returns: The integer or `nil`.
  public func optionalInt64(at index: Int32) -> Int64? {
    isNull(at: index) ? nil : int64(at: index)
  }

  /// The column of the current row as bytes (`NULL` reads as empty).
  /// - Parameter index: The 0-based column index.
  /// - Returns: The column's bytes.
  public func blob(at index: Int32) -> [UInt8] {
    let count = Int(sqlite3_column_bytes(handle, index))
    guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return [] }
    return Array(UnsafeRawBufferPointer(start: bytes, count: count))
  }

  /// Calls `body` with the column's UTF-8 bytes, valid only during the call.
  /// - Parameters:
  ///   - index: The 0-based column index.
  ///   - body: Reads the bytes without copying them.
  /// - Returns: What `body` returns.
  public func withUTF8<R>(at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R)
    rethrows -> R
  {
    let text = sqlite3_column_text(handle, index)
    let count = Int(sqlite3_column_bytes(handle, index))
    return try body(UnsafeBufferPointer(start: text, count: text == nil ? 0 : count))
  }
}

/// A value that can be bound to a statement parameter.
public protocol SQLiteBindable {
  /// Binds `self` to the parameter at `index` of `statement`.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` when SQLite rejects the binding.
  func bind(to statement: Statement, at index: Int32) throws
}

extension Int64: SQLiteBindable {
  /// Binds the integer.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(self, at: index)
  }
}

extension Int: SQLiteBindable {
  /// Binds the integer.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(Int64(self), at: index)
  }
}

extension Int32: SQLiteBindable {
  /// Binds the integer.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(Int64(self), at: index)
  }
}

extension Bool: SQLiteBindable {
  /// Binds 1 for `true`, 0 for `false`.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(self ? 1 : 0 as Int64, at: index)
  }
}

extension Double: SQLiteBindable {
  /// Binds the number.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(self, at: index)
  }
}

extension String: SQLiteBindable {
  /// Binds the text.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    try statement.bind(self, at: index)
  }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
  /// Binds the wrapped value, or `NULL`.
  /// - Parameters:
  ///   - statement: The statement.
  ///   - index: The 1-based parameter index.
  /// - Throws: ``SQLiteError`` (`SQLITE_RANGE`) for an index out of range.
  public func bind(to statement: Statement, at index: Int32) throws {
    if let self {
      try self.bind(to: statement, at: index)
    } else {
      try statement.bindNull(at: index)
    }
  }
}
