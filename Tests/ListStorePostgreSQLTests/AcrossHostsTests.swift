import Foundation
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Three hosts on one machine: network namespaces joined by veth pairs, the server in
/// one, a `liststore` that writes in another, a `liststore watch --json` in the third,
/// each client reaching the server over TCP with a password (SCRAM).
enum NetworkNamespaces {
  static let ip = "/usr/sbin/ip"

  /// Why namespaces cannot be made here (not root, no `ip`, a container that forbids
  /// them); `nil` when they can.
  static let unavailableReason: String? = {
    guard FileManager.default.isExecutableFile(atPath: ip) else {
      return "iproute2's ip is missing; install it with `apt-get install -y iproute2`"
    }
    let probe = "lsprobe\(getpid())"
    guard let made = try? run(ip, ["netns", "add", probe]) else { return "cannot run ip" }
    defer { _ = try? run(ip, ["netns", "del", probe]) }
    guard made.status == 0 else {
      return "network namespaces cannot be made here (`ip netns add` needs root and "
        + "CAP_SYS_ADMIN): \(made.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
    return nil
  }()

  /// Runs `ip` with `arguments`, failing with its output when it fails.
  static func ip(_ arguments: String...) throws {
    let result = try run(ip, arguments)
    guard result.status == 0 else {
      throw TestFailure("ip \(arguments.joined(separator: " ")): \(result.stderr)")
    }
  }
}

/// Namespaces `server`, `a` and `b`, with `a` and `b` each joined to `server` by a
/// veth pair on a subnet of its own; removed (with their links) by ``remove()``.
struct ThreeHosts {
  let server: String
  let a: String
  let b: String
  /// The server's address as `a` reaches it, and as `b` does.
  let serverForA = "10.231.1.1"
  let serverForB = "10.231.2.1"

  init() throws {
    let tag = "\(getpid() % 100_000)"
    server = "lssrv\(tag)"
    a = "lsa\(tag)"
    b = "lsb\(tag)"
    do {
      for name in [server, a, b] {
        try NetworkNamespaces.ip("netns", "add", name)
        try NetworkNamespaces.ip("-n", name, "link", "set", "lo", "up")
      }
      for (client, subnet) in [(a, "10.231.1"), (b, "10.231.2")] {
        let serverEnd = "lsv\(client)s"
        let clientEnd = "lsv\(client)c"
        try NetworkNamespaces.ip(
          "link", "add", serverEnd, "netns", server, "type", "veth", "peer", "name", clientEnd,
          "netns", client)
        try NetworkNamespaces.ip("-n", server, "addr", "add", "\(subnet).1/24", "dev", serverEnd)
        try NetworkNamespaces.ip("-n", client, "addr", "add", "\(subnet).2/24", "dev", clientEnd)
        try NetworkNamespaces.ip("-n", server, "link", "set", serverEnd, "up")
        try NetworkNamespaces.ip("-n", client, "link", "set", clientEnd, "up")
      }
    } catch {
      remove()
      throw error
    }
  }

  /// The command prefix that runs a program on host `name`.
  func on(_ name: String) -> [String] { [NetworkNamespaces.ip, "netns", "exec", name] }

  /// Runs `liststore --db location arguments…` on host `name`.
  func liststore(on name: String, _ location: String, _ arguments: [String]) throws
    -> ProcessResult
  {
    try run(
      NetworkNamespaces.ip, ["netns", "exec", name, liststoreBinary, "--db", location] + arguments)
  }

  /// Deletes the namespaces; their veth pairs go with them.
  func remove() {
    for name in [server, a, b] { _ = try? run(NetworkNamespaces.ip, ["netns", "del", name]) }
  }
}

@Suite(
  .postgres,
  .enabled(
    if: NetworkNamespaces.unavailableReason == nil,
    Comment(rawValue: NetworkNamespaces.unavailableReason ?? "")))
struct AcrossHostsTests {
  @Test func aWriteOnOneHostReachesAWatchOnAnotherOverTCPWithPasswords() throws {
    let hosts = try ThreeHosts()
    defer { hosts.remove() }
    let server = try TestPostgresServer.start(
      .init(acceptsPasswordsOverTCP: true, listenAddresses: "*", networkNamespace: hosts.server))
    defer { server.stop() }
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    let name = try #require(database.name)
    let password = "s3cret across hosts"
    let role = try server.createRole("app", password: password)
    try grantListStoreRights(to: role, on: database)
    let encoded = "s3cret%20across%20hosts"
    let fromA = "postgresql://\(role):\(encoded)@\(hosts.serverForA):\(server.port)/\(name)"
    let fromB = server.tcpConnectionString(
      database: name, user: role, password: password, host: hosts.serverForB)

    func onA(_ arguments: [String]) throws -> ProcessResult {
      try hosts.liststore(on: hosts.a, fromA, arguments)
    }
    // The hosts are apart: A reaches the server only through its own link.
    let elsewhere = try hosts.liststore(
      on: hosts.a, "postgresql://\(role):\(encoded)@\(hosts.serverForB):\(server.port)/\(name)",
      ["lists"])
    expectFailure(elsewhere, containing: "cannot reach the database server")
    #expect(!elsewhere.stderr.contains(password) && !elsewhere.stderr.contains(encoded))
    // A wrong password is refused over the network.
    let wrong = try hosts.liststore(
      on: hosts.a, "postgresql://\(role):wrong@\(hosts.serverForA):\(server.port)/\(name)",
      ["lists"])
    expectFailure(wrong, containing: "the server refused the credentials")

    for arguments in [
      ["list", "create", "team"], ["section", "add", "team", "Today"],
      ["item", "add", "team", "0", "plan"], ["item", "add", "team", "0", "build"],
    ] {
      expectSuccess(try hosts.liststore(on: hosts.a, fromA, arguments))
    }
    let watch = try WatchProcess(list: "team", location: fromB, prefix: hosts.on(hosts.b))
    defer { watch.stop() }
    #expect(watch.wait { lines, _ in !lines.isEmpty }, "no snapshot: \(watch.errors)")
    // The watch's sessions come over TCP from B's address, authenticated by SCRAM.
    let admin = try PGConnection(database.location)
    let remote = try admin.scalarInt64(
      "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND client_addr = '10.231.2.2'",
      role)
    #expect((remote ?? 0) >= 2)

    for arguments in [
      ["item", "add", "team", "0", "ship", "--at", "0"], ["section", "add", "team", "Later"],
      ["item", "move", "team", "0:1", "1:0"], ["item", "set", "team", "0:0", "ship it"],
      ["item", "add", "team", "1", #"{"owner":"b"}"#, "--json"], ["item", "rm", "team", "0:1"],
    ] {
      expectSuccess(try onA(arguments))
    }
    let shown = try onA(["show", "team", "--json"])
    expectSuccess(shown)
    #expect(!shown.stdout.contains(password))
    let expected = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? NSDictionary
    #expect(
      watch.waitForReplay(equal: expected),
      "replay differs from show --json:\n\(watch.output)\nerrors: \(watch.errors)")
    #expect(watch.lines.count >= 2)
    #expect(watch.errors.isEmpty, "\(watch.errors)")
  }
}
