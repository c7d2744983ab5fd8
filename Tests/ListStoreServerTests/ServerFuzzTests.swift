import Foundation
import ListStore
import TestSupport
import Testing

/// Random requests, well-formed and not, sent to a real server over raw connections:
/// it answers each with a documented status (or drops a request it cannot read), never
/// fails inside, and the database it writes stays whole.
@Suite(.serialized) struct ServerFuzzTests {
  typealias Served = ServerTests.Served

  /// One random request's bytes.
  static func request(_ random: inout SeededGenerator) -> String {
    func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &random)] }
    let method = pick(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW", "get"])
    let id = pick([
      "1", "2", "3", "4", "0", "-1", "99999", "x", "%", "%zz", "1e3", "9223372036854775808",
    ])
    let name = pick(["demo", "other", "de%20mo", "%E2%82%AC", "%ff", "", "a/b", "..", "demo%00"])
    let path = pick([
      "/v1/lists", "/v1/lists/\(name)", "/v1/lists/\(name)/batch", "/v1/lists/\(name)/contents",
      "/v1/lists/\(name)/sections", "/v1/lists/\(name)/sections/\(id)",
      "/v1/lists/\(name)/sections/\(id)/items", "/v1/lists/\(name)/items/\(id)",
      "/v1/lists/\(name)/changes?after=\(id)&wait=0", "/healthz", "/metrics", "/", "//", "*",
      "/v1/lists/\(name)/items/\(id)?at=\(id)", "/v1/lists/\(name)/sections?before=\(id)",
    ])
    let body = pick([
      "", "{}", "[]", "{\"value\":\"x\"}", "{\"value\":", "{\"header\":\"h\",\"footer\":null}",
      "{\"section\":\(id),\"at\":\(id)}", "[{\"op\":\"item add\",\"section\":0,\"value\":1}]",
      "[{\"op\":\"item rm\",\"item\":\"#\(id)\"}]", "{\"op\":\"item add\"}\n{\"op\":",
      "{\"sections\":[{\"header\":\"h\",\"items\":[{\"value\":\(id)}]}]}", "\u{00}\u{ff}\u{01}",
      String(repeating: "[", count: 3000), "{\"value\":\"\u{D7FF}\u{E000}\"}",
    ])
    var headers = ["Host: fuzz", "Connection: close"]
    headers.append(
      pick([
        "Content-Type: application/json", "Content-Type: application/x-ndjson",
        "Content-Type: text/plain", "Content-Type: ", "Accept: text/event-stream", "X: y",
      ]))
    if Bool.random(using: &random) {
      headers.append("If-Match: " + pick(["\"1\"", "*", "W/\"x\"", "\"\""]))
    }
    var framed = ""
    switch Int.random(in: 0..<6, using: &random) {
    case 0, 1:
      headers.append("Content-Length: \(body.utf8.count)")
      framed = body
    case 2:  // A length that lies.
      headers.append("Content-Length: \(pick([0, 1, body.utf8.count + 5, -3]))")
      framed = body
    case 3:  // Chunked, whole or cut off.
      headers.append("Transfer-Encoding: chunked")
      let hex = String(body.utf8.count, radix: 16)
      framed = pick([
        "\(hex)\r\n\(body)\r\n0\r\n\r\n", "\(hex)\r\n\(body.prefix(2))", "zz\r\n\(body)\r\n",
        "\(hex)\r\n\(body)\r\n",
      ])
    case 4:  // No framing at all.
      framed = body
    default:  // Garbage in the head.
      headers.append(pick(["Bad header line", "Content-Length: 1, 2", ": empty name", "X:\u{01}"]))
      framed = body
    }
    let version = pick(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/9", ""])
    return "\(method) \(path) \(version)\r\n" + headers.joined(separator: "\r\n") + "\r\n\r\n"
      + framed
  }

  @Test func randomRequestsGetDocumentedAnswersAndLeaveTheDatabaseWhole() throws {
    let served = try Served(.sqlite, arguments: ["--max-body", "2000"])
    defer { served.finish() }
    expectSuccess(try liststore(["list", "create", "other"], database: served.database.location))
    let seed = testSeed(0x5EED_F022)
    var random = SeededGenerator(seed: seed)
    let documented: Set<Int> = [
      200, 201, 204, 400, 401, 403, 404, 405, 409, 411, 412, 413, 415, 417, 422, 431, 501, 503,
      505,
    ]
    var statuses: [Int: Int] = [:]
    for number in 0..<2000 {
      let text = Self.request(&random)
      let connection = try RawConnection(port: served.server.port)
      connection.send(text)
      connection.finishSending()
      let answer = connection.readAll()
      if answer.isEmpty { continue }  // dropped: a request it could not read
      let status = Int(answer.split(separator: " ").dropFirst().first ?? "") ?? -1
      statuses[status, default: 0] += 1
      let context =
        "seed \(seed), request \(number): \(text.debugDescription) → \(answer.prefix(400))"
      #expect(documented.contains(status), "\(context)")
      // Every error carries the contract's body, but for HEAD, which gets the head alone.
      if status >= 400 {
        #expect(answer.contains("\"code\":") != text.hasPrefix("HEAD "), "\(context)")
      }
      if status == 500 { break }
    }
    #expect(statuses[200, default: 0] > 0 && statuses[400, default: 0] > 0, "\(statuses)")
    #expect(try served.request("GET", "/healthz").status == 200)
    expectSuccess(try liststore(["check", "--quiet"], database: served.database.location))
  }

  @Test func aServerKilledMidBatchKeepsAllOrNothingOfIt() throws {
    let served = try Served(.sqlite)
    let before = try served.shown()
    let body =
      "["
      + (0..<200_000).map { "{\"op\":\"item add\",\"section\":0,\"value\":\($0)}" }
      .joined(separator: ",") + "]"
    let file = served.database.folder.file("batch.json")
    try body.write(toFile: file, atomically: true, encoding: .utf8)
    let client = try WatchProcess([
      "/usr/bin/env", "curl", "-s", "--max-time", "120", "-H", "Content-Type: application/json",
      "--data-binary", "@" + file, served.url("/v1/lists/demo/batch"),
    ])
    // Killed once the server is inside the batch: when its write transaction holds the
    // database (a reader sees the writer's lock as busy, or the batch is already done).
    let observer = try served.database.openRepository(busyTimeout: .zero)
    let demo = try observer.list("demo", metadata: RawJSON.self, item: RawJSON.self)
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
      let locked = (try? observer.write { _ = try observer.changeLogPosition() }) == nil
      if locked || (try? demo.numberOfItems(inSection: 0)) ?? 0 > 3 { break }
    }
    served.server.output.stop(signal: SIGKILL)
    client.waitForExit()
    let after = try #require(try served.shown())
    let items = (after["sections"] as? [[String: Any]])?.first?["items"] as? [[String: Any]]
    #expect(after == before || items?.count == 200_003, "all or nothing: \(items?.count ?? -1)")
    expectSuccess(try liststore(["check", "--quiet"], database: served.database.location))
    served.database.remove()
  }
}
