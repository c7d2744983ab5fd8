internal import CLibPQ

extension PGConnection {
  /// How isolated a transaction is from concurrent ones.
  public enum IsolationLevel: String, Sendable, CaseIterable {
    /// Each statement sees what was committed before it began (PostgreSQL's default).
    case readCommitted = "READ COMMITTED"
    /// Every statement sees the snapshot taken at the transaction's first statement; a
    /// write that conflicts with a concurrent commit fails with `.serializationFailure`.
    case repeatableRead = "REPEATABLE READ"
    /// As if transactions ran one after another; conflicts fail with
    /// `.serializationFailure`.
    case serializable = "SERIALIZABLE"
  }

  /// Runs `body` inside a transaction: committed when `body` returns, rolled back when
  /// it (or the commit) throws.
  ///
  /// Inside another transaction, `body` runs in a savepoint instead, so an inner
  /// failure undoes only the inner work; the outer transaction's isolation level
  /// applies. A body that catches a failed statement's error and returns normally
  /// cannot commit (PostgreSQL aborted the transaction): it is rolled back and
  /// ``PGError/Kind/transactionAborted`` is thrown.
  /// - Parameters:
  ///   - isolation: The isolation level; read committed when `nil`. A nested call may
  ///     not ask for one: that is a programmer error, which traps.
  ///   - body: The work to do atomically.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws, or ``PGError`` from BEGIN or COMMIT (such as
  ///   `.serializationFailure` at commit).
  @discardableResult
  public func transaction<Result>(
    _ isolation: IsolationLevel? = nil, _ body: () throws -> Result
  ) throws -> Result {
    try checkOpen()
    if transactionDepth > 0 || isInTransaction {
      precondition(
        isolation == nil, "a nested transaction cannot choose its isolation level")
      return try savepoint(body)
    }
    try execute("BEGIN ISOLATION LEVEL " + (isolation ?? .readCommitted).rawValue)
    return try nested(
      body, what: "the transaction", undone: "the transaction was rolled back",
      end: { try self.commit() }, undo: { self.rollbackIgnoringErrors() })
  }

  /// Commits the transaction open on this connection.
  ///
  /// PostgreSQL ends a transaction that a failed statement aborted with a rollback, even
  /// when asked to commit it, and answers `COMMIT` with success (the command tag
  /// `ROLLBACK`): this throws ``PGError/Kind/transactionAborted`` then, so that work the
  /// server undid is never taken for work stored.
  /// - Throws: ``PGError`` when the commit fails, or rolled the transaction back.
  public func commit() throws {
    try checkOpen("COMMIT")
    try sendDeferredBegin()
    let result = try checked(
      pq.PQexec(handle, "COMMIT"), sql: "COMMIT", accepting: [PGRES_COMMAND_OK])
    if result.commandTag == "ROLLBACK" {
      throw PGError(
        kind: .transactionAborted,
        message: "a statement inside the transaction failed; COMMIT rolled the transaction back")
    }
  }

  /// Runs `body` inside a savepoint of the open transaction: released when `body`
  /// returns, rolled back to (undoing only `body`'s work) when it throws.
  /// - Parameter body: The work to do atomically.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws, or ``PGError`` from the server.
  @discardableResult
  public func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
    try checkOpen()
    let name = "liststore_\(transactionDepth)"
    try execute("SAVEPOINT " + name)
    return try nested(
      body, what: "the savepoint", undone: "the savepoint was rolled back",
      end: { try self.execute("RELEASE SAVEPOINT " + name) },
      undo: {
        // Undo the inner work, then drop the savepoint; the outer transaction goes on.
        guard self.isConnected else { return }
        try? self.execute("ROLLBACK TO SAVEPOINT " + name)
        try? self.execute("RELEASE SAVEPOINT " + name)
      })
  }

  /// Runs `body` one level deeper in the transaction just begun (by `BEGIN` or `SAVEPOINT`):
  /// ended by `end` when `body` returns and nothing failed, undone by `undo` when `body` (or
  /// `end`) throws, or when a statement failed inside it and its error was caught.
  private func nested<Result>(
    _ body: () throws -> Result, what: String, undone: String, end: () throws -> Void,
    undo: () -> Void
  ) throws -> Result {
    transactionDepth += 1
    // `reset()` inside the body sets the depth to 0: never go below it.
    defer { transactionDepth = max(0, transactionDepth - 1) }
    do {
      let result = try body()
      if isTransactionAborted {
        throw PGError(
          kind: .transactionAborted,
          message: "a statement inside \(what) failed and its error was caught; \(undone)")
      }
      try end()
      return result
    } catch {
      undo()
      throw error
    }
  }

  private func rollbackIgnoringErrors() {
    // An opening never sent opened nothing.
    if discardDeferredBegin() { return }
    // A failed COMMIT has already ended the transaction, and a lost connection has none
    // left: then there is nothing to roll back.
    guard isConnected, isInTransaction else { return }
    try? execute("ROLLBACK")
  }
}
