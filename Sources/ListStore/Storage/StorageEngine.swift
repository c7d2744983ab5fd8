import Synchronization

/// What a connection is for, when the change feed opens one of its own.
package enum ConnectionRole: Sendable {
  /// The feed's reads of the log and of the rows it names.
  case feed
  /// The feed's record of where this process has read (a short write now and then,
  /// that must never wait long for another writer).
  case bookkeeping
}

/// Whether the change feed can hear of other writers' commits.
public enum FeedConnectionStatus: Sendable, Hashable {
  /// Connected: commits arrive as they happen.
  case connected
  /// The connection to the server was lost; retrying. The string says why.
  case disconnected(String)
}

/// Something that tells the change feed when others may have committed; cancelled
/// when the feed goes away.
package protocol ChangeWatch: Sendable {
  /// Stops watching; no callback runs after this returns (unless called from one).
  func cancel()
  /// Says that this process is about to commit a write: a watch that would only hear of
  /// it (the commit brings this process's observers up to date itself) may rest a while.
  func noteOwnCommit()
}

extension ChangeWatch {
  package func noteOwnCommit() {}
}

/// One storage engine: where a repository's data lives and how to reach it. The
/// repository, the change feed and the observers are written once against this and
/// ``DatabaseConnection``; SQLite and PostgreSQL each implement it once.
package protocol StorageEngine: Sendable {
  /// Where the database is, for messages: a file path, or a URL without its password.
  var location: String { get }
  /// The engine's SQL where it differs.
  var dialect: SQLDialect { get }
  /// Opens the database — creating and migrating it as allowed — and returns the
  /// repository's own connection and whether it can write.
  func openRepository(
    busyTimeout: Duration, readOnly: Bool, createIfMissing: Bool, maximumPageCount: Int?
  ) throws(ListStoreError) -> (connection: any DatabaseConnection, isReadOnly: Bool)
  /// Opens another connection to the (already opened) database.
  func openConnection(for role: ConnectionRole, busyTimeout: Duration, readOnly: Bool)
    throws(ListStoreError) -> any DatabaseConnection
  /// Starts watching for commits by others: `onChange` is called, on a thread of the
  /// watch's own, with a connection it may use there to check the log cheaply; `status`
  /// hears when the engine loses or regains its connection. Commits that `ownCommits`
  /// (``DatabaseConnection/ownCommits`` of the repository's connection) tells apart as
  /// the repository's own may be reported with no connection: nothing to read, only
  /// progress to note. `nil` when it cannot watch.
  func watch(
    ownCommits: (any Sendable)?,
    onChange: @escaping @Sendable ((any DatabaseConnection)?) -> Void,
    status: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) -> (any ChangeWatch)?
  /// The error users should see for `error`, met on this database.
  func userError(_ error: any Error, busyTimeout: Duration) -> ListStoreError
  /// Whether `error` comes from the engine (rather than from a caller's closure).
  func isEngineError(_ error: any Error) -> Bool
  /// Of the readers recorded with these process ids (SQLite) or server sessions
  /// (PostgreSQL), those that are certainly gone.
  func goneReaders(_ ids: [Int64], db: any DatabaseConnection) throws -> Set<Int64>
  /// The id this process records as its reader's (a process id, or a server session).
  func readerProcessID(db: any DatabaseConnection) throws -> Int64
  /// Why other connections' commits cannot be seen through `db`, or `nil` when they can.
  func whyChangesCannotBeFollowed(through db: any DatabaseConnection) -> String?
}

extension StorageEngine {
  /// `nil`: an engine's connections see every commit unless it says otherwise.
  package func whyChangesCannotBeFollowed(through db: any DatabaseConnection) -> String? { nil }
}
