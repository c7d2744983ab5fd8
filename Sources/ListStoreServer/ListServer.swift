import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#endif

/// `liststore serve`: the HTTP API and change streams of one repository
/// (docs/http.md). Requests are read and answered on one libevent loop thread by the
/// server's own HTTP/1.1 reader and writer (``HTTPConnection``), which checks each
/// request's token before reading its body; the database work runs on a pool of worker threads; each watched list is
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
    /// Whether the live page's cookie is marked `Secure` also without ``tls``: for a
    /// server behind a proxy that ends HTTPS (`--secure-cookies`).
    public var secureCookies = false
    /// How long the change log keeps every entry, whatever its readers: a replica away
    /// for longer gets a reset (docs/replicas.md). Recorded in the database for every
    /// process that prunes it; zero keeps what live observers have not read
    /// (`--retain-days`, 30 days by default).
    public var logRetention: Duration = .seconds(30 * 86_400)

    /// The contract's defaults: loopback, port 8040, no tokens.
    public init() {}
  }

  let repository: Repository
  let configuration: Configuration
  /// The tokens now in force (`--tokens`, read again on SIGHUP by ``reloadTokens(_:)``).
  var currentTokens: Tokens? { tokens.withLock { $0 } }
  let tokens: Locked<Tokens?>
  /// Connections of the server's own for reads that must not wait behind writes.
  let readers: ReaderPool
  /// Streams ended because their client read too slowly.
  let slowConsumers = Locked(0)
  /// Snapshots being sent, each on a thread of its own.
  let snapshotsUnderWay = Locked(0)
  let http: HTTPServer
  /// The server's way to this object, cut when it stops (else the two would keep each
  /// other alive).
  let router = Locked<ListServer?>(nil)
  let work = DispatchQueue(label: "liststore.server.work", attributes: .concurrent)
  /// Requests that may write, one at a time: the repository writes one transaction at a
  /// time anyway, and one thread running them back to back hands no lock from thread to
  /// thread (a wake-up each) between them.
  let writes = DispatchQueue(label: "liststore.server.writes")
  let feeds = Locked<[String: ListFeed]>([:])
  /// Replicas' long polls waiting for commits, and the watch that wakes them.
  let pullWaiters = Locked(PullWaiters())
  /// Pulls of replicas that had a position and got a reset.
  let replicaResets = Locked(0)
  /// Held while a feed is made, so that one list gets one feed.
  let feedCreation = Locked<Void>(())
  /// Open streams and long polls, touched on the loop's thread only.
  var streams: [ObjectIdentifier: ChangeStream] = [:]
  /// Whether the streams together held more unsent bytes than their budget at the last
  /// tick (loop's thread only).
  var streamBudgetExceeded = false
  let inFlight = DispatchGroup()
  let stopping = Locked(false)
  /// The database's position when the feeds were first seen behind it, and when.
  let lagSince = Locked<(target: Int64, since: ContinuousClock.Instant)?>(nil)

  /// Binds the address; ``run()`` serves.
  /// - Throws: ``ServerError`` when libevent is missing or the address cannot be bound.
  public init(repository: Repository, configuration: Configuration) throws(ServerError) {
    self.repository = repository
    self.configuration = configuration
    if !repository.isReadOnly {
      let seconds = configuration.logRetention / .seconds(1)
      do {
        try repository.setChangeLogRetention(seconds: max(seconds, 0))
      } catch {
        throw ServerError("cannot record how long the change log is kept: \(error)")
      }
    }
    readers = ReaderPool(source: repository)
    tokens = Locked(configuration.tokens)
    // The server's handler reaches this object once it is made.
    let router = self.router
    var limits = configuration.limits
    limits.maxConnections = min(limits.maxConnections, Self.connectionsTheDescriptorsAllow())
    http = try HTTPServer(
      host: configuration.host, port: configuration.port, limits: limits, tls: configuration.tls
    ) { request, exchange in
      router.withLock { $0 }?.accept(request, exchange)
    }
    http.admit = { head, connection in
      router.withLock { $0 }?.admit(head, holder: connection.holder)
        ?? .refuse(.error(503, "stopping", "the server is stopping; try again shortly"))
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
    stopPulls()
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

  func accept(_ request: HTTPRequest, _ exchange: HTTPExchange) {
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

  static func notAllowed(_ request: HTTPRequest, allow: String) -> APIFailure {
    APIFailure(
      405, "methodNotAllowed", "\(request.method) is not allowed on \(request.path); use \(allow)",
      headers: [("Allow", allow)])
  }
}

extension ListServer {
  /// Decides on a request's head before its body is read (on the loop's thread): a
  /// request to the API without a token the server knows, a read token that would
  /// write, or one over the limits of streams and connections, is answered at once —
  /// without buffering its body, or waiting behind writes. `holder` is whose the
  /// connection has been so far.
  func admit(_ head: RequestHead, holder: HTTPConnection.Holder) -> HTTPServer.Admission {
    if stopping.withLock({ $0 }) {
      return .refuse(.error(503, "stopping", "the server is stopping; try again shortly"))
    }
    let (path, query) = splitTarget(head.target)
    let first = path.split(separator: "/").first
    guard first == "v1" || first == "metrics" else {
      return .admit(maxBody: configuration.limits.maxBody)
    }
    var headers: [String: String] = [:]
    for (name, value) in head.fields where headers[name] == nil { headers[name] = value }
    let request = HTTPRequest(
      method: head.method, path: path, query: query, headers: headers, body: [])
    do {
      // What the route would refuse for the token's scope, refused before the body.
      let segments = request.segments ?? []
      let route =
        segments.first == "v1"
        ? Self.routes.first(where: { $0.match(Array(segments.dropFirst())) != nil }) : nil
      let entry = route?.methods.first(where: {
        $0.method == (head.method == "HEAD" ? "GET" : head.method)
      })
      if entry?.need == .nothing { return .admit(maxBody: configuration.limits.maxBody) }
      let grant = try authorize(request)
      if segments.first == "v1", let route, let entry,
        let captured = route.match(Array(segments.dropFirst()))
      {
        try Self.check(entry.need, name: captured.first ?? "", grant: grant)
      }
      let next = HTTPConnection.Holder(
        token: currentTokens == nil ? nil : try credential(request),
        stream: head.method == "GET" && route?.pattern == ["lists", "*", "changes"])
      try checkLimits(next, over: holder)
      return .admit(maxBody: configuration.limits.maxBody, holder: next)
    } catch let failure as APIFailure {
      return .refuse(failure.response)
    } catch let error as ListStoreError {
      return .refuse(Self.response(for: error))
    } catch {
      return .refuse(.error(500, "internal", "\(error)"))
    }
  }

  /// Refuses a request that would take its token, or the server, over its limits of
  /// connections and streams: the connection held so far by `current` would become
  /// `next`'s (loop's thread).
  /// - Throws: ``APIFailure`` 429 over a token's limits, 503 over the server's.
  func checkLimits(_ next: HTTPConnection.Holder, over current: HTTPConnection.Holder) throws {
    let limits = configuration.limits
    let retry = [("Retry-After", "1")]
    if let token = next.token, token != current.token,
      http.connectionsByToken[token, default: 0] >= limits.maxConnectionsPerToken
    {
      throw APIFailure(
        429, "tooManyConnections",
        "this token already holds \(limits.maxConnectionsPerToken) connections, the most one "
          + "token may (serve --max-connections-per-token): close some, or reuse them",
        headers: retry)
    }
    guard next.stream else { return }
    if let token = next.token, http.streamsByToken[token, default: 0] >= limits.maxStreamsPerToken {
      throw APIFailure(
        429, "tooManyStreams",
        "this token already holds \(limits.maxStreamsPerToken) change streams and long polls "
          + "open, the most one token may (serve --max-streams-per-token): end one first",
        headers: retry)
    }
    if http.streamCount >= limits.maxStreams {
      throw APIFailure(
        503, "tooManyStreams",
        "the server holds \(limits.maxStreams) change streams and long polls, its most "
          + "(serve --max-streams); try again shortly",
        headers: retry)
    }
  }

  /// How many connections the process's descriptor limit allows, keeping 64 spare for
  /// the database, the logs and the moment of accepting one too many.
  static func connectionsTheDescriptorsAllow() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 - 64 }
    let soft = limit.rlim_cur == rlim_t.max ? 1 << 20 : Int(clamping: limit.rlim_cur)
    return max(16, soft - 64)
  }
}
