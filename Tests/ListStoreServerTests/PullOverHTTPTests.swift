import Dispatch
import Foundation
import ListStore
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// `GET /v1/changes` (docs/replicas.md) over HTTP, on both engines: a reset with every row
/// of the lists a token may read, a long poll answered by another client's commit (on
/// PostgreSQL, by a push to another server), the rows of lists outside the token's scope
/// never sent, and a list deleted sent as its deletion.
@Suite struct PullOverHTTPTests {
  static let tokens = """
    W write *
    G read groceries
    """

  func get(_ server: ServerProcess, _ query: String, token: String = "G") throws -> HTTPResult {
    try http(
      "GET", server.base + "/v1/changes" + query, headers: ["Authorization": "Bearer \(token)"])
  }

  func rows(_ answer: HTTPResult) -> [[String: Any]] {
    answer.object?["rows"] as? [[String: Any]] ?? []
  }

  /// Runs `body` on another thread; `wait()` gives its result.
  final class Background<Value: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var value: Result<Value, any Error>?

    init(_ body: @escaping @Sendable () throws -> Value) {
      Thread.detachNewThread { [self] in
        value = Result { try body() }
        done.signal()
      }
    }

    func wait() throws -> Value {
      done.wait()
      guard let value else { throw CancellationError() }
      return try value.get()
    }
  }

  func pullsFollowTheScopeAndWakeOnCommits(
    _ pulling: ServerProcess, writing: ServerProcess, location: String
  ) throws {
    let reset = try get(pulling, "")
    #expect(reset.status == 200 && reset.object?["reset"] as? Bool == true, "\(reset)")
    let lists = Set(rows(reset).compactMap { $0["list"] as? Int })
    #expect(lists.count == 1, "only groceries: \(reset)")
    let groceries = try #require(lists.first)
    let names = rows(reset).compactMap { $0["name"] as? String }
    #expect(names == ["groceries"])
    #expect(rows(reset).contains { $0["item"] != nil && $0["position"] is String })
    let seq = try #require(reset.object?["seq"] as? Int)
    // Nothing after it: an empty answer once the wait is over.
    let quiet = try get(pulling, "?lists=\(groceries)&after=\(seq)&wait=0")
    #expect(quiet.status == 200 && rows(quiet).isEmpty && quiet.object?["seq"] as? Int == seq)
    // A poll waits; another client's commit answers it.
    let poll = Background { try self.get(pulling, "?lists=\(groceries)&after=\(seq)&wait=60") }
    expectSuccess(try liststore(["item", "add", "groceries", "0", "figs"], database: location))
    let woken = try poll.wait()
    #expect(woken.status == 200 && woken.object?["reset"] as? Bool == false, "\(woken)")
    #expect(rows(woken).count == 1 && rows(woken).first?["value"] as? String == "figs", "\(woken)")
    let next = try #require(woken.object?["seq"] as? Int)
    // Another list's change is not sent to a token that may not read it.
    let other = Background { try self.get(pulling, "?after=\(next)&wait=2") }
    expectSuccess(try liststore(["item", "add", "other", "0", "secret"], database: location))
    let hidden = try other.wait()
    #expect(hidden.status == 200 && rows(hidden).isEmpty, "\(hidden)")
    // A push to the writing server wakes a poll of the pulling one.
    let replica = try #require(
      try http("POST", writing.base + "/v1/replicas", headers: ["Authorization": "Bearer W"])
        .object?["replica"] as? Int)
    let section = try #require(
      rows(reset).first { $0["section"] != nil && $0["item"] == nil }?["section"] as? Int)
    let pushed = Background { try self.get(pulling, "?lists=\(groceries)&after=\(next)&wait=60") }
    let push = try http(
      "POST", writing.base + "/v1/push",
      body:
        #"{"replica":\#(replica),"writes":[{"n":1,"digest":"d","ops":[{"op":"item.insert","list":\#(groceries),"section":\#(section),"id":\#(replica << 40 + 1),"value":"kiwi","after":null}]}]}"#,
      headers: ["Authorization": "Bearer W"])
    #expect(push.status == 200, "\(push)")
    let kiwi = try pushed.wait()
    #expect(rows(kiwi).first?["item"] as? Int == replica << 40 + 1, "\(kiwi)")
    // The list deleted: its deletion.
    let last = try #require(kiwi.object?["seq"] as? Int)
    let deleted = Background { try self.get(pulling, "?lists=\(groceries)&after=\(last)&wait=60") }
    expectSuccess(try liststore(["list", "rm", "groceries"], database: location))
    let gone = try deleted.wait()
    #expect(
      rows(gone).count == 1 && rows(gone).first?["deleted"] as? Bool == true
        && rows(gone).first?["list"] as? Int == groceries, "\(gone)")
    for query in ["?lists=x", "?lists=", "?after=-1", "?wait=301", "?lists=0"] {
      let bad = try get(pulling, query)
      #expect(
        bad.status == 400 && bad.object?["code"] as? String == "badRequest", "\(query): \(bad)")
    }
  }

  func tokensFile() throws -> (TemporaryDirectory, String) {
    let folder = TemporaryDirectory()
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    return (folder, folder.file("tokens"))
  }

  @Test func theLogIsKeptForTheDaysServeIsTold() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo"], database: database))
    for bad in ["x", "-1", "40000"] {
      let refused = try liststore(["serve", "--retain-days", bad], database: database)
      #expect(refused.status == 64 && refused.stderr.contains("--retain-days"), "\(refused)")
    }
    let seconds = { try Repository(path: database).changeLogRetention() }
    let server = try ServerProcess(location: database, arguments: ["--retain-days", "0.5"])
    #expect(try http("GET", server.base + "/healthz").status == 200)
    #expect(server.stop() == 0)
    #expect(try seconds() == 43_200)
    let byDefault = try ServerProcess(location: database)
    #expect(try http("GET", byDefault.base + "/healthz").status == 200)
    #expect(byDefault.stop() == 0)
    #expect(try seconds() == 30 * 86_400)
  }

  @Test func onSQLite() throws {
    let (folder, tokens) = try tokensFile()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    for name in ["groceries", "other"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database))
    }
    let server = try ServerProcess(location: database, arguments: ["--tokens", tokens])
    defer { server.stop() }
    try pullsFollowTheScopeAndWakeOnCommits(server, writing: server, location: database)
  }

  @Test(.postgres) func onPostgreSQLPullingFromOneServerAndPushingToAnother() throws {
    let (folder, tokens) = try tokensFile()
    defer { folder.remove() }
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    for name in ["groceries", "other"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database.location))
    }
    let servers = try (0..<2).map { _ in
      try ServerProcess(location: database.location, arguments: ["--tokens", tokens])
    }
    defer { for server in servers { server.stop() } }
    try pullsFollowTheScopeAndWakeOnCommits(
      servers[0], writing: servers[1], location: database.location)
  }
}
