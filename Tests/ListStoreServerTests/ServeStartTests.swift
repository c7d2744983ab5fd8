import Dispatch
import Foundation
import ListStore
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// `liststore serve` is a writer: it creates and migrates a database that is not there yet,
/// as `list create` does, also when several servers start on it at once.
@Suite struct ServeStartTests {
  @Test(arguments: TestEngine.tested)
  func serversStartAtOnceOnANewDatabase(engine: TestEngine) throws {
    let database = try engine.makeEmptyLocation()
    defer { database.remove() }
    // They start before any has made the schema: the migration's lock (BEGIN IMMEDIATE
    // on SQLite, an advisory lock on PostgreSQL) lets one make it and the other find it.
    let started = Mutex<[Result<ServerProcess, any Error>]>([])
    DispatchQueue.concurrentPerform(iterations: 4) { _ in
      let server = Result { try ServerProcess(location: database.location) }
      started.withLock { $0.append(server) }
    }
    let servers = try started.withLock { $0 }.map { try $0.get() }
    defer { for server in servers { #expect(server.stop() == 0) } }
    #expect(servers.count == 4)
    // After the address, the live page's.
    for server in servers {
      #expect(server.output.wait { lines, _ in lines.count >= 2 })
      #expect(server.output.lines[1] == "the live page: \(server.base)/", "\(server.output.lines)")
    }

    // A list made through one is seen through the other, and the database is sound.
    let created = try http("PUT", servers[0].base + "/v1/lists/groceries")
    #expect(created.status == 201, "\(created)")
    let lists = try http("GET", servers[1].base + "/v1/lists")
    #expect(lists.body == #"{"lists":[{"id":1,"name":"groceries","sections":0,"items":0}]}"#)
    expectSuccess(try liststore(["check"], database: database.location))
  }
}
