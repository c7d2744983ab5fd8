import Dispatch
import Foundation
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// `POST /v1/push` (docs/replicas.md) over HTTP, on both engines: the wire format, each
/// refusal with its code and what it carries, a token's scope rejecting a write (not the
/// push), and on PostgreSQL two servers receiving the same push at once applying it once.
@Suite struct PushOverHTTPTests {
  static let tokens = """
    W write groceries
    R read *
    """

  struct Server {
    let process: ServerProcess

    func post(_ path: String, _ body: String?, token: String = "W") throws -> HTTPResult {
      try http(
        "POST", process.base + path, body: body, headers: ["Authorization": "Bearer \(token)"])
    }

    func get(_ path: String) throws -> [String: Any] {
      try http("GET", process.base + path, headers: ["Authorization": "Bearer R"]).object ?? [:]
    }

    /// The list's id, and its first section's.
    func groceries() throws -> (list: Int, section: Int) {
      let lists = try get("/v1/lists")["lists"] as? [[String: Any]] ?? []
      let list = try #require(lists.first { $0["name"] as? String == "groceries" }?["id"] as? Int)
      let sections = try get("/v1/lists/groceries")["sections"] as? [[String: Any]] ?? []
      return (list, try #require(sections.first?["id"] as? Int))
    }

    /// How many items the list holds.
    func itemCount() throws -> Int {
      let lists = try get("/v1/lists")["lists"] as? [[String: Any]] ?? []
      return lists.first { $0["name"] as? String == "groceries" }?["items"] as? Int ?? -1
    }

    func register() throws -> Int {
      try #require(try post("/v1/replicas", nil).object?["replica"] as? Int)
    }
  }

  static func push(
    _ replica: Int, acked: Int = 0, protocolVersion: Int = 1, _ writes: String...
  ) -> String {
    #"{"replica":\#(replica),"protocol":\#(protocolVersion),"ackedThrough":\#(acked),"writes":["#
      + writes.joined(separator: ",") + "]}"
  }

  static func write(_ n: Int, digest: String? = nil, _ ops: String...) -> String {
    #"{"n":\#(n),"digest":"\#(digest ?? "d\(n)")","ops":["# + ops.joined(separator: ",") + "]}"
  }

  func pushesAreAppliedOnceAndRefusedWithTheirCodes(_ server: Server) throws {
    let (list, section) = try server.groceries()
    let replica = try server.register()
    let count = try server.itemCount()
    let kiwi = Self.write(
      1,
      #"{"op":"item.insert","list":\#(list),"section":\#(section),"id":\#(replica << 40 + 1),"value":"kiwi","after":null}"#
    )
    let secret = Self.write(
      2, #"{"op":"list.create","list":\#(replica << 40 + 2),"name":"secret"}"#)
    let first = try server.post("/v1/push", Self.push(replica, kiwi, secret))
    #expect(first.status == 200, "\(first)")
    let results = first.object?["results"] as? [[String: Any]] ?? []
    #expect(results.count == 2 && results[0]["seq"] is Int, "\(first)")
    #expect(results.last?["code"] as? String == "forbidden", "\(first)")
    #expect(first.object?["last"] as? Int == 2)
    // Its answer lost, the push comes again: the same results, applied once.
    let again = try server.post("/v1/push", Self.push(replica, kiwi, secret))
    #expect(again.status == 200 && again.body == first.body, "\(again) after \(first)")
    #expect(try server.itemCount() == count + 1)
    let items =
      (try server.get("/v1/lists/groceries")["sections"] as? [[String: Any]])?.first?["items"]
      as? [[String: Any]] ?? []
    #expect(
      items.first?["id"] as? Int == replica << 40 + 1 && items.first?["value"] as? String == "kiwi")
    // Refused whole, each with its code and what it carries.
    let gap = try server.post("/v1/push", Self.push(replica, acked: 2, Self.write(5)))
    #expect(gap.status == 409 && gap.object?["code"] as? String == "outOfOrder", "\(gap)")
    #expect(gap.object?["last"] as? Int == 2, "\(gap)")
    let forked = try server.post(
      "/v1/push", Self.push(replica, Self.write(2, digest: "other")))
    #expect(forked.status == 409 && forked.object?["code"] as? String == "replicaForked")
    #expect(forked.object?["write"] as? Int == 2, "\(forked)")
    let behind = try server.post("/v1/push", Self.push(replica, acked: 9))
    #expect(behind.status == 409 && behind.object?["code"] as? String == "serverBehind")
    let later = try server.post("/v1/push", Self.push(replica, protocolVersion: 2, Self.write(3)))
    #expect(later.status == 426, "\(later)")
    let unknown = try server.post("/v1/push", Self.push(replica + 100, Self.write(1)))
    #expect(unknown.status == 404 && unknown.body.contains("register"), "\(unknown)")
    let readOnly = try server.post("/v1/push", Self.push(replica, Self.write(3)), token: "R")
    #expect(readOnly.status == 403, "\(readOnly)")
    for body in [
      #"{"replica":\#(replica)}"#, #"{"replica":\#(replica),"writes":[{"n":3,"digest":"x"}]}"#,
      Self.push(replica, Self.write(3, #"{"op":"item.paint","list":1}"#)),
      Self.push(replica, Self.write(3, #"{"op":"item.set","list":1,"id":2,"vaule":3}"#)),
      Self.push(replica, Self.write(3, digest: "")),
    ] {
      let bad = try server.post("/v1/push", body)
      #expect(
        bad.status == 400 && bad.object?["code"] as? String == "badRequest", "\(body): \(bad)")
    }
    // None of them applied anything: the next write is 3.
    let next = try server.post(
      "/v1/push",
      Self.push(
        replica, acked: 2,
        Self.write(3, #"{"op":"item.delete","list":\#(list),"id":\#(replica << 40 + 1)}"#)))
    #expect(next.status == 200 && next.object?["last"] as? Int == 3, "\(next)")
  }

  func tokensFile() throws -> (TemporaryDirectory, String) {
    let folder = TemporaryDirectory()
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    return (folder, folder.file("tokens"))
  }

  @Test func onSQLite() throws {
    let (folder, tokens) = try tokensFile()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo", "--list", "groceries"], database: database))
    let server = try ServerProcess(location: database, arguments: ["--tokens", tokens])
    defer { server.stop() }
    try pushesAreAppliedOnceAndRefusedWithTheirCodes(Server(process: server))
  }

  @Test(.postgres) func onPostgreSQLTwoServersGivenTheSamePushAtOnceApplyItOnce() throws {
    let (folder, tokens) = try tokensFile()
    defer { folder.remove() }
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo", "--list", "groceries"], database: database.location))
    let servers = try (0..<2).map { _ in
      Server(
        process: try ServerProcess(location: database.location, arguments: ["--tokens", tokens]))
    }
    defer { for server in servers { server.process.stop() } }
    try pushesAreAppliedOnceAndRefusedWithTheirCodes(servers[0])
    let (list, section) = try servers[0].groceries()
    let replica = try servers[1].register()
    let before = try servers[0].itemCount()
    // Each round, both servers get the same push at once: one applies it, the other waits
    // on the replica's record and answers the stored results.
    let rounds = 8
    for n in 1...rounds {
      let body = Self.push(
        replica, acked: n - 1,
        Self.write(
          n,
          #"{"op":"item.insert","list":\#(list),"section":\#(section),"id":\#(replica << 40 + n),"value":\#(n),"after":null}"#
        ))
      let answers = Mutex<[HTTPResult?]>([nil, nil])
      DispatchQueue.concurrentPerform(iterations: 2) { index in
        let answer = try? servers[index].post("/v1/push", body)
        answers.withLock { $0[index] = answer }
      }
      let (a, b) = answers.withLock { ($0[0], $0[1]) }
      #expect(
        a?.status == 200 && a?.body == b?.body,
        "round \(n): \(String(describing: a)) and \(String(describing: b))")
    }
    #expect(try servers[1].itemCount() == before + rounds)
  }
}
