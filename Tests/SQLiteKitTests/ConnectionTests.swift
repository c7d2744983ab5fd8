import Foundation
import SQLiteKit
import TestSupport
import Testing

@Suite struct ConnectionTests {
  let folder = TemporaryDirectory()

  @Test func bindsAndReadsEveryType() throws {
    let db = try Connection(path: folder.file("types.sqlite"))
    defer { folder.remove() }
    try db.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)")
    // Parameters: i, r, s, b, n.
    let texts = [
      "", "plain", "quote ' \" ; -- DROP TABLE t", "non-ASCII: Zürich 東京 🚀", "nul\u{0}inside",
    ]
    for (offset, text) in texts.enumerated() {
      try db.run(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?)", offset == 0 ? Int64.min : Int64.max - Int64(offset),
        Double(offset) + 0.25, text, Optional<String>.none, Optional<Int64>.none)
    }
    let select = try db.prepare("SELECT i, r, s, n FROM t ORDER BY rowid")
    var rows: [(Int64, Double, String, Bool)] = []
    try select.forEachRow {
      rows.append(($0.int64(at: 0), $0.double(at: 1), $0.string(at: 2), $0.isNull(at: 3)))
    }
    #expect(
      rows.map(\.0) == [Int64.min, Int64.max - 1, Int64.max - 2, Int64.max - 3, Int64.max - 4])
    #expect(rows.map(\.1) == [0.25, 1.25, 2.25, 3.25, 4.25])
    #expect(rows.map(\.2) == texts)
    #expect(rows.allSatisfy { $0.3 })
    // An empty string is text, not NULL.
    #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE s = ''") == 1)

    let blob = try db.prepare("INSERT INTO t(b) VALUES (?)")
    try blob.bind(blob: [0, 1, 2, 255], at: 1)
    try blob.run()
    let read = try db.prepare("SELECT b FROM t WHERE b IS NOT NULL")
    #expect(try read.step())
    #expect(read.blob(at: 0) == [0, 1, 2, 255])
  }

  @Test func errorsCarryCodesMessageAndSQL() throws {
    let db = try Connection(path: folder.file("errors.sqlite"))
    defer { folder.remove() }
    try db.execute("CREATE TABLE t(x TEXT UNIQUE)")
    try db.run("INSERT INTO t VALUES (?)", "a")
    let error = try #require(throws: SQLiteError.self) {
      try db.run("INSERT INTO t VALUES (?)", "a")
    }
    #expect(error.code == .constraintUnique)
    #expect(error.primaryCode == .constraint)
    #expect(error.code.rawValue == 2067)
    #expect(error.message == "UNIQUE constraint failed: t.x")
    #expect(error.sql == "INSERT INTO t VALUES (?)")
    // A primary pattern matches its extended codes; another extended code does not.
    #expect(ResultCode.constraint ~= error.code)
    #expect(!(ResultCode.constraintForeignKey ~= error.code))

    let syntax = try #require(throws: SQLiteError.self) { try db.prepare("SELEC 1") }
    #expect(syntax.code == .error)
    #expect(syntax.message.contains("syntax error"))
    let range = try #require(throws: SQLiteError.self) { try db.run("SELECT ?", 1, 2) }
    #expect(range.code == .range)
  }

  @Test func transactionCommitsAndRollsBackWhenBodyThrows() throws {
    struct Failure: Error {}
    let db = try Connection(path: folder.file("tx.sqlite"))
    defer { folder.remove() }
    try db.execute("CREATE TABLE t(x)")
    try db.transaction { try db.run("INSERT INTO t VALUES (1)") }
    #expect(throws: Failure.self) {
      try db.transaction {
        try db.run("INSERT INTO t VALUES (2)")
        throw Failure()
      }
    }
    #expect(!db.isInTransaction)
    #expect(try db.scalarText("SELECT group_concat(x) FROM t") == "1")

    // A failure inside a nested transaction undoes only the inner work.
    try db.transaction {
      try db.run("INSERT INTO t VALUES (3)")
      #expect(throws: Failure.self) {
        try db.transaction {
          try db.run("INSERT INTO t VALUES (4)")
          throw Failure()
        }
      }
      try db.run("INSERT INTO t VALUES (5)")
    }
    #expect(try db.scalarText("SELECT group_concat(x) FROM t") == "1,3,5")
  }

  @Test func immediateTransactionWaitsThenReportsBusy() throws {
    let path = folder.file("busy.sqlite")
    let first = try Connection(path: path)
    defer { folder.remove() }
    try first.execute("PRAGMA journal_mode = WAL; CREATE TABLE t(x)")
    let second = try Connection(path: path, busyTimeout: .milliseconds(100))
    try first.execute("BEGIN IMMEDIATE")
    let started = Date()
    let error = try #require(throws: SQLiteError.self) {
      try second.transaction { try second.run("INSERT INTO t VALUES (1)") }
    }
    #expect(ResultCode.busy ~= error.code)
    #expect(Date().timeIntervalSince(started) >= 0.09)
    try first.execute("COMMIT")
    try second.transaction { try second.run("INSERT INTO t VALUES (1)") }
    #expect(try first.scalarInt64("SELECT count(*) FROM t") == 1)
  }

  @Test func cachedStatementsAreReusedAndReset() throws {
    let db = try Connection(path: ":memory:")
    let a = try db.cachedStatement("SELECT 1 UNION ALL SELECT 2")
    #expect(try a.step())
    let b = try db.cachedStatement("SELECT 1 UNION ALL SELECT 2")
    #expect(a === b)
    #expect(try b.step())
    #expect(b.int(at: 0) == 1)  // Reset: starts from the first row again.
  }

  @Test func closeIsDeterministicAndIdempotent() throws {
    let path = folder.file("close.sqlite")
    defer { folder.remove() }
    let db = try Connection(path: path)
    try db.execute("PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1)")
    var statement: Statement? = try db.prepare("SELECT x FROM t")
    db.close()
    db.close()
    #expect(db.isClosed)
    let error = try #require(throws: SQLiteError.self) { try statement?.step() }
    #expect(error.code == .misuse)
    #expect(throws: SQLiteError.self) { try db.execute("SELECT 1") }
    // SQLite frees the handle when the last statement is finalized: it checkpoints
    // and removes the WAL file.
    #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    statement = nil
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
  }

  @Test func countsChangesIncludingTriggers() throws {
    let db = try Connection(path: ":memory:")
    try db.execute(
      """
      CREATE TABLE t(x); CREATE TABLE log(x);
      CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log VALUES (NEW.x); END;
      """)
    let before = db.totalChanges
    #expect(try db.run("INSERT INTO t VALUES (1)") == 1)
    #expect(db.totalChanges - before == 2)
    #expect(db.lastInsertRowID == 1)
  }

  @Test func dataVersionChangesWhenAnotherConnectionCommits() throws {
    let path = folder.file("version.sqlite")
    defer { folder.remove() }
    let writer = try Connection(path: path)
    try writer.execute("PRAGMA journal_mode = WAL; CREATE TABLE t(x)")
    let reader = try Connection(path: path)
    let before = try reader.dataVersion()
    try writer.run("INSERT INTO t VALUES (1)")
    #expect(try reader.dataVersion() != before)
    // Its own commits do not change its data version.
    let own = try writer.dataVersion()
    try writer.run("INSERT INTO t VALUES (2)")
    #expect(try writer.dataVersion() == own)
  }

  @Test func refusesFilesThatAreNotDatabases() throws {
    let path = folder.file("text.sqlite")
    defer { folder.remove() }
    try Data("this is not a database, just some text that is long enough".utf8).write(
      to: URL(fileURLWithPath: path))
    let db = try Connection(path: path)
    let error = try #require(throws: SQLiteError.self) {
      try db.scalarInt64("SELECT count(*) FROM sqlite_schema")
    }
    #expect(error.code == .notADatabase)
  }

  @Test func readOnlyConnectionRefusesWrites() throws {
    let path = folder.file("ro.sqlite")
    defer { folder.remove() }
    try Connection(path: path).execute("CREATE TABLE t(x)")
    let db = try Connection(path: path, mode: .readOnly)
    #expect(db.isReadOnly)
    let error = try #require(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (1)") }
    #expect(ResultCode.readOnly ~= error.code)
    #expect(throws: SQLiteError.self) {
      try Connection(path: folder.file("missing.sqlite"), mode: .readWrite)
    }
  }
}
