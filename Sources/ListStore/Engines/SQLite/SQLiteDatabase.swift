import SQLiteKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// ListStore's connection to a SQLite database: a ``DatabaseConnection`` over
/// SQLiteKit's `Connection`.
final class SQLiteDatabase: DatabaseConnection {
  /// The SQLite connection.
  let connection: Connection
  // Unchecked: looked up by every statement, on the one thread using the connection.
  @exclusivity(unchecked) private var statements: [StatementKey: SQLiteStatement] = [:]

  /// SQLite's SQL where it differs from PostgreSQL's.
  static let dialect = SQLDialect(
    engine: .sqlite, checkedJSONParameter: "json(?)",
    lastSeqAndHorizon: """
      SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0),
        (SELECT pruned_through FROM change_log_horizon WHERE id = 1)
      """,
    positionType: "typeof(position)",
    manyListsMembership: "IN (SELECT value FROM json_each($1))",
    listIDsText: { ids in "[" + ids.map(String.init).joined(separator: ",") + "]" },
    pageShape: .joined, ordersJoins: true,
    itemsOfSection: { left in (left ? "LEFT " : "") + "JOIN items i ON i.section_id = s.id" },
    // AUTOINCREMENT gives the next id above every row; once a table holds rows of another
    // origin (a replica's, a server's), the next of the file's own origin is given instead
    // (migration 6). NULL, before that, lets AUTOINCREMENT give it.
    newRowID: { table in ("id, ", "(SELECT high + 1 FROM origin_ids WHERE name = '\(table)'), ") })

  init(_ connection: Connection) {
    self.connection = connection
  }

  var dialect: SQLDialect { Self.dialect }

  func cached(_ sql: String) throws -> any DatabaseStatement {
    let key = StatementKey(sql)
    if let statement = statements[key] {
      statement.reset()
      return statement
    }
    let statement = SQLiteStatement(try connection.cachedStatement(sql), connection: connection)
    statements[key] = statement
    return statement
  }

  func prepared(_ sql: String) throws -> any DatabaseStatement {
    SQLiteStatement(try connection.prepare(sql), connection: connection)
  }

  func execute(_ sql: String) throws { try connection.execute(sql) }

  func begin(_ mode: TransactionMode) throws {
    try connection.begin(mode == .write ? .immediate : .deferred)
  }

  func commit() throws { try connection.commit() }

  func rollback() { connection.rollback() }

  func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
    try connection.savepoint(body)
  }

  var isInTransaction: Bool { connection.isInTransaction }

  func insert(_ sql: String, _ values: [SQLValue]) throws -> Int64 {
    let statement = try cached(sql)
    defer { statement.reset() }
    for (offset, value) in values.enumerated() {
      try statement.bind(value, at: Int32(offset + 1))
    }
    _ = try statement.step()
    return connection.lastInsertRowID
  }

  /// One prepared `INSERT` per row, SQLite's fastest way, stepped directly: each id is the
  /// connection's last inserted rowid (what the change log's triggers insert does not
  /// count once they end), which costs less than `RETURNING`.
  func appendItems(sectionID: Int64, keys: [String], values: [String], checkingJSON: Bool)
    throws -> [Int64]
  {
    let insert = try connection.cachedStatement(Self.dialect.insertItem[canonical: !checkingJSON])
    defer { insert.reset() }
    var ids: [Int64] = []
    ids.reserveCapacity(values.count)
    for (key, value) in zip(keys, values) {
      try insert.bind(sectionID, at: 1)
      try insert.bind(key, at: 2)
      try insert.bind(value, at: 3)
      _ = try insert.step()
      ids.append(connection.lastInsertRowID)
      insert.reset()
    }
    return ids
  }

  var rowsRead: Int { connection.rowsRead }
}

/// A SQLite statement as a ``DatabaseStatement``.
final class SQLiteStatement: DatabaseStatement {
  let statement: Statement
  private unowned let connection: Connection

  init(_ statement: Statement, connection: Connection) {
    self.statement = statement
    self.connection = connection
  }

  func bind(_ value: SQLValue, at index: Int32) throws {
    switch value {
    case .integer(let value): try statement.bind(value, at: index)
    case .real(let value): try statement.bind(value, at: index)
    case .text(let value): try statement.bind(value, at: index)
    case .null: try statement.bindNull(at: index)
    }
  }

  func step() throws -> Bool { try statement.step() }
  func reset() { statement.reset() }
  func int64(at index: Int32) -> Int64 { statement.int64(at: index) }
  func optionalInt64(at index: Int32) -> Int64? { statement.optionalInt64(at: index) }
  func double(at index: Int32) -> Double { statement.double(at: index) }
  func string(at index: Int32) -> String { statement.string(at: index) }
  func optionalString(at index: Int32) -> String? { statement.optionalString(at: index) }
  func isNull(at index: Int32) -> Bool { statement.isNull(at: index) }
  var rowsChanged: Int { connection.changes }

  func withUTF8<R>(at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows
    -> R
  {
    try statement.withUTF8(at: index, body)
  }

  func forEachIntegerAndText(_ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void)
    throws
  {
    try statement.forEachIntegerAndText(body)
  }
}
