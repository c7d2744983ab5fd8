import PostgreSQLKit
import Testing

@Suite struct RedactionTests {
  @Test(arguments: [
    ("postgresql://user:secret@host/db", "postgresql://user:***@host/db"),
    (
      "postgres://user:secret@host:5433/db?sslmode=require",
      "postgres://user:***@host:5433/db?sslmode=require"
    ),
    ("postgresql://user@host/db", "postgresql://user@host/db"),
    ("postgresql://host/db", "postgresql://host/db"),
    ("postgresql://:secret@host", "postgresql://:***@host"),
    ("postgresql://user:s%40c%2Fret@host/db", "postgresql://user:***@host/db"),
    // An unencoded @ or / in the password: hide up to the last @ before the query.
    ("postgresql://user:se@cr/et@host/db", "postgresql://user:***@host/db"),
    (
      "postgresql://host/db?user=u&password=secret&sslmode=disable",
      "postgresql://host/db?user=u&password=***&sslmode=disable"
    ),
    ("postgresql://host/db?pass%77ord=secret", "postgresql://host/db?pass%77ord=***"),
    ("POSTGRESQL://user:secret@host", "POSTGRESQL://user:***@host"),
    ("host=h password=secret user=u", "host=h password=*** user=u"),
    ("password=secret", "password=***"),
    ("host=h password = secret", "host=h password = ***"),
    ("host=h password='se cr\\'et' user=u", "host=h password=*** user=u"),
    ("host=h password='unterminated user=u", "host=h password=***"),
    ("host=h password=se\\ cret user=u", "host=h password=*** user=u"),
    // As libpq reads it: spaces after = are skipped, so the password is `dbname=d`.
    ("host=h password= dbname=d", "host=h password= ***"),
    ("host=h password='' dbname=d", "host=h password=*** dbname=d"),
    ("PASSWORD=secret", "PASSWORD=***"),
    ("host=h dbname='postgresql://u:secret@h/d'", "host=h dbname=postgresql://u:***@h/d"),
    ("dbname='host=h password=secret'", "dbname=host=h password=***"),
    ("host=h dbname=plain", "host=h dbname=plain"),
    ("password secret", "password ***"),
    ("", ""),
  ])
  func hidesPasswords(_ connectionString: String, _ expected: String) {
    #expect(PGConnection.redactingPassword(in: connectionString) == expected)
  }

  @Test func invalidConnectionStringErrorsHideThePassword() throws {
    for text in [
      "host=h password=hunter2secret bogus", "host=h password='hunter2secret",
      "postgresql://u:hunter2secret@h/d?nonsense=1",
    ] {
      let error = try #require(throws: PGError.self) { try PGConnection(text) }
      #expect(error.kind == .invalidConnectionString, "\(text): \(error)")
      #expect(!error.description.contains("hunter2secret"), "\(error)")
    }
  }
}

@Suite struct ErrorKindTests {
  @Test(arguments: [
    ("28P01", PGError.Kind.authenticationFailed), ("28000", .authenticationFailed),
    ("3D000", .databaseMissing), ("42501", .permissionDenied), ("53300", .tooManyConnections),
    ("57P01", .connectionLost), ("57P02", .connectionLost), ("08006", .connectionLost),
    ("08001", .serverUnreachable), ("57P03", .serverUnreachable), ("57014", .queryCanceled),
    ("40001", .serializationFailure), ("40P01", .deadlockDetected), ("23505", .uniqueViolation),
    ("23503", .foreignKeyViolation), ("23502", .notNullViolation), ("23514", .checkViolation),
    ("P0001", .raisedException), ("25P02", .transactionAborted), ("25006", .readOnly),
    ("53100", .diskFull), ("42601", .syntaxError), ("42P01", .undefinedObject),
    ("42703", .undefinedObject), ("22P02", .other),
  ])
  func sqlStatesMapToKinds(_ sqlState: String, _ kind: PGError.Kind) {
    #expect(PGError.kind(forSQLState: sqlState) == kind)
  }

  @Test func transientKinds() {
    let transient = PGError.Kind.allCases.filter { PGError(kind: $0, message: "").isTransient }
    #expect(transient == [.serializationFailure, .deadlockDetected])
  }

  @Test func describesEveryField() {
    let error = PGError(
      kind: .uniqueViolation, sqlState: "23505", message: "duplicate key", detail: "Key (x)=(1)",
      hint: "use another", sql: "INSERT INTO t VALUES ($1)")
    #expect(
      error.description
        == "PostgreSQL error 23505 (uniqueViolation): duplicate key — Key (x)=(1) "
        + "(hint: use another) — while executing `INSERT INTO t VALUES ($1)`")
  }
}
