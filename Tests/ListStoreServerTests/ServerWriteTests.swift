import Foundation
import ListStore
import ListStoreServer
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// The server's batch, contents and optimistic-concurrency writes, and what it does with
/// requests that are malformed, cut off, too large or read too slowly.
@Suite(.serialized) struct ServerWriteTests {
  typealias Served = ServerTests.Served

  @Test func aBatchIsOneTransactionAsJSONOrAsLines() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let batch = """
      [{"op":"section add","header":"More","footer":null},
       {"op":"item add","section":0,"value":"Oslo","at":0},
       {"op":"item set","item":"0:1","value":{"name":"Roma"}}]
      """
    let done = try served.request("POST", "/v1/lists/demo/batch", batch)
    #expect(done.status == 200, "\(done)")
    let ids = try #require(done.object?["ids"] as? [Int], "\(done)")
    #expect(ids.count == 3)
    let shown = try #require(try served.shown())
    let sections = try #require(shown["sections"] as? [[String: Any]])
    #expect(sections.count == 2)
    let items = try #require(sections[0]["items"] as? [[String: Any]])
    #expect(items.first?["value"] as? String == "Oslo")
    #expect(items.first?["id"] as? Int == ids[1])
    #expect((items[1]["value"] as? [String: String]) == ["name": "Roma"])
    #expect(sections[1]["id"] as? Int == ids[0])
    #expect(
      done.object?["seq"] as? Int == (try served.request("GET", "/v1/lists/demo")).object?["seq"]
        as? Int)

    // JSON lines, blank lines skipped.
    let lines =
      "{\"op\":\"item add\",\"section\":0,\"value\":\"a\"}\n\n{\"op\":\"item rm\",\"item\":\"0:0\"}\n"
    let linesDone = try http(
      "POST", served.url("/v1/lists/demo/batch"), body: lines,
      headers: ["Content-Type": "application/x-ndjson"])
    #expect(linesDone.status == 200, "\(linesDone)")
    #expect((linesDone.object?["ids"] as? [Int])?.last == ids[1])

    // A failing operation rolls back the ones before it; a malformed one is refused
    // before anything runs.
    let before = try served.shown()
    let failing = try served.request(
      "POST", "/v1/lists/demo/batch",
      "[{\"op\":\"item add\",\"section\":0,\"value\":\"x\"},{\"op\":\"item rm\",\"item\":\"#99999\"}]"
    )
    #expect(failing.status == 404, "\(failing)")
    #expect(
      (failing.object?["error"] as? String)?.hasPrefix("operation 2 (nothing was applied)") == true)
    let malformed = try http(
      "POST", served.url("/v1/lists/demo/batch"), body: "{\"op\":\"item add\"}\n{\"op\":",
      headers: ["Content-Type": "application/x-ndjson"])
    #expect(malformed.status == 400, "\(malformed)")
    #expect((malformed.object?["error"] as? String)?.hasPrefix("line 1") == true, "\(malformed)")
    let notArray = try served.request("POST", "/v1/lists/demo/batch", "{\"op\":\"item rm\"}")
    #expect(notArray.status == 400)
    #expect(try served.shown() == before)
  }

  @Test func contentsAreReplacedWritingOnlyWhatDiffers() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let exported = try liststore(["export", "demo"], database: served.database.location)
    expectSuccess(exported)
    let seq = try #require(try served.request("GET", "/v1/lists/demo").object?["seq"] as? Int)
    let same = try served.request("PUT", "/v1/lists/demo/contents", exported.stdout)
    #expect(same.status == 200, "\(same)")
    for key in ["added", "removed", "changed", "moved"] {
      #expect(same.object?[key] as? Int == 0, "\(key): \(same)")
    }
    #expect(same.object?["seq"] as? Int == seq, "an unchanged list writes nothing")

    // Another list from the same file, then an edit of it.
    let created = try served.request("PUT", "/v1/lists/copy/contents", exported.stdout)
    #expect(created.status == 200, "\(created)")
    #expect((created.object?["added"] as? Int ?? 0) > 0)
    var object = try #require(
      try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
    var sections = try #require(object["sections"] as? [[String: Any]])
    var items = try #require(sections[0]["items"] as? [[String: Any]])
    items.removeFirst()
    items.append(["value": "figs"])
    sections[0]["items"] = items
    object["sections"] = sections
    let edited = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    let replaced = try served.request("PUT", "/v1/lists/demo/contents", edited)
    #expect(replaced.status == 200, "\(replaced)")
    #expect(replaced.object?["added"] as? Int == 1, "\(replaced)")
    #expect(replaced.object?["removed"] as? Int == 1, "\(replaced)")
    #expect((replaced.object?["seq"] as? Int ?? 0) > seq)
    let shown = try #require(try served.shown())
    let shownItems = (shown["sections"] as? [[String: Any]])?.first?["items"] as? [[String: Any]]
    #expect(shownItems?.last?["value"] as? String == "figs")

    let bad = try served.request("PUT", "/v1/lists/demo/contents", "{\"sections\": 3}")
    #expect(bad.status == 400, "\(bad)")
    #expect(try served.shown() == shown)
  }

  @Test func ifMatchRefusesAWriteToAListThatChanged() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    expectSuccess(try liststore(["list", "create", "other"], database: database.location))
    let server = try ServerProcess(location: database.location)
    defer { server.stop() }
    let base = server.base + "/v1/lists/"
    func patch(_ etag: String, _ value: String) throws -> HTTPResult {
      try http(
        "PATCH", base + "demo/items/1", body: "{\"value\":\"\(value)\"}",
        headers: ["If-Match": etag])
    }
    let etag = try #require(try http("GET", base + "demo").headers["etag"])
    // Another list's change does not count.
    #expect(try http("POST", base + "other/sections", body: "{\"header\":\"x\"}").status == 201)
    let first = try patch(etag, "first")
    #expect(first.status == 200, "\(first)")
    let stale = try patch(etag, "second")
    #expect(stale.status == 412, "\(stale)")
    #expect(stale.object?["code"] as? String == "preconditionFailed")
    #expect(try patch("W/" + etag, "second").status == 412)
    #expect(try patch("*", "any").status == 200)
    #expect(try patch("\"seven\"", "x").status == 400)
    // Ahead of the database: that it did not change cannot be told.
    #expect(try patch("\"99999999\"", "x").status == 412)
    let current = try #require(try http("GET", base + "demo").headers["etag"])
    #expect(try patch(current, "third").status == 200)
    let batch = try http(
      "POST", base + "demo/batch", body: "[{\"op\":\"item rm\",\"item\":\"#1\"}]",
      headers: ["If-Match": current])
    #expect(batch.status == 412, "a batch checks If-Match too: \(batch)")
    let item = try #require(try showJSON("demo", location: database.location))
    let first0 = ((item["sections"] as? [[String: Any]])?.first?["items"] as? [[String: Any]])?
      .first
    #expect(first0?["value"] as? String == "third")

    // Once the log is pruned past it, whether it changed can no longer be told.
    let latest = try #require(try http("GET", base + "demo").headers["etag"])
    #expect(try http("POST", base + "other/sections", body: "{\"header\":\"y\"}").status == 201)
    // As a prune that every reader allowed leaves it: empty, its horizon at the end.
    let foreign = try database.foreign()
    try foreign.execute(
      "UPDATE change_log_horizon SET pruned_through = "
        + "(SELECT seq FROM sqlite_sequence WHERE name = 'changes') WHERE id = 1")
    try foreign.execute("DELETE FROM changes")
    foreign.close()
    let pruned = try patch(latest, "fourth")
    #expect(pruned.status == 412, "\(pruned)")
    #expect((pruned.object?["error"] as? String)?.contains("can no longer be told") == true)
  }

  @Test func seqNeverGoesBackAfterThePruneAndARestart() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    var server = try ServerProcess(location: database.location)
    let written = try http(
      "POST", server.base + "/v1/lists/demo/sections/1/items", body: "{\"value\":\"a\"}")
    let seq = try #require(written.object?["seq"] as? Int, "\(written)")
    let seen = try http("GET", server.base + "/v1/lists/demo")
    #expect(seen.object?["seq"] as? Int == seq)
    #expect(server.stop() == 0)
    let repository = try database.openRepository()
    try repository.pruneChangeLog()
    let foreign = try database.foreign()
    try foreign.execute("DELETE FROM changes")
    #expect(try foreign.scalarInt64("SELECT count(*) FROM changes") == 0)
    foreign.close()
    server = try ServerProcess(location: database.location)
    defer { server.stop() }
    let snapshot = try http("GET", server.base + "/v1/lists/demo")
    #expect(snapshot.object?["seq"] as? Int == seq, "\(snapshot)")
    // A client that saw the list at seq follows it from there, missing nothing.
    let stream = try EventStreamClient(
      server.base + "/v1/lists/demo/changes", headers: ["Last-Event-ID": String(seq)])
    defer { stream.stop() }
    // The stream is open (its list watched) before the next write, which it then gets as
    // a change; a list the server did not watch yet when a change came would be a reset.
    var open = false
    let deadline = ContinuousClock.now + .seconds(TestLimits.eventSeconds)
    while !open && ContinuousClock.now < deadline {
      open = try http("GET", server.base + "/metrics").body.contains("liststore_open_streams 1")
    }
    #expect(open)
    let next = try http(
      "POST", server.base + "/v1/lists/demo/sections/1/items", body: "{\"value\":\"b\"}")
    let nextSeq = try #require(next.object?["seq"] as? Int, "\(next)")
    #expect(nextSeq > seq)
    let start = ServerSentEvent(event: "snapshot", id: String(seq), data: seen.body)
    let expected = try showJSON("demo", location: database.location)
    #expect(stream.wait { (try? EventStreamClient.replay([start] + $0)) == expected })
    #expect(stream.events.allSatisfy { $0.event == "changes" }, "\(stream.events)")
    #expect(stream.events.last?.id == String(nextSeq))
  }

  @Test func requestsThatCurlWouldNotSendGetClearAnswers() throws {
    let served = try Served(.sqlite, arguments: ["--max-body", "1000"])
    defer { served.finish() }
    let before = try served.shown()
    // A body without a length.
    let unsized = try RawConnection(port: served.server.port)
    unsized.send(
      "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n[]")
    let answer = unsized.readAll()
    #expect(answer.hasPrefix("HTTP/1.1 411"), "\(answer)")
    #expect(answer.contains("\"code\":\"lengthRequired\""))
    // Over --max-body: refused by libevent before it is read.
    let large = try RawConnection(port: served.server.port)
    large.send(
      "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 5000\r\n\r\n")
    #expect(large.readAll().hasPrefix("HTTP/1.1 413"))
    let chunked = try RawConnection(port: served.server.port)
    chunked.send(
      "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Transfer-Encoding: chunked\r\n\r\n" + "7d0\r\n[  ")
    #expect(chunked.readAll().hasPrefix("HTTP/1.1 413"))
    // Garbage, a request cut off mid-way and a client that stops half-way: answered or
    // dropped, and the server goes on.
    let garbage = try RawConnection(port: served.server.port)
    garbage.send("\u{01}\u{02} NOT HTTP\r\n\r\n")
    #expect(garbage.readAll().hasPrefix("HTTP/1.1 400"))
    let cut = try RawConnection(port: served.server.port)
    cut.send(
      "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 100\r\n\r\n[{\"op\":")
    cut.finishSending()
    #expect(!cut.readAll().contains("HTTP/1.1 200"))
    let stalled = try RawConnection(port: served.server.port)
    stalled.send("GET /v1/lists HTTP/1.1\r\nHost: x\r\n")
    // Others are served while it stalls; a good request on a raw connection, too.
    #expect(try served.request("GET", "/healthz").status == 200)
    let good = try RawConnection(port: served.server.port)
    good.send("GET /v1/lists/demo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    #expect(good.readAll().hasPrefix("HTTP/1.1 200"))
    #expect(try served.shown() == before)
  }

  @Test func aRequestSentAByteAtATimeIsAnsweredWhileOthersAreServed() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    // Many clients hold half a request each, and one writes one byte at a time: after
    // each of its bytes, another client is served whole on a kept-alive connection.
    let stalled = try (0..<50).map { _ in try RawConnection(port: served.server.port) }
    for connection in stalled {
      connection.send("POST /v1/lists/demo/sections/1/items HTTP/1.1\r\nHost: x\r\n")
    }
    let body = #"{"value":"slow"}"#
    let request =
      "POST /v1/lists/demo/sections/1/items HTTP/1.1\r\nHost: x\r\n"
      + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
    let slow = try RawConnection(port: served.server.port)
    let other = try RawConnection(port: served.server.port)
    var servedMeanwhile = 0
    for character in request {
      slow.send(String(character))
      other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
      if other.readResponse().hasPrefix("HTTP/1.1 200") { servedMeanwhile += 1 }
    }
    #expect(servedMeanwhile == request.count)
    let answer = slow.readResponse()
    #expect(answer.hasPrefix("HTTP/1.1 201"), "\(answer)")
    // The half requests never wrote; the slow one wrote once.
    for connection in stalled { connection.finishSending() }
    let values = try #require(served.shown()?.description)
    #expect(values.components(separatedBy: "slow").count == 2, "\(values)")
    expectSuccess(try liststore(["check", "--quiet"], database: served.database.location))
  }

  @Test func aStreamReadTooSlowlyIsClosedWithAnErrorAndResumes() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    _ = try repository.createList("big")
    let stored = try repository.list("big", metadata: RawJSON.self, item: RawJSON.self)
    try stored.appendSection(RawJSON("{\"header\":\"h\",\"footer\":null}"))
    var configuration = ListServer.Configuration()
    configuration.port = 0
    configuration.limits.streamBuffer = 64 * 1024
    let server = try ListServer(repository: repository, configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      server.run()
      done.signal()
    }
    defer {
      server.stop()
      done.wait()
    }
    // A client with a small receive window that reads nothing.
    let slow = try RawConnection(port: server.port, receiveBuffer: 4096)
    slow.send(
      "GET /v1/lists/big/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    // Its stream is open once the answer's head has come; then it stops reading.
    let head = slow.readResponse()
    #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
    let value = RawJSON("\"" + String(repeating: "x", count: 1 << 20) + "\"")
    for _ in 0..<12 { try stored.appendItem(value, toSection: 0) }
    // Only once the server gave up on the stream does the client read: what it then reads
    // ends with the error, and the connection closes after it.
    let metrics = "http://127.0.0.1:\(server.port)/metrics"
    var gaveUp = false
    let deadline = ContinuousClock.now + .seconds(TestLimits.eventSeconds)
    while !gaveUp && ContinuousClock.now < deadline {
      gaveUp = try http("GET", metrics).body.contains("liststore_slow_consumers_total 1")
    }
    #expect(gaveUp, "the server never closed the slow stream")
    let text = head + slow.readAll()
    #expect(text.contains("event: snapshot"))
    #expect(text.contains("\"code\":\"slowConsumer\""), "\(text.suffix(300))")
    // The server goes on; a client resuming from the last id it got is in step.
    let ids = text.components(separatedBy: "\n").filter { $0.hasPrefix("id: ") }
    let last = try #require(ids.last.map { String($0.dropFirst(4)) })
    let resumed = try http(
      "GET", "http://127.0.0.1:\(server.port)/v1/lists/big/changes?after=\(last)&wait=0")
    #expect(resumed.status == 200, "\(resumed.status) \(resumed.body.prefix(300))")
    repository.synchronizeObservers()
    #expect(
      resumed.object?["seq"] as? Int == Int(last) ?? 0
        || (resumed.object?["changes"] as? [Any])?.isEmpty == false)
  }

  @Test(
    .installed("openssl"),
    .loadable("libevent_openssl-2.1.so.7", package: "libevent-openssl-2.1-7"))
  func httpsServesTheSameAPI() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let (certificate, key) = (database.folder.file("cert.pem"), database.folder.file("key.pem"))
    let made = try run(
      "/usr/bin/env",
      [
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
        certificate, "-days", "2", "-subj", "/CN=localhost", "-addext",
        "subjectAltName=IP:127.0.0.1",
      ])
    #expect(made.status == 0, "\(made.stderr)")
    let server = try ServerProcess(
      location: database.location, arguments: ["--tls-cert", certificate, "--tls-key", key])
    defer { server.stop() }
    #expect(server.base.hasPrefix("https://"))
    func curl(_ arguments: [String]) throws -> ProcessResult {
      try run(
        "/usr/bin/env", ["curl", "-s", "--max-time", "30", "--cacert", certificate] + arguments)
    }
    let added = try curl([
      "-H", "Content-Type: application/json", "--data-binary", "{\"value\":\"Oslo\"}",
      server.base + "/v1/lists/demo/sections/1/items",
    ])
    #expect(added.stdout.contains("\"seq\""), "\(added)")
    let shown = try curl([server.base + "/v1/lists/demo"])
    #expect(shown.stdout.contains("Oslo"), "\(shown)")
    // The CLI over HTTPS, trusting the self-signed certificate through LISTSTORE_CA_FILE.
    let overTLS = try liststore(
      ["show", "demo"], database: server.base, environment: ["LISTSTORE_CA_FILE": certificate])
    #expect(overTLS.status == 0 && overTLS.stdout.contains("Oslo"), "\(overTLS)")
    let untrusted = try liststore(["show", "demo"], database: server.base)
    #expect(untrusted.status == 1, "\(untrusted)")
    // The error says what to do for a self-signed server.
    #expect(untrusted.stderr.contains("cannot verify the server's TLS certificate"), "\(untrusted)")
    #expect(untrusted.stderr.contains("LISTSTORE_CA_FILE"), "\(untrusted)")
    // Plain HTTP on the TLS port gets no answer, and the server goes on.
    let plain = try run(
      "/usr/bin/env", ["curl", "-s", "--max-time", "30", "http://127.0.0.1:\(server.port)/healthz"])
    #expect(plain.status != 0)
    #expect(try curl([server.base + "/healthz"]).stdout == "ok\n")

    // A key that is not the certificate's, one file without the other, a missing library.
    let refused = try liststore(
      ["serve", "--listen", "127.0.0.1:0", "--tls-cert", key, "--tls-key", key],
      database: database.location)
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("as the TLS certificate"), "\(refused.stderr)")
    let half = try liststore(
      ["serve", "--listen", "127.0.0.1:0", "--tls-cert", certificate], database: database.location)
    #expect(half.status == 64)
    let missing = try liststore(
      ["serve", "--listen", "127.0.0.1:0", "--tls-cert", certificate, "--tls-key", key],
      database: database.location, environment: ["LISTSTORE_LIBEVENT_OPENSSL": "/nonexistent.so"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("install libevent-openssl-2.1-7"), "\(missing.stderr)")
  }

  @Test(.postgres)
  func serversOnOnePostgreSQLDatabaseEachSeeEveryWrite() throws {
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let (first, second) = (
      try ServerProcess(location: database.location),
      try ServerProcess(location: database.location)
    )
    defer {
      first.stop()
      second.stop()
    }
    let streams = try [first, second].map {
      try EventStreamClient($0.base + "/v1/lists/demo/changes")
    }
    defer {
      for stream in streams { stream.stop() }
    }
    for stream in streams { #expect(stream.wait { $0.first?.event == "snapshot" }) }
    // A write through each server, and one by psql's way: plain SQL on the database.
    for (server, value) in [(first, "one"), (second, "two")] {
      let added = try http(
        "POST", server.base + "/v1/lists/demo/sections/1/items", body: "{\"value\":\"\(value)\"}")
      #expect(added.status == 201, "\(added)")
    }
    let foreign = try database.foreign()
    try foreign.execute("UPDATE items SET value = '\"three\"' WHERE id = 1")
    foreign.close()
    let expected = try showJSON("demo", location: database.location)
    for stream in streams {
      #expect(stream.wait { (try? EventStreamClient.replay($0)) == expected }, "\(stream.events)")
    }
    let seqs = try [first, second].map {
      try http("GET", $0.base + "/v1/lists/demo").headers["etag"]
    }
    #expect(seqs[0] == seqs[1])
  }

  @Test func sigtermEndsStreamsAndPollsAndExitsZero() throws {
    let served = try Served(.sqlite)
    let stream = try EventStreamClient(served.url("/v1/lists/demo/changes"))
    #expect(stream.wait { $0.first?.event == "snapshot" })
    let seq = try #require(try served.request("GET", "/v1/lists/demo").headers["etag"])
      .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    let poll = try WatchProcess([
      "/usr/bin/env", "curl", "-s", "--max-time", "120",
      served.url("/v1/lists/demo/changes?after=\(seq)&wait=120"),
    ])
    // The poll is held once the server counts it among its open streams.
    #expect(
      poll.process.isRunning
        && (0..<2000).contains { _ in
          ((try? served.request("GET", "/metrics"))?.body.contains("liststore_open_streams 2")
            ?? false)
        })
    served.finish()
    stream.process.waitForExit()
    poll.waitForExit()
    #expect(poll.output.contains("\"changes\":[]"), "\(poll.output)")
    #expect(stream.events.last?.event == "snapshot", "the stream ended without an error event")
  }

  @Test func manyStreamsAreFedByOneReadOfTheLogPerCommit() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    let etag = try #require(try served.request("GET", "/v1/lists/demo").headers["etag"])
    let seq = try #require(Int(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))))
    let count = 30
    let streams = try (0..<count).map { _ in try RawConnection(port: served.server.port) }
    for stream in streams {
      stream.send(
        "GET /v1/lists/demo/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
          + "Last-Event-ID: \(seq)\r\n\r\n")
    }
    func metric(_ name: String) throws -> Int {
      let body = try served.request("GET", "/metrics").body
      let line = body.components(separatedBy: "\n").first { $0.hasPrefix(name + " ") }
      return try #require(line.flatMap { Int($0.dropFirst(name.count + 1)) }, "\(body)")
    }
    // Every stream follows once it has its first line (its reconnection delay).
    for stream in streams { #expect(stream.read(until: "retry: 1000").contains("200 OK")) }
    #expect(try metric("liststore_open_streams") == count)
    let readsBefore = try metric("liststore_feed_log_reads_total")
    let writes = 10
    var seqs: [Int] = []
    for round in 0..<writes {
      let answer = try served.request(
        "PATCH", "/v1/lists/demo/items/1", "{\"value\":\"v\(round)\"}")
      seqs.append(try #require(answer.object?["seq"] as? Int))
    }
    for stream in streams {
      let text = stream.read(until: "id: \(seqs[writes - 1])\n")
      let ids = text.components(separatedBy: "\n").filter { $0.hasPrefix("id: ") }
      #expect(ids == seqs.map { "id: \($0)" })
    }
    // One read per commit (a refresh after it may read once more), not one per stream.
    let reads = try metric("liststore_feed_log_reads_total") - readsBefore
    #expect(reads >= writes && reads <= 2 * writes, "\(reads) reads for \(writes) commits")
  }

  @Test func theLivePageIsServedFromTheBinaryAndOtherPathsAre404() throws {
    let served = try Served(.sqlite)
    defer { served.finish() }
    for (path, status) in [("/", 200), ("/lists/demo", 200), ("/lists/anything", 404)] {
      let page = try served.request("GET", path)
      #expect(page.status == status)
      #expect(page.body.hasPrefix("<!doctype html>"))
      // Nothing from elsewhere: no script, style or font is loaded from another origin.
      #expect(!page.body.contains("src=\"http") && !page.body.contains("@import"))
    }
    let other = try served.request("GET", "/elsewhere")
    #expect(other.status == 404)
    #expect(other.object?["code"] as? String == "notFound")
    #expect(try served.request("POST", "/").status == 405)
  }

  @Test func aSnapshotLargerThanTheBoundIsSentWhole() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    _ = try repository.createList("big")
    let stored = try repository.list("big", metadata: RawJSON.self, item: RawJSON.self)
    try stored.appendSection(RawJSON("{\"header\":\"h\",\"footer\":null}"))
    let value = RawJSON("\"" + String(repeating: "y", count: 100_000) + "\"")
    for _ in 0..<4 { try stored.appendItem(value, toSection: 0) }
    var configuration = ListServer.Configuration()
    configuration.port = 0
    configuration.limits.streamBuffer = 64 * 1024
    let server = try ListServer(repository: repository, configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      server.run()
      done.signal()
    }
    defer {
      server.stop()
      done.wait()
    }
    let stream = try EventStreamClient("http://127.0.0.1:\(server.port)/v1/lists/big/changes")
    defer { stream.stop() }
    #expect(stream.wait { $0.first?.event == "snapshot" })
    try stored.appendItem(RawJSON("1"), toSection: 0)
    let expected = try showJSON("big", location: database.location)
    #expect(stream.wait { (try? EventStreamClient.replay($0)) == expected })
    #expect(!stream.events.contains { $0.event == "error" })
  }
}

/// D8: a client that keeps reading, however slowly, gets `slowConsumer` as the stream's last
/// event — the connection is not cut while it still takes bytes.
@Suite struct SlowReaderTests {
  @Test func aSlowReaderGetsTheSlowConsumerEventBeforeTheEnd() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let stored = try repository.createList("big", metadata: RawJSON.self, item: RawJSON.self)
    try stored.appendSection(RawJSON("{\"header\":\"h\",\"footer\":null}"))
    var configuration = ListServer.Configuration()
    configuration.port = 0
    configuration.limits.streamBuffer = 64 * 1024
    let server = try ListServer(repository: repository, configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      server.run()
      done.signal()
    }
    defer {
      server.stop()
      done.wait()
    }
    let slow = try RawConnection(port: server.port, receiveBuffer: 4096)
    slow.send(
      "GET /v1/lists/big/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    #expect(slow.readResponse().hasPrefix("HTTP/1.1 200"))
    // About 300 KB a second, while 8 MB of changes come.
    let text = Mutex("")
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      let read = slow.readAll(atMost: 16 * 1024, every: .milliseconds(50))
      text.withLock { $0 = read }
      finished.signal()
    }
    let value = RawJSON("\"" + String(repeating: "x", count: 1 << 20) + "\"")
    for _ in 0..<8 { try stored.appendItem(value, toSection: 0) }
    #expect(finished.wait(timeout: .now() + TestLimits.threadSeconds) == .success)
    let read = text.withLock { $0 }
    // The error is the stream's last event, whole, and the chunked answer ends after it.
    #expect(read.contains("event: error\ndata: {"), "\(read.suffix(300))")
    #expect(read.contains("\"code\":\"slowConsumer\"}\n\n"), "\(read.suffix(300))")
    #expect(read.hasSuffix("\r\n0\r\n\r\n"), "\(read.suffix(300))")
  }
}
