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

  /// serve raises its soft limit on open files to the hard one (the usual soft 1,024
  /// would cap its connections), and refuses a --max-connections the hard limit cannot
  /// hold rather than lowering it in silence.
  @Test func serveRaisesItsOpenFileLimitAndRefusesConnectionsBeyondIt() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("limits.sqlite")
    let shell = ["/bin/sh", "-c"]
    let server = try WatchProcess(
      shell + [
        "ulimit -S -n 300 && exec \"$0\" \"$@\"", liststoreBinary, "--db", db, "serve",
        "--listen", "127.0.0.1:0",
      ])
    defer { server.stop() }
    #expect(server.wait { lines, _ in !lines.isEmpty })
    let limits = try String(
      contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)
    let fields = try #require(
      limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
    )
    .split(separator: " ")
    #expect(fields.count == 6 && fields[3] == fields[4], "soft and hard: \(fields)")

    let refused = try run(
      "/bin/sh",
      [
        "-c", "ulimit -n 300 && exec \"$0\" \"$@\"", liststoreBinary, "--db", db, "serve",
        "--listen", "127.0.0.1:0", "--max-connections", "1000",
      ])
    #expect(refused.status == 1)
    #expect(
      refused.stderr
        == "error: --max-connections 1000 needs 1064 open files (64 kept spare) but this "
        + "process may open 300 (ulimit -Hn): raise the hard limit, or ask for at most 236 "
        + "connections\n")
  }
}
