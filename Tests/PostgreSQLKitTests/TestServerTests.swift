import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct TestServerTests {
  @Test func isAvailableHere() throws {
    // The CI image has PostgreSQL; elsewhere the reason names the install command.
    #expect(TestPostgresServer.unavailableReason == nil)
    let server = try TestPostgresServer.shared()
    #expect(server.folder.utf8.count + "/.s.PGSQL.65535".utf8.count <= 107)
    #expect(FileManager.default.fileExists(atPath: server.folder + "/.s.PGSQL.\(server.port)"))
    #expect(try server.processID() > 0)
    let db = try PGConnection(server.connectionString())
    #expect(try db.scalarText("SHOW fsync") == "off")
    #expect(try db.scalarText("SHOW synchronous_commit") == "off")
    #expect(try db.scalarText("SHOW full_page_writes") == "off")
    #expect(try db.scalarText("SHOW listen_addresses") == "")
    #expect(try db.scalarText("SHOW server_encoding") == "UTF8")
  }

  /// Every argument runs in parallel with the others, each in a database of its own
  /// cloned from one template, with the same table names.
  @Test(arguments: 0..<8)
  func parallelTestsHaveDatabasesOfTheirOwn(_ index: Int) throws {
    let server = try TestPostgresServer.shared()
    let template = try server.makeTemplate("parallel_template") { db in
      try db.execute(
        "CREATE TABLE items(id int PRIMARY KEY, owner int); INSERT INTO items VALUES (0, -1)")
    }
    #expect(template == "parallel_template")
    let db = try PGConnection(try server.makeDatabase(template: template))
    for id in 1...20 { try db.run("INSERT INTO items VALUES ($1, $2)", id, index) }
    #expect(try db.scalarInt64("SELECT count(*) FROM items") == 21)
    #expect(try db.scalarInt64("SELECT count(DISTINCT owner) FROM items WHERE id > 0") == 1)
    #expect(try db.scalarInt64("SELECT min(owner) FROM items WHERE id > 0") == Int64(index))
  }

  @Test func templatesAcceptNoConnectionsAndClonesAreIndependent() throws {
    let server = try TestPostgresServer.shared()
    let template = try server.makeTemplate("clone_template") { db in
      try db.execute("CREATE TABLE t(x int); INSERT INTO t VALUES (1)")
    }
    // A second preparation of the same name does not run.
    try server.makeTemplate("clone_template") { _ in throw TestFailure("prepared twice") }
    let error = try #require(throws: PGError.self) {
      try PGConnection(server.connectionString(database: template))
    }
    #expect(error.message.contains("not currently accepting connections"))
    let clock = ContinuousClock()
    var durations: [Duration] = []
    var databases: [PGConnection] = []
    for _ in 0..<5 {
      let start = clock.now
      let connectionString = try server.makeDatabase(template: template)
      durations.append(start.duration(to: clock.now))
      databases.append(try PGConnection(connectionString))
    }
    try databases[0].run("INSERT INTO t VALUES (2)")
    #expect(try databases[0].scalarInt64("SELECT count(*) FROM t") == 2)
    #expect(try databases[1].scalarInt64("SELECT count(*) FROM t") == 1)
    let names = try Set(databases.map { try #require($0.parameter("dbname")) })
    #expect(names.count == 5)
    print(
      "TestPostgresServer: initdb \(server.initdbDuration), copy \(server.copyDuration), "
        + "start \(server.startDuration), "
        + "clones \(durations)")
  }

  @Test func icuCollationDoesNotSortKeysAsBytes() throws {
    let server = try TestPostgresServer.shared()
    let icu = try PGConnection(try server.makeDatabase(icuLocale: "en-US"))
    #expect(
      try icu.scalarText(
        "SELECT datlocprovider::text FROM pg_database WHERE datname = current_database()") == "i")
    #expect(try !icu.query("SELECT 'Zz' < 'a0'").bool(row: 0, column: 0))
    #expect(try icu.query("SELECT 'Zz' < 'a0' COLLATE \"C\"").bool(row: 0, column: 0))
    let plain = try PGConnection(try server.makeDatabase())
    #expect(try plain.query("SELECT 'Zz' < 'a0'").bool(row: 0, column: 0))
    // A template made with the ICU locale clones with it.
    let template = try server.makeTemplate("icu_template", icuLocale: "en-US") { db in
      try db.execute("CREATE TABLE keys(k text)")
    }
    let clone = try PGConnection(try server.makeDatabase(template: template, icuLocale: "en-US"))
    #expect(try !clone.query("SELECT 'Zz' < 'a0'").bool(row: 0, column: 0))
  }

  @Test func restartsOnTheSameDataAndPort() throws {
    // A server of its own: restarting the shared one would disturb parallel tests.
    let server = try TestPostgresServer.start()
    defer { server.stop() }
    let connectionString = try server.makeDatabase()
    let db = try PGConnection(connectionString)
    try db.execute("CREATE TABLE t(x int); INSERT INTO t VALUES (1)")
    let pid = try server.processID()
    let port = server.port
    try server.restart()
    #expect(try server.processID() != pid)
    #expect(server.port == port)
    let error = try #require(throws: PGError.self) { try db.scalarInt64("SELECT count(*) FROM t") }
    #expect(error.kind == .connectionLost, "\(error)")
    try db.reset()
    #expect(try db.scalarInt64("SELECT count(*) FROM t") == 1)
    // Databases can still be made after the restart.
    #expect(try PGConnection(server.makeDatabase()).isConnected)
    let folder = server.folder
    server.stop()
    #expect(!FileManager.default.fileExists(atPath: folder))
    #expect(throws: (any Error).self) { try server.makeDatabase() }
    // With the server gone, reconnecting reports it unreachable.
    let unreachable = try #require(throws: PGError.self) { try db.reset() }
    #expect(unreachable.kind == .serverUnreachable, "\(unreachable)")
  }
}
