import Dispatch
import ListStore
import ListStoreServer

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `liststore serve`: the database over HTTP (docs/http.md).
enum ServeCommand {
  static let spec = CommandSpec(
    path: ["serve"],
    abstract: "Serve the lists over HTTP: a JSON API and live change streams.",
    discussion: """
      Creates the database if it is missing, as 'list create' does. Prints 'listening on
      http://HOST:PORT' once it accepts connections, then the live page's address, and
      stops cleanly on Ctrl-C or SIGTERM (writes under way finish, streams are closed,
      exit 0). Listening on an address other than loopback needs --tokens, or --no-auth
      to serve everyone on purpose. The tokens file has one 'TOKEN read' or 'TOKEN write'
      a line, optionally limited to some lists ('TOKEN read groceries,todo'; outside its
      scope a list is a missing one); requests send 'Authorization: Bearer TOKEN' (or
      ?access_token=TOKEN); SIGHUP reads the file again. Needs
      libevent (Debian's libevent-2.1-7), and for HTTPS its OpenSSL part
      (libevent-openssl-2.1-7).

      The API: JSON bodies (Content-Type: application/json), lists named in paths
      (percent-encoded), sections and items by id; writes take If-Match: "SEQ" (a
      snapshot's ETag); errors are {"error": SENTENCE, "code": NAME}.

        GET    /v1/lists                         the lists, with their sizes
        GET    /v1/lists/NAME                    the list, as show --json, with "seq"
        PUT    /v1/lists/NAME                    create it: empty, or from an export body
        PUT    /v1/lists/NAME/contents           make it equal to the body (import --replace)
        PATCH  /v1/lists/NAME                    rename it: {"name": NEW}
        DELETE /v1/lists/NAME                    delete it
        POST   /v1/lists/NAME/batch              batch's operations, one transaction
        POST   /v1/lists/NAME/sections           add {"header","footer"}; ?at= ?before= ?after=
        PATCH  /v1/lists/NAME/sections/ID        its header/footer, or a move (at, before, after)
        DELETE /v1/lists/NAME/sections/ID        remove it with its items
        POST   /v1/lists/NAME/sections/ID/items  add {"value": …}; ?at= ?before= ?after=
        POST   /v1/lists/NAME/items              add {"value": …} ?before=ID or ?after=ID
        PATCH  /v1/lists/NAME/items/ID           its value, or a move (section, at, before, after)
        DELETE /v1/lists/NAME/items/ID           remove it
        GET    /v1/lists/NAME/changes            its changes: server-sent events (Accept:
                                                 text/event-stream; resumed by Last-Event-ID),
                                                 or a long poll with ?after=SEQ
        GET    /v1/permissions                   what the credentials may do, and on which lists
        POST   /v1/replicas                      register a replica (docs/replicas.md)
        POST   /v1/push                          a replica's writes, applied exactly once
        GET    /v1/changes                       what a replica pulls, for many lists
        GET    /healthz, /metrics                health (no token), Prometheus metrics
        GET    /v1/openapi.json                  this API in OpenAPI 3.1 (no token)
        GET    /, /lists/NAME                    the live page, for a browser

      The whole contract is docs/http.md in ListStore's source.
      """,
    options: [
      OptionSpec(
        name: "listen", valueName: "HOST:PORT",
        help: "Where to listen (default 127.0.0.1:8040; port 0 picks a free one)."),
      OptionSpec(
        name: "tokens", valueName: "FILE",
        help: "Bearer tokens, one 'TOKEN read|write [LISTS]' a line."),
      OptionSpec(
        name: "no-auth", valueName: nil,
        help: "Serve everyone without tokens, also on an address other than loopback."),
      OptionSpec(
        name: "tls-cert", valueName: "FILE",
        help: "Serve HTTPS with this PEM certificate (chain); needs --tls-key."),
      OptionSpec(
        name: "tls-key", valueName: "FILE", help: "The certificate's PEM private key."),
      OptionSpec(
        name: "max-body", valueName: "BYTES", help: "The largest request body (default 268435456)."),
      OptionSpec(
        name: "secure-cookies", valueName: nil,
        help: "Mark the live page's cookie Secure: for a server behind an HTTPS proxy."),
      OptionSpec(
        name: "max-connections", valueName: "N",
        help:
          "The most connections open at once (default 4096, or what ulimit -Hn allows; "
          + "serve raises its open-file limit to the hard one)."),
      OptionSpec(
        name: "max-streams", valueName: "N",
        help: "The most change streams and long polls open at once (default 4096)."),
      OptionSpec(
        name: "max-connections-per-token", valueName: "N",
        help: "The most connections one token's requests hold (default 256)."),
      OptionSpec(
        name: "max-streams-per-token", valueName: "N",
        help: "The most change streams and long polls one token holds (default 128)."),
      OptionSpec(
        name: "head-timeout", valueName: "SECONDS",
        help: "How long a request's head may take from its first byte (default 10)."),
      OptionSpec(
        name: "idle-timeout", valueName: "SECONDS",
        help: "How long a connection may wait for a request (default 60)."),
      OptionSpec(
        name: "retain-days", valueName: "DAYS",
        help:
          "How long the change log keeps every change, for replicas away that long "
          + "(default 30; 0 keeps what watchers need)."),
    ],
    // A server is a writer: like `list create`, it creates and migrates the database.
    database: .writes, run: run)

  private static func run(_ invocation: Invocation, _ context: Context) throws {
    var configuration = ListServer.Configuration()
    if let listen = invocation.option("listen") {
      guard let (host, port) = address(listen) else {
        throw UsageError(
          message:
            "--listen takes HOST:PORT, like 127.0.0.1:8040 or [::1]:0; got \(listen.debugDescription)",
          command: ["serve"])
      }
      configuration.host = host
      configuration.port = port
    }
    if let text = invocation.option("max-body") {
      guard let bytes = Int(text), bytes > 0 else {
        throw UsageError(
          message:
            "--max-body must be a number of bytes, like 1048576; got \(text.debugDescription)",
          command: ["serve"])
      }
      configuration.limits.maxBody = bytes
    }
    if let text = invocation.option("retain-days") {
      guard let days = Double(text), days >= 0, days <= 36_500 else {
        throw UsageError(
          message:
            "--retain-days must be a number of days from 0 to 36500, like 30; got \(text.debugDescription)",
          command: ["serve"])
      }
      configuration.logRetention = .seconds(days * 86_400)
    }
    for (option, limit) in [
      ("max-connections", \ServerLimits.maxConnections), ("max-streams", \.maxStreams),
      ("max-connections-per-token", \.maxConnectionsPerToken),
      ("max-streams-per-token", \.maxStreamsPerToken), ("head-timeout", \.headSeconds),
      ("idle-timeout", \.idleSeconds),
    ] {
      guard let text = invocation.option(option) else { continue }
      guard let value = Int(text), value > 0, value <= 1_000_000 else {
        throw UsageError(
          message:
            "--\(option) must be a whole number from 1 to 1000000; got \(text.debugDescription)",
          command: ["serve"])
      }
      configuration.limits[keyPath: limit] = value
    }
    if let path = invocation.option("tokens") {
      if invocation.flag("no-auth") {
        throw UsageError(message: "--tokens and --no-auth exclude each other", command: ["serve"])
      }
      configuration.tokens = try Tokens(contentsOf: path)
    } else if !invocation.flag("no-auth") && !isLoopback(configuration.host) {
      throw UsageError(
        message: "serving \(configuration.host) to the network needs --tokens FILE "
          + "(or --no-auth to serve everyone)",
        command: ["serve"])
    }
    configuration.secureCookies = invocation.flag("secure-cookies")
    switch (invocation.option("tls-cert"), invocation.option("tls-key")) {
    case (let certificate?, let key?):
      configuration.tls = TLSFiles(certificate: certificate, key: key)
    case (nil, nil): break
    default:
      throw UsageError(message: "--tls-cert and --tls-key go together", command: ["serve"])
    }
    try raiseDescriptorLimit(
      connections: invocation.option("max-connections") == nil
        ? nil : configuration.limits.maxConnections)
    let repository = try context.repository()
    let server = try ListServer(repository: repository, configuration: configuration)
    let shown = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
    let scheme = configuration.tls == nil ? "http" : "https"
    let base = "\(scheme)://\(shown):\(server.port)"
    // Watched before the address is printed: a supervisor may stop the server as soon as
    // it reads the line.
    let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { server.stop() }
    context.out.line("listening on \(base)")
    context.out.line(
      "the live page: \(base)/"
        + (configuration.tokens == nil ? "" : " (open it once with ?access_token=TOKEN)"))
    context.out.flush()
    // SIGHUP reads the tokens file again.
    let tokensFile = invocation.option("tokens")
    let reload = SignalWatcher(signals: [SIGHUP]) {
      guard let tokensFile else { return }
      let line: String
      do {
        try server.reloadTokens(from: tokensFile)
        line = "liststore serve: read \(tokensFile) again\n"
      } catch {
        line = "liststore serve: \(error); the tokens in force stay\n"
      }
      _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
    defer { reload.cancel() }
    server.run()
    signals.cancel()
    repository.stopObserving()
  }

  /// Raises the soft limit on open files to the hard one, as servers do: the usual soft
  /// 1,024 would otherwise cap the connections. `--max-connections` asked for more than
  /// the hard limit holds (with the 64 the server keeps spare) is an error, not a silent
  /// lowering.
  static func raiseDescriptorLimit(connections: Int?) throws {
    #if os(Linux)
      var limit = rlimit()
      guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
      if limit.rlim_cur < limit.rlim_max {
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
      }
      guard let connections, limit.rlim_cur != rlim_t.max else { return }
      let files = Int(clamping: limit.rlim_cur)
      guard connections + 64 > files else { return }
      throw CommandError(
        "--max-connections \(connections) needs \(connections + 64) open files (64 kept spare) "
          + "but this process may open \(files) (ulimit -Hn): raise the hard limit, or ask "
          + "for at most \(max(files - 64, 0)) connections")
    #endif
  }

  /// `HOST:PORT` or `[V6]:PORT`.
  static func address(_ text: String) -> (String, Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65535).contains(port)
    else { return nil }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { return nil }
    return (host, port)
  }

  static func isLoopback(_ host: String) -> Bool {
    host == "localhost" || host == "::1" || host.hasPrefix("127.")
  }
}
