import Foundation
import ListStore
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

/// What the command line says when a PostgreSQL database cannot be used: one `error:`
/// line in the user's words, status 1, nothing changed, and never a password.
@Suite(.postgres) struct ErrorMessageTests {
  /// Commands that read and that write, each tried on every broken location.
  static let commands = [
    ["lists"], ["show", "demo"], ["item", "add", "demo", "0", "x"], ["list", "create", "new"],
  ]

  /// A TCP port on 127.0.0.1 where nothing listens.
  static func closedPort() throws -> Int {
    let server = try TestPostgresServer.shared()
    // The shared server listens on a Unix socket only: its port number is free on TCP.
    return server.port
  }

  @Test func anUnreachableServerIsSaidSo() throws {
    let port = try Self.closedPort()
    for location in [
      "postgresql://app@127.0.0.1:\(port)/lists", "host=/nonexistent port=\(port) dbname=lists",
    ] {
      for command in Self.commands {
        expectFailure(
          try liststore(command, database: location),
          containing: "cannot reach the database server for")
      }
    }
  }

  @Test func wrongCredentialsAreSaidSoWithoutThePassword() throws {
    let server = try TestPostgresServer.shared(.init(acceptsPasswordsOverTCP: true))
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let before = try database.fingerprint()
    let password = "right-Pa55word"
    let role = try server.createRole("app", password: password)
    try grantListStoreRights(to: role, on: database)
    let name = try #require(database.name)
    let wrong = "wrong-s3cret-Hunter2"
    let locations = [
      server.tcpConnectionString(database: name, user: role, password: wrong),
      "postgresql://\(role):\(wrong)@127.0.0.1:\(server.port)/\(name)",
      "postgres://\(role):\(wrong)@127.0.0.1:\(server.port)/\(name)?application_name=x",
    ]
    for location in locations {
      for command in Self.commands {
        let result = try liststore(command, database: location)
        // About the user name and password, not the token of a ListStore server.
        expectFailure(
          result, containing: "the server refused the credentials", "user name and password")
        #expect(!result.stderr.contains("token"), "\(result)")
        #expect(!result.stderr.contains(wrong) && !result.stdout.contains(wrong))
      }
      // Nor through the environment.
      let result = try liststore(
        ["show", "demo"], database: nil, environment: ["LISTSTORE_DB": location])
      expectFailure(result, containing: "the server refused the credentials")
      #expect(!result.stderr.contains(wrong))
    }
    #expect(try database.fingerprint() == before)
    // The right password works, and is not printed either.
    let right = "postgresql://\(role):\(password)@127.0.0.1:\(server.port)/\(name)"
    let added = try liststore(["item", "add", "demo", "0", "Rome"], database: right)
    expectSuccess(added)
    let shown = try liststore(["show", "demo"], database: right)
    expectSuccess(shown)
    #expect(shown.stdout.contains("Rome") && !shown.stdout.contains(password))
    // Help never shows the database, let alone its password.
    for arguments in [
      ["--help"], ["help", "watch"], ["show", "--help"], ["item", "add", "--help"],
    ] {
      for (database, environment) in [(right, [:]), (nil, ["LISTSTORE_DB": right])] {
        let help = try liststore(arguments, database: database, environment: environment)
        #expect(help.status == 0, "\(help)")
        #expect(!help.stdout.contains(password) && !help.stderr.contains(password))
      }
    }
    // A usage error names no password either.
    let usage = try liststore(["show"], database: right)
    #expect(usage.status == 64 && !usage.stderr.contains(password))
  }

  @Test func aMissingDatabaseIsSaidSoAndNotCreated() throws {
    let server = try TestPostgresServer.shared()
    let missing = server.uniqueName("missing")
    let location = server.connectionString(database: missing)
    for command in Self.commands {
      expectFailure(try liststore(command, database: location), containing: missing)
    }
    let exists = try server.superuserQuery(
      "SELECT count(*) FROM pg_database WHERE datname = $1", missing)
    #expect(try exists.int64(row: 0, column: 0) == 0)
  }

  /// A role that does not exist is not a password problem: the sentence says to create it.
  @Test func aMissingRoleIsSaidSoWithHowToMakeIt() throws {
    let server = try TestPostgresServer.shared()
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    let name = try #require(database.name)
    let role = server.uniqueName("nobody")
    let location = server.connectionString(database: name, user: role)
    for command in Self.commands {
      let result = try liststore(command, database: location)
      expectFailure(result, containing: "role \"\(role)\" does not exist", "createuser")
      #expect(!result.stderr.contains("password"), "\(result)")
    }
  }

  @Test func aNewerSchemaIsRefusedAndLeftAlone() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    try database.foreign().execute("UPDATE liststore_schema SET version = 999")
    let before = try database.fingerprint()
    for command in Self.commands + [["watch", "demo", "--json"]] {
      expectFailure(
        try liststore(command, database: database.location),
        containing: "has schema version 999, newer than this program's")
    }
    #expect(try database.fingerprint() == before)
  }

  @Test func aRoleWithoutRightsIsToldPermissionDenied() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let server = try #require(database.server)
    expectSuccess(try liststore(["demo"], database: database.location))
    let before = try database.fingerprint()
    let role = try server.createRole("nobody")
    let location = server.connectionString(database: try #require(database.name), user: role)
    for command in Self.commands + [["watch", "demo", "--json"], ["section", "rm", "demo", "0"]] {
      expectFailure(try liststore(command, database: location), containing: "permission denied")
    }
    // Reading only: writes are refused, and say so.
    try database.foreign().execute(
      "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(PGConnection.quoteIdentifier(role))")
    expectSuccess(try liststore(["show", "demo"], database: location))
    for command in [["item", "add", "demo", "0", "x"], ["item", "rm", "demo", "0:0"]] {
      expectFailure(try liststore(command, database: location), containing: "permission denied")
    }
    #expect(try database.fingerprint() == before)
  }
}
