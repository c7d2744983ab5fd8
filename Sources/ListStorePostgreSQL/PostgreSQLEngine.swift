import Dispatch
import FoundationEssentials
import ListStore
import PostgreSQLKit
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The PostgreSQL engine: a database on a server, reached through libpq, watched
/// for other clients' commits with `LISTEN` on a connection of its own.
struct PostgreSQLEngine: StorageEngine {
  /// The connection string as given (it may hold a password: never shown).
  let connectionString: String
  /// The connection string without its password, for messages.
  let location: String
  /// When a write's reads of the change log go with its `COMMIT`.
  let readsWithCommit: ReadsWithCommit

  /// When a write's reads of the change log go with its `COMMIT`, in one round trip
  /// (``PostgreSQLDatabase/sendWithCommit(_:)``).
  enum ReadsWithCommit: Sendable {
    /// When the server is reached over a network, not a Unix socket or the loopback
    /// interface. A round trip saved there is worth more than it costs: measured (B10 in
    /// BENCHMARKS.md), a write through a link adding 100 µs each way took 20 % less time,
    /// while on a local socket it took about 10 % more (libpq's pipeline mode, and the
    /// listener waking while the write still stages what it read).
    case overNetwork
    case always
    case never
  }

  /// How long after a notification its listener took for the repository's own it checks
  /// the log all the same (``Listener``); tests make it long, to see what else reads.
  let ownCommitCheck: Duration

  init(
    connectionString: String, readsWithCommit: ReadsWithCommit = .overNetwork,
    ownCommitCheck: Duration = Listener.idleCheck
  ) {
    self.connectionString = connectionString
    self.readsWithCommit = readsWithCommit
    self.ownCommitCheck = ownCommitCheck
    location = PGConnection.redactingPassword(in: connectionString)
  }

  var dialect: SQLDialect { PostgreSQLDatabase.dialect }

  /// The settings every ListStore session runs with: a writer waits `busyTimeout` for
  /// another's lock, then fails (55P03); a read-only repository never writes; and no
  /// query is compiled just in time (ListStore's queries touch few rows each, and the
  /// planner's guess of a large read, with stale statistics after a big import, once cost
  /// a change's reader a tenth of a second of compiling).
  static func sessionSetup(busyTimeout: Duration, readOnly: Bool) -> String {
    let milliseconds = max(
      1,
      busyTimeout.components.seconds * 1000
        + busyTimeout.components.attoseconds / 1_000_000_000_000_000)
    return "SET lock_timeout = \(milliseconds); SET jit = off"
      + (readOnly ? "; SET default_transaction_read_only = on" : "")
  }

  /// Connects, with the session settings every ListStore connection uses.
  func connect(busyTimeout: Duration, readOnly: Bool) throws(ListStoreError) -> PostgreSQLDatabase {
    do {
      let connection = try PGConnection(connectionString)
      let setup = Self.sessionSetup(busyTimeout: busyTimeout, readOnly: readOnly)
      try connection.execute(setup)
      return PostgreSQLDatabase(connection, sessionSetup: setup, readsWithCommit: readsWithCommit)
    } catch {
      throw userError(error, busyTimeout: busyTimeout)
    }
  }

  func openRepository(
    busyTimeout: Duration, readOnly: Bool, createIfMissing: Bool, maximumPageCount: Int?
  ) throws(ListStoreError) -> (connection: any DatabaseConnection, isReadOnly: Bool) {
    let database = try connect(busyTimeout: busyTimeout, readOnly: readOnly)
    try PostgreSQLMigrator.migrate(
      database.connection, location: location, readOnly: readOnly,
      createIfMissing: createIfMissing, busyTimeout: busyTimeout)
    return (database, readOnly)
  }

  func openConnection(for role: ConnectionRole, busyTimeout: Duration, readOnly: Bool)
    throws(ListStoreError) -> any DatabaseConnection
  {
    switch role {
    case .feed:
      return try connect(busyTimeout: busyTimeout, readOnly: readOnly)
    case .bookkeeping:
      return try connect(busyTimeout: .milliseconds(50), readOnly: false)
    }
  }

  func watch(
    ownCommits: (any Sendable)?,
    onChange: @escaping @Sendable ((any DatabaseConnection)?) -> Void,
    status: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) -> (any ChangeWatch)? {
    try? Listener(
      engine: self, ownSession: ownCommits as? ServerSession, onChange: onChange, status: status)
  }

  func isEngineError(_ error: any Error) -> Bool { error is PGError }

  func userError(_ error: any Error, busyTimeout: Duration) -> ListStoreError {
    switch error {
    case let error as ListStoreError: return error
    case let error as PGError:
      return Self.userError(error, location: location, busyTimeout: busyTimeout)
    default: return .server(location: location, message: "\(error)")
    }
  }

  /// The error users should see for `error`, in their words.
  static func userError(_ error: PGError, location: String, busyTimeout: Duration)
    -> ListStoreError
  {
    // One line, whatever libpq put in its message.
    let reason = error.message.split(whereSeparator: \.isNewline)
      .map { line in
        String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
      }
      .filter { !$0.isEmpty }.joined(separator: " ")
    switch error.kind {
    case .serverUnreachable: return .serverUnreachable(location: location, reason: reason)
    case .authenticationFailed
    where reason.contains("role \"") && reason.contains("does not exist"):
      // No password is involved: the user the location names (or the login's) is not one.
      return .server(
        location: location,
        message:
          "\(reason); create that role first (as the postgres user: createuser --superuser "
          + "NAME), or name a user that exists in the location (postgresql://USER@HOST/DATABASE)")
    case .authenticationFailed: return .authenticationFailed(location: location)
    case .databaseMissing:
      return .server(
        location: location,
        message:
          "\(reason); create it first (createdb): ListStore creates its tables, not the database")
    case .permissionDenied: return .permissionDenied(location: location, detail: reason)
    case .connectionLost, .tooManyConnections: return .connectionLost(location: location)
    case .readOnly: return .readOnly(path: location)
    case .diskFull: return .diskFull(path: location)
    default:
      if error.sqlState == "55P03" { return .busy(path: location, timeout: busyTimeout) }
      if reason.hasPrefix("ListStore: ") {
        return .server(location: location, message: String(reason.dropFirst(11)))
      }
      return .server(location: location, message: reason)
    }
  }

  func goneReaders(_ ids: [Int64], db: any DatabaseConnection) throws -> Set<Int64> {
    var alive = Set<Int64>()
    try db.prepared("SELECT pid FROM pg_stat_activity").forEachRow { alive.insert($0.int64(at: 0)) }
    return Set(ids.filter { !alive.contains($0) })
  }

  func readerProcessID(db: any DatabaseConnection) throws -> Int64 {
    try db.scalarInt64("SELECT pg_backend_pid()") ?? 0
  }
}
