import FoundationEssentials
import SQLiteKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Opens ListStore database files: refuses what is not ours, creates what is missing,
/// and brings older schemas up to date with the embedded migrations.
enum SQLiteMigrator {
  /// `PRAGMA application_id` of every ListStore database: "LSTO".
  static let applicationID: Int64 = 0x4C53_544F

  /// The migrations compiled into this program, checked and sorted by number.
  static let migrations = MigrationOrder.ordered(Migration.embedded.map { ($0.fileName, $0.sql) })

  /// The schema version this program writes.
  static var latestVersion: Int { migrations.last?.version ?? 0 }

  /// Opens the database at `path`, creating its folders and file when missing (unless
  /// `createIfMissing` is false), and migrates it to ``latestVersion``.
  ///
  /// A file that is not a SQLite database, a database ListStore did not create, or
  /// one with a newer schema is refused without being modified.
  static func open(
    path: String, busyTimeout: Duration, readOnly forceReadOnly: Bool = false,
    createIfMissing: Bool = true
  ) throws(ListStoreError) -> Connection {
    let exists = try DatabaseFile.exists(at: path)
    if !exists {
      if forceReadOnly || !createIfMissing { throw .databaseNotFound(path: path) }
      try createParentFolder(of: path)
    } else {
      try checkHeader(path: path)
    }
    let readOnly = forceReadOnly || (exists && !isWritable(path: path))
    do {
      return try connect(path: path, readOnly: readOnly, busyTimeout: busyTimeout)
    } catch let error
      where !readOnly && exists && error.isReadOnlyOrCannotOpen
      && !isWritable(path: parentFolder(of: path).isEmpty ? "." : parentFolder(of: path))
    {
      // A file that may be written in a folder that may not: SQLite cannot make the
      // files it keeps beside a WAL database there, so it is read only.
      return try connect(path: path, readOnly: true, busyTimeout: busyTimeout)
    }
  }

  /// Opens the existing or new database file at `path`, checks and migrates its schema,
  /// and, unless `readOnly`, puts it in WAL mode.
  private static func connect(path: String, readOnly: Bool, busyTimeout: Duration)
    throws(ListStoreError) -> Connection
  {
    let connection: Connection
    do {
      connection = try openConnection(path: path, readOnly: readOnly, busyTimeout: busyTimeout)
    } catch let error as SQLiteError {
      throw .cannotOpen(path: path, reason: error.message)
    } catch {
      throw .cannotOpen(path: path, reason: "\(error)")
    }
    do {
      // One read transaction: its reads see one state, not a migration by another
      // opener committed between them (a schema without the application id yet).
      let version = try connection.transaction(.deferred) {
        try checkSchema(connection, path: path)
      }
      // An empty file that cannot be written (such as /proc/version) never becomes one.
      if version == 0 && (readOnly || connection.isReadOnly) {
        throw ListStoreError.notADatabase(path: path)
      }
      if version < latestVersion {
        if readOnly || connection.isReadOnly { throw ListStoreError.readOnly(path: path) }
        try migrate(connection, path: path)
      }
      if !readOnly && !connection.isReadOnly {
        try switchToWAL(connection, busyTimeout: busyTimeout)
        try connection.execute("PRAGMA synchronous = NORMAL")
      }
    } catch let error as ListStoreError {
      throw error
    } catch let error as SQLiteError {
      throw ListStoreError(error, path: path, busyTimeout: busyTimeout)
    } catch {
      throw .cannotOpen(path: path, reason: "\(error)")
    }
    return connection
  }

  /// Puts the database in WAL mode (a no-op once it is). Switching needs every other
  /// connection out of the file, and SQLite answers `SQLITE_BUSY` at once rather than
  /// through its busy handler while one is not (openers racing to create a database meet
  /// this): the switch is tried again, waiting a little longer each time, for up to
  /// `busyTimeout`.
  private static func switchToWAL(_ connection: Connection, busyTimeout: Duration) throws {
    let clock = ContinuousClock()
    let deadline = clock.now + busyTimeout
    var delay = Duration.milliseconds(1)
    while true {
      do {
        _ = try connection.scalarText("PRAGMA journal_mode = WAL")
        return
      } catch let error as SQLiteError where ResultCode.busy ~= error.code && clock.now < deadline {
        let (seconds, attoseconds) = delay.components
        usleep(UInt32(seconds) * 1_000_000 + UInt32(attoseconds / 1_000_000_000_000))
        delay = min(delay * 2, .milliseconds(50))
      }
    }
  }

  /// Opens a connection; a read-only WAL database whose folder cannot be written either
  /// (installed for everyone, or on read-only media) and that has no `-shm` file is opened
  /// immutable, the one way SQLite reads it there. A `-wal` file beside it would then be
  /// ignored, and the commits in it with it: that is refused instead.
  static func openConnection(path: String, readOnly: Bool, busyTimeout: Duration) throws
    -> Connection
  {
    do {
      let connection = try Connection(
        path: path, mode: readOnly ? .readOnly : .readWriteCreate, busyTimeout: busyTimeout)
      // Read something, so that a file that cannot be read fails here.
      if readOnly { _ = try connection.scalarInt64("SELECT count(*) FROM sqlite_schema") }
      return connection
    } catch let error as SQLiteError
      where readOnly && (.cannotOpen ~= error.code || .readOnly ~= error.code)
    {
      var info = stat()
      if stat(path + "-wal", &info) == 0 && info.st_size > 0 {
        throw SQLiteError(
          code: .cannotOpen,
          message:
            "its folder cannot be written, and its write-ahead log (\(path)-wal) cannot be "
            + "read without a \(path)-shm file there; ask its owner to run: sqlite3 \(path) "
            + "'PRAGMA wal_checkpoint(TRUNCATE)'")
      }
      return try Connection(path: path, mode: .immutable, busyTimeout: busyTimeout)
    }
  }

  /// Why another connection's commits cannot reach a connection: one opened immutable
  /// reads the file as it was, which is all there is to follow only on read-only media.
  static func whyChangesCannotBeFollowed(through connection: Connection) -> String? {
    guard connection.mode == .immutable else { return nil }
    var volume = statvfs()
    if statvfs(connection.path, &volume) == 0 && volume.f_flag & UInt(ST_RDONLY) != 0 {
      return nil  // Read-only media: nobody commits to the file.
    }
    return "it is a WAL database in a folder that cannot be written, so SQLite reads it "
      + "as a file that never changes (show, lists and export work); to watch it, let the "
      + "folder be written, or switch the file to a rollback journal, which readers follow "
      + "without writing beside it: sqlite3 \(connection.path) 'PRAGMA journal_mode=DELETE'"
  }

  /// The schema version of a ListStore database; 0 for an empty file.
  private static func checkSchema(_ connection: Connection, path: String) throws -> Int {
    let application = try connection.scalarInt64("PRAGMA application_id") ?? 0
    let version = Int(try connection.scalarInt64("PRAGMA user_version") ?? 0)
    if application == applicationID {
      if version > latestVersion {
        throw ListStoreError.schemaTooNew(path: path, version: version, supported: latestVersion)
      }
      return version
    }
    let objects = try connection.scalarInt64("SELECT count(*) FROM sqlite_schema") ?? 0
    guard application == 0, version == 0, objects == 0 else {
      throw ListStoreError.notAListStoreDatabase(path: path)
    }
    return 0
  }

  /// Applies every missing migration, each in its own transaction. The version is
  /// re-read inside the transaction, so concurrent openers migrate exactly once.
  ///
  /// Foreign keys are off meanwhile, as SQLite's procedure for rebuilding a table
  /// requires (dropping a table would otherwise cascade to the rows that refer to it).
  private static func migrate(_ connection: Connection, path: String) throws {
    try connection.execute("PRAGMA foreign_keys = OFF")
    defer { try? connection.execute("PRAGMA foreign_keys = ON") }
    for migration in migrations {
      try connection.transaction(.immediate) {
        let current = try checkSchema(connection, path: path)
        guard current < migration.version else { return }
        // A replica's migration writes nothing of its own to push: the outbox's triggers
        // (version 8) note nothing while `applying` is set.
        let applying = current >= 8
        if applying { try connection.execute("UPDATE replica_origin SET applying = 1") }
        try connection.execute(migration.sql)
        try dataStep(after: migration.version)?(connection)
        if applying { try connection.execute("UPDATE replica_origin SET applying = 0") }
        try connection.execute("PRAGMA user_version = \(migration.version)")
      }
    }
  }

  /// Work on the rows that a migration needs and SQL alone cannot do, run in the
  /// migration's transaction right after its SQL.
  private static func dataStep(after version: Int) -> ((Connection) throws -> Void)? {
    switch version {
    // Version 3 refuses malformed position keys from now on; rewrite those stored.
    case 3: { db in _ = try PositionRepair.run(db: SQLiteDatabase(db)) }
    default: nil
    }
  }

  private static func createParentFolder(of path: String) throws(ListStoreError) {
    let folder = parentFolder(of: path)
    guard !folder.isEmpty else { return }
    var info = stat()
    if stat(folder, &info) == 0 {
      if info.st_mode & S_IFMT != S_IFDIR {
        throw .cannotCreateFolder(path: folder, reason: "a file is in the way")
      }
      return
    }
    do {
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    } catch {
      throw .cannotCreateFolder(path: folder, reason: describe(error))
    }
  }

  static func parentFolder(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  /// Refuses, without modifying it, a non-empty file that does not start with the
  /// SQLite header.
  ///
  /// The header is read through SQLite's file layer, never with `open()` and `close()`
  /// of our own: closing any descriptor of a database file drops every POSIX lock this
  /// process holds on it, so a connection already open here would lose its locks and
  /// another process could checkpoint under it — a known way to corrupt a database.
  private static func checkHeader(path: String) throws(ListStoreError) {
    let header: [UInt8]
    do {
      header = try Connection.readStart(ofFileAt: path, count: 16)
    } catch {
      throw .cannotOpen(path: path, reason: error.message)
    }
    if header.isEmpty { return }  // An empty file becomes a new database.
    guard header == Array("SQLite format 3\0".utf8) else { throw .notADatabase(path: path) }
  }

  /// Whether the file may be written: some write permission bit is set (also for
  /// root, who could write anyway, so that a file marked read-only stays untouched),
  /// and the system grants write access.
  private static func isWritable(path: String) -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else { return false }
    return info.st_mode & 0o222 != 0 && access(path, W_OK) == 0
  }

  private static func describe(_ error: any Error) -> String {
    if let error = error as? CocoaError, let underlying = error.underlying as? POSIXError {
      return String(cString: strerror(underlying.code.rawValue))
    }
    return "\(error)"
  }
}

extension ListStoreError {
  /// Whether opening failed for lack of write access, or could not open at all.
  fileprivate var isReadOnlyOrCannotOpen: Bool {
    switch self {
    case .readOnly, .cannotOpen: true
    default: false
    }
  }

  /// Maps a SQLite failure on the database at `path` to the error users should see.
  init(_ error: SQLiteError, path: String, busyTimeout: Duration) {
    switch error.code {
    case .readOnly: self = .readOnly(path: path)
    case .full: self = .diskFull(path: path)
    case .ioError where error.message.contains("disk") || error.message.contains("full"):
      self = .diskFull(path: path)
    case .busy, .locked: self = .busy(path: path, timeout: busyTimeout)
    case .notADatabase: self = .notADatabase(path: path)
    case .corrupt: self = .damaged(path: path, detail: error.message)
    case .cannotOpen: self = .cannotOpen(path: path, reason: error.message)
    default: self = .sqlite(error)
    }
  }
}
