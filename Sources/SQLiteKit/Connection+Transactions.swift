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
    try begin(kind)
    let result: Result
    do {
      result = try body()
      try commit()
    } catch {
      rollback()
      throw error
    }
    return result
  }

  /// Begins a transaction; pair it with ``commit()`` or ``rollback()``. Prefer
  /// ``transaction(_:_:)``, which pairs them itself.
  /// - Parameter kind: How to begin.
  /// - Throws: ``SQLiteError`` (`SQLITE_BUSY` past the busy timeout, for one).
  public func begin(_ kind: TransactionKind = .immediate) throws {
    switch kind {
    case .deferred: try runTransactionStatement(0, "BEGIN DEFERRED TRANSACTION")
    case .immediate: try runTransactionStatement(1, "BEGIN IMMEDIATE TRANSACTION")
    case .exclusive: try runTransactionStatement(2, "BEGIN EXCLUSIVE TRANSACTION")
    }
  }

  /// Commits the transaction that ``begin(_:)`` started.
  /// - Throws: ``SQLiteError``; the transaction is then still open (or was rolled back
  ///   by SQLite), and ``rollback()`` ends it.
  public func commit() throws {
    try runTransactionStatement(3, "COMMIT TRANSACTION")
  }

  /// Runs `sql`, kept prepared in ``transactionStatements`` at `slot`.
  private func runTransactionStatement(_ slot: Int, _ sql: String) throws {
    if slot < transactionStatements.count, let statement = transactionStatements[slot] {
      return try statement.run()
    }
    let statement = try cachedStatement(sql)
    if slot < transactionStatements.count { transactionStatements[slot] = statement }
    try statement.run()
  }

  /// Rolls back the transaction under way, if any; never fails.
  public func rollback() {
    rollbackIgnoringErrors()
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
