internal import CSQLite

extension Connection {
  /// How a transaction takes its locks.
  public enum TransactionKind: String, Sendable {
    /// `BEGIN DEFERRED`: locks are taken on first read or write.
    case deferred = "DEFERRED"
    /// `BEGIN IMMEDIATE`: the write lock is taken at once, waiting up to the busy
    /// timeout for other writers, so the transaction can never fail half-way with
    /// `SQLITE_BUSY` when it first writes.
    case immediate = "IMMEDIATE"
    /// `BEGIN EXCLUSIVE`: like immediate; in WAL mode the same.
    case exclusive = "EXCLUSIVE"
  }

  /// Runs `body` inside a transaction: committed when `body` returns, rolled back
  /// when it (or the commit) throws.
  ///
  /// Inside another transaction, `body` runs in a savepoint instead, so an inner
  /// failure undoes only the inner work.
  /// - Parameters:
  ///   - kind: How to begin; `.immediate` by default.
  ///   - body: The work to do atomically.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws, or ``SQLiteError`` from BEGIN or COMMIT.
  @discardableResult
  public func transaction<Result>(
    _ kind: TransactionKind = .immediate, _ body: () throws -> Result
  ) throws -> Result {
    if isInTransaction { return try savepoint(body) }
    // Prepared once per connection: BEGIN and COMMIT run on every write.
    try cachedStatement("BEGIN \(kind.rawValue) TRANSACTION").run()
    let result: Result
    do {
      result = try body()
      try cachedStatement("COMMIT TRANSACTION").run()
    } catch {
      rollbackIgnoringErrors()
      throw error
    }
    return result
  }

  /// Runs `body` inside a savepoint, released when `body` returns and rolled back
  /// when it throws.
  /// - Parameter body: The work to do atomically.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws, or ``SQLiteError`` from SQLite.
  @discardableResult
  public func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
    try execute("SAVEPOINT liststore")
    let result: Result
    do {
      result = try body()
    } catch {
      // Undo the inner work, then drop the savepoint; the outer transaction stays.
      try? execute("ROLLBACK TO SAVEPOINT liststore")
      try? execute("RELEASE SAVEPOINT liststore")
      throw error
    }
    try execute("RELEASE SAVEPOINT liststore")
    return result
  }

  private func rollbackIgnoringErrors() {
    // SQLite may already have rolled back (e.g. after SQLITE_FULL); then there is no
    // transaction left and ROLLBACK would fail, which is fine.
    if isInTransaction { _ = sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil) }
  }
}
