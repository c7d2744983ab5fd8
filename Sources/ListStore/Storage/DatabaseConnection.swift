import Synchronization

/// A value bound to a statement parameter, whatever the engine.
@usableFromInline
package enum SQLValue: Sendable, Hashable {
  case integer(Int64)
  case real(Double)
  case text(String)
  case null
}

/// A Swift value that can be bound to a statement parameter.
package protocol SQLBindable {
  /// The value as a parameter.
  var sqlValue: SQLValue { get }
}

extension Int64: SQLBindable {
  package var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
  package var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Double: SQLBindable {
  package var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
  package var sqlValue: SQLValue { .text(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
  package var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// How a transaction is begun.
@usableFromInline
package enum TransactionMode: Sendable {
  /// One consistent state of the database to read from.
  case read
  /// A write, ordered with every other writer's: SQLite's `BEGIN IMMEDIATE`, or
  /// PostgreSQL's transaction-scoped lock that makes the change log's order the order
  /// of commits.
  case write
}

/// A connection to a ListStore database, whatever its engine: what the repository, the
/// change feed and the observers need. One thread at a time.
@usableFromInline
package protocol DatabaseConnection: AnyObject {
  /// The engine's SQL where it differs.
  var dialect: SQLDialect { get }
  /// A statement for `sql` (with `?` placeholders), prepared once and kept.
  func cached(_ sql: String) throws -> any DatabaseStatement
  /// A statement for `sql`, prepared for this use only.
  func prepared(_ sql: String) throws -> any DatabaseStatement
  /// Runs SQL without parameters, possibly several statements.
  func execute(_ sql: String) throws
  /// Begins a transaction.
  func begin(_ mode: TransactionMode) throws
  /// Commits the transaction under way.
  func commit() throws
  /// Rolls back the transaction under way, if any; never fails.
  func rollback()
  /// Runs `body` in a savepoint inside the transaction under way: undone alone when it
  /// throws.
  func savepoint<Result>(_ body: () throws -> Result) throws -> Result
  /// Whether a transaction is under way.
  var isInTransaction: Bool { get }
  /// Runs `sql`, an `INSERT` of one row whose table has an `id` column, with `values`
  /// bound in order, and returns the new row's id (SQLite: the connection's last rowid;
  /// other engines: `RETURNING id`).
  func insert(_ sql: String, _ values: [SQLValue]) throws -> Int64
  /// Appends items at the end of a section — after every row already there, with the
  /// given ascending keys — as fast as the engine can, returning their ids in order.
  /// `checkingJSON`: whether the values may not be JSON text yet and must be checked
  /// (and, where the engine does so, normalized) as a single-row insert would.
  func appendItems(sectionID: Int64, keys: [String], values: [String], checkingJSON: Bool)
    throws -> [Int64]
  /// Rows this connection has read so far (for tests and benchmarks).
  var rowsRead: Int { get }
  /// Sends `reads` (queries with `?` placeholders and their values) and the write
  /// transaction's `COMMIT` now, in one round trip, where that saves one (PostgreSQL);
  /// does nothing where a statement costs no round trip (SQLite). Until ``commit()``, a
  /// statement of `reads`, bound to the same values, steps through the rows it got without
  /// running again, and any other statement throws ``NeedsReload`` (the transaction is
  /// over); ``commit()`` then reports the outcome.
  func sendWithCommit(_ reads: [(sql: String, values: [SQLValue])]) throws
  /// What tells this connection's commits apart for the engine's watch (PostgreSQL: its
  /// server session), so that the watch of the repository writing through it need not
  /// react to them (its writes deliver them themselves); `nil` where the watch cannot.
  var ownCommits: (any Sendable)? { get }
}

extension DatabaseConnection {
  package func sendWithCommit(_ reads: [(sql: String, values: [SQLValue])]) throws {}
  package var ownCommits: (any Sendable)? { nil }
}

/// A prepared statement: bind parameters, step through rows, read columns.
@usableFromInline
package protocol DatabaseStatement: AnyObject {
  func bind(_ value: SQLValue, at index: Int32) throws
  /// Advances to the next row; `false` when done.
  func step() throws -> Bool
  /// Makes it ready to run again (keeping bindings).
  func reset()
  func int64(at index: Int32) -> Int64
  func optionalInt64(at index: Int32) -> Int64?
  func double(at index: Int32) -> Double
  func string(at index: Int32) -> String
  func optionalString(at index: Int32) -> String?
  func isNull(at index: Int32) -> Bool
  /// How many rows the last run of this statement inserted, updated or deleted (not
  /// counting what triggers did).
  var rowsChanged: Int { get }
  /// Calls `body` with the column's UTF-8 bytes, valid only during the call.
  func withUTF8<R>(at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows
    -> R
  /// Steps through the remaining rows, calling `body` with each one's column 0 as an
  /// integer and the UTF-8 bytes of its column 1 (valid only during the call).
  func forEachIntegerAndText(_ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void)
    throws
}

extension DatabaseStatement {
  @inlinable
  package func bind(_ value: Int64, at index: Int32) throws { try bind(.integer(value), at: index) }
  @inlinable
  package func bind(_ value: String, at index: Int32) throws { try bind(.text(value), at: index) }

  /// Binds `values` to the parameters, in order.
  package func bind(_ values: [any SQLBindable]) throws {
    for (offset, value) in values.enumerated() { try bind(value.sqlValue, at: Int32(offset + 1)) }
  }

  package func int(at index: Int32) -> Int { Int(int64(at: index)) }

  package func forEachIntegerAndText(
    _ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void
  ) throws {
    while try step() {
      let integer = int64(at: 0)
      try withUTF8(at: 1) { try body(integer, $0) }
    }
  }

  /// Runs it to completion, ignoring rows, then resets it.
  package func run() throws {
    defer { reset() }
    while try step() {}
  }

  /// Steps through every row, calling `body` on each, then resets it.
  @inlinable
  package func forEachRow(_ body: (any DatabaseStatement) throws -> Void) throws {
    defer { reset() }
    while try step() { try body(self) }
  }
}

extension DatabaseConnection {
  /// Runs `body` in a transaction: committed when it returns, rolled back when it (or
  /// the commit) throws; inside another transaction, a savepoint.
  @discardableResult
  package func transaction<Result>(_ mode: TransactionMode, _ body: () throws -> Result) throws
    -> Result
  {
    if isInTransaction { return try savepoint(body) }
    try begin(mode)
    do {
      let result = try body()
      try commit()
      return result
    } catch {
      rollback()
      throw error
    }
  }

  /// Runs one statement with parameters, ignoring any rows it returns.
  /// - Returns: How many rows it inserted, updated or deleted.
  @discardableResult
  package func run(_ sql: String, _ values: any SQLBindable...) throws -> Int {
    let statement = try cached(sql)
    try statement.bind(values)
    try statement.run()
    return statement.rowsChanged
  }

  /// The first column of the first row, or `nil` when there is no row or it is `NULL`.
  package func scalarInt64(_ sql: String, _ values: any SQLBindable...) throws -> Int64? {
    let statement = try cached(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    return statement.optionalInt64(at: 0)
  }

  /// The first column of the first row as a number, or `nil` when there is no row or it
  /// is `NULL`.
  package func scalarDouble(_ sql: String, _ values: any SQLBindable...) throws -> Double? {
    let statement = try cached(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step(), statement.optionalString(at: 0) != nil else { return nil }
    return statement.double(at: 0)
  }

  /// The first column of the first row as text, or `nil`.
  package func scalarText(_ sql: String, _ values: any SQLBindable...) throws -> String? {
    let statement = try cached(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    return statement.optionalString(at: 0)
  }
}
