import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct TransactionTests {
  struct Failure: Error {}

  private func values(_ db: PGConnection) throws -> String? {
    try db.scalarText("SELECT string_agg(x::text, ',' ORDER BY x) FROM t")
  }

  @Test func commitsWhenBodyReturns() throws {
    let (db, connectionString) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    let returned = try db.transaction {
      #expect(db.isInTransaction)
      try db.run("INSERT INTO t VALUES ($1)", 1)
      return "done"
    }
    #expect(returned == "done")
    #expect(!db.isInTransaction)
    // Committed: another session sees it.
    #expect(try values(PGConnection(connectionString)) == "1")
  }

  @Test func rollsBackWhenBodyThrows() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    #expect(throws: Failure.self) {
      try db.transaction {
        try db.run("INSERT INTO t VALUES ($1)", 1)
        throw Failure()
      }
    }
    #expect(!db.isInTransaction)
    #expect(try values(db) == nil)
  }

  @Test func rollsBackWhenAStatementFails() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int UNIQUE)")
    let error = try #require(throws: PGError.self) {
      try db.transaction {
        try db.run("INSERT INTO t VALUES ($1)", 1)
        try db.run("INSERT INTO t VALUES ($1)", 1)
      }
    }
    #expect(error.kind == .uniqueViolation)
    #expect(!db.isInTransaction)
    #expect(try values(db) == nil)
  }

  @Test func refusesToCommitAfterASwallowedError() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int UNIQUE)")
    let error = try #require(throws: PGError.self) {
      try db.transaction {
        try db.run("INSERT INTO t VALUES ($1)", 1)
        _ = try? db.run("INSERT INTO t VALUES ($1)", 1)
        // Every further statement fails until the rollback.
        do {
          try db.run("SELECT 1")
          Issue.record("a statement ran in an aborted transaction")
        } catch let aborted as PGError {
          #expect(aborted.kind == .transactionAborted)
        }
      }
    }
    #expect(error.kind == .transactionAborted)
    #expect(!db.isInTransaction)
    #expect(try values(db) == nil)
  }

  /// `commit()` of a transaction a failed statement aborted throws, where `COMMIT` itself
  /// answers success (tag `ROLLBACK`); a sound transaction commits.
  @Test func commitOfAnAbortedTransactionThrows() throws {
    let (db, connectionString) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int UNIQUE)")
    try db.execute("BEGIN")
    try db.run("INSERT INTO t VALUES ($1)", 1)
    _ = try? db.run("INSERT INTO t VALUES ($1)", 1)
    let error = try #require(throws: PGError.self) { try db.commit() }
    #expect(error.kind == .transactionAborted)
    #expect(error.message.contains("rolled the transaction back"))
    #expect(!db.isInTransaction)
    #expect(try values(db) == nil)
    try db.execute("BEGIN")
    try db.run("INSERT INTO t VALUES ($1)", 2)
    try db.commit()
    #expect(!db.isInTransaction)
    #expect(try values(PGConnection(connectionString)) == "2")
  }

  @Test func nestedTransactionsAreSavepoints() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int UNIQUE)")
    try db.transaction {
      try db.run("INSERT INTO t VALUES ($1)", 1)
      // A failing inner transaction undoes only its own work…
      #expect(throws: Failure.self) {
        try db.transaction {
          try db.run("INSERT INTO t VALUES ($1)", 2)
          throw Failure()
        }
      }
      // …also when a statement failed inside it, which leaves the outer usable.
      let error = try #require(throws: PGError.self) {
        try db.transaction {
          try db.run("INSERT INTO t VALUES ($1)", 3)
          try db.run("INSERT INTO t VALUES ($1)", 1)
        }
      }
      #expect(error.kind == .uniqueViolation)
      // Two levels deep, the innermost rolled back, the middle one kept.
      try db.transaction {
        try db.run("INSERT INTO t VALUES ($1)", 4)
        _ = try? db.savepoint {
          try db.run("INSERT INTO t VALUES ($1)", 5)
          throw Failure()
        }
      }
      #expect(db.isInTransaction)
      #expect(try values(db) == "1,4")
    }
    #expect(!db.isInTransaction)
    #expect(try values(db) == "1,4")

    // An outer rollback undoes released savepoints too.
    #expect(throws: Failure.self) {
      try db.transaction {
        try db.transaction { try db.run("INSERT INTO t VALUES ($1)", 6) }
        throw Failure()
      }
    }
    #expect(try values(db) == "1,4")
  }

  @Test func repeatableReadKeepsItsSnapshot() throws {
    let (db, connectionString) = try freshDatabase()
    let other = try PGConnection(connectionString)
    try db.execute("CREATE TABLE t(x int)")
    try db.transaction(.repeatableRead) {
      #expect(try db.scalarText("SHOW transaction_isolation") == "repeatable read")
      #expect(try values(db) == nil)
      try other.run("INSERT INTO t VALUES ($1)", 1)
      #expect(try values(db) == nil)
    }
    try db.transaction {
      #expect(try db.scalarText("SHOW transaction_isolation") == "read committed")
      #expect(try values(db) == "1")
      try other.run("INSERT INTO t VALUES ($1)", 2)
      #expect(try values(db) == "1,2")
    }
  }

  @Test func concurrentUpdateUnderRepeatableReadIsASerializationFailure() throws {
    let (db, connectionString) = try freshDatabase()
    let other = try PGConnection(connectionString)
    try db.execute("CREATE TABLE t(id int PRIMARY KEY, x int); INSERT INTO t VALUES (1, 0)")
    let error = try #require(throws: PGError.self) {
      try db.transaction(.repeatableRead) {
        _ = try db.scalarInt64("SELECT x FROM t WHERE id = 1")
        try other.run("UPDATE t SET x = x + 1 WHERE id = 1")
        try db.run("UPDATE t SET x = x + 10 WHERE id = 1")
      }
    }
    #expect(error.kind == .serializationFailure)
    #expect(error.sqlState == "40001")
    #expect(error.isTransient)
    #expect(try db.scalarInt64("SELECT x FROM t") == 1)
  }

  @Test func deadlockVictimIsReported() throws {
    let (db, connectionString) = try freshDatabase()
    try db.execute("CREATE TABLE t(id int PRIMARY KEY, x int); INSERT INTO t VALUES (1, 0), (2, 0)")
    let holdsOne = Signal()
    let holdsTwo = Signal()
    // Each session locks its first row and waits until the other holds its own, then
    // asks for the other's: a deadlock whatever the timing.
    let other = BackgroundThread { () throws -> PGError.Kind? in
      let connection = try PGConnection(connectionString)
      try connection.execute("SET deadlock_timeout = '20ms'")
      do {
        try connection.transaction {
          try connection.run("UPDATE t SET x = 2 WHERE id = 2")
          try holdsOne.wait()
          holdsTwo.signal()
          try connection.run("UPDATE t SET x = 2 WHERE id = 1")
        }
        return nil
      } catch let error as PGError {
        return error.kind
      }
    }
    try db.execute("SET deadlock_timeout = '20ms'")
    var kinds: [PGError.Kind?] = []
    do {
      try db.transaction {
        try db.run("UPDATE t SET x = 1 WHERE id = 1")
        holdsOne.signal()
        try holdsTwo.wait()
        try db.run("UPDATE t SET x = 1 WHERE id = 2")
      }
      kinds.append(nil)
    } catch let error as PGError {
      kinds.append(error.kind)
    }
    kinds.append(try other.join())
    // Exactly one of the two was chosen as the victim; the other committed.
    #expect(kinds.filter { $0 == .deadlockDetected }.count == 1)
    #expect(kinds.filter { $0 == nil }.count == 1)
  }
}
