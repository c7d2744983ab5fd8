import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct ErrorTests {
  private func connectionError(_ connectionString: String) throws -> PGError {
    try #require(throws: PGError.self) { try PGConnection(connectionString) }
  }

  @Test func unreachableServer() throws {
    // A socket folder with no server in it.
    let empty = FileManager.default.temporaryDirectory.appendingPathComponent(
      "lspg-none-\(UUID().uuidString.prefix(8))"
    ).path
    try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: empty) }
    let noSocket = try connectionError("host=\(empty) port=5432 dbname=x user=u password=hunter2")
    #expect(noSocket.kind == .serverUnreachable, "\(noSocket)")
    #expect(!noSocket.description.contains("hunter2"))
    // A port where nothing listens.
    let refused = try connectionError(
      "postgresql://u:hunter2@127.0.0.1:1/x?connect_timeout=5")
    #expect(refused.kind == .serverUnreachable, "\(refused)")
    #expect(!refused.description.contains("hunter2"))
    // A host name that does not resolve (the .invalid domain never does).
    let noHost = try connectionError("host=no-such-host.invalid dbname=x connect_timeout=5")
    #expect(noHost.kind == .serverUnreachable, "\(noHost)")
  }

  @Test func missingDatabase() throws {
    let server = try TestPostgresServer.shared()
    let error = try connectionError(server.connectionString(database: "no_such_database"))
    #expect(error.kind == .databaseMissing, "\(error)")
    #expect(error.message.contains("no_such_database"))
  }

  @Test func unknownRole() throws {
    let server = try TestPostgresServer.shared()
    let error = try connectionError(server.connectionString(user: "no_such_role"))
    #expect(error.kind == .authenticationFailed, "\(error)")
  }

  @Test func wrongPasswordOverTCP() throws {
    let server = try TestPostgresServer.shared(.init(acceptsPasswordsOverTCP: true))
    let role = try server.createRole("app", password: "correct horse 'battery'")
    let right = try PGConnection(
      server.tcpConnectionString(
        database: "postgres", user: role, password: "correct horse 'battery'"))
    #expect(try right.scalarText("SELECT current_user") == role)
    #expect(right.parameter("host") == "127.0.0.1")
    let wrongPassword = "wrong-hunter2-secret"
    let connectionString = server.tcpConnectionString(
      database: "postgres", user: role, password: wrongPassword)
    let error = try connectionError(connectionString)
    #expect(error.kind == .authenticationFailed, "\(error)")
    #expect(!error.description.contains(wrongPassword))
    #expect(!PGConnection.redactingPassword(in: connectionString).contains(wrongPassword))
    // The same in URI form.
    let uri = try connectionError(
      "postgresql://\(role):\(wrongPassword)@127.0.0.1:\(server.port)/postgres")
    #expect(uri.kind == .authenticationFailed, "\(uri)")
    #expect(!uri.description.contains(wrongPassword))
    // No password at all: an empty password file of its own (not /dev/null, which libpq
    // warns about on standard error: it is not a plain file), so that no ~/.pgpass counts.
    let passwords = FileManager.default.temporaryDirectory
      .appendingPathComponent("liststore-no-passwords-\(UUID().uuidString)").path
    // Readable by its owner only, or libpq warns about that instead.
    #expect(
      FileManager.default.createFile(
        atPath: passwords, contents: Data(), attributes: [.posixPermissions: 0o600]))
    defer { try? FileManager.default.removeItem(atPath: passwords) }
    let none = try connectionError(
      "host=127.0.0.1 port=\(server.port) dbname=postgres user=\(role) passfile=\(passwords)")
    #expect(none.kind == .authenticationFailed, "\(none)")
  }

  @Test func permissionDenied() throws {
    let server = try TestPostgresServer.shared()
    let (db, connectionString) = try freshDatabase()
    try db.execute("CREATE TABLE secret(x int)")
    let role = try server.createRole("reader")
    let reader = try PGConnection(connectionString + " user=\(role)")
    let error = try #require(throws: PGError.self) { try reader.query("SELECT x FROM secret") }
    #expect(error.kind == .permissionDenied)
    #expect(error.sqlState == "42501")
    #expect(error.sql == "SELECT x FROM secret")
    // No CONNECT privilege on a database: refused while connecting.
    let database = try #require(db.parameter("dbname"))
    try db.execute(
      "REVOKE CONNECT ON DATABASE \(PGConnection.quoteIdentifier(database)) FROM PUBLIC")
    let refused = try connectionError(connectionString + " user=\(role)")
    #expect(refused.kind == .permissionDenied, "\(refused)")
  }

  @Test func tooManyConnections() throws {
    let server = try TestPostgresServer.shared()
    let role = try server.createRole("limited", attributes: "CONNECTION LIMIT 1")
    let connectionString = server.connectionString(user: role)
    let first = try PGConnection(connectionString)
    let error = try connectionError(connectionString)
    #expect(error.kind == .tooManyConnections, "\(error)")
    first.close()
  }

  @Test func constraintsAndRaisedExceptions() throws {
    let (db, _) = try freshDatabase()
    try db.execute(
      """
      CREATE TABLE parent(id int PRIMARY KEY);
      CREATE TABLE t(
        id int PRIMARY KEY, positive int CHECK (positive > 0), required text NOT NULL,
        parent_id int REFERENCES parent(id));
      CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.required = 'refused' THEN
          RAISE EXCEPTION 'the key % is malformed', NEW.id
            USING DETAIL = 'keys are base 62', HINT = 'use a0';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION refuse();
      INSERT INTO t VALUES (1, 1, 'one', NULL);
      """)
    let insert = "INSERT INTO t VALUES ($1, $2, $3, $4)"
    let cases: [(PGError.Kind, String, [any PGBindable])] = [
      (.uniqueViolation, "23505", [1, 1, "again", Int?.none]),
      (.checkViolation, "23514", [2, -1, "negative", Int?.none]),
      (.notNullViolation, "23502", [3, 1, String?.none, Int?.none]),
      (.foreignKeyViolation, "23503", [4, 1, "orphan", 99]),
      (.raisedException, "P0001", [5, 1, "refused", Int?.none]),
    ]
    for (kind, sqlState, values) in cases {
      let error = try #require(throws: PGError.self) {
        try db.query(insert, parameters: values)
      }
      #expect(error.kind == kind, "\(error)")
      #expect(error.sqlState == sqlState)
      #expect(error.sql == insert)
    }
    let raised = try #require(throws: PGError.self) {
      try db.run(insert, 5, 1, "refused", Int?.none)
    }
    #expect(raised.message == "the key 5 is malformed")
    #expect(raised.detail == "keys are base 62")
    #expect(raised.hint == "use a0")
    let unique = try #require(throws: PGError.self) { try db.run(insert, 1, 1, "x", Int?.none) }
    #expect(unique.detail == "Key (id)=(1) already exists.")
    // Parameters are never part of the error.
    #expect(!unique.description.contains("\"x\""))
  }

  @Test func syntaxAndMissingObjects() throws {
    let (db, _) = try freshDatabase()
    let syntax = try #require(throws: PGError.self) { try db.query("SELEC 1") }
    #expect(syntax.kind == .syntaxError)
    let table = try #require(throws: PGError.self) { try db.query("SELECT * FROM missing") }
    #expect(table.kind == .undefinedObject)
    let column = try #require(throws: PGError.self) {
      try db.execute("SELECT missing FROM pg_class")
    }
    #expect(column.kind == .undefinedObject)
    let function = try #require(throws: PGError.self) { try db.query("SELECT missing(1)") }
    #expect(function.kind == .undefinedObject)
    #expect(function.hint != nil)
  }

  @Test func canceledByStatementTimeout() throws {
    let (db, _) = try freshDatabase()
    try db.execute("SET statement_timeout = '50ms'")
    let error = try #require(throws: PGError.self) { try db.query("SELECT pg_sleep(60)") }
    #expect(error.kind == .queryCanceled)
    #expect(error.sqlState == "57014")
    #expect(db.isConnected)
  }

  @Test func readOnlyTransaction() throws {
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    try db.execute("SET default_transaction_read_only = on")
    let error = try #require(throws: PGError.self) { try db.run("INSERT INTO t VALUES (1)") }
    #expect(error.kind == .readOnly)
  }

  @Test func lostConnectionAndReset() throws {
    let server = try TestPostgresServer.shared()
    let (db, _) = try freshDatabase()
    try db.execute("CREATE TABLE t(x int)")
    try db.run("INSERT INTO t VALUES ($1)", 1)
    let oldPID = db.backendPID
    try server.superuserQuery("SELECT pg_terminate_backend($1)", oldPID)
    let error = try #require(throws: PGError.self) { try db.scalarInt64("SELECT count(*) FROM t") }
    #expect(error.kind == .connectionLost, "\(error)")
    #expect(!db.isConnected)
    #expect(!db.isAlive())
    #expect(throws: PGError.self) { try db.ping() }
    try db.reset()
    #expect(db.isConnected)
    #expect(db.backendPID != oldPID)
    // Prepared statements are prepared again on the new session.
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 1)
    try db.run("INSERT INTO t VALUES ($1)", 2)
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 2)

    // Lost inside a transaction: the transaction is gone, and says so.
    let inside = try #require(throws: PGError.self) {
      try db.transaction {
        try db.run("INSERT INTO t VALUES ($1)", 3)
        try server.superuserQuery("SELECT pg_terminate_backend($1)", db.backendPID)
        try db.run("INSERT INTO t VALUES ($1)", 4)
      }
    }
    #expect(inside.kind == .connectionLost)
    try db.reset()
    #expect(!db.isInTransaction)
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 2)
  }
}
