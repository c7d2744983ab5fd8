import SQLiteKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The SQLite engine: a database file, watched for other processes' commits through
/// the file system.
struct SQLiteEngine: StorageEngine {
  /// The database file.
  let path: String

  var location: String { path }
  var dialect: SQLDialect { SQLiteDatabase.dialect }

  func openRepository(
    busyTimeout: Duration, readOnly: Bool, createIfMissing: Bool, maximumPageCount: Int?
  ) throws(ListStoreError) -> (connection: any DatabaseConnection, isReadOnly: Bool) {
    let connection = try SQLiteMigrator.open(
      path: path, busyTimeout: busyTimeout, readOnly: readOnly, createIfMissing: createIfMissing)
    if let maximumPageCount {
      do {
        _ = try connection.scalarInt64("PRAGMA max_page_count = \(maximumPageCount)")
      } catch {
        throw ListStoreError.cannotOpen(path: path, reason: "\(error)")
      }
    }
    return (SQLiteDatabase(connection), connection.isReadOnly)
  }

  func openConnection(for role: ConnectionRole, busyTimeout: Duration, readOnly: Bool)
    throws(ListStoreError) -> any DatabaseConnection
  {
    do {
      switch role {
      case .feed:
        return SQLiteDatabase(
          try SQLiteMigrator.openConnection(
            path: path, readOnly: readOnly, busyTimeout: busyTimeout))
      case .bookkeeping:
        // A hint for pruning: never wait long for another writer's lock.
        return SQLiteDatabase(
          try Connection(path: path, mode: .readWrite, busyTimeout: .milliseconds(50)))
      }
    } catch {
      throw ListStoreError.cannotOpen(path: path, reason: "\(error)")
    }
  }

  func watch(
    ownCommits: (any Sendable)?,
    onChange: @escaping @Sendable ((any DatabaseConnection)?) -> Void,
    status: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) -> (any ChangeWatch)? {
    guard
      let probe = try? SQLiteMigrator.openConnection(
        path: path, readOnly: true, busyTimeout: .seconds(1))
    else { return nil }
    // Used only on the watcher's queue, one callback at a time.
    let database = UncheckedSendableBox(SQLiteDatabase(probe))
    return DatabaseWatcher(path: path) { onChange(database.value) }
  }

  func userError(_ error: any Error, busyTimeout: Duration) -> ListStoreError {
    ListStoreError(reading: error, path: path, busyTimeout: busyTimeout)
  }

  func isEngineError(_ error: any Error) -> Bool { error is SQLiteError }

  /// Every quiet reader: a live one renews its heartbeat several times within the time
  /// that makes it quiet. (A process id says nothing across PID namespaces, such as two
  /// containers sharing the file: the same number may be another process there.)
  func goneReaders(_ ids: [Int64], db: any DatabaseConnection) throws -> Set<Int64> {
    Set(ids)
  }

  func readerProcessID(db: any DatabaseConnection) throws -> Int64 { Int64(getpid()) }

  func whyChangesCannotBeFollowed(through db: any DatabaseConnection) -> String? {
    (db as? SQLiteDatabase).flatMap {
      SQLiteMigrator.whyChangesCannotBeFollowed(through: $0.connection)
    }
  }
}

extension DatabaseWatcher: ChangeWatch {}

/// A value handed to another thread that only ever touches it from there.
///
/// `@unchecked Sendable`: whoever makes one promises that `value` is used by one
/// thread at a time (here: the watcher's serial queue).
struct UncheckedSendableBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}
