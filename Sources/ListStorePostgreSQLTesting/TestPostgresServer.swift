import Foundation
import ListStoreTesting
import PostgreSQLKit
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A throwaway PostgreSQL server that a test process starts itself: `initdb` into a fresh
/// folder, started with `pg_ctl`, stopped (immediate mode) and its folder removed when the
/// process exits. No server to install and configure beforehand, no
/// state left between runs.
///
/// Most tests never touch it: `TemporaryRepository.Engine.postgresql` gives each test a
/// fresh ListStore database on the process's shared server (``shared(_:)``), cloned from a
/// template migrated once (``makeListStoreDatabase(icuLocale:)``). Tests of other
/// database code use it directly, and take a fresh database each from a template they
/// prepared once:
///
/// ```swift
/// @Suite(.requiresPostgreSQL) struct MigrationTests {
///   @Test func works() throws {
///     let server = try TestPostgresServer.shared()
///     let template = try server.makeTemplate("migrated_v1") { db in try migrate(db) }
///     let db = try PGConnection(try server.makeDatabase(template: template))
///     …
///   }
/// }
/// ```
///
/// The server binaries come from `pg_config --bindir` (they are not on `PATH`), else
/// from the newest `/usr/lib/postgresql/N/bin`, or from `$LISTSTORE_POSTGRES_BINDIR`
/// (Debian's `postgresql` package installs them). As root, they run as the `postgres`
/// user through `runuser`, since `initdb` refuses root. The server listens on a Unix
/// socket in its folder (short: socket paths over 107 bytes fail) and, with
/// ``Options/acceptsPasswordsOverTCP``, on 127.0.0.1 with SCRAM password
/// authentication. Durability is off (`fsync`, `synchronous_commit`,
/// `full_page_writes`): a crash of the machine loses the test data, nothing else. The
/// folder is in memory, under `/dev/shm`, where that has a gigabyte free, else under
/// `/tmp`: creating a database creates some 300 files, which costs ten to twenty times
/// as much on a disk's file system as in memory (240 ms against 12 ms here).
public final class TestPostgresServer: Sendable {
  /// How a server is set up.
  public struct Options: Sendable, Hashable {
    /// Whether the server also listens on 127.0.0.1, where roles authenticate with a
    /// password (`scram-sha-256`); on the Unix socket every role is trusted.
    public var acceptsPasswordsOverTCP: Bool
    /// Where it listens for TCP, as PostgreSQL's `listen_addresses` (`127.0.0.1`, or
    /// `*` for every address of its network namespace, where any client address
    /// authenticates with a password).
    public var listenAddresses: String
    /// A network namespace (`ip netns`) to run the server in, as on another host; its
    /// Unix socket stays reachable from this one (a file).
    public var networkNamespace: String?
    /// More `postgresql.conf` settings, written after the test server's own (so they
    /// win), each value as PostgreSQL reads it: `["log_statement": "'all'"]`,
    /// `["shared_preload_libraries": "'pg_stat_statements'"]`.
    public var settings: [String: String]

    /// Creates options.
    /// - Parameters:
    ///   - acceptsPasswordsOverTCP: Whether to listen on TCP with password
    ///     authentication.
    ///   - listenAddresses: Where to listen for TCP.
    ///   - networkNamespace: A network namespace to run the server in.
    ///   - settings: More `postgresql.conf` settings.
    public init(
      acceptsPasswordsOverTCP: Bool = false, listenAddresses: String = "127.0.0.1",
      networkNamespace: String? = nil, settings: [String: String] = [:]
    ) {
      self.acceptsPasswordsOverTCP = acceptsPasswordsOverTCP
      self.listenAddresses = listenAddresses
      self.networkNamespace = networkNamespace
      self.settings = settings
    }

    /// The command prefix that runs a program in ``networkNamespace``.
    var namespacePrefix: [String] {
      networkNamespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? []
    }
  }

  /// A failure to set up or control the server, with the end of its logs.
  public struct Failure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    init(_ description: String) { self.description = description }
  }

  /// The command that installs what the tests need on Debian.
  public static let installCommand = "apt-get install -y postgresql libpq-dev"

  /// The superuser every server has; trusted on the Unix socket.
  public static let superuser = "postgres"

  /// How this server was set up.
  public let options: Options
  /// Its folder, short enough for socket paths: it holds the Unix socket, the data
  /// directory and the logs.
  public let folder: String
  /// The data directory (`initdb`'s `-D`).
  public let dataDirectory: String
  /// The port: the socket's name and, with TCP, the port on 127.0.0.1.
  public let port: Int
  /// How long this process's one `initdb` took (every server is a copy of its result).
  public let initdbDuration: Duration
  /// How long copying the `initdb` result into this server's folder took.
  public let copyDuration: Duration
  /// How long the first `pg_ctl start` took, until the server accepted connections.
  public let startDuration: Duration

  private let binaries: Binaries
  /// Starting, stopping and making templates, serialized.
  let state: Locked<State>
  /// Numbers the names made for databases and roles.
  let counter = Atomic<Int>(0)

  struct State {
    /// The templates made so far.
    var templates: Set<String> = []
    var isStopped = false
  }

  /// The socket's folder, for `host=` in connection strings.
  public var socketDirectory: String { folder }

  /// The server's log file.
  public var logFile: String { folder + "/server.log" }

  private var commandLog: String { folder + "/commands.log" }

  // MARK: - Starting and stopping

  private static let sharedServers = Locked<[Options: Result<TestPostgresServer, Failure>]>([:])

  /// The server this test process shares, started on first use (concurrent first
  /// callers wait for the one start) and stopped when the process exits.
  /// - Parameter options: Which shared server: one per distinct options.
  /// - Returns: The running server.
  /// - Throws: ``Failure`` when the server cannot be set up (naming the install
  ///   command when its programs are missing); every later call throws the same.
  public static func shared(_ options: Options = Options()) throws -> TestPostgresServer {
    try sharedServers.withLock { servers in
      if let existing = servers[options] { return try existing.get() }
      let result = Result { () throws(Failure) in try start(options) }
      servers[options] = result
      return try result.get()
    }
  }

  /// Starts a server of its own, for tests that restart or stop it; it is stopped by
  /// ``stop()``, or when the process exits.
  /// - Parameter options: How to set it up.
  /// - Returns: The running server.
  /// - Throws: ``Failure`` when `initdb` or `pg_ctl start` fails.
  public static func start(_ options: Options = Options()) throws(Failure) -> TestPostgresServer {
    let binaries = try discoveredBinaries.get()
    let pristine = try pristineCluster(binaries)
    let folder = try makeFolder(binaries)
    do {
      return try TestPostgresServer(
        options: options, folder: folder, binaries: binaries, pristine: pristine)
    } catch {
      // Keep the logs of a failed start for the message, then clean up.
      let logs =
        Subprocess.tail(of: folder + "/commands.log") + "\n"
        + Subprocess.tail(of: folder + "/server.log")
      try? FileManager.default.removeItem(atPath: folder)
      throw Failure(error.description + "\n--- logs\n" + logs)
    }
  }

  /// Where servers' folders go: `/dev/shm` (memory) when it is a writable folder with at
  /// least a gigabyte free, else `/tmp`.
  static let parentFolder: String = {
    var stats = statvfs()
    guard access("/dev/shm", W_OK) == 0, statvfs("/dev/shm", &stats) == 0,
      UInt64(stats.f_bavail) * UInt64(stats.f_frsize) >= 1 << 30
    else { return "/tmp" }
    return "/dev/shm"
  }()

  /// A new folder `lspg-PID-XXXXXX` in ``parentFolder``, owned by the server's user. The
  /// first one of this process first stops the servers and removes the folders that killed
  /// test processes left behind.
  private static func makeFolder(_ binaries: Binaries) throws(Failure) -> String {
    let owner = binaries.owner
    let folder = OwnedFolder.make(prefix: "lspg", in: parentFolder) { leftover in
      guard FileManager.default.fileExists(atPath: leftover + "/data/postmaster.pid") else {
        return
      }
      _ = try? Subprocess.run(
        binaries.command("pg_ctl", ["-w", "-D", leftover + "/data", "-m", "immediate", "stop"]),
        log: "/dev/null")
    }
    guard let folder else {
      throw Failure("cannot create a folder in \(parentFolder): errno \(errno)")
    }
    if let owner { chown(folder, owner.uid, owner.gid) }
    return folder
  }

  /// A data directory fresh from `initdb`, made once per process (removed at exit)
  /// and copied for every server: copying costs a fraction of running `initdb` again.
  private struct Pristine: Sendable {
    var dataDirectory: String
    var initdbDuration: Duration
  }

  private static let pristine = Locked<Result<Pristine, Failure>?>(nil)

  private static func pristineCluster(_ binaries: Binaries) throws(Failure) -> Pristine {
    try pristine.withLock { (made: inout Result<Pristine, Failure>?) throws(Failure) in
      if let made { return try made.get() }
      let result = Result { () throws(Failure) in
        let folder = try makeFolder(binaries)
        running.withLock { $0[folder] = [] }
        let clock = ContinuousClock()
        let started = clock.now
        try runChecked(
          binaries.command(
            "initdb",
            [
              "-D", folder + "/data", "-A", "trust", "-U", superuser, "--no-sync", "-E", "UTF8",
              "--locale=C.UTF-8",
            ]), log: folder + "/commands.log")
        return Pristine(
          dataDirectory: folder + "/data", initdbDuration: started.duration(to: clock.now))
      }
      made = result
      return try result.get()
    }
  }

  private init(options: Options, folder: String, binaries: Binaries, pristine: Pristine)
    throws(Failure)
  {
    self.options = options
    self.folder = folder
    self.binaries = binaries
    dataDirectory = folder + "/data"
    state = Locked(State())
    initdbDuration = pristine.initdbDuration
    let clock = ContinuousClock()
    var started = clock.now
    // `cp -a` keeps the owner (as root) and the 0700 mode the server insists on.
    try Self.runChecked(
      ["/bin/cp", "-a", pristine.dataDirectory, folder + "/data"], log: folder + "/commands.log")
    copyDuration = started.duration(to: clock.now)
    // Whatever was configured, a port the kernel just handed out is very likely free;
    // when another process took it meanwhile, the start fails and a new one is tried.
    var port = 0
    var startDuration = Duration.zero
    for attempt in 1...3 {
      port = try Self.freePort()
      try Self.configure(
        dataDirectory: folder + "/data", folder: folder, port: port, options: options,
        owner: binaries.owner)
      started = clock.now
      do {
        try Self.runChecked(
          options.namespacePrefix
            + binaries.command(
              "pg_ctl",
              ["-w", "-t", "120", "-D", folder + "/data", "-l", folder + "/server.log", "start"]),
          log: folder + "/commands.log")
        startDuration = started.duration(to: clock.now)
        break
      } catch {
        if attempt == 3 { throw error }
      }
    }
    self.port = port
    self.startDuration = startDuration
    Self.register(self)
  }

  /// Stops the server at once (immediate mode) and removes its folder. Idempotent;
  /// afterwards every operation fails.
  public func stop() {
    let wasRunning = state.withLock { state in
      let wasRunning = !state.isStopped
      state.isStopped = true
      return wasRunning
    }
    guard wasRunning else { return }
    _ = try? Subprocess.run(
      binaries.command("pg_ctl", ["-w", "-D", dataDirectory, "-m", "immediate", "stop"]),
      log: commandLog)
    try? FileManager.default.removeItem(atPath: folder)
    Self.deregister(self)
  }

  /// Stops the server (fast mode: sessions are terminated) and starts it again on the
  /// same data directory and port, as a crash-free server restart; connections must
  /// reconnect.
  /// - Parameter whileDown: Runs while the server is stopped, such as a test's check of
  ///   what its clients do meanwhile; the server starts again whatever it throws.
  /// - Throws: ``Failure`` when it does not come back, or what `whileDown` threw.
  public func restart(whileDown: () throws -> Void = {}) throws {
    try state.withLock { state in
      guard !state.isStopped else { throw Failure("the server was stopped") }
      try Self.runChecked(
        binaries.command("pg_ctl", ["-w", "-D", dataDirectory, "-m", "fast", "stop"]),
        log: commandLog)
      var failure: (any Error)?
      do { try whileDown() } catch { failure = error }
      try Self.runChecked(
        options.namespacePrefix
          + binaries.command(
            "pg_ctl", ["-w", "-t", "120", "-D", dataDirectory, "-l", logFile, "start"]),
        log: commandLog)
      if let failure { throw failure }
    }
  }

  /// The process id of the server's postmaster (from `postmaster.pid`).
  /// - Returns: The process id.
  /// - Throws: ``Failure`` when the server is not running.
  public func processID() throws -> Int32 {
    let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)
    guard let line = text?.split(separator: "\n").first, let pid = Int32(line) else {
      throw Failure("the server is not running (no postmaster.pid in \(dataDirectory))")
    }
    return pid
  }

  private static func runChecked(_ command: [String], log: String) throws(Failure) {
    let status: Int32
    do {
      status = try Subprocess.run(command, log: log)
    } catch {
      throw Failure("cannot run \(command.joined(separator: " ")): \(error)")
    }
    guard status == 0 else {
      throw Failure(
        "\(command.joined(separator: " ")) exited with status \(status):\n"
          + Subprocess.tail(of: log))
    }
  }

  /// Writes the settings and authentication rules into a fresh data directory.
  private static func configure(
    dataDirectory: String, folder: String, port: Int, options: Options,
    owner: (uid: uid_t, gid: gid_t)?
  ) throws(Failure) {
    let settings = """

      # Written by TestPostgresServer.
      port = \(port)
      unix_socket_directories = '\(folder)'
      listen_addresses = '\(options.acceptsPasswordsOverTCP ? options.listenAddresses : "")'
      max_connections = 200
      fsync = off
      synchronous_commit = off
      full_page_writes = off
      password_encryption = 'scram-sha-256'

      """
      + options.settings.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)\n" }.joined()
    var rules = "local all all trust\n"
    if options.acceptsPasswordsOverTCP {
      let clients = options.listenAddresses == "127.0.0.1" ? "127.0.0.1/32" : "0.0.0.0/0"
      rules += "host all all \(clients) scram-sha-256\n"
    }
    do {
      // The settings go in a file of their own, included last, so that a retry with
      // another port replaces them.
      let included = dataDirectory + "/liststore-tests.conf"
      try settings.write(toFile: included, atomically: false, encoding: .utf8)
      let mainFile = dataDirectory + "/postgresql.conf"
      let main = try String(contentsOfFile: mainFile, encoding: .utf8)
      if !main.contains("include = 'liststore-tests.conf'") {
        try (main + "\ninclude = 'liststore-tests.conf'\n").write(
          toFile: mainFile, atomically: false, encoding: .utf8)
      }
      try rules.write(toFile: dataDirectory + "/pg_hba.conf", atomically: false, encoding: .utf8)
      if let owner {
        for file in [included, mainFile, dataDirectory + "/pg_hba.conf"] {
          chown(file, owner.uid, owner.gid)
        }
      }
    } catch {
      throw Failure("cannot configure \(dataDirectory): \(error)")
    }
  }

  /// A TCP port on 127.0.0.1 that the kernel reports free.
  private static func freePort() throws(Failure) -> Int {
    let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketDescriptor >= 0 else { throw Failure("cannot create a socket: errno \(errno)") }
    defer { close(socketDescriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
        bind(socketDescriptor, address, length) == 0
          && getsockname(socketDescriptor, address, &length) == 0
      }
    }
    guard bound else { throw Failure("cannot find a free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  // MARK: - Stopping at exit

  /// The folder of every running server and of the `initdb` result, with the command
  /// that stops the server (none for the `initdb` result), for the `atexit` handler.
  private static let running = Locked<[String: [String]]>([:])

  private static let installExitHandler: Void = {
    atexit {
      let servers = TestPostgresServer.running.withLock { running in
        defer { running.removeAll() }
        return running
      }
      for (folder, stop) in servers {
        if !stop.isEmpty { Subprocess.runAtExit(stop) }
        try? FileManager.default.removeItem(atPath: folder)
      }
    }
  }()

  private static func register(_ server: TestPostgresServer) {
    _ = installExitHandler
    running.withLock {
      $0[server.folder] = server.binaries.command(
        "pg_ctl", ["-w", "-D", server.dataDirectory, "-m", "immediate", "stop"])
    }
  }

  private static func deregister(_ server: TestPostgresServer) {
    _ = running.withLock { $0.removeValue(forKey: server.folder) }
  }
}
