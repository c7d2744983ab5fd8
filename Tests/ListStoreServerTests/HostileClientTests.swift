import Dispatch
import Foundation
import ListStore
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// `liststore serve` attacked as a hostile client would: at sizes that fit CI, each attack
/// held while `/healthz` must still answer 200 within a hang deadline — a bound that
/// makes a server that stopped answering fail rather than hang the suite, never a timing
/// target (those are in the benchmark, B27).
@Suite(.serialized) struct HostileClientTests {
  /// How long `/healthz` may take while an attack holds before the test fails.
  static let hangSeconds = Int(5 * max(1, TestLimits.eventSeconds / 20))

  /// A database with the demo list, and a server on it.
  final class Target {
    let folder = TemporaryDirectory()
    let server: ServerProcess
    var database: String { folder.file("lists.sqlite") }

    init(arguments: [String] = [], tokens: Bool = false, descriptorLimit: Int? = nil) throws {
      expectSuccess(try liststore(["demo"], database: folder.file("lists.sqlite")))
      var arguments = arguments
      if tokens {
        try Data("READER read\nWRITER write\n".utf8).write(
          to: URL(fileURLWithPath: folder.file("tokens.txt")))
        arguments += ["--tokens", folder.file("tokens.txt")]
      }
      server = try ServerProcess(
        location: folder.file("lists.sqlite"), arguments: arguments,
        descriptorLimit: descriptorLimit)
    }

    /// Opens a connection to the server.
    func connect(timeout: Int = HostileClientTests.hangSeconds) throws -> RawConnection {
      try RawConnection(port: server.port, timeout: timeout)
    }

    /// Expects `/healthz` to answer 200 on a new connection within the hang deadline.
    func expectHealthy(_ comment: String, sourceLocation: SourceLocation = #_sourceLocation)
      throws
    {
      let connection = try connect()
      connection.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
      let answer = connection.readResponse()
      #expect(
        answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("ok\n"),
        "/healthz during \(comment): \(answer.debugDescription)", sourceLocation: sourceLocation)
    }

    func remove() {
      #expect(server.stop() == 0, "\(server.output.errors)")
      folder.remove()
    }
  }

  /// D1: idle connections past the descriptor limit. The server keeps descriptors spare,
  /// closes the connection that waited longest without a head, and answers.
  @Test func idleConnectionsPastTheDescriptorLimitDoNotStopTheServer() throws {
    let target = try Target(descriptorLimit: 160)
    defer { target.remove() }
    // Three times what the limit allows (160 less 64 spare), sending nothing.
    var idle: [RawConnection] = []
    for _ in 0..<300 { idle.append(try target.connect()) }
    try target.expectHealthy("300 idle connections at a limit of 160 descriptors")
    // The oldest idle ones were closed to make room.
    #expect(idle[0].isClosedByServer())
    // And the server said nothing, or a line a second at most: no spinning on accept.
    #expect(target.server.output.errors.count <= 5, "\(target.server.output.errors.prefix(5))")
  }

  /// D3: bodies sent without a token are never read, whatever they announce, and their
  /// 401 does not wait behind a long write.
  @Test func bodiesWithoutATokenAreRefusedBeforeTheyAreRead() throws {
    let target = try Target(tokens: true)
    defer { target.remove() }
    // A long batch with the write token, under way while the attack runs.
    let batch = try target.connect(timeout: Int(TestLimits.threadSeconds))
    let operations = (0..<100_000).map { #"{"op":"item add","section":0,"value":\#($0)}"# }
      .joined(separator: "\n")
    batch.send(
      "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer WRITER\r\n"
        + "Content-Type: application/x-ndjson\r\nContent-Length: \(operations.utf8.count)\r\n\r\n"
        + operations)
    let batchDone = Mutex(false)
    let batchAnswered = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      let answer = batch.readResponse()
      batchDone.withLock { $0 = answer.hasPrefix("HTTP/1.1 200") }
      batchAnswered.signal()
    }
    for attempt in 0..<8 {
      let attacker = try target.connect()
      attacker.send(
        "POST /v1/lists/demo/batch HTTP/1.1\r\nHost: test\r\n"
          + "Content-Type: application/x-ndjson\r\nContent-Length: 262144000\r\n\r\n")
      attacker.sendFiller(1 << 20)
      let answer = attacker.readResponse()
      #expect(answer.hasPrefix("HTTP/1.1 401"), "attempt \(attempt): \(answer.prefix(200))")
      #expect(answer.contains("Connection: close"), "\(answer.prefix(300))")
      #expect(attacker.isClosedByServer())
      // A read token writing is refused as early.
      let reader = try target.connect()
      reader.send(
        "PUT /v1/lists/x HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer READER\r\n"
          + "Content-Type: application/json\r\nContent-Length: 262144000\r\n\r\n")
      #expect(reader.readResponse().hasPrefix("HTTP/1.1 403"))
    }
    try target.expectHealthy("bodies without a token")
    // The refusals came while the batch still ran: they did not wait for it.
    let waited = batchAnswered.wait(timeout: .now() + TestLimits.threadSeconds)
    #expect(waited == .success && batchDone.withLock { $0 }, "the batch did not complete")
  }

  /// D4: `HEAD` gets a head alone, so that the next answer on a kept-alive connection is
  /// read right; on a change stream it holds nothing open.
  @Test func headGetsTheHeadAloneAndTheNextAnswerIsReadRight() throws {
    let target = try Target()
    defer { target.remove() }
    let connection = try target.connect()
    connection.send(
      "HEAD /healthz HTTP/1.1\r\nHost: test\r\n\r\nGET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
    let head = connection.readResponse(bodyless: true)
    #expect(head.hasPrefix("HTTP/1.1 200") && head.contains("Content-Length: 3\r\n"), "\(head)")
    #expect(head.hasSuffix("\r\n\r\n"), "a HEAD answer has no body: \(head.debugDescription)")
    let next = connection.readResponse()
    #expect(next.hasPrefix("HTTP/1.1 200") && next.hasSuffix("\r\n\r\nok\n"), "\(next)")
    // On the change stream: the head, then the connection serves the next request.
    connection.send(
      "HEAD /v1/lists/demo/changes HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n"
        + "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
    let stream = connection.readResponse(bodyless: true)
    #expect(stream.hasPrefix("HTTP/1.1 200") && stream.contains("text/event-stream"), "\(stream)")
    #expect(connection.readResponse().hasSuffix("ok\n"))
  }

  /// D5: requests shaped to be split differently by two readers are refused, and what
  /// they hide never runs.
  @Test(arguments: [
    ("Transfer-Encoding: gzip", "501"), ("Content-Length: 5\r\nContent-Length: 200", "400"),
    ("Transfer-Encoding: chunked\r\nContent-Length: 200", "400"),
    ("Transfer-Encoding: chunked, identity", "501"), ("Content-Length : 200", "400"),
  ])
  func smuggledRequestsAreRefusedAndTheirPassengersNeverRun(framing: String, status: String)
    throws
  {
    let target = try Target()
    defer { target.remove() }
    let hidden = "DELETE /v1/lists/demo/items/1 HTTP/1.1\r\nHost: test\r\n\r\n"
    let connection = try target.connect()
    connection.send(
      "POST /v1/lists/demo/items?after=2 HTTP/1.1\r\nHost: test\r\n\(framing)\r\n"
        + "Content-Type: application/json\r\n\r\n" + hidden)
    let answer = connection.readResponse()
    #expect(answer.hasPrefix("HTTP/1.1 \(status)"), "\(answer)")
    #expect(connection.isClosedByServer())
    let shown = try liststore(["show", "demo"], database: target.database)
    #expect(shown.stdout.contains("Paris"), "the hidden DELETE ran: \(shown.stdout)")
    try target.expectHealthy("smuggling")
  }

  /// D12: a head that trickles in is cut off at the head deadline, counted from its first
  /// byte, however steadily its bytes come.
  @Test func headsThatTrickleAreCutOffAtTheDeadline() throws {
    let target = try Target(arguments: ["--head-timeout", "2"])
    defer { target.remove() }
    let head = Array("GET /v1/lists/demo HTTP/1.1\r\nHost: test\r\nX-Slow: ".utf8)
    // Forty clients, each sending a byte whenever the server has said nothing for a
    // tenth of a second — a trickle that never finishes its head.
    let clients = try (0..<40).map { _ in try RawConnection(port: target.server.port, timeout: 0) }
    let cutOff = Mutex(0)
    let group = DispatchGroup()
    for client in clients {
      group.enter()
      // A thread each: they block on purpose, and a dispatch queue runs few at once.
      Thread.detachNewThread {
        defer { group.leave() }
        var sent = 0
        while client.waitForClose(milliseconds: 100) == false {
          client.send(String(decoding: [head[sent % head.count]], as: UTF8.self))
          sent += 1
        }
        cutOff.withLock { $0 += 1 }
      }
    }
    try target.expectHealthy("40 trickling heads")
    let ended = group.wait(timeout: .now() + .seconds(2 + Self.hangSeconds * 2))
    #expect(ended == .success && cutOff.withLock { $0 } == clients.count)
  }
}

/// D6: an `If-Match` seq names one state of one list: a list deleted and made again under
/// its name, or renamed away and back, is a change, on both engines.
@Suite struct ConditionalWriteTests {
  @Test(arguments: TestEngine.tested)
  func anETagDoesNotPassForAnotherListOfTheSameName(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let server = try ServerProcess(location: database.location)
    defer { #expect(server.stop() == 0) }
    func request(_ method: String, _ path: String, _ body: String? = nil, ifMatch: String? = nil)
      throws -> HTTPResult
    {
      try http(
        method, server.base + path, body: body,
        headers: ifMatch.map { ["If-Match": "\"\($0)\""] } ?? [:])
    }
    func etag(_ name: String) throws -> String {
      let read = try request("GET", "/v1/lists/\(name)")
      #expect(read.status == 200, "\(read)")
      return read.headers["etag"]?.trimmingCharacters(in: ["\""]) ?? ""
    }
    // Each of creating, renaming and deleting an empty list moves the seq on.
    #expect(try request("PUT", "/v1/lists/x").status == 201)
    let created = try etag("x")
    #expect(try request("PATCH", "/v1/lists/x", #"{"name":"y"}"#).status == 200)
    let renamed = try etag("y")
    #expect(Int(renamed) ?? 0 > Int(created) ?? 0, "\(created) → \(renamed)")
    #expect(try request("PATCH", "/v1/lists/y", #"{"name":"x"}"#).status == 200)
    // The name is back, on the same list, but not in the same state: 412.
    let deleted = try request("DELETE", "/v1/lists/x", ifMatch: created)
    #expect(deleted.status == 412, "\(deleted)")
    // Deleted and made again: the old ETag does not pass for the new list.
    let before = try etag("x")
    #expect(try request("DELETE", "/v1/lists/x").status == 204)
    #expect(try request("PUT", "/v1/lists/x").status == 201)
    let after = try etag("x")
    #expect(Int(after) ?? 0 > Int(before) ?? 0, "\(before) → \(after)")
    let stale = try request("DELETE", "/v1/lists/x", ifMatch: before)
    #expect(stale.status == 412, "\(stale)")
    #expect(try request("DELETE", "/v1/lists/x", ifMatch: after).status == 204)
  }
}

/// Names and headers that could hide something: refused with a 400 that says why, never a
/// 500 or an error of the database's own.
@Suite struct HostileNamesTests {
  @Test func listNamesWithControlOrDirectionCharactersAreRefused() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let server = try ServerProcess(location: database.location)
    defer { #expect(server.stop() == 0) }
    for name in ["%00", "a%0Ab", "a%0D%0Ab", "x%E2%80%AEtxt", "tab%09", "%C2%85", "%E2%81%A6x"] {
      let created = try http("PUT", server.base + "/v1/lists/" + name)
      #expect(created.status == 400, "\(name): \(created)")
      #expect(created.body.contains(#""code":"badRequest""#), "\(name): \(created)")
      #expect(!created.body.contains("SQL"), "\(name): \(created)")
    }
    #expect(try http("PUT", server.base + "/v1/lists/ok").status == 201)
    let renamed = try http("PATCH", server.base + "/v1/lists/ok", body: #"{"name":"a\u202Eb"}"#)
    #expect(renamed.status == 400, "\(renamed)")
    // The CLI refuses them the same way, on the file.
    let refused = try liststore(["list", "create", "a\nb"], database: database.location)
    expectFailure(refused, containing: "control character")
    #expect(try http("GET", server.base + "/v1/lists").body.contains(#""name":"ok""#))
  }

  /// A body's keys are the ones its request takes, and the numbers that name ids are
  /// whole and 1 or more: anything else is a 400 that says so, and changes nothing.
  @Test func unknownBodyKeysAndNonWholeIdsAreRefused() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let server = try ServerProcess(location: database.location)
    defer { #expect(server.stop() == 0) }
    let list = server.base + "/v1/lists/x"
    #expect(try http("PUT", list).status == 201)
    let section = try http("POST", list + "/sections", body: #"{"header":"A"}"#)
    #expect(section.status == 201, "\(section)")
    let sectionID = section.body.split(separator: ":")[1].prefix { $0.isNumber }
    let item = try http("POST", list + "/sections/\(sectionID)/items", body: #"{"value":"a"}"#)
    #expect(item.status == 201, "\(item)")
    let itemID = item.body.split(separator: ":")[1].prefix { $0.isNumber }
    let before = try http("GET", list).body
    for (path, method, body, says) in [
      ("/items/\(itemID)", "PATCH", #"{"vaule":"b"}"#, "did you mean 'value'?"),
      ("/items/\(itemID)", "PATCH", #"{"value":"b","colour":1}"#, "; it takes "),
      ("/sections", "POST", #"{"header":"B","heder":"C"}"#, "did you mean 'header'?"),
      ("/items/\(itemID)", "PATCH", #"{"section":1.5}"#, "whole"),
      ("/items/\(itemID)", "PATCH", #"{"section":0}"#, "section"),
    ] {
      let answer = try http(method, list + path, body: body)
      #expect(answer.status == 400, "\(body): \(answer)")
      #expect(answer.body.contains(says), "\(body): \(answer.body)")
    }
    let after = try http("GET", list).body
    #expect(after == before, "a refused request changed the list")
    // A whole number written with a fraction of zero is that number.
    let moved = try http("PATCH", list + "/items/\(itemID)", body: #"{"section":\#(sectionID).0}"#)
    #expect(moved.status == 200, "\(moved)")
  }

  @Test func ifMatchIsDigitsAndATokenHasNoControlCharacters() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["demo"], database: database.location))
    let server = try ServerProcess(location: database.location)
    defer { #expect(server.stop() == 0) }
    for value in ["\"+5\"", "\" 5\"", "\"5 \"", "\"-0\"", "\"0x5\""] {
      let answer = try http(
        "DELETE", server.base + "/v1/lists/demo/items/1", headers: ["If-Match": value])
      #expect(answer.status == 400, "If-Match: \(value): \(answer)")
    }
    // A NUL in a header ends nothing early: the whole head is refused.
    let connection = try RawConnection(port: server.port)
    connection.send("GET /v1/lists HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer A\0B\r\n\r\n")
    #expect(connection.readResponse().hasPrefix("HTTP/1.1 400"))
    #expect(
      try showJSON("demo", location: database.location)?.description.contains("Paris") == true)
  }
}

/// D2 and D8: streams on a large list whose clients never read cost the server a bounded
/// amount each, not the list; a client that reads slowly gets `slowConsumer` before the end.
@Suite(.serialized) struct SlowStreamTests {
  /// The resident memory of a process, in bytes.
  static func residentBytes(of pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }

  @Test func streamsThatNeverReadALargeListCostAWindowEach() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    // A list of about 16 MB.
    let item = String(repeating: "y", count: 1000)
    let lines = (0..<16_000).map { _ in #"{"op":"item add","section":0,"value":"\#(item)"}"# }
    expectSuccess(try liststore(["list", "create", "big"], database: database))
    expectSuccess(try liststore(["section", "add", "big", "all"], database: database))
    expectSuccess(
      try liststore(
        ["batch", "big", "--quiet"], database: database, input: lines.joined(separator: "\n")))
    let server = try ServerProcess(location: database)
    defer { #expect(server.stop() == 0) }
    let pid = server.output.process.processIdentifier
    // A client that reads gets the whole list, in pieces as it takes them.
    let reader = try RawConnection(port: server.port)
    reader.send("GET /v1/lists/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    let whole = reader.readAll()
    #expect(whole.components(separatedBy: item).count == 16_001, "\(whole.count) bytes")
    let before = Self.residentBytes(of: pid)
    // Sixteen streams and sixteen GETs of it, none of them reading past their heads: as
    // many snapshots as the server sends at once.
    var clients: [RawConnection] = []
    for number in 0..<32 {
      let client = try RawConnection(port: server.port, receiveBuffer: 4096)
      client.send(
        "GET /v1/lists/big\(number % 2 == 0 ? "/changes" : "") HTTP/1.1\r\nHost: x\r\n"
          + "Accept: text/event-stream\r\n\r\n")
      #expect(client.readResponse(bodyless: true).hasPrefix("HTTP/1.1 200"))
      clients.append(client)
    }
    // One more is told to come back.
    let busy = try http("GET", server.base + "/v1/lists/big")
    #expect(busy.status == 503 && busy.headers["retry-after"] == "1", "\(busy.status)")
    // The health check is answered, and the server holds about a window (1 MiB) a
    // client and its reader's page cache (2 MB), not the list (16 MB) a client.
    let healthy = try http("GET", server.base + "/healthz")
    #expect(healthy.status == 200)
    let grown = Self.residentBytes(of: pid) - before
    #expect(grown < 200 << 20, "the server grew by \(grown >> 20) MB for 32 clients")
    clients.removeAll()
  }

  /// A 1,000,000-item list read through a client that takes 1 MB a second: the whole
  /// list arrives, and the server holds a window of it, not the list.
  @Test func aMillionItemListReadAtAMegabyteASecondCostsAWindow() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let count = 1_000_000
    do {
      let repository = try database.openRepository()
      let list = try repository.createList("big", metadata: String.self, item: Int.self)
      try list.appendSection("all")
      try list.appendItems(Array(0..<count), toSection: 0)
    }
    let server = try ServerProcess(location: database.location)
    defer { #expect(server.stop() == 0) }
    let pid = server.output.process.processIdentifier
    #expect(try http("GET", server.base + "/healthz").status == 200)
    let before = Self.peakBytes(of: pid)
    // A receive buffer that holds what one read takes (Linux doubles the figure).
    let reader = try RawConnection(port: server.port, receiveBuffer: 32768)
    reader.send("GET /v1/lists/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    // At most 50 KB every 50 ms: a megabyte a second.
    let read = reader.readAll(atMost: 50_000, every: .milliseconds(50))
    let grown = Self.peakBytes(of: pid) - before
    let body = Array(read.utf8)
    let marker = Array(#""value":"#.utf8)
    var values = 0
    var index = body.startIndex
    while index + marker.count <= body.count {
      if body[index] == marker[0] && body[index..<index + marker.count].elementsEqual(marker) {
        values += 1
        index += marker.count
      } else {
        index += 1
      }
    }
    #expect(read.hasPrefix("HTTP/1.1 200"), "\(read.prefix(200))")
    #expect(values == count, "\(values) items of \(count) in \(body.count) bytes")
    #expect(read.hasSuffix("0\r\n\r\n"), "\(read.suffix(100).debugDescription)")
    // About a window (1 MiB) and the reader's page cache, not the list (some 30 MB).
    #expect(grown < 16 << 20, "the server's peak grew by \(grown >> 20) MB for one slow reader")
    #expect(body.count > 24 << 20)
  }

  /// The peak resident memory of a process, in bytes.
  static func peakBytes(of pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }
}
