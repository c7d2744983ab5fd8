internal import CLibPQ

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One connection to a PostgreSQL server, through libpq.
///
/// A connection owns its libpq handle: it is closed by ``close()`` or, at the latest,
/// when the connection is deinitialised (also when connecting fails). It is not
/// thread-safe: use it from one thread at a time (the type is not `Sendable`, so the
/// compiler keeps it in one isolation domain). The one exception is waking a blocked
/// ``waitForNotifications(timeout:interrupter:)`` from another thread, through a
/// ``PGWaitInterrupter``.
///
/// Statements run through ``query(_:_:)``, ``run(_:_:)`` and the scalar helpers are
/// prepared once per connection and SQL text and reused; their parameters (`$1`, `$2`,
/// …) travel separately from the SQL, so values need no quoting.
///
/// ```swift
/// let db = try PGConnection("postgresql://app@db.example.com/lists")
/// try db.execute("CREATE TABLE IF NOT EXISTS t(x bigint)")
/// try db.transaction {
///   try db.run("INSERT INTO t(x) VALUES ($1)", 42)
/// }
/// let x = try db.scalarInt64("SELECT max(x) FROM t")  // 42
/// ```
public final class PGConnection {
  /// Parameters added to every connection string that does not set them (nor their
  /// environment variable): TCP keepalives that notice a dead peer within about 25
  /// seconds, a 10-second limit on connecting, and the application name `liststore`.
  /// Unix-domain sockets ignore the keepalive settings.
  public static let defaultParameters: [(keyword: String, value: String)] = [
    ("keepalives", "1"),
    ("keepalives_idle", "10"),
    ("keepalives_interval", "5"),
    ("keepalives_count", "3"),
    ("connect_timeout", "10"),
    ("application_name", "liststore"),
  ]

  /// The environment variables libpq reads for the default parameters that have one.
  private static let environmentVariables = [
    "connect_timeout": "PGCONNECT_TIMEOUT", "application_name": "PGAPPNAME",
  ]

  /// libpq's functions, loaded by the first connection.
  let pq: LibPQFunctions

  let handle: OpaquePointer

  /// The connection string it was opened with, its password replaced by `***`.
  public let redactedConnectionString: String

  /// The passwords of the connection string (not the string itself), scrubbed from
  /// libpq's messages.
  private let passwords: [String]

  /// Whether ``close()`` ran.
  public private(set) var isClosed = false

  /// SQL text → name of the statement prepared for it on this session.
  var preparedStatements: [String: String] = [:]
  private var preparedStatementCounter = 0

  /// Statements that open a transaction, queued by ``beginWithNextStatement(_:)`` and not
  /// sent yet.
  var deferredBegin: [String] = []

  /// How deep ``transaction(_:_:)`` calls are nested (0: none running).
  var transactionDepth = 0

  /// The channels ``listen(_:)`` subscribed to, renewed by ``reset()``.
  public internal(set) var listeningChannels: Set<String> = []

  /// Connects to a server.
  ///
  /// The connection string is a URI (`postgresql://user:password@host:port/dbname?…`,
  /// or `postgres://…`) or keyword/value pairs (`host=/run/postgresql dbname=lists`).
  /// Parameters it leaves out come from libpq's environment variables (`PGHOST`, …) and
  /// defaults, and from ``defaultParameters`` for those libpq has no default for.
  /// - Parameter connectionString: Where and how to connect.
  /// - Throws: ``PGError``: `.invalidConnectionString`, `.serverUnreachable`,
  ///   `.authenticationFailed`, `.databaseMissing`, `.tooManyConnections`, … Its
  ///   message never contains the password. `.libraryMissing` when libpq (`libpq.so.5`,
  ///   or the library `$LISTSTORE_LIBPQ` names) cannot be loaded.
  public init(_ connectionString: String) throws {
    let pq = try LibPQ.functions.get()
    self.pq = pq
    passwords = ConnectionString.passwords(in: connectionString)
    redactedConnectionString = ConnectionString.redacted(connectionString)
    let given = try Self.keywords(in: connectionString, pq: pq)
    var keywords: [String] = []
    var values: [String] = []
    for (keyword, value) in Self.defaultParameters where !given.contains(keyword) {
      if let variable = Self.environmentVariables[keyword], getenv(variable) != nil {
        continue
      }
      keywords.append(keyword)
      values.append(value)
    }
    // The string last, as a `dbname` that libpq expands: what it sets wins.
    keywords.append("dbname")
    values.append(connectionString)
    guard let handle = Self.connect(keywords: keywords, values: values, pq: pq) else {
      throw PGError(kind: .other, message: "libpq could not allocate a connection")
    }
    guard pq.PQstatus(handle) == CONNECTION_OK else {
      let message = Self.errorMessage(handle, passwords: passwords, pq: pq)
      pq.PQfinish(handle)
      throw PGError(kind: PGError.kind(forConnectionFailure: message), message: message)
    }
    self.handle = handle
    _ = pq.PQsetNoticeReceiver(handle, ignoreNotice, nil)
  }

  deinit { close() }

  /// Closes the connection. Idempotent; afterwards every operation throws `.misuse`.
  public func close() {
    guard !isClosed else { return }
    isClosed = true
    pq.PQfinish(handle)
  }

  private static func connect(keywords: [String], values: [String], pq: LibPQFunctions)
    -> OpaquePointer?
  {
    let keywordPointers = keywords.map { strdup($0) } + [nil]
    let valuePointers = values.map { strdup($0) } + [nil]
    defer {
      for pointer in keywordPointers + valuePointers { free(pointer) }
    }
    let constKeywords = keywordPointers.map { $0.map { UnsafePointer($0) } }
    let constValues = valuePointers.map { $0.map { UnsafePointer($0) } }
    return pq.PQconnectdbParams(constKeywords, constValues, 1)
  }

  /// The keywords `connectionString` sets.
  /// - Throws: ``PGError`` (`.invalidConnectionString`) when libpq cannot parse it.
  private static func keywords(in connectionString: String, pq: LibPQFunctions) throws
    -> Set<String>
  {
    guard !connectionString.isEmpty else { return [] }
    var error: UnsafeMutablePointer<CChar>?
    guard let options = pq.PQconninfoParse(connectionString, &error) else {
      var message = "the connection string cannot be parsed"
      if let error {
        message = ConnectionString.scrub(
          trimmed(String(cString: error)),
          passwords: ConnectionString.passwords(in: connectionString))
        pq.PQfreemem(error)
      }
      throw PGError(
        kind: .invalidConnectionString,
        message: message + " in \"" + ConnectionString.redacted(connectionString) + "\"")
    }
    defer { pq.PQconninfoFree(options) }
    var keywords: Set<String> = []
    var option = options
    while let keyword = option.pointee.keyword {
      if option.pointee.val != nil { keywords.insert(String(cString: keyword)) }
      option += 1
    }
    return keywords
  }

  // MARK: - Errors

  /// libpq's current message for `handle`, trimmed and scrubbed of passwords.
  private static func errorMessage(
    _ handle: OpaquePointer, passwords: [String], pq: LibPQFunctions
  ) -> String {
    let text = pq.PQerrorMessage(handle).map { String(cString: $0) } ?? ""
    let message = ConnectionString.scrub(trimmed(text), passwords: passwords)
    return message.isEmpty ? "unknown libpq error" : message
  }

  static func trimmed(_ text: String) -> String {
    String(
      text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
  }

  /// The error for a failed call on this connection, from `result` when there is one.
  func error(from result: OpaquePointer?, sql: String?) -> PGError {
    let connectionBad = pq.PQstatus(handle) != CONNECTION_OK
    guard let result else {
      let message = Self.errorMessage(handle, passwords: passwords, pq: pq)
      return PGError(kind: connectionBad ? .connectionLost : .other, message: message, sql: sql)
    }
    func field(_ code: UInt8) -> String? {
      pq.PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
    }
    let sqlState = field(UInt8(ascii: "C"))
    var message = field(UInt8(ascii: "M")) ?? ""
    if message.isEmpty {
      message = pq.PQresultErrorMessage(result).map { Self.trimmed(String(cString: $0)) } ?? ""
    }
    if message.isEmpty { message = Self.errorMessage(handle, passwords: passwords, pq: pq) }
    var kind = sqlState.map(PGError.kind(forSQLState:)) ?? .other
    if connectionBad { kind = .connectionLost }
    return PGError(
      kind: kind, sqlState: sqlState, message: message, detail: field(UInt8(ascii: "D")),
      hint: field(UInt8(ascii: "H")), sql: sql)
  }

  func checkOpen(_ sql: String? = nil) throws {
    guard !isClosed else {
      throw PGError(kind: .misuse, message: "the connection is closed", sql: sql)
    }
  }

  /// Takes ownership of `result` when its status is one of `accepted`; otherwise
  /// clears it and throws the error it carries.
  func checked(_ result: OpaquePointer?, sql: String?, accepting accepted: [ExecStatusType])
    throws -> PGResult
  {
    guard let result else { throw error(from: nil, sql: sql) }
    let status = pq.PQresultStatus(result)
    if accepted.contains(status) { return PGResult(handle: result, pq: pq) }
    if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
      pq.PQclear(result)
      abandonCopy()
      throw PGError(
        kind: .misuse, message: "COPY runs through copyIn(_:_:), not as a query", sql: sql)
    }
    if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
      let text = pq.PQresStatus(status).map { String(cString: $0) } ?? "\(status)"
      pq.PQclear(result)
      throw PGError(kind: .misuse, message: "unexpected result \(text)", sql: sql)
    }
    let error = error(from: result, sql: sql)
    pq.PQclear(result)
    throw error
  }

  /// Ends a COPY the caller did not ask for, and reads the results that follow.
  private func abandonCopy() {
    _ = pq.PQputCopyEnd(handle, "COPY is not supported here")
    var buffer: UnsafeMutablePointer<CChar>?
    while pq.PQgetCopyData(handle, &buffer, 0) > 0 {
      pq.PQfreemem(buffer)
      buffer = nil
    }
    drainResults()
  }

  /// Reads and discards every result still pending, so the next command can be sent.
  func drainResults() {
    while let result = pq.PQgetResult(handle) { pq.PQclear(result) }
  }

  // MARK: - Queries

  /// Runs one or more SQL statements separated by semicolons, as one implicit
  /// transaction unless the script has its own `BEGIN`/`COMMIT`; rows are discarded.
  /// The script takes no parameters.
  /// - Parameter sql: The SQL script.
  /// - Throws: ``PGError`` from the first statement that fails.
  public func execute(_ sql: String) throws {
    try checkOpen(sql)
    try sendDeferredBegin()
    _ = try checked(
      pq.PQexec(handle, sql), sql: sql, accepting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK])
  }

  /// Runs one statement with parameters and returns its rows.
  ///
  /// The statement is prepared once per connection and SQL text, then executed with
  /// the values as parameters `$1`, `$2`, …
  /// - Parameters:
  ///   - sql: A single SQL statement with `$n` parameters.
  ///   - values: One value per parameter.
  /// - Returns: The rows.
  /// - Throws: ``PGError`` when the statement fails.
  @discardableResult
  public func query(_ sql: String, _ values: any PGBindable...) throws -> PGResult {
    try query(sql, parameters: values, prepared: true)
  }

  /// Runs one statement with parameters and returns its rows.
  /// - Parameters:
  ///   - sql: A single SQL statement with `$n` parameters.
  ///   - parameters: One value per parameter.
  ///   - prepared: Whether to prepare the statement once and reuse it (the default),
  ///     or to send it with its parameters each time (better for SQL text that is
  ///     generated and seldom repeated).
  /// - Returns: The rows.
  /// - Throws: ``PGError`` when the statement fails.
  @discardableResult
  public func query(_ sql: String, parameters: [any PGBindable], prepared: Bool = true) throws
    -> PGResult
  {
    try checkOpen(sql)
    let encoded = try EncodedParameters(parameters, sql: sql)
    if !deferredBegin.isEmpty {
      if let result = try pipelined(sql, encoded, prepared: prepared) { return result }
    }
    let accepted = [PGRES_COMMAND_OK, PGRES_TUPLES_OK]
    guard prepared else {
      let result = encoded.withUnsafePointers { count, values, lengths, formats in
        pq.PQexecParams(handle, sql, count, nil, values, lengths, formats, 0)
      }
      return try checked(result, sql: sql, accepting: accepted)
    }
    let name = try preparedStatement(for: sql)
    let result = encoded.withUnsafePointers { count, values, lengths, formats in
      pq.PQexecPrepared(handle, name, count, values, lengths, formats, 0)
    }
    return try checked(result, sql: sql, accepting: accepted)
  }

  /// The name of the statement prepared for `sql` on this session, preparing it first
  /// if needed.
  private func preparedStatement(for sql: String) throws -> String {
    if let name = preparedStatements[sql] { return name }
    let name = newStatementName()
    _ = try checked(
      pq.PQprepare(handle, name, sql, 0, nil), sql: sql, accepting: [PGRES_COMMAND_OK])
    preparedStatements[sql] = name
    return name
  }

  /// A name for a statement about to be prepared, not used before on this session.
  func newStatementName() -> String {
    preparedStatementCounter += 1
    return "liststore_\(preparedStatementCounter)"
  }

  /// Runs one statement with parameters, ignoring any rows.
  /// - Parameters:
  ///   - sql: A single SQL statement with `$n` parameters.
  ///   - values: One value per parameter.
  /// - Returns: The number of rows it inserted, updated or deleted.
  /// - Throws: ``PGError`` when the statement fails.
  @discardableResult
  public func run(_ sql: String, _ values: any PGBindable...) throws -> Int {
    try query(sql, parameters: values).rowsAffected
  }

  /// Runs a query and returns the first column of the first row as an integer.
  /// - Parameters:
  ///   - sql: A single SQL query with `$n` parameters.
  ///   - values: One value per parameter.
  /// - Returns: The integer, or `nil` when the query returns no row or `NULL`.
  /// - Throws: ``PGError`` when the query fails or the value is not an integer.
  public func scalarInt64(_ sql: String, _ values: any PGBindable...) throws -> Int64? {
    let result = try query(sql, parameters: values)
    guard result.rowCount > 0, result.columnCount > 0 else { return nil }
    return try result.optionalInt64(row: 0, column: 0)
  }

  /// Runs a query and returns the first column of the first row as text.
  /// - Parameters:
  ///   - sql: A single SQL query with `$n` parameters.
  ///   - values: One value per parameter.
  /// - Returns: The text, or `nil` when the query returns no row or `NULL`.
  /// - Throws: ``PGError`` when the query fails.
  public func scalarText(_ sql: String, _ values: any PGBindable...) throws -> String? {
    let result = try query(sql, parameters: values)
    guard result.rowCount > 0, result.columnCount > 0 else { return nil }
    return result.optionalString(row: 0, column: 0)
  }

  // MARK: - State

  /// Whether libpq considers the connection usable (no round trip; a broken
  /// connection shows only once a call fails — use ``ping()`` to find out).
  public var isConnected: Bool { !isClosed && pq.PQstatus(handle) == CONNECTION_OK }

  /// Whether a transaction is open (or aborted and not yet rolled back).
  public var isInTransaction: Bool {
    guard !isClosed else { return false }
    if !deferredBegin.isEmpty { return true }
    let status = pq.PQtransactionStatus(handle)
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
  }

  /// Whether the open transaction was aborted by an error and awaits its rollback.
  var isTransactionAborted: Bool {
    !isClosed && pq.PQtransactionStatus(handle) == PQTRANS_INERROR
  }

  /// The process id of the server process serving this connection (what
  /// `pg_backend_pid()` returns, and ``PGNotification/processID`` of its notifications).
  public var backendPID: Int32 { isClosed ? 0 : pq.PQbackendPID(handle) }

  /// Whether the connection reaches its server over a Unix-domain socket or the loopback
  /// interface (as its socket's peer address says): a link where a round trip costs
  /// little. `false` when closed, or when the address cannot be read.
  public var isLocal: Bool {
    guard !isClosed else { return false }
    let socket = pq.PQsocket(handle)
    guard socket >= 0 else { return false }
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let status = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getpeername(socket, $0, &length)
      }
    }
    guard status == 0 else { return false }
    return withUnsafePointer(to: &address) { pointer in
      switch Int32(pointer.pointee.ss_family) {
      case AF_UNIX: return true
      case AF_INET:
        return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
          UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127
        }
      case AF_INET6:
        return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          let bytes = withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
          // ::1, or an IPv4 loopback address mapped (::ffff:127.x.y.z).
          let loopback = bytes[..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
          let mapped =
            bytes[..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            && bytes[12] == 127
          return loopback || mapped
        }
      default: return false
      }
    }
  }

  /// The server's version as a number, such as 150018 for 15.18.
  public var serverVersion: Int { isClosed ? 0 : Int(pq.PQserverVersion(handle)) }

  /// The value in use for a connection parameter, such as `host`, `dbname` or
  /// `keepalives_idle`; never the password.
  /// - Parameter keyword: A libpq connection keyword.
  /// - Returns: Its value, or `nil` when unset (and always for `password`).
  public func parameter(_ keyword: String) -> String? {
    guard !isClosed, keyword != "password", let options = pq.PQconninfo(handle) else { return nil }
    defer { pq.PQconninfoFree(options) }
    var option = options
    while let name = option.pointee.keyword {
      if String(cString: name) == keyword { return option.pointee.val.map { String(cString: $0) } }
      option += 1
    }
    return nil
  }

  /// Makes a round trip to the server with an empty query.
  /// - Throws: ``PGError`` (`.connectionLost`, …) when the server does not answer.
  public func ping() throws {
    try checkOpen()
    try sendDeferredBegin()
    _ = try checked(pq.PQexec(handle, ""), sql: nil, accepting: [PGRES_EMPTY_QUERY])
  }

  /// Whether the server answers a round trip (``ping()`` without the error).
  /// - Returns: `true` when it does.
  public func isAlive() -> Bool {
    (try? ping()) != nil
  }

  /// Closes the connection to the server and opens it again with the same parameters,
  /// such as after the connection was lost.
  ///
  /// The new session starts without prepared statements (they are prepared again on
  /// first use) and outside any transaction, and listens again on
  /// ``listeningChannels``. Notifications sent while disconnected are lost.
  /// - Throws: ``PGError`` when connecting fails (`.serverUnreachable`, …); the
  ///   connection can be reset again later.
  public func reset() throws {
    try checkOpen()
    preparedStatements.removeAll()
    deferredBegin.removeAll()
    transactionDepth = 0
    pq.PQreset(handle)
    guard pq.PQstatus(handle) == CONNECTION_OK else {
      let message = Self.errorMessage(handle, passwords: passwords, pq: pq)
      throw PGError(kind: PGError.kind(forConnectionFailure: message), message: message)
    }
    for channel in listeningChannels.sorted() {
      try execute("LISTEN " + Self.quoteIdentifier(channel))
    }
  }

  // MARK: - Quoting

  /// `name` as a quoted SQL identifier: `"name"`, with `"` doubled.
  /// - Parameter name: A table, column or channel name.
  /// - Returns: The quoted identifier.
  public static func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacing("\"", with: "\"\"") + "\""
  }

  /// `text` as a SQL string literal: `'text'`, with `'` doubled (with
  /// `standard_conforming_strings` on, PostgreSQL's default). Prefer parameters; this is
  /// for statements that take none, such as `CREATE ROLE … PASSWORD`.
  /// - Parameter text: The text.
  /// - Returns: The literal.
  public static func quoteLiteral(_ text: String) -> String {
    "'" + text.replacing("'", with: "''") + "'"
  }

  /// `connectionString` with its password replaced by `***`, for messages and logs:
  /// `postgresql://user:secret@host/db` → `postgresql://user:***@host/db`,
  /// `host=h password='a b'` → `host=h password=***`.
  ///
  /// It needs no valid string: anything that might be a password is hidden.
  /// - Parameter connectionString: A URI or keyword/value connection string.
  /// - Returns: The same text without passwords.
  public static func redactingPassword(in connectionString: String) -> String {
    ConnectionString.redacted(connectionString)
  }
}

/// Discards notices and warnings the server sends; libpq would print them on standard
/// error otherwise.
private func ignoreNotice(_ context: UnsafeMutableRawPointer?, _ result: OpaquePointer?) {}
