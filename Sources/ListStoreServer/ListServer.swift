import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

/// `liststore serve`: the HTTP API and change streams of one repository
/// (docs/http.md). Requests are read and answered by libevent's HTTP server on one loop
/// thread; the database work runs on a pool of worker threads; each watched list is
/// observed once (``ListFeed``) and its changes are encoded once for all its clients.
public final class ListServer: @unchecked Sendable {
  /// Where and how to serve.
  public struct Configuration: Sendable {
    /// The address to listen on (`127.0.0.1` by default).
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one (see ``ListServer/port``).
    public var port = 8040
    /// The bearer tokens; `nil` serves everyone.
    public var tokens: Tokens?
    /// Bounds on bodies, streams and retained changes.
    public var limits = ServerLimits()
    /// The certificate and key to serve HTTPS with; `nil` serves plain HTTP.
    public var tls: TLSFiles?

    /// The contract's defaults: loopback, port 8040, no tokens.
    public init() {}
  }

  let repository: Repository
  let configuration: Configuration
  private let http: HTTPServer
  /// The server's way to this object, cut when it stops (else the two would keep each
  /// other alive).
  private let router = Locked<ListServer?>(nil)
  let work = DispatchQueue(label: "liststore.server.work", attributes: .concurrent)
  /// Requests that may write, one at a time: the repository writes one transaction at a
  /// time anyway, and one thread running them back to back hands no lock from thread to
  /// thread (a wake-up each) between them.
  let writes = DispatchQueue(label: "liststore.server.writes")
  private let feeds = Locked<[String: ListFeed]>([:])
  /// Held while a feed is made, so that one list gets one feed.
  private let feedCreation = Locked<Void>(())
  /// Open streams and long polls, touched on the loop's thread only.
  var streams: [ObjectIdentifier: ChangeStream] = [:]
  private let inFlight = DispatchGroup()
  private let stopping = Locked(false)
  /// The database's position when the feeds were first seen behind it, and when.
  private let lagSince = Locked<(target: Int64, since: ContinuousClock.Instant)?>(nil)

  /// Binds the address; ``run()`` serves.
  /// - Throws: ``ServerError`` when libevent is missing or the address cannot be bound.
  public init(repository: Repository, configuration: Configuration) throws(ServerError) {
    self.repository = repository
    self.configuration = configuration
    // The server's handler reaches this object once it is made.
    let router = self.router
    http = try HTTPServer(
      host: configuration.host, port: configuration.port, maxBody: configuration.limits.maxBody,
      tls: configuration.tls
    ) { request, exchange in
      router.withLock { $0 }?.accept(request, exchange)
    }
    router.withLock { $0 = self }
    http.loop.onTick = { router.withLock { $0 }?.tick() }
  }

  /// The port the server listens on.
  public var port: Int { http.port }

  /// Serves on the calling thread until ``stop()``.
  public func run() {
    http.run()
    router.withLock { $0 = nil }
  }

  /// Stops: refuses new requests, lets the writes under way finish (or roll back),
  /// ends every stream, and makes ``run()`` return.
  public func stop() {
    stopping.withLock { $0 = true }
    inFlight.wait()
    // Every stream and poll ends, and its connection closes once it has sent the rest
    // (within a bound, for clients that do not read).
    let drained = DispatchSemaphore(value: 0)
    http.loop.execute { [self] in
      let open = Array(streams.values)
      streams = [:]
      var pending = open.count
      if pending == 0 { drained.signal() }
      for stream in open {
        stream.close {
          pending -= 1
          if pending == 0 { drained.signal() }
        }
      }
    }
    _ = drained.wait(timeout: .now() + .seconds(5))
    http.stop()
  }

  // MARK: - Requests

  private func accept(_ request: HTTPRequest, _ exchange: HTTPExchange) {
    if stopping.withLock({ $0 }) {
      exchange.sendNow(.error(503, "stopping", "the server is stopping; try again shortly"))
      return
    }
    inFlight.enter()
    let queue = request.method == "GET" || request.method == "HEAD" ? work : writes
    queue.async { [self] in
      defer { inFlight.leave() }
      let response: HTTPResponse?
      do {
        response = try route(request, exchange)
      } catch let failure as APIFailure {
        response = failure.response
      } catch let error as ListStoreError {
        response = Self.response(for: error)
      } catch {
        response = .error(500, "internal", "\(error)")
      }
      if let response { exchange.respond(response) }
    }
  }

  /// Answers `request`, or returns `nil` when it became a stream or a held long poll.
  private func route(_ request: HTTPRequest, _ exchange: HTTPExchange) throws -> HTTPResponse? {
    guard let path = request.segments else {
      throw APIFailure(400, "badRequest", "the path is not valid percent-encoded UTF-8")
    }
    if path == ["healthz"] { return health() }
    if path.isEmpty || (path.count == 2 && path[0] == "lists") {
      return try livePage(request)
    }
    if path.first != "v1" && path != ["metrics"] {
      throw APIFailure(404, "notFound", "no such resource: \(request.path)")
    }
    let access = try authorize(request)
    if path == ["metrics"] { return try metrics(request) }
    let method = request.method == "HEAD" ? "GET" : request.method
    func needsWrite() throws {
      guard access == .write else {
        throw APIFailure(403, "forbidden", "this token may read but not write")
      }
    }
    let rest = Array(path.dropFirst())
    /// The `*` segments of `pattern` when `rest` matches it.
    func match(_ pattern: String...) -> [String]? {
      guard rest.count == pattern.count else { return nil }
      var captured: [String] = []
      for (segment, expected) in zip(rest, pattern) {
        if expected == "*" {
          captured.append(segment)
        } else if segment != expected {
          return nil
        }
      }
      return captured
    }
    if match("lists") != nil {
      guard method == "GET" else { throw Self.notAllowed(request, allow: "GET") }
      return .json(200, "{\"lists\":" + Rendering.json(lists: try repository.lists()) + "}")
    }
    if let name = match("lists", "*")?[0] {
      switch method {
      case "GET":
        let snapshot = try feed(name).snapshot()
        return .json(200, snapshot.json, headers: [("ETag", "\"\(snapshot.seq)\"")])
      case "PUT":
        try needsWrite()
        return try createList(name, request)
      case "DELETE":
        try needsWrite()
        let list = try list(name)
        _ = try written(request, list) { try repository.deleteList(name) }
        return HTTPResponse(status: 204)
      case "PATCH":
        try needsWrite()
        return try renameList(name, request)
      default: throw Self.notAllowed(request, allow: "GET, PUT, PATCH, DELETE")
      }
    }
    if let name = match("lists", "*", "batch")?[0] {
      guard method == "POST" else { throw Self.notAllowed(request, allow: "POST") }
      try needsWrite()
      return try batch(name, request)
    }
    if let name = match("lists", "*", "contents")?[0] {
      guard method == "PUT" else { throw Self.notAllowed(request, allow: "PUT") }
      try needsWrite()
      return try replaceContents(name, request)
    }
    if let name = match("lists", "*", "changes")?[0] {
      guard method == "GET" else { throw Self.notAllowed(request, allow: "GET") }
      return try changes(name, request, exchange)
    }
    if let name = match("lists", "*", "sections")?[0] {
      guard method == "POST" else { throw Self.notAllowed(request, allow: "POST") }
      try needsWrite()
      return try addSection(name, request)
    }
    if let name = match("lists", "*", "items")?[0] {
      guard method == "POST" else { throw Self.notAllowed(request, allow: "POST") }
      try needsWrite()
      return try addItem(name, section: nil, request)
    }
    if let captured = match("lists", "*", "sections", "*", "items") {
      guard method == "POST" else { throw Self.notAllowed(request, allow: "POST") }
      try needsWrite()
      return try addItem(captured[0], section: try id(captured[1], "section"), request)
    }
    if let captured = match("lists", "*", "items", "*") {
      let id = try id(captured[1], "item")
      switch method {
      case "PATCH":
        try needsWrite()
        return try changeItem(captured[0], id: id, request)
      case "DELETE":
        try needsWrite()
        let list = try list(captured[0])
        let seq = try written(request, list) { try list.removeItem(id: id) }.seq
        return .json(200, "{\"seq\":\(seq)}")
      default: throw Self.notAllowed(request, allow: "PATCH, DELETE")
      }
    }
    if let captured = match("lists", "*", "sections", "*") {
      let id = try id(captured[1], "section")
      switch method {
      case "PATCH":
        try needsWrite()
        return try changeSection(captured[0], id: id, request)
      case "DELETE":
        try needsWrite()
        let list = try list(captured[0])
        let seq = try written(request, list) { try list.removeSection(id: id) }.seq
        return .json(200, "{\"seq\":\(seq)}")
      default: throw Self.notAllowed(request, allow: "PATCH, DELETE")
      }
    }
    throw APIFailure(404, "notFound", "no such resource: \(request.path)")
  }

  private static func notAllowed(_ request: HTTPRequest, allow: String) -> APIFailure {
    APIFailure(
      405, "methodNotAllowed", "\(request.method) is not allowed on \(request.path); use \(allow)",
      headers: [("Allow", allow)])
  }

  private func health() -> HTTPResponse {
    do {
      _ = try repository.changeLogPosition()
      return HTTPResponse(
        status: 200, headers: [("Content-Type", "text/plain; charset=utf-8")],
        body: Array("ok\n".utf8))
    } catch {
      return .error(
        503, "unavailable", "the database does not answer: \(error)",
        headers: [("Retry-After", "1")])
    }
  }

  private func metrics(_ request: HTTPRequest) throws -> HTTPResponse {
    let counts = http.statusCounts.withLock { $0 }
    let feeds = feeds.withLock { Array($0.values) }
    let position = try? repository.changeLogPosition()
    let lag = feedLag(position: position)
    let reads = repository.changeFeedReads
    var lines = [
      "# HELP liststore_http_responses_total Responses sent, by status.",
      "# TYPE liststore_http_responses_total counter",
    ]
    for (status, count) in counts.sorted(by: { $0.key < $1.key }) {
      lines.append("liststore_http_responses_total{status=\"\(status)\"} \(count)")
    }
    lines += [
      "# HELP liststore_open_streams Change streams and long polls open.",
      "# TYPE liststore_open_streams gauge",
      "liststore_open_streams \(feeds.reduce(0) { $0 + $1.subscriberCount })",
      "# HELP liststore_watched_lists Lists observed for clients.",
      "# TYPE liststore_watched_lists gauge",
      "liststore_watched_lists \(feeds.count)",
      "# HELP liststore_feed_lag_entries How far the slowest feed is behind the database, in log entries.",
      "# TYPE liststore_feed_lag_entries gauge",
      "liststore_feed_lag_entries \(lag.entries)",
      "# HELP liststore_feed_lag_seconds How long the feeds have been behind the database (since a scrape first saw the commit they have not read).",
      "# TYPE liststore_feed_lag_seconds gauge",
      "liststore_feed_lag_seconds \(lag.seconds)",
      "# HELP liststore_feed_log_reads_total Reads of the change log by the server's one feed of every watched list (one per commit, whatever the number of clients).",
      "# TYPE liststore_feed_log_reads_total counter",
      "liststore_feed_log_reads_total \(reads.reads)",
      "# HELP liststore_feed_log_rows_read_total Rows those reads returned.",
      "# TYPE liststore_feed_log_rows_read_total counter",
      "liststore_feed_log_rows_read_total \(reads.rows)",
    ]
    return HTTPResponse(
      status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
      body: Array((lines.joined(separator: "\n") + "\n").utf8))
  }

  /// How far the feeds are behind the database: in log entries, and in seconds since a
  /// scrape first saw the oldest commit they have not read.
  private func feedLag(position: Int64?) -> (entries: Int64, seconds: Double) {
    let observed = repository.observedChangeLogPosition
    return lagSince.withLock { behind in
      guard let position, let observed, observed < position else {
        behind = nil
        return (0, 0)
      }
      if behind == nil || observed >= behind?.target ?? 0 {
        behind = (position, .now)
      }
      let since = behind?.since ?? .now
      let elapsed = since.duration(to: .now)
      let seconds =
        Double(elapsed.components.seconds)
        + Double(elapsed.components.attoseconds) / 1e18
      return (position - observed, seconds)
    }
  }

  private func authorize(_ request: HTTPRequest) throws -> Tokens.Access {
    guard let tokens = configuration.tokens else { return .write }
    var token: String?
    if let header = request.headers["authorization"] {
      let parts = header.split(separator: " ", maxSplits: 1)
      if parts.count == 2, parts[0].lowercased() == "bearer" {
        token = String(parts[1]).trimmingSpaces()
      }
    }
    token = token ?? request.query["access_token"]
    if token == nil, let cookie = Self.cookie(request) {
      // A cookie goes with any request the browser sends, whichever page asked: a write
      // must also carry a header that only a script of this origin can add (another
      // origin's would need a preflight, which this server does not grant).
      if request.method != "GET" && request.method != "HEAD"
        && request.headers["x-requested-with"] != "liststore"
      {
        throw APIFailure(
          403, "forbidden",
          "a write authorized by the page's cookie needs 'X-Requested-With: liststore'")
      }
      token = cookie
    }
    guard let token else {
      throw APIFailure(
        401, "unauthorized", "this server needs a token: send 'Authorization: Bearer TOKEN'",
        headers: [("WWW-Authenticate", "Bearer")])
    }
    guard let access = tokens.access(for: token) else {
      throw APIFailure(
        401, "unauthorized", "the token is not known to this server",
        headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
    }
    return access
  }

  /// The token the live page keeps in its cookie.
  static let cookieName = "liststore_token"

  /// The token of the request's cookie, if it has one.
  static func cookie(_ request: HTTPRequest) -> String? {
    guard let header = request.headers["cookie"] else { return nil }
    for pair in header.split(separator: ";") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, String(parts[0]).trimmingSpaces() == cookieName {
        return String(parts[1]).trimmingSpaces()
      }
    }
    return nil
  }

  /// `GET /` and `GET /lists/NAME`: the live page. A known `?access_token=` is kept in an
  /// HttpOnly, SameSite=Strict cookie, and the page is asked for again without it, so that
  /// the token leaves the address bar and the history.
  private func livePage(_ request: HTTPRequest) throws -> HTTPResponse {
    guard request.method == "GET" || request.method == "HEAD" else {
      throw Self.notAllowed(request, allow: "GET")
    }
    if let token = request.query["access_token"] {
      guard configuration.tokens?.access(for: token) != nil else {
        throw APIFailure(
          401, "unauthorized", "the token is not known to this server",
          headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
      }
      let secure = configuration.tls != nil ? "; Secure" : ""
      return HTTPResponse(
        status: 303,
        headers: [
          ("Location", request.path),
          ("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict" + secure),
        ])
    }
    return HTTPResponse(
      status: 200,
      headers: [
        ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache"),
        (
          "Content-Security-Policy",
          "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            + "img-src 'self' data:; frame-ancestors 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
      ],
      body: Array(LivePage.html.utf8))
  }

  // MARK: - Lists and rows

  func list(_ name: String) throws -> StoredList<RawJSON, RawJSON> {
    try repository.list(name, metadata: RawJSON.self, item: RawJSON.self)
  }

  /// Runs `body` as one transaction and returns its result with the position of its
  /// commit. With `list`, the request's `If-Match: "S"` is checked first, in the same
  /// transaction: 412 when the list changed after `S` or that can no longer be told.
  func written<Result: Sendable>(
    _ request: HTTPRequest? = nil, _ list: StoredList<RawJSON, RawJSON>? = nil,
    _ body: () throws -> Result
  ) throws -> (result: Result, seq: Int64) {
    let expected = try request.flatMap(Self.ifMatch)
    return try repository.write {
      if let expected, let list {
        switch try list.hasChanged(after: expected) {
        case false?: break
        case true?:
          throw APIFailure(
            412, "preconditionFailed",
            "\(quoted(list.name)) changed after \(expected): read it again and retry")
        case nil:
          throw APIFailure(
            412, "preconditionFailed",
            "whether \(quoted(list.name)) changed after \(expected) can no longer be told: "
              + "read it again and retry")
        }
      }
      let result = try body()
      return (result, try repository.changeLogPosition())
    }
  }

  /// The seq of `If-Match: "S"` (or `W/"S"`, or `S`); `nil` without the header or for `*`.
  static func ifMatch(_ request: HTTPRequest) throws -> Int64? {
    guard var text = request.headers["if-match"]?.trimmingSpaces() else { return nil }
    if text == "*" { return nil }
    if text.hasPrefix("W/") { text.removeFirst(2) }
    if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
      text = String(text.dropFirst().dropLast())
    }
    guard let seq = Int64(text), seq >= 0, text.allSatisfy(\.isASCII) else {
      throw APIFailure(
        400, "badRequest",
        "If-Match must be a snapshot's ETag, like \"42\" (the list's seq); got \(request.headers["if-match"] ?? "")"
      )
    }
    return seq
  }

  /// `PATCH /v1/lists/NAME` with `{"name": NEW}`: renames the list.
  private func renameList(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let body = try JSONBody(request)
    guard let newName = try body.text("name") else {
      throw APIFailure(400, "badRequest", "give the list's new \"name\"")
    }
    let list = try list(name)
    let seq = try written(request, list) { try repository.renameList(name, to: newName) }.seq
    // No list has the old name any more: its streams end as a deletion's do, and its feed
    // (which follows the list by id) goes, so that a new list of that name gets its own.
    feeds.withLock { $0.removeValue(forKey: name) }?.end(.deleted)
    return .json(200, "{\"list\":" + JSONText.quote(newName) + ",\"seq\":\(seq)}")
  }

  private func createList(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let body = request.body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    if body.isEmpty {
      let seq = try written { _ = try repository.createList(name) }.seq
      return .json(201, "{\"list\":" + JSONText.quote(name) + ",\"seq\":\(seq)}")
    }
    try requireJSON(request)
    let file = try ImportFile.parse(request.body, name: "the body")
    let seq = try written { _ = try repository.createList(name, contents: file.sections) }.seq
    return .json(201, "{\"list\":" + JSONText.quote(name) + ",\"seq\":\(seq)}")
  }

  private func addSection(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let body = try JSONBody(request)
    let metadata = try body.metadata()
    let list = try list(name)
    let placement = try Placement(request.query)
    let (id, seq) = try written(request, list) { () throws -> Int64 in
      switch placement {
      case .end: try list.appendSection(metadata)
      case .at(let index): try list.insert(section: metadata, at: index)
      case .before(let neighbor): try list.insert(section: metadata, before: neighbor)
      case .after(let neighbor): try list.insert(section: metadata, after: neighbor)
      }
    }
    return .json(201, "{\"id\":\(id),\"seq\":\(seq)}")
  }

  /// `POST …/sections/ID/items`, or `POST …/items?before=ID` (or `after`) without a
  /// section: the neighbour's.
  private func addItem(_ name: String, section: Int64?, _ request: HTTPRequest) throws
    -> HTTPResponse
  {
    let body = try JSONBody(request)
    let value = try body.required("value")
    let list = try list(name)
    let placement = try Placement(request.query)
    if section == nil, case .end = placement {
      throw APIFailure(
        400, "badRequest",
        "name the neighbour with ?before=ID or ?after=ID, or post to …/sections/ID/items")
    }
    if section == nil, case .at = placement {
      throw APIFailure(400, "badRequest", "?at=ROW needs a section: post to …/sections/ID/items")
    }
    let (id, seq) = try written(request, list) { () throws -> Int64 in
      switch placement {
      case .end: try list.appendItem(value, toSectionWithID: section ?? 0)
      case .at(let row):
        try list.insert(item: value, atRow: row, inSectionWithID: section ?? 0)
      case .before(let neighbor): try list.insert(item: value, before: neighbor)
      case .after(let neighbor): try list.insert(item: value, after: neighbor)
      }
    }
    return .json(201, "{\"id\":\(id),\"seq\":\(seq)}")
  }

  private func changeItem(_ name: String, id: Int64, _ request: HTTPRequest) throws -> HTTPResponse
  {
    let body = try JSONBody(request)
    let value = body.optional("value")
    let move = try body.move()
    guard value != nil || move != nil else {
      throw APIFailure(
        400, "badRequest",
        "give \"value\", or a move: \"section\" with \"at\", \"before\" or \"after\"")
    }
    let list = try list(name)
    let seq = try written(request, list) {
      if let value { try list.replaceItem(id: id, with: value) }
      if let move {
        switch move.placement {
        case .before(let neighbor): try list.moveItem(id: id, before: neighbor)
        case .after(let neighbor): try list.moveItem(id: id, after: neighbor)
        case .at(let row):
          let section = try list.index(ofSectionWithID: move.section ?? 0)
          try list.moveItem(id: id, to: IndexPath(item: row, section: section))
        case .end:
          let sectionID = move.section ?? 0
          let section = try list.index(ofSectionWithID: sectionID)
          let count = try list.numberOfItems(inSection: section)
          let current = try list.sectionID(ofItem: id)
          try list.moveItem(
            id: id,
            to: IndexPath(item: current == sectionID ? count - 1 : count, section: section))
        }
      }
    }.seq
    return .json(200, "{\"seq\":\(seq)}")
  }

  private func changeSection(_ name: String, id: Int64, _ request: HTTPRequest) throws
    -> HTTPResponse
  {
    let body = try JSONBody(request)
    let metadata = body.hasMetadata ? try body.metadata() : nil
    let placement = try Placement(body: body)
    guard metadata != nil || placement != .end else {
      throw APIFailure(
        400, "badRequest",
        "give \"header\"/\"footer\" or \"metadata\", or a move: \"at\", \"before\" or \"after\"")
    }
    let list = try list(name)
    let seq = try written(request, list) {
      if let metadata { try list.setMetadata(metadata, forSectionWithID: id) }
      switch placement {
      case .end: break
      case .at(let index): try list.moveSection(id: id, to: index)
      case .before(let neighbor): try list.moveSection(id: id, before: neighbor)
      case .after(let neighbor): try list.moveSection(id: id, after: neighbor)
      }
    }.seq
    return .json(200, "{\"seq\":\(seq)}")
  }

  /// `POST …/batch`: `liststore batch`'s operations, a JSON array or JSON lines, in one
  /// transaction; answers the id each one created or touched.
  ///
  /// With `?report=message`, it also answers the line the CLI prints for each operation
  /// (`"messages"`), which the CLI over HTTP prints. A failing operation's error body names
  /// it (`"operation"`, from 1) and says what failed without the place (`"reason"`).
  private func batch(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let operations = try Self.operations(request)
    let messages = request.query["report"] == "message"
    let list = try list(name)
    let (outcomes, seq) = try written(request, list) { () throws -> [ListOperation.Outcome] in
      var outcomes: [ListOperation.Outcome] = []
      outcomes.reserveCapacity(operations.count)
      for (number, operation) in operations.enumerated() {
        let place = "operation \(number + 1) (nothing was applied)"
        let fields = ",\"operation\":\(number + 1),\"reason\":"
        do {
          outcomes.append(try operation.perform(on: list, reporting: messages ? .message : .id))
        } catch let error as ListStoreError {
          var response = Self.response(for: error, place: place)
          response.insertFields(fields + JSONText.quote("\(error)"))
          throw APIFailure(response)
        } catch let error as OperationError {
          var response = HTTPResponse.error(422, "unprocessable", "\(place): \(error.message)")
          response.insertFields(fields + JSONText.quote(error.message))
          throw APIFailure(response)
        }
      }
      return outcomes
    }
    let ids = outcomes.map { String($0.id) }.joined(separator: ",")
    let report =
      messages
      ? ",\"messages\":[" + outcomes.map { JSONText.quote($0.message) }.joined(separator: ",") + "]"
      : ""
    return .json(200, "{\"seq\":\(seq),\"ids\":[" + ids + "]" + report + "}")
  }

  /// A batch's operations: the elements of a JSON array, or the lines of
  /// `application/x-ndjson` (blank lines skipped).
  static func operations(_ request: HTTPRequest) throws -> [ListOperation] {
    let bytes = request.body
    let media = mediaType(request)
    if ["application/x-ndjson", "application/jsonl", "application/jsonlines"].contains(media) {
      try requireLength(request)
      var operations: [ListOperation] = []
      var number = 0
      var start = 0
      while start < bytes.count {
        let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
        number += 1
        let line = bytes[start..<end]
        start = end + 1
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
        do {
          operations.append(try ListOperation(line: line))
        } catch {
          throw APIFailure(
            400, "badRequest",
            "line \(number)" + (error.column.map { ", column \($0)" } ?? "")
              + " (nothing was applied): \(error.message)")
        }
      }
      return operations
    }
    try requireJSON(request, alsoAccepting: "application/x-ndjson")
    let root: JSONSyntax.Node
    do {
      root = try JSONSyntax.parse(bytes)
    } catch {
      throw APIFailure(
        400, "badRequest",
        "the body is not valid JSON: \(error.message) at \(error.place(in: bytes))")
    }
    guard case .array(let elements) = root.kind else {
      throw APIFailure(
        400, "badRequest",
        "the body must be a JSON array of operations (or JSON lines sent as "
          + "application/x-ndjson), not \(root.kindDescription(in: bytes))")
    }
    var operations: [ListOperation] = []
    operations.reserveCapacity(elements.count)
    for (number, node) in elements.enumerated() {
      do {
        operations.append(try ListOperation(line: bytes[node.range]))
      } catch {
        throw APIFailure(
          400, "badRequest", "operation \(number + 1) (nothing was applied): \(error.message)")
      }
    }
    return operations
  }

  /// `PUT …/contents`: `import --replace` of the body, writing only what differs.
  private func replaceContents(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    try requireJSON(request)
    var sink = CollectingSink()
    var reader = ImportReader(stream: JSONStream(bytes: request.body), name: "the body")
    try reader.read(into: &sink)
    let existing: StoredList<RawJSON, RawJSON>?
    do {
      existing = try list(name)
    } catch ListStoreError.listNotFound {
      if try Self.ifMatch(request) != nil {
        throw APIFailure(412, "preconditionFailed", "there is no list named \(quoted(name))")
      }
      existing = nil
    }
    let (changeset, seq) = try written(request, existing) {
      try repository.replaceContents(ofList: name, with: sink.sections)
    }
    let sections = changeset.insertedSections
    let counts = [
      (
        "added",
        changeset.insertedItems.count + sections.count
          + sections.reduce(0) { $0 + $1.items.count }
      ),
      ("removed", changeset.deletedItems.count + changeset.deletedSections.count),
      ("changed", changeset.updatedItems.count + changeset.updatedSections.count),
      ("moved", changeset.movedItems.count + changeset.movedSections.count),
    ]
    // The same counts by kind of row, for the CLI's summary line.
    let byKind = [
      (
        "sections",
        [
          ("added", sections.count), ("removed", changeset.deletedSections.count),
          ("moved", changeset.movedSections.count), ("changed", changeset.updatedSections.count),
        ]
      ),
      (
        "items",
        [
          ("added", changeset.insertedItems.count + sections.reduce(0) { $0 + $1.items.count }),
          ("removed", changeset.deletedItems.count), ("moved", changeset.movedItems.count),
          ("changed", changeset.updatedItems.count),
        ]
      ),
    ]
    func object(_ pairs: [(String, Int)]) -> String {
      "{" + pairs.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
    return .json(
      200,
      "{\"seq\":\(seq)," + counts.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + ","
        + byKind.map { "\"\($0.0)\":" + object($0.1) }.joined(separator: ",") + "}")
  }

  private func id(_ text: String, _ kind: String) throws -> Int64 {
    guard let id = Int64(text), id > 0 else {
      throw APIFailure(
        404, "notFound", "no \(kind) with id \(text): ids are positive whole numbers")
    }
    return id
  }

  // MARK: - Feeds

  /// The feed of list `name`, started on first use.
  func feed(_ name: String) throws -> ListFeed {
    if let feed = feeds.withLock({ $0[name] }), feed.ended == nil { return feed }
    return try feedCreation.withLock { _ in
      if let feed = feeds.withLock({ $0[name] }), feed.ended == nil { return feed }
      let feed = try ListFeed(list: try list(name), limits: configuration.limits, loop: http.loop)
      feeds.withLock { $0[name] = feed }
      return feed
    }
  }

  /// Drops the feeds nobody used for a while, and the ended ones.
  func dropIdleFeeds() {
    let seconds = configuration.limits.idleFeedSeconds
    feeds.withLock { feeds in
      feeds = feeds.filter { $0.value.ended == nil && !$0.value.isIdle(for: seconds) }
    }
  }

  func forget(_ feed: ListFeed) {
    feeds.withLock { feeds in
      if feeds[feed.name] === feed { feeds[feed.name] = nil }
    }
  }

  // MARK: - Errors

  static func response(for error: ListStoreError, place: String? = nil) -> HTTPResponse {
    let message = (place.map { $0 + ": " } ?? "") + "\(error)"
    // The error's fields, so that a client rebuilds the very error (docs/http.md).
    let detail = WireFormat.detail(of: error)
    switch error {
    case .listNotFound, .sectionNotFound, .itemNotFound:
      return .error(404, "notFound", message, detail: detail)
    case .listExists:
      return .error(409, "conflict", message, detail: detail)
    case .busy:
      return .error(503, "busy", message, headers: [("Retry-After", "1")])
    case .serverUnreachable:
      return .error(503, "unavailable", message, headers: [("Retry-After", "1")])
    case .invalidJSON, .invalidImport, .emptyName, .duplicateID:
      return .error(400, "badRequest", message, detail: detail)
    case .sectionOutOfRange, .itemOutOfRange, .insertionOutOfRange, .sectionInsertionOutOfRange,
      .invalidIndexPath:
      return .error(422, "unprocessable", message, detail: detail)
    case .readOnly:
      return .error(503, "readOnly", message)
    default:
      return error.isTransient
        ? .error(503, "unavailable", message, headers: [("Retry-After", "1")])
        : .error(500, "internal", message, detail: detail)
    }
  }
}

/// A request that cannot be carried out, as the status and body to answer with.
struct APIFailure: Error {
  var response: HTTPResponse

  init(_ response: HTTPResponse) { self.response = response }

  init(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) {
    response = .error(status, code, message, headers: headers)
  }
}

extension String {
  func trimmingSpaces() -> String {
    let bytes = utf8
    guard let first = bytes.firstIndex(where: { $0 != 0x20 }),
      let last = bytes.lastIndex(where: { $0 != 0x20 })
    else { return "" }
    if first == bytes.startIndex && last == bytes.index(before: bytes.endIndex) { return self }
    return String(self[first...last])
  }
}

// MARK: - The change stream

extension ListServer {
  /// `GET /v1/lists/{name}/changes`: a server-sent event stream, or a long poll.
  func changes(_ name: String, _ request: HTTPRequest, _ exchange: HTTPExchange) throws
    -> HTTPResponse?
  {
    let feed = try feed(name)
    let wantsEvents = request.headers["accept"]?.contains("text/event-stream") == true
    var after: Int64?
    if let text = request.query["after"] ?? request.headers["last-event-id"] {
      guard let value = Int64(text.trimmingSpaces()), value >= 0 else {
        throw APIFailure(400, "badRequest", "after=\(text) must be a seq: a whole number from 0")
      }
      after = value
    }
    var wait = 30.0
    if let text = request.query["wait"] {
      guard let seconds = Double(text), seconds >= 0, seconds <= 300 else {
        throw APIFailure(
          400, "badRequest", "wait=\(text) must be a number of seconds from 0 to 300")
      }
      wait = seconds
    }
    if !wantsEvents && after == nil {
      throw APIFailure(
        400, "badRequest",
        "a long poll needs after=SEQ (a snapshot's seq); ask with 'Accept: text/event-stream' for a stream that starts with a snapshot"
      )
    }
    // A position beyond the feed's: catch up with the database first, and tell whether
    // the database is behind it (a restored backup).
    var position: Int64?
    if let after, after > feed.seq {
      repository.synchronizeObservers()
      position = try repository.changeLogPosition()
    }
    let kind: ChangeStream.Kind =
      wantsEvents ? .events : .poll(deadline: .now + .milliseconds(Int(wait * 1000)))
    let stream = ChangeStream(server: self, exchange: exchange, feed: feed, kind: kind)
    switch feed.resume(
      after: after, databasePosition: position, subscriber: stream, snapshot: wantsEvents)
    {
    case .reset(let json, let seq):
      guard wantsEvents, let json else {
        feed.unsubscribe(stream)
        throw APIFailure(
          409, "mustRefetch",
          "the changes after \(after ?? 0) are no longer retained: fetch the list again and follow it from its seq"
        )
      }
      let event = (after == nil ? "snapshot" : "reset")
      let first = Array("event: \(event)\nid: \(seq)\ndata: \(json)\n\n".utf8)
      http.loop.execute { stream.start(first: first) }
    case .changes(let missed):
      if !wantsEvents && !missed.isEmpty {
        feed.unsubscribe(stream)
        return ChangeStream.pollAnswer(missed, seq: missed.last?.seq ?? feed.seq)
      }
      let first = Array(missed.map(\.event).joined())
      http.loop.execute { stream.start(first: first) }
    }
    return nil
  }

  /// Once a second, on the loop's thread.
  func tick() {
    let now = ContinuousClock.now
    for stream in streams.values { stream.tick(now: now) }
    dropIdleFeeds()
  }
}
