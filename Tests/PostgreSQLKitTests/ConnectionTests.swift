import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct ConnectionTests {
  @Test func connectsAndCloses() throws {
    let (db, _) = try freshDatabase()
    #expect(db.isConnected)
    #expect(db.backendPID > 0)
    #expect(db.serverVersion >= 150_000)
    #expect(try db.scalarInt64("SELECT pg_backend_pid()") == Int64(db.backendPID))
    try db.ping()
    #expect(db.isAlive())
    #expect(!db.isInTransaction)
    db.close()
    db.close()
    #expect(db.isClosed)
    #expect(!db.isConnected)
    #expect(!db.isAlive())
    let error = try #require(throws: PGError.self) { try db.query("SELECT 1") }
    #expect(error.kind == .misuse)
  }

  @Test func endsTheServerSessionWhenDeinitialised() throws {
    let connectionString = try TestPostgresServer.shared().makeDatabase()
    do {
      let db = try PGConnection(connectionString)
      try db.query("SELECT pg_advisory_lock(7)")
    }
    // The session's lock is released only when the session ends: taking it waits for
    // exactly that.
    let observer = try PGConnection(connectionString)
    try observer.execute("SET lock_timeout = '60s'")
    try observer.query("SELECT pg_advisory_lock(7)")
  }

  @Test func addsDefaultParametersWithoutOverridingTheString() throws {
    let server = try TestPostgresServer.shared()
    let plain = try PGConnection(try server.makeDatabase())
    #expect(plain.parameter("application_name") == "liststore")
    #expect(plain.parameter("keepalives") == "1")
    #expect(plain.parameter("keepalives_idle") == "10")
    #expect(plain.parameter("keepalives_interval") == "5")
    #expect(plain.parameter("keepalives_count") == "3")
    #expect(plain.parameter("connect_timeout") == "10")
    #expect(try plain.scalarText("SHOW application_name") == "liststore")

    let keywordString =
      try server.makeDatabase()
      + " application_name='my app' keepalives_idle=77 connect_timeout=3"
    let keyword = try PGConnection(keywordString)
    #expect(try keyword.scalarText("SHOW application_name") == "my app")
    #expect(keyword.parameter("keepalives_idle") == "77")
    #expect(keyword.parameter("connect_timeout") == "3")
    #expect(keyword.parameter("keepalives_count") == "3")

    let database = try #require(keyword.parameter("dbname"))
    let uri =
      "postgresql:///\(database)?host=\(server.socketDirectory)&port=\(server.port)"
      + "&user=postgres&application_name=from%20uri&keepalives=0"
    let fromURI = try PGConnection(uri)
    #expect(try fromURI.scalarText("SHOW application_name") == "from uri")
    #expect(fromURI.parameter("keepalives") == "0")
    #expect(fromURI.parameter("keepalives_idle") == "10")
    #expect(fromURI.parameter("password") == nil)
    let shortScheme = try PGConnection(
      "postgres://postgres@/\(database)?host=\(server.socketDirectory)&port=\(server.port)")
    #expect(try shortScheme.scalarText("SELECT current_database()") == database)
  }

  @Test func bindsParametersOfEveryType() throws {
    let (db, _) = try freshDatabase()
    try db.execute(
      "CREATE TABLE t(id serial PRIMARY KEY, i bigint, f double precision, b boolean, s text, "
        + "n text, bytes bytea)")
    let texts = [
      "", "plain", "quote ' \" ; -- DROP TABLE t", "non-ASCII: Zürich 東京 🚀", "tab\there",
      "line\nbreak\r\n", "back\\slash \\N \\.", String(repeating: "long ", count: 20_000),
    ]
    let integers: [Int64] = [.min, -1, 0, 1, .max, 42, 7, 9]
    let doubles: [Double] = [0.25, -0.0, .infinity, -.infinity, 1e-300, .pi, 1e300, 3]
    for (index, text) in texts.enumerated() {
      let inserted = try db.run(
        "INSERT INTO t(i, f, b, s, n, bytes) VALUES ($1, $2, $3, $4, $5, $6)", integers[index],
        doubles[index], index % 2 == 0, text, String?.none,
        [UInt8](repeating: UInt8(index), count: index) + [0, 255])
      #expect(inserted == 1)
    }
    let rows = try db.query("SELECT i, f, b, s, n, bytes FROM t ORDER BY id")
    #expect(rows.rowCount == texts.count)
    for row in 0..<rows.rowCount {
      #expect(try rows.int64(row: row, column: 0) == integers[row])
      let double = try rows.double(row: row, column: 1)
      #expect(double == doubles[row] && double.sign == doubles[row].sign)
      #expect(try rows.bool(row: row, column: 2) == (row % 2 == 0))
      #expect(rows.string(row: row, column: 3) == texts[row])
      #expect(rows.isNull(row: row, column: 4))
      #expect(
        try rows.bytes(row: row, column: 5) == [UInt8](repeating: UInt8(row), count: row) + [
          0, 255,
        ])
    }
    // NaN, Int, Int32, Substring, PGParameter and optionals holding values.
    #expect(try db.scalarText("SELECT $1::float8::text", Double.nan) == "NaN")
    #expect(try db.scalarInt64("SELECT $1::int + $2::int", 40, Int32(2)) == 42)
    #expect(try db.scalarText("SELECT $1", "abc".dropFirst()) == "bc")
    #expect(try db.scalarText("SELECT $1::text", PGParameter.text("direct")) == "direct")
    #expect(try db.scalarText("SELECT $1::text", PGParameter.null) == nil)
    #expect(try db.scalarInt64("SELECT $1::bigint", Int64?.some(5)) == 5)
    // An empty string is text, not NULL.
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE s = ''") == 1)
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE s IS NULL") == 0)
  }

  @Test func refusesTextWithNUL() throws {
    let (db, _) = try freshDatabase()
    let error = try #require(throws: PGError.self) {
      try db.query("SELECT $1::text", "nul\u{0}inside")
    }
    #expect(error.kind == .misuse)
    #expect(error.message.contains("$1"))
    #expect(try db.scalarInt64("SELECT 1") == 1)
  }

  @Test func readsEveryAccessor() throws {
    let (db, _) = try freshDatabase()
    let result = try db.query(
      """
      SELECT 42::bigint AS answer, NULL::bigint AS nothing, 'text'::text AS "Label",
        true AS yes, false AS no, 2.5::float8 AS half, '\\x00ff'::bytea AS raw,
        ''::text AS empty, 'Zürich'::text AS city, 'Infinity'::float8 AS inf
      FROM generate_series(1, 3)
      """)
    #expect(result.rowCount == 3)
    #expect(result.columnCount == 10)
    #expect(result.commandTag == "SELECT 3")
    #expect(result.rowsAffected == 3)
    #expect(result.columnName(at: 2) == "Label")
    #expect(result.columnIndex(named: "Label") == 2)
    #expect(result.columnIndex(named: "label") == nil)
    #expect(result.columnIndex(named: "missing") == nil)
    #expect(try result.int64(row: 2, column: 0) == 42)
    #expect(try result.int(row: 0, column: 0) == 42)
    #expect(try result.optionalInt64(row: 0, column: 0) == 42)
    #expect(try result.optionalInt64(row: 0, column: 1) == nil)
    #expect(result.isNull(row: 0, column: 1))
    #expect(!result.isNull(row: 0, column: 7))
    #expect(result.string(row: 0, column: 1) == "")
    #expect(result.optionalString(row: 0, column: 1) == nil)
    #expect(result.optionalString(row: 0, column: 7) == "")
    #expect(result.string(row: 1, column: 2) == "text")
    #expect(try result.bool(row: 0, column: 3))
    #expect(try !result.bool(row: 0, column: 4))
    #expect(try result.double(row: 0, column: 5) == 2.5)
    #expect(try result.double(row: 0, column: 9) == .infinity)
    #expect(try result.bytes(row: 0, column: 6) == [0, 255])
    let utf8 = result.withUTF8(row: 0, column: 8) { Array($0) }
    #expect(utf8 == Array("Zürich".utf8))
    #expect(result.withUTF8(row: 0, column: 1) { $0.count } == 0)
    #expect(result.withUTF8(row: 0, column: 7) { $0.count } == 0)

    // Values of the wrong type throw and say where they are.
    for read in [
      { try result.int64(row: 0, column: 1) }, { try result.int64(row: 0, column: 2) },
      { try Int64(result.double(row: 0, column: 2)) },
      { try result.bool(row: 0, column: 0) ? 1 : 0 },
      { try Int64(result.bytes(row: 0, column: 2).count) },
      { try result.optionalInt64(row: 0, column: 5) ?? 0 },
    ] as [() throws -> Int64] {
      let error = try #require(throws: PGError.self) { try read() }
      #expect(error.kind == .unexpectedValue)
    }
    let error = try #require(throws: PGError.self) { try result.int64(row: 1, column: 2) }
    #expect(error.message == "column 2 (Label) of row 1 holds \"text\", not an integer")
  }

  @Test(arguments: [
    ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min), ("0", 0),
    ("-0", 0), ("+7", 7), ("007", 7),
  ])
  func parsesIntegersAtTheLimits(_ text: String, _ value: Int64) throws {
    let (db, _) = try freshDatabase()
    #expect(try db.scalarInt64("SELECT $1::text", text) == value)
  }

  @Test(arguments: ["9223372036854775808", "-9223372036854775809", "", "-", "1.5", "1e3", " 1"])
  func refusesTextThatIsNoInteger(_ text: String) throws {
    let (db, _) = try freshDatabase()
    let error = try #require(throws: PGError.self) { try db.scalarInt64("SELECT $1::text", text) }
    #expect(error.kind == .unexpectedValue)
  }

  @Test func runsScriptsAndCountsRows() throws {
    let (db, _) = try freshDatabase()
    try db.execute(
      """
      CREATE TABLE t(x int);
      INSERT INTO t SELECT generate_series(1, 10);
      """)
    #expect(try db.run("UPDATE t SET x = x + 1 WHERE x > $1", 5) == 5)
    #expect(try db.run("DELETE FROM t WHERE x = $1", 1000) == 0)
    #expect(try db.run("CREATE INDEX ON t(x)") == 0)
    #expect(try db.scalarInt64("SELECT x FROM t WHERE x > $1", 1000) == nil)
    #expect(try db.scalarText("SELECT NULL::text") == nil)
    #expect(try db.scalarInt64("SELECT sum(x) FROM t") == 60)
    // A failing statement inside a script stops it; the script was one transaction.
    let error = try #require(throws: PGError.self) {
      try db.execute("INSERT INTO t VALUES (100); SELECT 1/0; INSERT INTO t VALUES (200)")
    }
    #expect(error.sqlState == "22012")
    #expect(error.sql?.hasPrefix("INSERT INTO t VALUES (100)") == true)
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE x >= 100") == 0)
  }

  @Test func preparesEachStatementOnce() throws {
    let (db, _) = try freshDatabase()
    for value in 0..<20 {
      #expect(try db.scalarInt64("SELECT $1::int * 2", value) == Int64(value * 2))
    }
    #expect(try db.scalarInt64("SELECT count(*) FROM pg_prepared_statements") == 2)
    // Unprepared queries leave nothing behind.
    for value in 0..<3 {
      let result = try db.query("SELECT $1::int + 1", parameters: [value], prepared: false)
      #expect(try result.int(row: 0, column: 0) == value + 1)
    }
    #expect(try db.scalarInt64("SELECT count(*) FROM pg_prepared_statements") == 2)
    // A statement that fails to prepare is not remembered, and can be fixed.
    #expect(throws: PGError.self) { try db.run("INSERT INTO missing VALUES ($1)", 1) }
    try db.execute("CREATE TEMP TABLE missing(x int)")
    #expect(try db.run("INSERT INTO missing VALUES ($1)", 1) == 1)
  }

  @Test func refusesCopyOutsideCopyIn() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    for sql in ["COPY t FROM STDIN", "COPY t TO STDOUT"] {
      let error = try #require(throws: PGError.self) { try db.execute(sql) }
      #expect(error.kind == .misuse)
      #expect(try db.scalarInt64("SELECT 1") == 1)
    }
  }
}
