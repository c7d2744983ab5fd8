import Foundation
import PostgresTestSupport
import TestSupport
import Testing

/// `liststore clone` and `sync` as a user runs them, against `liststore serve` on both
/// engines: two laptops clone, write while the server is down (sync exits 75 and keeps
/// the writes), sync once it is back, and end with the server's very lists; a token the
/// server does not know exits 77, a file that is not a replica 1.
@Suite struct ReplicaCLITests {
  static let tokens = """
    W write *
    R read *
    """

  func export(_ database: String) throws -> String {
    let result = try liststore(["export", "demo"], database: database)
    expectSuccess(result)
    return result.stdout
  }

  func laptopsCloneWriteOfflineAndConverge(location: String, folder: TemporaryDirectory) throws {
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    expectSuccess(try liststore(["demo"], database: location))
    var server = try ServerProcess(
      location: location, arguments: ["--tokens", folder.file("tokens")])
    let port = server.port
    let token = ["LISTSTORE_TOKEN": "W"]
    let (a, b) = (folder.file("a.sqlite"), folder.file("b.sqlite"))
    for laptop in [a, b] {
      let cloned = try liststore(["clone", server.base, laptop], database: nil, environment: token)
      #expect(cloned.status == 0 && cloned.stdout.contains("cloned"), "\(cloned)")
    }
    let unknown = try liststore(
      ["clone", server.base, folder.file("c.sqlite")], database: nil,
      environment: ["LISTSTORE_TOKEN": "NOPE"])
    #expect(unknown.status == 77 && unknown.stderr.contains("--token"), "\(unknown)")
    #expect(!FileManager.default.fileExists(atPath: folder.file("c.sqlite")))
    #expect(try export(a) == (try export(location)))
    // The server goes down; both laptops write.
    #expect(server.stop() == 0)
    expectSuccess(try liststore(["item", "add", "demo", "0", "Rome"], database: a))
    expectSuccess(try liststore(["item", "move", "demo", "0:0", "0:2"], database: a))
    expectSuccess(try liststore(["item", "add", "demo", "0", "Oslo"], database: b))
    expectSuccess(try liststore(["item", "rm", "demo", "0:1"], database: b))
    let offline = try liststore(["sync"], database: a, environment: token)
    #expect(offline.status == 75 && offline.stderr.contains("cannot be reached"), "\(offline)")
    // Back: each syncs, then each once more to pull the other's writes.
    server = try ServerProcess(
      location: location, arguments: ["--tokens", folder.file("tokens")], port: port)
    defer { server.stop() }
    for laptop in [a, b, a] {
      let synced = try liststore(["sync"], database: laptop, environment: token)
      #expect(synced.status == 0 && synced.stdout.contains("pushed"), "\(synced)")
    }
    let truth = try export(location)
    #expect(try export(a) == truth && (try export(b)) == truth, "\(truth)")
    #expect(truth.contains("Rome") && truth.contains("Oslo"))
    let plain = try liststore(["sync"], database: location, environment: token)
    #expect(plain.status == 1 && plain.stderr.contains("not a replica"), "\(plain)")
  }

  @Test func onSQLite() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try laptopsCloneWriteOfflineAndConverge(location: folder.file("server.sqlite"), folder: folder)
  }

  @Test(.postgres) func onPostgreSQL() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    try laptopsCloneWriteOfflineAndConverge(location: database.location, folder: folder)
  }
}
