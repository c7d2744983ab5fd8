internal import CLibPQ

extension PGConnection {
  // MARK: - A transaction's opening sent with its first statement

  /// Opens a transaction with `statements` (each a single statement without parameters,
  /// not a script of several; the first a `BEGIN`), sent with the connection's next
  /// statement rather than now: in the same round trip as it, through libpq's pipeline
  /// mode, when that next statement is a ``query(_:parameters:prepared:)`` (or
  /// ``run(_:_:)``, the scalar helpers) and libpq is version 14 or later; otherwise on their
  /// own just before it.
  ///
  /// A transaction's first round trip then carries its first statement too. Until they
  /// are sent, ``isInTransaction`` is `true`; ``discardDeferredBegin()`` forgets them (a
  /// transaction that ran nothing has nothing to roll back). An error from them is thrown
  /// by that next statement, which then does not run.
  /// - Parameter statements: The statements, in order.
  /// - Throws: ``PGError`` (`.misuse`) when the connection is closed, or when a
  ///   transaction's opening is already waiting.
  public func beginWithNextStatement(_ statements: [String]) throws {
    try checkOpen()
    guard deferredBegin.isEmpty else {
      throw PGError(kind: .misuse, message: "a transaction's opening is already waiting")
    }
    deferredBegin = statements
  }

  /// Forgets the statements ``beginWithNextStatement(_:)`` queued, when they were not sent;
  /// returns whether there were any.
  @discardableResult
  public func discardDeferredBegin() -> Bool {
    defer { deferredBegin.removeAll() }
    return !deferredBegin.isEmpty
  }

  /// Sends the statements ``beginWithNextStatement(_:)`` queued, on their own (one round
  /// trip for all of them), if any are waiting.
  func sendDeferredBegin() throws {
    guard !deferredBegin.isEmpty else { return }
    let script = deferredBegin.joined(separator: "; ")
    deferredBegin.removeAll()
    try execute(script)
  }

  /// The most parameters one statement can have (the protocol counts them in 16 bits).
  static let parameterLimit = 65_535

  /// Runs `sql` after the queued opening statements, all in one round trip (pipeline
  /// mode); `nil` when libpq has no pipeline mode, or when libpq would refuse `sql` before
  /// sending it (too many parameters): the opening statements are then sent on their own
  /// and the caller runs `sql` as usual.
  func pipelined(_ sql: String, _ encoded: EncodedParameters, prepared: Bool) throws -> PGResult? {
    let command = PipelineCommand(sql: sql, encoded: encoded, prepared: prepared)
    guard let results = try runPipeline([command]) else {
      try sendDeferredBegin()
      return nil
    }
    // The opening's failure first: the statement did not run then.
    for result in results { _ = try result.get() }
    guard let last = results.last else { throw error(from: nil, sql: sql) }
    return try last.get()
  }

  // MARK: - Reads sent with the COMMIT that follows them

  /// Runs `queries` (each prepared once per session, as ``query(_:parameters:prepared:)``
  /// does), then `COMMIT`, all in one round trip through libpq's pipeline mode, after a
  /// transaction's opening if one is still queued: reads whose results are wanted only
  /// if the transaction commits cost no round trip of their own.
  ///
  /// A failing query aborts the transaction: the queries after it and the `COMMIT` do not
  /// run, and the transaction is left open for a `ROLLBACK`.
  /// - Parameter queries: The statements and their parameters, in order.
  /// - Returns: Each query's rows or error, and the commit's outcome (the first failure's
  ///   error when something failed); `nil` when libpq has no pipeline mode or would
  ///   refuse a query (too many parameters): nothing was sent then.
  /// - Throws: ``PGError`` when the connection is closed, or a query's parameters cannot be
  ///   sent (text with a NUL character).
  public func queriesThenCommit(_ queries: [(sql: String, parameters: [any PGBindable])]) throws
    -> (results: [Result<PGResult, PGError>], commit: Result<Void, PGError>)?
  {
    try checkOpen("COMMIT")
    var commands = try queries.map { query in
      PipelineCommand(
        sql: query.sql, encoded: try EncodedParameters(query.parameters, sql: query.sql),
        prepared: true)
    }
    commands.append(PipelineCommand(sql: "COMMIT", encoded: nil, prepared: false))
    let openings = deferredBegin.count
    guard var results = try runPipeline(commands) else { return nil }
    let opening = results.prefix(openings)
    results.removeFirst(openings)
    let committed = results.removeLast()
    let firstFailure = (opening + results).lazy.compactMap { result -> PGError? in
      guard case .failure(let error) = result else { return nil }
      return error
    }.first
    let commit: Result<Void, PGError>
    switch (firstFailure, committed) {
    case (let failure?, _): commit = .failure(failure)
    case (nil, .failure(let error)): commit = .failure(error)
    case (nil, .success(let result)) where result.commandTag == "ROLLBACK":
      commit = .failure(
        PGError(
          kind: .transactionAborted,
          message: "a statement inside the transaction failed; COMMIT rolled the transaction back"))
    case (nil, .success): commit = .success(())
    }
    return (results, commit)
  }

  /// One command of a pipeline: without parameters (`encoded` `nil`), it is sent as it is.
  struct PipelineCommand {
    var sql: String
    var encoded: EncodedParameters?
    var prepared: Bool
  }

  /// Sends the queued opening statements and `commands` in one pipeline with one sync,
  /// and reads their results in order: a failure makes the commands after it
  /// `PGRES_PIPELINE_ABORTED`, which come back failed with that first failure's error.
  /// - Returns: One result per opening statement and command, in order; `nil` when libpq
  ///   has no pipeline mode, or would refuse a command (too many parameters): nothing was
  ///   sent, and the opening is still queued.
  func runPipeline(_ commands: [PipelineCommand]) throws -> [Result<PGResult, PGError>]? {
    guard let enter = pq.PQenterPipelineMode, let sync = pq.PQpipelineSync,
      let sendPrepare = pq.PQsendPrepare, let sendParams = pq.PQsendQueryParams,
      let sendPrepared = pq.PQsendQueryPrepared,
      commands.allSatisfy({ ($0.encoded?.count ?? 0) <= Self.parameterLimit })
    else { return nil }
    let opening = deferredBegin.map { PipelineCommand(sql: $0, encoded: nil, prepared: false) }
    deferredBegin.removeAll()
    guard enter(handle) == 1 else { throw error(from: nil, sql: commands.first?.sql) }
    // What was sent, in order: for each command, the PREPARE when it is new on this
    // session (with the name it gets), then the command; `owner`: the command's index.
    var sent: [(sql: String, preparing: String?, owner: Int)] = []
    var refusal: PGError?
    for (index, command) in (opening + commands).enumerated() {
      let encoded = try command.encoded ?? EncodedParameters([], sql: command.sql)
      var ok = true
      if command.prepared {
        let known = preparedStatements[command.sql]
        let name = known ?? newStatementName()
        if known == nil {
          ok = sendPrepare(handle, name, command.sql, 0, nil) == 1
          if ok { sent.append((command.sql, name, index)) }
        }
        ok =
          ok
          && encoded.withUnsafePointers { count, values, lengths, formats in
            sendPrepared(handle, name, count, values, lengths, formats, 0)
          } == 1
      } else {
        ok =
          encoded.withUnsafePointers { count, values, lengths, formats in
            sendParams(handle, command.sql, count, nil, values, lengths, formats, 0)
          } == 1
      }
      guard ok else {
        refusal = error(from: nil, sql: command.sql)
        break
      }
      sent.append((command.sql, nil, index))
    }
    // libpq refused a command before sending it: what it did send still needs the sync,
    // without which the server answers nothing.
    guard sync(handle) == 1 else {
      // The connection is gone: nothing comes back. The next transaction resets it.
      try leavePipeline()
      throw refusal ?? error(from: nil, sql: commands.first?.sql)
    }
    var results: [Result<PGResult, PGError>?] = Array(
      repeating: nil, count: opening.count + commands.count)
    // The first failure: the commands it aborted fail with it, as a statement run alone
    // after it would have (and a caller reading one of them learns the cause).
    var failure: PGError?
    for command in sent {
      guard let result = pq.PQgetResult(handle) else {
        if failure == nil { failure = error(from: nil, sql: command.sql) }
        break
      }
      if pq.PQresultStatus(result) == PGRES_PIPELINE_ABORTED || failure != nil {
        // (Left without a result: it fails with what stopped it, below.)
        pq.PQclear(result)
      } else {
        do {
          let checked = try checked(
            result, sql: command.sql, accepting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK])
          if let name = command.preparing {
            preparedStatements[command.sql] = name
          } else {
            results[command.owner] = .success(checked)
          }
        } catch let error as PGError {
          // (A failed PREPARE is its command's failure.)
          failure = error
          results[command.owner] = .failure(error)
        }
      }
      // The end of this command's results.
      while let extra = pq.PQgetResult(handle) { pq.PQclear(extra) }
    }
    // The sync's result.
    if let result = pq.PQgetResult(handle) {
      if pq.PQresultStatus(result) != PGRES_PIPELINE_SYNC, failure == nil, refusal == nil {
        let failed = error(from: result, sql: commands.last?.sql)
        results = results.map { _ in .failure(failed) }
      }
      pq.PQclear(result)
    }
    // Commands not run (after a failure, or not sent) fail with what stopped them.
    let stopped =
      failure ?? refusal
      ?? PGError(kind: .transactionAborted, message: "not run: the round trip was cut short")
    try leavePipeline()
    return results.map { $0 ?? .failure(stopped) }
  }

  /// Leaves pipeline mode, reading any results still pending. A lost connection stays in
  /// it until ``reset()`` (which the next transaction of a repository makes), which leaves
  /// it; a connection that is up but cannot leave (a pipeline libpq cannot finish) is reset
  /// now, since no statement could run on it any more, and the error says so.
  private func leavePipeline() throws {
    guard let exit = pq.PQexitPipelineMode else { return }
    var reads = 0
    while exit(handle) != 1 {
      guard pq.PQstatus(handle) == CONNECTION_OK else { return }
      guard reads < 64 else {
        try? reset()
        throw PGError(
          kind: .connectionLost,
          message: "the connection could not leave pipeline mode and was opened again")
      }
      if let result = pq.PQgetResult(handle) { pq.PQclear(result) }
      reads += 1
    }
  }
}
