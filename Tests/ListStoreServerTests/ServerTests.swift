import Foundation
import ListStore
import PostgresTestSupport
import TestSupport
import Testing

/// `liststore serve` as clients use it: a real server process, requests by `curl`.
@Suite(.serialized) struct ServerTests {
  /// A database with the demo list and a server on it.
  struct Served {
    let database: TestDatabase
    let server: ServerProcess

    init(_ engine: TestEngine, arguments: [String] = []) throws {
      database = try engine.makeDatabase()
      expectSuccess(try liststore(["demo"], database: database.location))
      server = try ServerProcess(location: database.location, arguments: arguments)
    }

    func url(_ path: String) -> String { server.base + path }

    func request(_ method: String, _ path: String, _ body: String? = nil, token: String? = nil)
      throws -> HTTPResult
    {
      try http(
        method, url(path), body: body,
        headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }

    func shown() throws -> NSDictionary? { try showJSON("demo", location: database.location) }

    func finish() {
      #expect(server.stop() == 0, "serve exits 0 on SIGTERM: \(server.output.errors)")
      database.remove()
    }
  }

  @Test(arguments: TestEngine.tested)
  func readsWritesAndAStreamThatReplaysToTheList(engine: TestEngine) throws {
    let served = try Served(engine)
    defer { served.finish() }
    let stream = try EventStreamClient(served.url("/v1/lists/demo/changes"))
    defer { stream.stop() }
    #expect(stream.wait { $0.first?.event == "snapshot" })

    let lists = try served.request("GET", "/v1/lists")
    #expect(lists.status == 200)
    #expect(lists.body == "{\"lists\":[{\"id\":1,\"name\":\"demo\",\"sections\":1,\"items\":3}]}")
    let added = try served.request(
      "POST", "/v1/lists/demo/sections/1/items?at=1", "{\"value\":\"Rome\"}")
    #expect(added.status == 201, "\(added)")
    let id = try #require(added.object?["id"] as? Int)
    let section = try served.request(
      "POST", "/v1/lists/demo/sections", "{\"header\":\"More\",\"footer\":null}")
    #expect(section.status == 201, "\(section)")
    let sectionID = try #require(section.object?["id"] as? Int)
    let moved = try served.request(
      "PATCH", "/v1/lists/demo/items/\(id)",
      "{\"value\":{\"name\":\"Roma\"},\"section\":\(sectionID),\"at\":0}")
    #expect(moved.status == 200, "\(moved)")
    #expect(try served.request("DELETE", "/v1/lists/demo/items/2").status == 200)
    // Writes by other clients reach the stream too.
    expectSuccess(
      try liststore(["item", "add", "demo", "0", "Oslo"], database: served.database.location))
    let foreign = try served.database.foreign()
    try foreign.execute("UPDATE items SET value = '\"Köbenhavn\"' WHERE id = 3")
    foreign.close()

    let expected = try served.shown()
    #expect(stream.wait { (try? EventStreamClient.replay($0)) == expected }, "\(stream.events)")
    // The snapshot says the same, with the position of the last change as its ETag.
    let snapshot = try served.request("GET", "/v1/lists/demo")
    #expect(snapshot.status == 200)
    var object = try #require(snapshot.object)
    let seq = try #require(object.removeValue(forKey: "seq") as? Int)
    #expect(object as NSDictionary == expected)
    #expect(snapshot.headers["etag"] == "\"\(seq)\"")
    #expect(stream.events.last?.id == String(seq))
    // Ids increase with the commits.
    let ids = stream.events.compactMap { $0.id.flatMap(Int.init) }
    #expect(ids == ids.sorted() && Set(ids).count == ids.count)
  }

  @Test func aClientThatResumesGetsExactlyWhatItMissed() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let first = try EventStreamClient(served.url("/v1/lists/demo/changes"))
    for value in ["a", "b"] {
      expectSuccess(
        try liststore(["item", "add", "demo", "0", value], database: served.database.location))
    }
    let before = try served.shown()
    #expect(first.wait { (try? EventStreamClient.replay($0)) == before })
    first.stop()
    let seen = first.events
    let lastID = try #require(seen.last?.id)
    for value in ["c", "d", "e"] {
      expectSuccess(
        try liststore(["item", "add", "demo", "0", value], database: served.database.location))
    }
    let resumed = try EventStreamClient(
      served.url("/v1/lists/demo/changes"), headers: ["Last-Event-ID": lastID])
    defer { resumed.stop() }
    let expected = try served.shown()
    #expect(resumed.wait { (try? EventStreamClient.replay(seen + $0)) == expected })
    // No snapshot: only the changes after it (however the commits were grouped), each once.
    #expect(resumed.events.allSatisfy { $0.event == "changes" }, "\(resumed.events)")
    let insertedValues = resumed.events.flatMap { event -> [String] in
      let object = try? JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any]
      let inserted = object?["insertedItems"] as? [[String: Any]] ?? []
      return inserted.compactMap { $0["value"] as? String }
    }
    #expect(insertedValues.sorted() == ["c", "d", "e"])

    // The same by long polling, and a poll that waits for the next commit.
    let polled = try served.request("GET", "/v1/lists/demo/changes?after=\(lastID)")
    #expect(polled.status == 200)
    let polledChanges = try #require(polled.object?["changes"] as? [[String: Any]], "\(polled)")
    let polledEvents = polledChanges.compactMap { entry -> ServerSentEvent? in
      guard let seq = entry["seq"] as? Int, let changes = entry["changes"],
        let data = try? JSONSerialization.data(withJSONObject: changes)
      else { return nil }
      return ServerSentEvent(
        event: "changes", id: String(seq), data: String(decoding: data, as: UTF8.self))
    }
    #expect(polledEvents.count == polledChanges.count)
    #expect(try EventStreamClient.replay(seen + polledEvents) == expected)
    let seq = try #require(polled.object?["seq"] as? Int)
    #expect(String(seq) == resumed.events.last?.id)
    let waiting = try WatchProcess([
      "/usr/bin/env", "curl", "-s", "--max-time", "60",
      served.url("/v1/lists/demo/changes?after=\(seq)&wait=60"),
    ])
    expectSuccess(
      try liststore(["item", "add", "demo", "0", "f"], database: served.database.location))
    waiting.waitForExit()
    let answer = try #require(
      try JSONSerialization.jsonObject(with: Data(waiting.output.utf8)) as? [String: Any],
      "\(waiting.output)")
    let waited = try #require(answer["changes"] as? [[String: Any]])
    #expect(waited.count == 1)
    #expect((answer["seq"] as? Int ?? 0) > seq)
  }

  @Test func positionsThatCannotBeResumedGetAFreshSnapshot() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    // Ahead of the database (a restored backup): a reset with the list as it is.
    let ahead = try EventStreamClient(
      served.url("/v1/lists/demo/changes"), headers: ["Last-Event-ID": "999999"])
    defer { ahead.stop() }
    #expect(ahead.wait { $0.first?.event == "reset" })
    #expect(try ahead.replayed() == (try served.shown()))
    // Before what the server retains: a reset, and 409 for a long poll.
    let behind = try EventStreamClient(served.url("/v1/lists/demo/changes?after=0"))
    defer { behind.stop() }
    #expect(behind.wait { $0.first?.event == "reset" })
    let poll = try served.request("GET", "/v1/lists/demo/changes?after=0")
    #expect(poll.status == 409)
    #expect(poll.object?["code"] as? String == "mustRefetch")
  }

  @Test func aDeletedListEndsItsStream() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let stream = try EventStreamClient(served.url("/v1/lists/demo/changes"))
    #expect(stream.wait { $0.first?.event == "snapshot" })
    #expect(try served.request("DELETE", "/v1/lists/demo").status == 204)
    stream.process.waitForExit()
    #expect(stream.events.last?.event == "deleted")
    #expect(try served.request("GET", "/v1/lists/demo").status == 404)
  }

  @Test func errorsHaveTheirStatusAndChangeNothing() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let before = try served.shown()
    let cases: [(String, String, String?, Int, String)] = [
      ("GET", "/v1/lists/nope", nil, 404, "notFound"),
      ("POST", "/v1/lists/demo/sections/1/items", "{\"value\": [1,", 400, "badRequest"),
      ("POST", "/v1/lists/demo/sections/1/items", "{}", 400, "badRequest"),
      ("POST", "/v1/lists/demo/sections/99/items", "{\"value\":1}", 404, "notFound"),
      ("POST", "/v1/lists/demo/sections/1/items?at=9", "{\"value\":1}", 422, "unprocessable"),
      ("PATCH", "/v1/lists/demo/items/1", "{\"section\":1,\"at\":7}", 422, "unprocessable"),
      ("PUT", "/v1/lists/demo", nil, 409, "conflict"),
      ("POST", "/v1/lists", nil, 405, "methodNotAllowed"),
      ("GET", "/v2/lists", nil, 404, "notFound"),
      ("GET", "/v1/lists/demo/changes", nil, 400, "badRequest"),
    ]
    for (method, path, body, status, code) in cases {
      let result = try served.request(method, path, body)
      #expect(result.status == status, "\(method) \(path): \(result)")
      #expect(result.object?["code"] as? String == code, "\(method) \(path): \(result)")
      #expect((result.object?["error"] as? String)?.isEmpty == false)
    }
    let form = try http(
      "POST", served.url("/v1/lists/demo/sections/1/items"), body: "value=1",
      headers: ["Content-Type": "application/x-www-form-urlencoded"])
    #expect(form.status == 415)
    #expect(try served.shown() == before)
  }

  @Test func tokensGuardEveryRequestButHealth() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let tokens = database.folder.file("tokens")
    try "# who may do what\nreader-1 read\nwriter-1 write\n".write(
      toFile: tokens, atomically: true, encoding: .utf8)
    let server = try ServerProcess(location: database.location, arguments: ["--tokens", tokens])
    defer { server.stop() }
    let lists = server.base + "/v1/lists"
    #expect(try http("GET", server.base + "/healthz").status == 200)
    #expect(try http("GET", lists).status == 401)
    #expect(try http("GET", lists, headers: ["Authorization": "Bearer nope"]).status == 401)
    #expect(try http("GET", lists, headers: ["Authorization": "Bearer reader-1"]).status == 200)
    #expect(try http("GET", lists + "?access_token=reader-1").status == 200)
    let add = server.base + "/v1/lists/demo/sections/1/items"
    #expect(
      try http("POST", add, body: "{\"value\":1}", headers: ["Authorization": "Bearer reader-1"])
        .status == 403)
    #expect(
      try http("POST", add, body: "{\"value\":1}", headers: ["Authorization": "Bearer writer-1"])
        .status == 201)
    #expect(try http("GET", server.base + "/metrics").status == 401)
    let metrics = try http("GET", server.base + "/metrics?access_token=reader-1")
    #expect(metrics.body.contains("liststore_http_responses_total{status=\"401\"}"))
  }

  @Test func theNetworkNeedsTokensOrNoAuthSaidOutright() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let refused = try liststore(["serve", "--listen", "0.0.0.0:0"], database: database.location)
    #expect(refused.status == 64)
    #expect(refused.stderr.contains("needs --tokens FILE"))
    let bad = try liststore(["serve", "--listen", "nowhere"], database: database.location)
    #expect(bad.status == 64)
  }
}
