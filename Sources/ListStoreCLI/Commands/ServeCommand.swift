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
      Prints 'listening on http://HOST:PORT' once it accepts connections, and stops
      cleanly on Ctrl-C or SIGTERM (writes under way finish, streams are closed, exit 0).
      Listening on an address other than loopback needs --tokens, or --no-auth to serve
      everyone on purpose. The tokens file has one 'TOKEN read' or 'TOKEN write' a line;
      requests send 'Authorization: Bearer TOKEN'. Needs libevent (Debian's
      libevent-2.1-7), and for HTTPS its OpenSSL part (libevent-openssl-2.1-7).
      The API and the change stream are described in docs/http.md.
      """,
    options: [
      OptionSpec(
        name: "listen", valueName: "HOST:PORT",
        help: "Where to listen (default 127.0.0.1:8040; port 0 picks a free one)."),
      OptionSpec(
        name: "tokens", valueName: "FILE", help: "Bearer tokens, one 'TOKEN read|write' a line."),
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
    switch (invocation.option("tls-cert"), invocation.option("tls-key")) {
    case (let certificate?, let key?):
      configuration.tls = TLSFiles(certificate: certificate, key: key)
    case (nil, nil): break
    default:
      throw UsageError(message: "--tls-cert and --tls-key go together", command: ["serve"])
    }
    let repository = try context.repository()
    let server = try ListServer(repository: repository, configuration: configuration)
    let shown = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
    let scheme = configuration.tls == nil ? "http" : "https"
    context.out.line("listening on \(scheme)://\(shown):\(server.port)")
    context.out.flush()
    let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { server.stop() }
    server.run()
    signals.cancel()
    repository.stopObserving()
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
