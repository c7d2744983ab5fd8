import FoundationEssentials
import ListStore
import ListStoreFormats

/// One route of the API under `/v1`: its path, and for each method what the request's
/// token must allow and what answers it. The table is the router: requests are matched
/// against it, `405` lists its methods, and the tests walk it against every kind of token.
struct Route: Sendable {
  /// What a request must be allowed to do.
  enum Need: Sendable, Equatable {
    /// Nothing: anyone may ask (the API's description).
    case nothing
    /// A token the server knows (any, when it has tokens).
    case token
    /// Reading the list of the path (outside its read scope, the list is missing: 404).
    case read
    /// Changing the list of the path (outside its read scope, 404; inside, 403).
    case write
    /// Making a list of the path's name, or changing one (403 outside its write scope,
    /// whether or not the list exists, so that names outside its scope do not leak).
    case create
    /// Every list: `*` in the token's read scope.
    case everything
    /// Writing some list: a write scope that is not empty (a replica's registration).
    case someWrite
  }

  /// What a handler gets: the request, its exchange, the path's `*` segments, and what
  /// the token may do.
  struct Call {
    let request: HTTPRequest
    let exchange: HTTPExchange
    let captured: [String]
    let grant: Tokens.Grant
    /// The list the path names (its first `*`).
    var name: String { captured.first ?? "" }
  }

  typealias Handler = @Sendable (ListServer, Call) throws -> HTTPResponse?

  /// Segments after `v1`; `*` matches any one.
  let pattern: [String]
  let methods: [(method: String, need: Need, handle: Handler)]

  /// The `*` segments of `path` when it matches.
  func match(_ path: [String]) -> [String]? {
    guard path.count == pattern.count else { return nil }
    var captured: [String] = []
    for (segment, expected) in zip(path, pattern) {
      if expected == "*" {
        captured.append(segment)
      } else if segment != expected {
        return nil
      }
    }
    return captured
  }

  /// The `Allow` header's value.
  var allow: String { methods.map(\.method).joined(separator: ", ") }
}

extension ListServer {
  /// The API's routes, in the order they are tried.
  static let routes: [Route] = [
    Route(
      pattern: ["openapi.json"],
      methods: [
        (
          "GET", .nothing,
          { _, _ in
            HTTPResponse(
              status: 200, headers: [("Content-Type", "application/json; charset=utf-8")],
              body: Array(OpenAPIDocument.text.utf8))
          }
        )
      ]),
    Route(
      pattern: ["permissions"],
      methods: [("GET", .token, { _, call in ListServer.permissions(call.grant) })]),
    Route(
      pattern: ["lists"],
      methods: [
        (
          "GET", .token,
          { server, call in
            let lists = try server.readers.withReader { try $0.lists() }
              .filter { call.grant.mayRead($0.name) }
            return .json(200, "{\"lists\":" + Rendering.json(lists: lists) + "}")
          }
        )
      ]),
    Route(
      pattern: ["replicas"],
      methods: [
        (
          "POST", .someWrite,
          { server, call in try server.registerReplica(call.request) }
        )
      ]),
    Route(
      pattern: ["changes"],
      methods: [
        (
          "GET", .token,
          { server, call in try server.pullChanges(call.request, call.exchange, grant: call.grant) }
        )
      ]),
    Route(
      pattern: ["push"],
      methods: [
        (
          "POST", .someWrite,
          { server, call in try server.push(call.request, grant: call.grant) }
        )
      ]),
    Route(
      pattern: ["lists", "*"],
      methods: [
        (
          "GET", .read,
          { server, call in try server.snapshot(call.name, call.request, call.exchange) }
        ),
        ("PUT", .create, { server, call in try server.createList(call.name, call.request) }),
        (
          "PATCH", .write,
          { server, call in try server.renameList(call.name, call.request, grant: call.grant) }
        ),
        (
          "DELETE", .write,
          { server, call in
            let list = try server.list(call.name)
            _ = try server.written(call.request, list) {
              try server.repository.deleteList(call.name)
            }
            return HTTPResponse(status: 204)
          }
        ),
      ]),
    Route(
      pattern: ["lists", "*", "batch"],
      methods: [("POST", .write, { server, call in try server.batch(call.name, call.request) })]),
    Route(
      pattern: ["lists", "*", "contents"],
      methods: [
        ("PUT", .create, { server, call in try server.replaceContents(call.name, call.request) })
      ]),
    Route(
      pattern: ["lists", "*", "changes"],
      methods: [
        (
          "GET", .read,
          { server, call in try server.changes(call.name, call.request, call.exchange) }
        )
      ]),
    Route(
      pattern: ["lists", "*", "sections"],
      methods: [
        ("POST", .write, { server, call in try server.addSection(call.name, call.request) })
      ]
    ),
    Route(
      pattern: ["lists", "*", "items"],
      methods: [
        (
          "POST", .write,
          { server, call in try server.addItem(call.name, section: nil, call.request) }
        )
      ]),
    Route(
      pattern: ["lists", "*", "sections", "*", "items"],
      methods: [
        (
          "POST", .write,
          { server, call in
            try server.addItem(
              call.name, section: try server.id(call.captured[1], "section"), call.request)
          }
        )
      ]),
    Route(
      pattern: ["lists", "*", "items", "*"],
      methods: [
        (
          "PATCH", .write,
          { server, call in
            try server.changeItem(
              call.name, id: try server.id(call.captured[1], "item"), call.request)
          }
        ),
        (
          "DELETE", .write,
          { server, call in
            let id = try server.id(call.captured[1], "item")
            let list = try server.list(call.name)
            let seq = try server.written(call.request, list) { try list.removeItem(id: id) }.seq
            return .json(200, "{\"seq\":\(seq)}")
          }
        ),
      ]),
    Route(
      pattern: ["lists", "*", "sections", "*"],
      methods: [
        (
          "PATCH", .write,
          { server, call in
            try server.changeSection(
              call.name, id: try server.id(call.captured[1], "section"), call.request)
          }
        ),
        (
          "DELETE", .write,
          { server, call in
            let id = try server.id(call.captured[1], "section")
            let list = try server.list(call.name)
            let seq = try server.written(call.request, list) { try list.removeSection(id: id) }
              .seq
            return .json(200, "{\"seq\":\(seq)}")
          }
        ),
      ]),
  ]

  /// Answers `request`, or returns `nil` when it became a stream, a held long poll or a
  /// snapshot being sent.
  func route(_ request: HTTPRequest, _ exchange: HTTPExchange) throws -> HTTPResponse? {
    guard let path = request.segments else {
      throw APIFailure(400, "badRequest", "the path is not valid percent-encoded UTF-8")
    }
    if path == ["healthz"] || path == ["metrics"], request.method != "GET",
      request.method != "HEAD"
    {
      throw Self.notAllowed(request, allow: "GET")
    }
    if path == ["healthz"] { return health() }
    if path.isEmpty || (path.count == 2 && path[0] == "lists") {
      return try livePage(request)
    }
    if path == ["metrics"] {
      let grant = try authorize(request)
      guard grant.read == .all else {
        throw APIFailure(403, "forbidden", "/metrics needs a token whose scope is every list (*)")
      }
      return try metrics(request)
    }
    guard path.first == "v1" else {
      throw APIFailure(404, "notFound", "no such resource: \(request.path)")
    }
    let rest = Array(path.dropFirst())
    for route in Self.routes {
      guard let captured = route.match(rest) else { continue }
      let method = request.method == "HEAD" ? "GET" : request.method
      let entry = route.methods.first(where: { $0.method == method })
      let grant = entry?.need == .nothing ? .everything : try authorize(request)
      guard let entry else { throw Self.notAllowed(request, allow: route.allow) }
      let call = Route.Call(request: request, exchange: exchange, captured: captured, grant: grant)
      try Self.check(entry.need, name: call.name, grant: grant)
      return try entry.handle(self, call)
    }
    _ = try authorize(request)
    throw APIFailure(404, "notFound", "no such resource: \(request.path)")
  }

  /// Refuses a call its token does not allow: a list outside its read scope answers as a
  /// missing one.
  static func check(_ need: Route.Need, name: String, grant: Tokens.Grant) throws {
    switch need {
    case .nothing, .token:
      return
    case .read:
      guard grant.mayRead(name) else { throw ListStoreError.listNotFound(name: name) }
    case .write:
      guard grant.mayRead(name) else { throw ListStoreError.listNotFound(name: name) }
      try requireWrite(name, grant)
    case .create:
      try requireWrite(name, grant)
    case .everything:
      guard grant.read == .all else {
        throw APIFailure(403, "forbidden", "this needs a token whose scope is every list (*)")
      }
    case .someWrite:
      guard !grant.write.isEmpty else {
        throw APIFailure(
          403, "forbidden",
          "registering a replica and pushing need a token that may write; a read-only token "
            + "makes a read-only replica, which never registers nor pushes")
      }
    }
  }

  /// Refuses a write to the list `name` outside the token's write scope.
  static func requireWrite(_ name: String, _ grant: Tokens.Grant) throws {
    guard grant.mayWrite(name) else {
      throw APIFailure(
        403, "forbidden",
        grant.write.isEmpty
          ? "this token may read but not write: writing needs a token of a 'TOKEN write' line"
          : "this token may not make or change a list named \(quoted(name)): its 'write' line "
            + "in the tokens file does not name it")
    }
  }
}
