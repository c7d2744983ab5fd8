import ListStore
import PostgreSQLKit
import Synchronization

/// The server process of the repository's connection, as its listener sees it: the
/// listener leaves that session's notifications to the repository's writes. A session is
/// recorded only once a commit succeeded on it, and forgotten whenever the listener
/// connects (the server may have restarted, and a new session of another client may have
/// the old process id) or the connection's session changed: a notification is taken for
/// the repository's own only when that session committed since the listener connected.
final class ServerSession: Sendable {
  /// A generation (begun anew by ``forget()``) in the high 32 bits, the process id in the
  /// low 32 (0: none recorded).
  private let state = Atomic<UInt64>(0)

  /// The recorded process id; 0 when none.
  var processID: Int32 {
    Int32(bitPattern: UInt32(truncatingIfNeeded: state.load(ordering: .acquiring)))
  }

  /// The generation, to pass to ``record(_:generation:)`` after a commit.
  var generation: UInt32 { UInt32(truncatingIfNeeded: state.load(ordering: .acquiring) >> 32) }

  /// Records `processID`, unless ``forget()`` ran since `generation` was read.
  func record(_ processID: Int32, generation: UInt32) {
    let desired = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: processID))
    var current = state.load(ordering: .acquiring)
    while UInt32(truncatingIfNeeded: current >> 32) == generation, current != desired {
      let (exchanged, original) = state.compareExchange(
        expected: current, desired: desired, ordering: .acquiringAndReleasing)
      if exchanged { return }
      current = original
    }
  }

  /// Forgets the process id, beginning a new generation.
  func forget() {
    var current = state.load(ordering: .acquiring)
    while true {
      let next = UInt64(UInt32(truncatingIfNeeded: current >> 32) &+ 1) << 32
      let (exchanged, original) = state.compareExchange(
        expected: current, desired: next, ordering: .acquiringAndReleasing)
      if exchanged { return }
      current = original
    }
  }
}

/// ListStore's connection to a PostgreSQL database: a ``DatabaseConnection`` over
/// PostgreSQLKit's `PGConnection`. The SQL ListStore writes with `?` placeholders is
/// numbered (`$1`, `$2`, …) once, when first prepared.
final class PostgreSQLDatabase: DatabaseConnection {
  let connection: PGConnection
  private var statements: [String: PostgreSQLStatement] = [:]
  private(set) var rowsRead = 0
  /// What ``sendWithCommit(_:)`` sent, until ``commit()`` or ``rollback()``: each read's
  /// numbered SQL, parameters and rows (taken once read), and the commit's outcome.
  private var sentWithCommit:
    (
      reads: [(sql: String, parameters: [PGParameter], result: Result<PGResult, PGError>)],
      commit: Result<Void, PGError>
    )?

  /// The key of the transaction-scoped advisory lock that orders writers: held from a
  /// writer's first log entry (or, for ListStore's own writes, from `BEGIN`) until it
  /// commits, so the log's order is the order of commits. The schema's triggers take
  /// the same key.
  static let writerLock: Int64 = 4_992_855_103_141_254_223

  /// Opens a write transaction and takes ``writerLock`` in it.
  static let beginWrite = ["BEGIN", "SELECT pg_advisory_xact_lock(\(writerLock))"]

  /// Opens a read transaction.
  static let beginRead = ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"]

  /// PostgreSQL's SQL where it differs from SQLite's.
  static let dialect = SQLDialect(
    engine: .postgresql, checkedJSONParameter: "?",
    lastSeqAndHorizon: """
      SELECT greatest(coalesce((SELECT max(seq) FROM changes), 0), pruned_through), pruned_through
      FROM change_log_horizon WHERE id = 1
      """,
    positionType: "'text'",
    manyListsMembership: "= ANY($1::bigint[])",
    listIDsText: { ids in "{" + ids.map(String.init).joined(separator: ",") + "}" },
    pageShape: .nested, ordersJoins: false,
    // A lateral subquery (kept apart by OFFSET 0) is read section by section through the
    // index on (section_id, position): the planner, which cannot tell how many of the
    // items a list holds, otherwise hashes every item of every list to find a few.
    itemsOfSection: { left in
      (left ? "LEFT " : "CROSS ")
        + "JOIN LATERAL (SELECT id, position, value FROM items WHERE section_id = s.id "
        + "ORDER BY position OFFSET 0) i" + (left ? " ON true" : "")
    })

  /// The session settings the connection was opened with, set again after a reset.
  private let sessionSetup: String

  init(
    _ connection: PGConnection, sessionSetup: String = "",
    readsWithCommit: PostgreSQLEngine.ReadsWithCommit = .never
  ) {
    self.connection = connection
    self.sessionSetup = sessionSetup
    self.readsWithCommit = readsWithCommit
    sendsReadsWithCommit = Self.sendsReads(readsWithCommit, connection)
  }

  /// When reads go with the COMMIT, and whether they do on the link open now.
  private let readsWithCommit: PostgreSQLEngine.ReadsWithCommit
  private var sendsReadsWithCommit: Bool

  private static func sendsReads(
    _ rule: PostgreSQLEngine.ReadsWithCommit, _ connection: PGConnection
  ) -> Bool {
    switch rule {
    case .always: true
    case .never: false
    case .overNetwork: !connection.isLocal
    }
  }

  /// The server session this connection last committed in: how the repository's listener
  /// tells its notifications apart.
  let session = ServerSession()
  /// ``ServerSession/generation`` when the transaction under way began.
  private var sessionGeneration: UInt32 = 0
  /// How many commits carried reads (``sendWithCommit(_:)``), for tests.
  private(set) var commitsWithReads = 0

  var ownCommits: (any Sendable)? { session }

  var dialect: SQLDialect { Self.dialect }

  func cached(_ sql: String) throws -> any DatabaseStatement {
    if let statement = statements[sql] {
      statement.reset()
      return statement
    }
    let statement = PostgreSQLStatement(sql: Self.numbered(sql), database: self)
    statements[sql] = statement
    return statement
  }

  func prepared(_ sql: String) throws -> any DatabaseStatement {
    PostgreSQLStatement(sql: Self.numbered(sql), database: self, prepared: false)
  }

  func execute(_ sql: String) throws {
    try refuseAfterCommit()
    try connection.execute(sql)
  }

  /// Sends the reads and the COMMIT in one round trip (libpq's pipeline mode), when the
  /// engine's rule says so for this link (``PostgreSQLEngine/ReadsWithCommit``); otherwise,
  /// or with libpq older than 14, nothing is sent and they run one by one as usual.
  func sendWithCommit(_ reads: [(sql: String, values: [SQLValue])]) throws {
    guard sendsReadsWithCommit else { return }
    try refuseAfterCommit()
    let queries = reads.map { read in
      (sql: Self.numbered(read.sql), parameters: read.values.map(PostgreSQLStatement.parameter))
    }
    guard
      let (results, commit) = try connection.queriesThenCommit(
        queries.map { ($0.sql, $0.parameters as [any PGBindable]) })
    else { return }
    sentWithCommit = (
      zip(queries, results).map { query, result in (query.sql, query.parameters, result) },
      commit
    )
    commitsWithReads += 1
  }

  /// The rows `sql` got with `parameters` when ``sendWithCommit(_:)`` sent it (each such
  /// read is answered once); `nil` when nothing was sent with the COMMIT.
  /// - Throws: The read's error, or ``NeedsReload`` for any other statement: the
  ///   transaction is over.
  fileprivate func rowsSentWithCommit(_ sql: String, _ parameters: [PGParameter]) throws
    -> PGResult?
  {
    guard let sent = sentWithCommit else { return nil }
    guard
      let index = sent.reads.firstIndex(where: { $0.sql == sql && $0.parameters == parameters })
    else {
      throw NeedsReload(reason: "the transaction was committed with the reads sent along")
    }
    sentWithCommit?.reads.remove(at: index)
    return try sent.reads[index].result.get()
  }

  /// Throws ``NeedsReload`` once the COMMIT went out with reads: nothing may run in the
  /// transaction any more.
  private func refuseAfterCommit() throws {
    guard sentWithCommit == nil else {
      throw NeedsReload(reason: "the transaction was committed with the reads sent along")
    }
  }

  func begin(_ mode: TransactionMode) throws {
    // A connection the server dropped (a restart, a terminated session) is opened again
    // before the next transaction; the work it was doing failed with its error.
    if !connection.isConnected {
      try connection.reset()
      sendsReadsWithCommit = Self.sendsReads(readsWithCommit, connection)
      if !sessionSetup.isEmpty { try connection.execute(sessionSetup) }
    }
    // Another session than the one that last committed (opened again, here or by libpq
    // after a pipeline it could not leave): its process id no longer tells anything.
    if session.processID != 0, session.processID != connection.backendPID { session.forget() }
    sessionGeneration = session.generation
    // Sent with the transaction's first statement, in its round trip: an observed
    // single-item write makes three round trips (the opening with the write, the log read,
    // COMMIT), two over a network, where the log read goes with the COMMIT (B10 in
    // BENCHMARKS.md); a read makes one.
    try connection.beginWithNextStatement(mode == .write ? Self.beginWrite : Self.beginRead)
  }

  func commit() throws {
    // A transaction that ran no statement was never opened on the server.
    if let sent = sentWithCommit {
      sentWithCommit = nil
      try sent.commit.get()
    } else {
      if connection.discardDeferredBegin() { return }
      // Fails, rather than reporting success, when a failed statement had aborted it.
      try connection.commit()
    }
    session.record(connection.backendPID, generation: sessionGeneration)
  }

  func rollback() {
    // A COMMIT sent with reads that failed left the transaction open, aborted.
    sentWithCommit = nil
    if connection.discardDeferredBegin() { return }
    guard connection.isInTransaction else { return }
    try? connection.execute("ROLLBACK")
  }

  func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
    try refuseAfterCommit()
    return try connection.savepoint(body)
  }

  var isInTransaction: Bool { connection.isInTransaction }

  func insert(_ sql: String, _ values: [SQLValue]) throws -> Int64 {
    let statement = try cached(sql + " RETURNING id")
    defer { statement.reset() }
    for (offset, value) in values.enumerated() {
      try statement.bind(value, at: Int32(offset + 1))
    }
    guard try statement.step() else {
      throw PGError(kind: .unexpectedValue, message: "the insert returned no id")
    }
    return statement.int64(at: 0)
  }

  /// `COPY` the rows in, then read their ids back in key order: they are the section's
  /// rows at or after the first new key, since the keys come after every row there and
  /// this transaction holds the lock that orders writers.
  /// The `json` column checks each value, whatever `checkingJSON` says.
  func appendItems(sectionID: Int64, keys: [String], values: [String], checkingJSON: Bool)
    throws -> [Int64]
  {
    try refuseAfterCommit()
    guard let first = keys.first else { return [] }
    let section = String(sectionID)
    try connection.copyIn("COPY items(section_id, position, value) FROM STDIN") { writer in
      for (key, value) in zip(keys, values) { try writer.append([section, key, value]) }
    }
    let result = try connection.query(
      "SELECT id FROM items WHERE section_id = $1 AND position >= $2 ORDER BY position",
      sectionID, first)
    guard result.rowCount == keys.count else {
      throw PGError(
        kind: .unexpectedValue,
        message: "appended \(keys.count) items but found \(result.rowCount) after the first key")
    }
    rowsRead &+= result.rowCount
    return try (0..<result.rowCount).map { try result.int64(row: $0, column: 0) }
  }

  fileprivate func counted(_ rows: Int) { rowsRead &+= rows }

  /// `sql` with its `?` placeholders numbered `$1`, `$2`, … (outside quotes).
  static func numbered(_ sql: String) -> String {
    var result = ""
    result.reserveCapacity(sql.utf8.count + 8)
    var number = 0
    var quote: Character?
    for character in sql {
      if let open = quote {
        if character == open { quote = nil }
        result.append(character)
      } else if character == "'" || character == "\"" {
        quote = character
        result.append(character)
      } else if character == "?" {
        number += 1
        result += "$\(number)"
      } else {
        result.append(character)
      }
    }
    return result
  }
}

/// A statement as a ``DatabaseStatement``: bound values are sent when it is first
/// stepped; its rows are then read from the result.
final class PostgreSQLStatement: DatabaseStatement {
  private let sql: String
  private unowned let database: PostgreSQLDatabase
  private let isPrepared: Bool
  private var parameters: [PGParameter] = []
  private var result: PGResult?
  private var row = -1
  /// The rows the last run changed, kept after ``reset()`` as SQLite's count is (`run`
  /// resets the statement before its caller reads the count).
  private(set) var rowsChanged = 0

  init(sql: String, database: PostgreSQLDatabase, prepared: Bool = true) {
    self.sql = sql
    self.database = database
    isPrepared = prepared
  }

  func bind(_ value: SQLValue, at index: Int32) throws {
    let position = Int(index) - 1
    while parameters.count <= position { parameters.append(.null) }
    parameters[position] = Self.parameter(value)
  }

  /// A value as the parameter sent for it.
  static func parameter(_ value: SQLValue) -> PGParameter {
    switch value {
    case .integer(let value): .text(String(value))
    case .real(let value): .text(String(value))
    case .text(let value): .text(value)
    case .null: .null
    }
  }

  func step() throws -> Bool {
    if result == nil {
      let result =
        try database.rowsSentWithCommit(sql, parameters)
        ?? database.connection.query(sql, parameters: parameters, prepared: isPrepared)
      self.result = result
      rowsChanged = result.rowsAffected
      database.counted(result.rowCount)
      row = -1
    }
    guard let result else { return false }
    row += 1
    return row < result.rowCount
  }

  func reset() {
    result = nil
    row = -1
  }

  private var current: (result: PGResult, row: Int)? {
    guard let result, row >= 0, row < result.rowCount else { return nil }
    return (result, row)
  }

  func int64(at index: Int32) -> Int64 { optionalInt64(at: index) ?? 0 }

  func optionalInt64(at index: Int32) -> Int64? {
    guard let (result, row) = current else { return nil }
    return try? result.optionalInt64(row: row, column: Int(index))
  }

  func double(at index: Int32) -> Double {
    guard let (result, row) = current, !result.isNull(row: row, column: Int(index)) else {
      return 0
    }
    return (try? result.double(row: row, column: Int(index))) ?? 0
  }

  func string(at index: Int32) -> String { optionalString(at: index) ?? "" }

  func optionalString(at index: Int32) -> String? {
    guard let (result, row) = current else { return nil }
    return result.optionalString(row: row, column: Int(index))
  }

  func isNull(at index: Int32) -> Bool {
    guard let (result, row) = current else { return true }
    return result.isNull(row: row, column: Int(index))
  }

  func withUTF8<R>(at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows
    -> R
  {
    guard let (result, row) = current else {
      return try body(UnsafeBufferPointer(start: nil, count: 0))
    }
    return try result.withUTF8(row: row, column: Int(index), body)
  }
}
