import Foundation
import TestSupport
import Testing

@testable import ListStoreServer

/// Tokens limited to some lists, walked against the router's own table: every route, with
/// every kind of token, answers as the scope says — and a route the table gains without a
/// row here fails the test.
@Suite(.serialized) struct ScopedTokenTests {
  /// What each route of the table requires: one row per route and method.
  static let expected: [String: Route.Need] = [
    "GET openapi.json": .nothing,
    "GET permissions": .token,
    "POST replicas": .someWrite,
    "POST push": .someWrite,
    "GET changes": .token,
    "GET lists": .token,
    "GET lists/*": .read,
    "PUT lists/*": .create,
    "PATCH lists/*": .write,
    "DELETE lists/*": .write,
    "POST lists/*/batch": .write,
    "PUT lists/*/contents": .create,
    "GET lists/*/changes": .read,
    "POST lists/*/sections": .write,
    "POST lists/*/items": .write,
    "POST lists/*/sections/*/items": .write,
    "PATCH lists/*/items/*": .write,
    "DELETE lists/*/items/*": .write,
    "PATCH lists/*/sections/*": .write,
    "DELETE lists/*/sections/*": .write,
  ]

  static let tokens = """
    ALL write *
    READALL read *
    RG read groceries
    WG write groceries
    # A token on two lines has both.
    RGWT read groceries
    RGWT write todo
    """

  @Test func everyRouteHasARow() {
    let routes = Set(
      ListServer.routes.flatMap { route in
        route.methods.map { "\($0.method) " + route.pattern.joined(separator: "/") }
      })
    #expect(routes == Set(Self.expected.keys), "routes without a row, or rows without a route")
    for route in ListServer.routes {
      for method in route.methods {
        let key = "\(method.method) " + route.pattern.joined(separator: "/")
        #expect(method.need == Self.expected[key], "\(key)")
      }
    }
  }

  /// One kind of token, on one list: what the route's need makes of it.
  enum Outcome: Equatable {
    case unauthorized  // 401
    case missing  // 404, the list "not found"
    case forbidden  // 403
    case allowed  // anything the handler answers
  }

  static func outcome(need: Route.Need, token: String?, list: String) -> Outcome {
    let grants: [String: (read: Set<String>?, write: Set<String>?)] = [
      "ALL": (nil, nil), "READALL": (nil, []), "RG": (["groceries"], []),
      "WG": (["groceries"], ["groceries"]), "RGWT": (["groceries", "todo"], ["todo"]),
    ]
    if need == .nothing { return .allowed }
    guard let token, let grant = grants[token] else { return .unauthorized }
    let mayRead = grant.read.map { $0.contains(list) } ?? true
    let mayWrite = grant.write.map { $0.contains(list) } ?? true
    switch need {
    case .nothing: return .allowed
    case .token: return .allowed
    case .read: return mayRead ? .allowed : .missing
    case .write: return !mayRead ? .missing : mayWrite ? .allowed : .forbidden
    case .create: return mayWrite ? .allowed : .forbidden
    case .everything: return grant.read == nil ? .allowed : .forbidden
    case .someWrite: return grant.write != [] ? .allowed : .forbidden
    }
  }

  @Test func everyRouteAnswersEveryTokenAsItsScopeSays() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    for name in ["groceries", "todo", "secret"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database))
    }
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let server = try ServerProcess(
      location: database, arguments: ["--tokens", folder.file("tokens")])
    defer { #expect(server.stop() == 0) }
    let before = try liststore(["export", "secret"], database: database).stdout
    var checked = 0
    for route in ListServer.routes {
      for entry in route.methods {
        for list in ["groceries", "todo", "secret"] {
          for token in [nil, "NOPE", "ALL", "READALL", "RG", "WG", "RGWT"] {
            let path =
              "/v1/"
              + route.pattern.enumerated().map { index, segment in
                segment == "*" ? (index == 1 ? list : "1") : segment
              }.joined(separator: "/")
            var headers = ["If-Match": "\"0\""]  // An allowed write changes nothing: 412.
            if let token { headers["Authorization"] = "Bearer \(token)" }
            let body = entry.method == "GET" || entry.method == "DELETE" ? nil : "{}"
            let answer = try http(
              entry.method, server.base + path + (entry.method == "GET" ? "?wait=0&after=0" : ""),
              body: body, headers: headers)
            let seen: Outcome
            switch answer.status {
            case 401: seen = .unauthorized
            case 403 where answer.body.contains("\"forbidden\""): seen = .forbidden
            case 404 where answer.body.contains("\"listNotFound\""): seen = .missing
            default: seen = .allowed
            }
            let expected = Self.outcome(need: entry.need, token: token, list: list)
            #expect(
              seen == expected,
              "\(entry.method) \(path) with \(token ?? "no token"): \(answer.status) \(answer.body.prefix(200))"
            )
            checked += 1
          }
        }
      }
    }
    #expect(checked == Self.expected.count * 3 * 7)
    // Nothing of the list outside every limited scope changed.
    #expect(try liststore(["export", "secret"], database: database).stdout == before)
  }

  @Test func theListsAndThePermissionsFollowTheScope() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    for name in ["groceries", "todo", "secret"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database))
    }
    try Data(Self.tokens.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let server = try ServerProcess(
      location: database, arguments: ["--tokens", folder.file("tokens")])
    defer { #expect(server.stop() == 0) }
    func get(_ path: String, _ token: String) throws -> HTTPResult {
      try http("GET", server.base + path, headers: ["Authorization": "Bearer \(token)"])
    }
    let names = { (token: String) throws -> [String] in
      let lists = try get("/v1/lists", token).object?["lists"] as? [[String: Any]] ?? []
      return lists.compactMap { $0["name"] as? String }
    }
    #expect(try names("ALL") == ["groceries", "secret", "todo"])
    #expect(try names("RG") == ["groceries"])
    #expect(try names("RGWT") == ["groceries", "todo"])
    #expect(
      try get("/v1/permissions", "RGWT").body
        == #"{"read":true,"write":true,"readLists":["groceries","todo"],"writeLists":["todo"]}"#)
    #expect(
      try get("/v1/permissions", "ALL").body
        == #"{"read":true,"write":true,"readLists":"*","writeLists":"*"}"#)
    // /metrics needs every list.
    #expect(try get("/metrics", "RG").status == 403)
    #expect(try get("/metrics", "READALL").status == 200)
    // Renaming needs both names in the write scope.
    let renamed = try http(
      "PATCH", server.base + "/v1/lists/todo", body: #"{"name":"secret2"}"#,
      headers: ["Authorization": "Bearer RGWT"])
    #expect(renamed.status == 403, "\(renamed)")
    // The live page of a list outside the scope is a missing one's.
    let page = try http(
      "GET", server.base + "/lists/secret", headers: ["Cookie": "liststore_token=RG"])
    #expect(page.status == 404)
  }

  @Test func sighupReadsTheTokensAgainAndEndsTheStreamsOfRemovedTokens() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo"], database: database))
    let file = folder.file("tokens")
    try Data("OLD read *\nKEEP read *\n".utf8).write(to: URL(fileURLWithPath: file))
    let server = try ServerProcess(location: database, arguments: ["--tokens", file])
    defer { #expect(server.stop() == 0) }
    let old = try EventStreamClient(
      server.base + "/v1/lists/demo/changes", headers: ["Authorization": "Bearer OLD"])
    defer { old.stop() }
    let kept = try EventStreamClient(
      server.base + "/v1/lists/demo/changes", headers: ["Authorization": "Bearer KEEP"])
    defer { kept.stop() }
    #expect(old.wait { $0.first?.event == "snapshot" })
    #expect(kept.wait { $0.first?.event == "snapshot" })
    try Data("KEEP read *\nNEW write demo\n".utf8).write(to: URL(fileURLWithPath: file))
    kill(server.output.process.processIdentifier, SIGHUP)
    #expect(
      server.output.wait { _, errors in errors.contains { $0.contains("read \(file) again") } })
    #expect(
      old.wait { $0.last?.event == "error" && $0.last?.data.contains("unauthorized") == true })
    let refused = try http(
      "GET", server.base + "/v1/lists", headers: ["Authorization": "Bearer OLD"])
    #expect(refused.status == 401)
    let added = try http(
      "POST", server.base + "/v1/lists/demo/sections/1/items", body: #"{"value":"new"}"#,
      headers: ["Authorization": "Bearer NEW"])
    #expect(added.status == 201, "\(added)")
    #expect(kept.wait { $0.contains { $0.event == "changes" && $0.data.contains("new") } })
    // A malformed file leaves the tokens in force.
    try Data("KEEP sometimes\n".utf8).write(to: URL(fileURLWithPath: file))
    kill(server.output.process.processIdentifier, SIGHUP)
    #expect(
      server.output.wait { _, errors in errors.contains { $0.contains("the tokens in force stay") }
      })
    #expect(
      try http("GET", server.base + "/v1/lists", headers: ["Authorization": "Bearer NEW"]).status
        == 200)
  }
}
