import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct CopyTests {
  /// Text that COPY's text format must escape, and text it must not touch.
  static let hostile: [String?] = [
    "", nil, "plain", "tab\there", "new\nline", "carriage\rreturn", "crlf\r\n", "back\\slash",
    "\\N", "\\.", "\\", "ends with backslash\\", "\\t literally", "Zürich 東京 🚀",
    "\u{7}\u{8}\u{B}\u{C}",
    "'quotes' \"double\"", " leading and trailing ", "\n", "\t", "a\tb\nc\\d\re",
  ]

  @Test func roundTripsHostileText() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(id int PRIMARY KEY, a text, b text)")
    let count = try db.copyIn("COPY t(id, a, b) FROM STDIN") { rows in
      for (index, value) in Self.hostile.enumerated() {
        try rows.append([String(index), value, value.map { "<" + $0 + ">" }])
      }
      #expect(rows.rowCount == Self.hostile.count)
    }
    #expect(count == Self.hostile.count)
    let result = try db.query("SELECT a, b FROM t ORDER BY id")
    #expect(result.rowCount == Self.hostile.count)
    for (row, value) in Self.hostile.enumerated() {
      #expect(result.optionalString(row: row, column: 0) == value, "row \(row)")
      #expect(result.optionalString(row: row, column: 1) == value.map { "<" + $0 + ">" })
    }
    // An empty string stays distinct from NULL.
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE a = ''") == 1)
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE a IS NULL") == 1)
  }

  @Test func streamsManyRowsInChunks() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(id bigint, value text)")
    let total = 50_000
    let count = try db.copyIn("COPY t FROM STDIN") { rows in
      for id in 0..<total { try rows.append([String(id), "value \(id)\twith a tab"]) }
    }
    #expect(count == total)
    let summary = try db.query(
      "SELECT count(*), sum(id), count(*) FILTER (WHERE value = 'value ' || id || E'\\twith a tab') FROM t"
    )
    #expect(try summary.int(row: 0, column: 0) == total)
    #expect(try summary.int(row: 0, column: 1) == total * (total - 1) / 2)
    #expect(try summary.int(row: 0, column: 2) == total)
  }

  @Test func abortsWhenBodyThrows() throws {
    struct Stop: Error {}
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x text)")
    #expect(throws: Stop.self) {
      try db.copyIn("COPY t FROM STDIN") { rows in
        for index in 0..<10_000 { try rows.append([String(index)]) }
        throw Stop()
      }
    }
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
    #expect(!db.isInTransaction)
  }

  @Test func refusesNULAndKeepsTheConnectionUsable() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x text)")
    let error = try #require(throws: PGError.self) {
      try db.copyIn("COPY t FROM STDIN") { rows in
        try rows.append(["fine"])
        try rows.append(["nul\u{0}inside"])
      }
    }
    #expect(error.kind == .misuse)
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
  }

  @Test func reportsTheServersRefusalAndInsertsNothing() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int PRIMARY KEY)")
    let duplicate = try #require(throws: PGError.self) {
      try db.copyIn("COPY t FROM STDIN") { rows in
        for value in [1, 2, 3, 2] { try rows.append([String(value)]) }
      }
    }
    #expect(duplicate.kind == .uniqueViolation)
    #expect(duplicate.sql == "COPY t FROM STDIN")
    let malformed = try #require(throws: PGError.self) {
      try db.copyIn("COPY t FROM STDIN") { rows in try rows.append(["not a number"]) }
    }
    #expect(malformed.sqlState == "22P02")
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
    // Not a COPY at all: the error names the mistake.
    let notCopy = try #require(throws: PGError.self) {
      try db.copyIn("SELECT 1") { _ in }
    }
    #expect(notCopy.kind == .misuse)
    let missing = try #require(throws: PGError.self) {
      try db.copyIn("COPY missing FROM STDIN") { _ in }
    }
    #expect(missing.kind == .undefinedObject)
    // Inside a transaction, the COPY is part of it.
    try db.transaction {
      try db.copyIn("COPY t FROM STDIN") { rows in try rows.append(["7"]) }
      #expect(try db.scalarInt64("SELECT count(*) FROM t") == 1)
    }
    #expect(try db.scalarInt64("SELECT x FROM t") == 7)
  }
}
