import Foundation
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStoreServer

/// `POST /v1/replicas` (docs/replicas.md): each registration gets a number never given
/// before, with the range of ids that is its own, on both engines; a read-only token, a
/// later protocol and a body of the wrong shape are refused and register nothing.
@Suite struct ReplicaRegistrationTests {
  static let tokens = """
    W write groceries
    R read *
    """

  func register(_ server: ServerProcess, token: String, body: String? = nil) throws -> HTTPResult {
    try http(
      "POST", server.base + "/v1/replicas", body: body,
      headers: ["Authorization": "Bearer \(token)"])
  }

  func expectRegistered(
    _ answer: HTTPResult, as replica: Int64, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(answer.status == 201, "\(answer)", sourceLocation: sourceLocation)
    let object = answer.object ?? [:]
    #expect(object["replica"] as? Int == Int(replica), "\(answer)", sourceLocation: sourceLocation)
    let ids = object["ids"] as? [String: Any] ?? [:]
    #expect(ids["from"] as? Int == Int(replica << 40 + 1), sourceLocation: sourceLocation)
    #expect(ids["through"] as? Int == Int((replica + 1) << 40 - 1), sourceLocation: sourceLocation)
    #expect(object["protocol"] as? Int == 1, sourceLocation: sourceLocation)
    #expect(object["seq"] is Int, sourceLocation: sourceLocation)
  }

  func registrationsCountAndRefusalsRegisterNothing(location: String, tokens: String) throws {
    let servers = try [
      ServerProcess(location: location, arguments: ["--tokens", tokens]),
      ServerProcess(location: location, arguments: ["--tokens", tokens]),
    ]
    defer { for server in servers { server.stop() } }
    expectRegistered(try register(servers[0], token: "W"), as: 1)
    // Refused, each with its code; none takes a number.
    let readOnly = try register(servers[0], token: "R")
    #expect(readOnly.status == 403 && readOnly.body.contains("read-only replica"), "\(readOnly)")
    let later = try register(servers[1], token: "W", body: #"{"protocol":2}"#)
    #expect(later.status == 426 && later.body.contains("upgradeRequired"), "\(later)")
    let misspelt = try register(servers[1], token: "W", body: #"{"protocl":1}"#)
    #expect(misspelt.status == 400 && misspelt.body.contains("protocol"), "\(misspelt)")
    for body in [#"{"protocol":0}"#, #"{"protocol":"1"}"#, "[]", "{"] {
      let bad = try register(servers[1], token: "W", body: body)
      #expect(bad.status == 400 && bad.body.contains("badRequest"), "\(body): \(bad)")
    }
    let unknown = try register(servers[1], token: "NOPE")
    #expect(unknown.status == 401, "\(unknown)")
    // Through the other server on the same database: the next number.
    expectRegistered(try register(servers[1], token: "W", body: #"{"protocol":1}"#), as: 2)
    // Restarted, the server goes on from its records.
    servers[0].stop()
    let again = try ServerProcess(location: location, arguments: ["--tokens", tokens])
    defer { again.stop() }
    expectRegistered(try register(again, token: "W"), as: 3)
  }

  @Test func onSQLite() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo", "--list", "groceries"], database: database))
    try registrationsCountAndRefusalsRegisterNothing(
      location: database, tokens: folder.file("tokens"))
  }

  @Test(.postgres) func onPostgreSQL() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo", "--list", "groceries"], database: database.location))
    try registrationsCountAndRefusalsRegisterNothing(
      location: database.location, tokens: folder.file("tokens"))
  }
}
