import PostgreSQLKit
import PostgresTestSupport
import Testing

/// `beginWithNextStatement(_:)`: a transaction's opening sent with its first statement.
@Suite(.postgres) struct DeferredBeginTests {
  private func count(_ db: PGConnection) throws -> Int64? {
    try db.scalarInt64("SELECT count(*) FROM t")
  }

  /// The opening runs, in order, before the statement, whichever way the statement goes:
  /// new on the session (prepared in the same round trip), already prepared, or unprepared.
  @Test(arguments: ["new", "known", "unprepared"])
  func theOpeningRunsBeforeTheStatementInItsTransaction(kind: String) throws {
    let (db, connectionString) = try freshDatabase()
    let other = try PGConnection(connectionString)
    try db.execute("CREATE TABLE t(x int)")
    let insert = "INSERT INTO t VALUES ($1) RETURNING current_setting('application_name')"
    if kind == "known" { try db.run(insert, 0) }
    try db.beginWithNextStatement(["BEGIN", "SET LOCAL application_name = 'deferred'"])
    #expect(db.isInTransaction)
    let result = try db.query(insert, parameters: [1], prepared: kind != "unprepared")
    // SET LOCAL ran first, inside the transaction the INSERT is part of.
    #expect(result.optionalString(row: 0, column: 0) == "deferred")
    #expect(db.isInTransaction)
    #expect(try other.scalarInt64("SELECT count(*) FROM t WHERE x = 1") == 0)
    try db.execute("ROLLBACK")
    #expect(!db.isInTransaction)
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE x = 1") == 0)
    #expect(try db.scalarText("SHOW application_name") != "deferred")
    // The statement works again, prepared or not, in a transaction opened the same way.
    try db.beginWithNextStatement(["BEGIN"])
    try db.query(insert, parameters: [2], prepared: kind != "unprepared")
    try db.execute("COMMIT")
    #expect(try other.scalarInt64("SELECT count(*) FROM t WHERE x = 2") == 1)
  }

  /// A failing opening statement fails the statement after it, which does not run; the
  /// connection stays usable once the aborted transaction is rolled back.
  @Test func aFailingOpeningFailsTheNextStatementWhichDoesNotRun() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    try db.beginWithNextStatement(["BEGIN", "SELECT 1 / 0"])
    let error = try #require(throws: PGError.self) { try db.run("INSERT INTO t VALUES ($1)", 1) }
    #expect(error.sqlState == "22012", "\(error)")
    #expect(error.message.contains("division by zero"))
    #expect(db.isInTransaction)
    try db.execute("ROLLBACK")
    #expect(try count(db) == 0)
    // The INSERT was not prepared (its PREPARE was skipped): it is prepared when next used.
    try db.run("INSERT INTO t VALUES ($1)", 2)
    #expect(try count(db) == 1)
  }

  /// A statement that fails after the opening leaves the transaction aborted, as it would
  /// have after a `BEGIN` of its own; a statement the server cannot prepare is reported
  /// each time it is used, not as a missing prepared statement.
  @Test func aFailingStatementAfterTheOpeningAbortsTheTransaction() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    try db.beginWithNextStatement(["BEGIN"])
    try db.run("INSERT INTO t VALUES ($1)", 1)
    try db.execute("COMMIT")
    for _ in 0..<2 {
      try db.beginWithNextStatement(["BEGIN"])
      let error = try #require(throws: PGError.self) {
        try db.run("INSERT INTO missing VALUES ($1)", 1)
      }
      #expect(error.sqlState == "42P01", "\(error)")
      #expect(db.isInTransaction)
      try db.execute("ROLLBACK")
    }
    try db.beginWithNextStatement(["BEGIN"])
    let error = try #require(throws: PGError.self) { try db.run("INSERT INTO t VALUES ('x')") }
    #expect(error.sqlState == "22P02", "\(error)")
    try db.execute("ROLLBACK")
    #expect(try count(db) == 1)
  }

  /// Until it is sent, the opening can be forgotten; a second one while one waits is a
  /// misuse; `execute`, `copyIn` and `ping` send it first.
  @Test func anOpeningWaitsUntilTheNextStatementOrIsForgotten() throws {
    let (db, connectionString) = try freshDatabase()
    let other = try PGConnection(connectionString)
    try db.execute("CREATE TABLE t(x int)")
    try db.beginWithNextStatement(["BEGIN"])
    let misuse = try #require(throws: PGError.self) { try db.beginWithNextStatement(["BEGIN"]) }
    #expect(misuse.kind == .misuse)
    #expect(db.discardDeferredBegin())
    #expect(!db.discardDeferredBegin())
    #expect(!db.isInTransaction)
    try db.run("INSERT INTO t VALUES ($1)", 1)  // No transaction: committed at once.
    #expect(try other.scalarInt64("SELECT count(*) FROM t") == 1)

    try db.beginWithNextStatement(["BEGIN"])
    try db.execute("INSERT INTO t VALUES (2)")
    try db.ping()
    _ = try db.copyIn("COPY t(x) FROM STDIN") { writer in try writer.append(["3"]) }
    #expect(try other.scalarInt64("SELECT count(*) FROM t") == 1)
    try db.execute("ROLLBACK")
    #expect(try count(db) == 1)
  }

  /// A connection lost while an opening waits: the next statement says so (no hang, no
  /// result of another statement), and the connection works again after `reset()`.
  @Test func aConnectionLostBeforeTheOpeningIsSentIsReported() throws {
    let server = try TestPostgresServer.shared()
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    try db.run("INSERT INTO t VALUES ($1)", 1)
    try db.beginWithNextStatement(["BEGIN"])
    try server.superuserQuery("SELECT pg_terminate_backend($1)", db.backendPID)
    let error = try #require(throws: PGError.self) { try db.run("INSERT INTO t VALUES ($1)", 2) }
    #expect(error.kind == .connectionLost, "\(error)")
    #expect(!db.isConnected)
    try db.reset()
    #expect(!db.isInTransaction)
    #expect(try count(db) == 1)
    try db.beginWithNextStatement(["BEGIN"])
    try db.run("INSERT INTO t VALUES ($1)", 3)
    try db.execute("COMMIT")
    #expect(try count(db) == 2)
  }

  /// A statement libpq refuses before sending it (more parameters than the protocol
  /// carries) fails at once after an opening too, as without one, and the connection
  /// goes on: the opening ran, and rolls back.
  @Test func aStatementLibpqRefusesFailsAtOnceAfterAnOpening() throws {
    let (db, _) = try freshDatabase()
    let values: [any PGBindable] = Array(repeating: 1, count: 70_000)
    let alone = try #require(throws: PGError.self) {
      try db.query("SELECT $1::int", parameters: values)
    }
    try db.beginWithNextStatement(["BEGIN", "SELECT pg_advisory_xact_lock(1)"])
    let after = try #require(throws: PGError.self) {
      try db.query("SELECT $1::int", parameters: values)
    }
    #expect(after.message == alone.message)
    #expect(db.isInTransaction)
    try db.execute("ROLLBACK")
    // (This session's: other tests' sessions take the lock too.)
    #expect(
      try db.scalarInt64(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        == 0)
    #expect(try db.scalarInt64("SELECT $1::int", 7) == 7)
  }

  /// Differential: random sequences of transactions, inserts, deletes, reads and failing
  /// statements (duplicate keys, a CHECK, a syntax error; new and known statement texts,
  /// prepared or not) on two databases, one opening its transactions with
  /// `beginWithNextStatement`, the other with `BEGIN` on its own: every step gives the same
  /// rows or the same SQLSTATE, and the same transaction state.
  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func anOpeningSentWithTheNextStatementBehavesAsABeginOfItsOwn(seed: UInt64) throws {
    let (deferred, _) = try freshDatabase()
    let plain = try freshDatabase().connection
    for db in [deferred, plain] {
      try db.execute("CREATE TABLE t(x int PRIMARY KEY CHECK (x >= 0))")
    }
    var state = seed &* 0x9E37_79B9_7F4A_7C15
    func random(_ bound: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(bound))
    }
    /// What a step gave: its rows as text, or its SQLSTATE.
    func outcome(_ body: () throws -> String) -> String {
      do { return try body() } catch let error as PGError {
        return "error \(error.sqlState ?? "\(error.kind)")"
      } catch { return "error \(error)" }
    }
    for step in 0..<200 {
      if !plain.isInTransaction, random(3) == 0 {
        try deferred.beginWithNextStatement(["BEGIN"])
        try plain.execute("BEGIN")
      }
      // A statement text among several (new ones are prepared with the opening).
      let variant = random(6)
      let prepared = random(2) == 0
      let x = random(40) - 3
      let operation = random(10)
      func run(_ db: PGConnection) -> String {
        outcome {
          switch operation {
          case 0...3:
            let result = try db.query(
              "INSERT INTO t VALUES ($1) RETURNING x /* \(variant) */", parameters: [x],
              prepared: prepared)
            return "inserted \(try result.int64(row: 0, column: 0))"
          case 4:
            return
              "deleted \(try db.query("DELETE FROM t WHERE x = $1", parameters: [x]).rowsAffected)"
          case 5, 6:
            let sum = try db.query(
              "SELECT count(*)::text || ' ' || coalesce(sum(x), 0)::text FROM t /* \(variant) */",
              parameters: [], prepared: prepared)
            return sum.optionalString(row: 0, column: 0) ?? "nil"
          case 7:
            try db.query("SELEC \(variant)", parameters: [], prepared: prepared)
            return "ran"
          case 8:
            try db.execute("COMMIT")
            return "committed"
          default:
            try db.execute("ROLLBACK")
            return "rolled back"
          }
        }
      }
      let expected = run(plain)
      let got = run(deferred)
      #expect(got == expected, "seed \(seed), step \(step)")
      #expect(
        deferred.isInTransaction == plain.isInTransaction, "seed \(seed), step \(step)")
      if got != expected { break }
    }
    for db in [deferred, plain] where db.isInTransaction { try db.execute("ROLLBACK") }
    let rows = "SELECT coalesce(string_agg(x::text, ',' ORDER BY x), '') FROM t"
    #expect(try deferred.scalarText(rows) == plain.scalarText(rows))
  }
}
