internal import CSQLite

/// One open SQLite database connection.
///
/// A connection owns its handle: it is closed by ``close()`` or, at the latest, when
/// the connection is deinitialised. Statements prepared on it keep it alive, so a
/// statement can never outlive its connection. A connection is not thread-safe:
/// confine it to one thread, or guard it with a lock (the repository keeps its
/// connections inside a `Mutex`).
///
/// ```swift
/// let db = try Connection(path: "/tmp/example.sqlite")
/// try db.execute("CREATE TABLE t(x INTEGER)")
/// try db.transaction {
///   try db.run("INSERT INTO t(x) VALUES (?)", 42)
/// }
/// let x = try db.scalarInt64("SELECT x FROM t")  // 42
/// ```
public final class Connection {
  /// How a connection opens its file.
  public enum OpenMode: Sendable {
    /// Open an existing database for reading only.
    case readOnly
    /// Open an existing database for reading and writing.
    case readWrite
    /// Open for reading and writing, creating the file when it does not exist.
    case readWriteCreate
    /// Open for reading a file nothing can change, such as one on read-only media:
    /// SQLite takes no locks and needs no `-shm` file (its `immutable` parameter).
    case immutable
  }

  /// The path the connection was opened with.
  public let path: String
  /// How it was opened.
  public let mode: OpenMode

  let handle: OpaquePointer
  // Unchecked, as `rowsRead` below: read by every statement's step and every lookup of a
  // cached statement, on the one thread using the connection at a time.
  @exclusivity(unchecked) private var statementCache: [StatementKey: Statement] = [:]

  /// Whether ``close()`` ran.
  @exclusivity(unchecked) public private(set) var isClosed = false
  /// `BEGIN …` by ``TransactionKind`` and `COMMIT`, prepared on first use: they run on
  /// every write, and a field costs less than finding them in the cache.
  @exclusivity(unchecked) var transactionStatements: [Statement?] = [nil, nil, nil, nil]

  // Unchecked: a connection is used by one thread at a time, and this counter is
  // bumped for every row, where a dynamic exclusivity check would cost more than it.
  /// How many result rows statements on this connection have stepped through since
  /// it opened: a measure of the work queries did, independent of timing.
  @exclusivity(unchecked) public internal(set) var rowsRead = 0

  /// Opens (and, with `.readWriteCreate`, creates) a database file.
  ///
  /// The connection reports extended result codes, enforces foreign keys and waits
  /// up to `busyTimeout` for a lock held by another connection before failing with
  /// `SQLITE_BUSY`. It does not change the file: journal mode and schema are the
  /// caller's business.
  /// - Parameters:
  ///   - path: The database file, or `:memory:`.
  ///   - mode: Whether to open read-only, read-write, or create the file.
  ///   - busyTimeout: How long a statement waits for another connection's lock.
  /// - Throws: ``SQLiteError`` when SQLite cannot open the file.
  public init(
    path: String, mode: OpenMode = .readWriteCreate, busyTimeout: Duration = .seconds(10)
  ) throws {
    var flags = SQLITE_OPEN_NOMUTEX
    var filename = path
    switch mode {
    case .readOnly: flags |= SQLITE_OPEN_READONLY
    case .readWrite: flags |= SQLITE_OPEN_READWRITE
    case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
    case .immutable:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
      filename = "file:" + Self.percentEncoded(path) + "?immutable=1"
    }
    var db: OpaquePointer?
    let status = sqlite3_open_v2(filename, &db, flags, nil)
    guard let db else { throw SQLiteError(code: ResultCode(rawValue: status)) }
    guard status == SQLITE_OK else {
      let error = SQLiteError(
        code: ResultCode(rawValue: sqlite3_extended_errcode(db)),
        message: String(cString: sqlite3_errmsg(db)))
      sqlite3_close_v2(db)
      throw error
    }
    self.handle = db
    self.path = path
    self.mode = mode
    sqlite3_extended_result_codes(db, 1)
    let milliseconds =
      busyTimeout.components.seconds * 1000
      + busyTimeout.components.attoseconds / 1_000_000_000_000_000
    sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
    do {
      try execute("PRAGMA foreign_keys = ON")
    } catch {
      close()
      throw error
    }
  }

  deinit { close() }

  /// `path` with the characters a URI filename reserves escaped.
  private static func percentEncoded(_ path: String) -> String {
    var result = ""
    for byte in path.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "."),
        UInt8(ascii: "-"),
        UInt8(ascii: "_"), UInt8(ascii: "~"):
        result.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        result += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return result
  }

  /// Finalizes the cached statements and closes the handle. Idempotent.
  ///
  /// Statements prepared with ``prepare(_:)`` that are still alive become unusable
  /// (they throw `SQLITE_MISUSE`); SQLite frees the handle when the last is gone.
  public func close() {
    guard !isClosed else { return }
    isClosed = true
    for statement in statementCache.values { statement.finalize() }
    statementCache.removeAll()
    for statement in transactionStatements { statement?.finalize() }
    transactionStatements = []
    sqlite3_close_v2(handle)
  }

  /// The error SQLite holds for the last failed call on this connection.
  func lastError(_ status: Int32, sql: String? = nil) -> SQLiteError {
    // The connection's extended code is more precise than `status` when they agree.
    let extended = sqlite3_extended_errcode(handle)
    let code = extended & 0xFF == status & 0xFF ? extended : status
    return SQLiteError(
      code: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
  }

  func check(_ status: Int32, sql: String? = nil) throws {
    guard status == SQLITE_OK else { throw lastError(status, sql: sql) }
  }

  // MARK: - Statements

  /// Compiles one SQL statement. The caller owns the result; prefer
  /// ``cachedStatement(_:)`` for statements run repeatedly.
  /// - Parameter sql: A single SQL statement.
  /// - Returns: The prepared statement.
  /// - Throws: ``SQLiteError`` for a syntax error, or when the connection is closed.
  public func prepare(_ sql: String) throws -> Statement {
    try compile(sql, owned: true)
  }

  private func compile(_ sql: String, owned: Bool) throws -> Statement {
    guard !isClosed else { throw SQLiteError(code: .misuse, message: "connection is closed") }
    var statement: OpaquePointer?
    let status = sqlite3_prepare_v3(
      handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard status == SQLITE_OK, let statement else {
      throw lastError(status == SQLITE_OK ? SQLITE_MISUSE : status, sql: sql)
    }
    return Statement(handle: statement, connection: self, sql: sql, keepsConnectionAlive: owned)
  }

  /// A prepared statement for `sql`, compiled once per connection and reset before
  /// it is handed out again.
  ///
  /// The statement is lent, not given: it belongs to the connection, which finalizes
  /// it when it closes, so do not keep it beyond the connection's life.
  /// - Parameter sql: A single SQL statement.
  /// - Returns: The cached statement, reset and with its bindings cleared.
  /// - Throws: ``SQLiteError`` for a syntax error, or when the connection is closed.
  public func cachedStatement(_ sql: String) throws -> Statement {
    let key = StatementKey(sql)
    if let statement = statementCache[key] {
      statement.reset()
      return statement
    }
    let statement = try compile(sql, owned: false)
    statementCache[key] = statement
    return statement
  }

  /// Runs one or more SQL statements separated by semicolons, ignoring any rows.
  /// - Parameter sql: The SQL script.
  /// - Throws: ``SQLiteError`` from the first statement that fails.
  public func execute(_ sql: String) throws {
    guard !isClosed else { throw SQLiteError(code: .misuse, message: "connection is closed") }
    let status = sqlite3_exec(handle, sql, nil, nil, nil)
    guard status == SQLITE_OK else { throw lastError(status, sql: sql) }
  }

  /// Runs one statement with the given parameters, ignoring any rows.
  /// - Parameters:
  ///   - sql: A single SQL statement with `?` parameters.
  ///   - values: The values bound to the parameters, in order.
  /// - Returns: The number of rows the statement changed.
  /// - Throws: ``SQLiteError`` when the statement fails.
  @discardableResult
  public func run(_ sql: String, _ values: any SQLiteBindable...) throws -> Int {
    let statement = try cachedStatement(sql)
    try statement.bind(values)
    try statement.run()
    return changes
  }

  /// Runs a query and returns the first column of the first row as an integer.
  /// - Parameters:
  ///   - sql: A single SQL query.
  ///   - values: The values bound to its parameters.
  /// - Returns: The integer, or `nil` when the query returns no row or `NULL`.
  /// - Throws: ``SQLiteError`` when the query fails.
  public func scalarInt64(_ sql: String, _ values: any SQLiteBindable...) throws -> Int64? {
    let statement = try cachedStatement(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(at: 0) else { return nil }
    return statement.int64(at: 0)
  }

  /// Runs a query and returns the first column of the first row as text.
  /// - Parameters:
  ///   - sql: A single SQL query.
  ///   - values: The values bound to its parameters.
  /// - Returns: The text, or `nil` when the query returns no row or `NULL`.
  /// - Throws: ``SQLiteError`` when the query fails.
  public func scalarText(_ sql: String, _ values: any SQLiteBindable...) throws -> String? {
    let statement = try cachedStatement(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(at: 0) else { return nil }
    return statement.string(at: 0)
  }

  // MARK: - State

  /// The number of rows changed by the most recent INSERT, UPDATE or DELETE.
  public var changes: Int { Int(sqlite3_changes64(handle)) }

  /// The number of rows changed by INSERT, UPDATE and DELETE statements since the
  /// connection opened, including rows changed by triggers and foreign-key actions.
  public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

  /// The rowid of the most recent successful INSERT on this connection.
  public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

  /// Whether a transaction is open on this connection.
  public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  /// Whether the main database is open read-only (by request, or because the file
  /// or its folder cannot be written).
  public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

  /// A number that changes whenever another connection (in this process or another)
  /// commits to the database file — SQLite's `PRAGMA data_version`. Commits made
  /// through this connection do not change it.
  /// - Returns: The current data version of the main database.
  /// - Throws: ``SQLiteError`` when the file cannot be read.
  public func dataVersion() throws -> Int64 {
    try scalarInt64("PRAGMA data_version") ?? 0
  }

  /// The first `count` bytes (fewer for a shorter file) of the file at `path`, read
  /// through SQLite's file layer so that connections this process has open on the
  /// same file keep their locks (closing a descriptor of one's own would drop them).
  /// - Parameters:
  ///   - path: The file.
  ///   - count: How many bytes to read at most.
  /// - Returns: The bytes.
  /// - Throws: ``SQLiteError`` (`SQLITE_CANTOPEN`, `SQLITE_IOERR`) when the file cannot be read.
  public static func readStart(ofFileAt path: String, count: Int) throws(SQLiteError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var read: Int32 = 0
    let status = bytes.withUnsafeMutableBufferPointer { buffer in
      csqlite_read_file_start(path, buffer.baseAddress, Int32(count), &read)
    }
    guard status == SQLITE_OK else {
      throw SQLiteError(code: ResultCode(rawValue: status), sql: nil)
    }
    return Array(bytes.prefix(Int(read)))
  }

  /// The SQLite library version, e.g. `3.40.1`.
  public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
