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
  ///
  /// Results come back in order, each command's followed by a `NULL`: a failure makes the
  /// commands after it `PGRES_PIPELINE_ABORTED`, and the sync's result ends the pipeline.
  func pipelined(_ sql: String, _ encoded: EncodedParameters, prepared: Bool) throws -> PGResult? {
    guard let enter = pq.PQenterPipelineMode, let sync = pq.PQpipelineSync,
      let sendPrepare = pq.PQsendPrepare, let sendParams = pq.PQsendQueryParams,
      let sendPrepared = pq.PQsendQueryPrepared, encoded.count <= Self.parameterLimit
    else {
      try sendDeferredBegin()
      return nil
    }
    let opening = deferredBegin
    deferredBegin.removeAll()
    guard enter(handle) == 1 else { throw error(from: nil, sql: sql) }
    // What was sent, in order: each opening statement, the PREPARE when the statement is
    // new on this session, then the statement.
    var commands: [String] = []
    var sent = true
    for statement in opening where sent {
      sent = sendParams(handle, statement, 0, nil, nil, nil, nil, 0) == 1
      if sent { commands.append(statement) }
    }
    var preparing: (name: String, index: Int)?
    if sent && prepared {
      let name = preparedStatements[sql] ?? newStatementName()
      if preparedStatements[sql] == nil {
        sent = sendPrepare(handle, name, sql, 0, nil) == 1
        if sent {
          preparing = (name, commands.count)
          commands.append(sql)
        }
      }
      if sent {
        sent =
          encoded.withUnsafePointers { count, values, lengths, formats in
            sendPrepared(handle, name, count, values, lengths, formats, 0)
          } == 1
      }
    } else if sent {
      sent =
        encoded.withUnsafePointers { count, values, lengths, formats in
          sendParams(handle, sql, count, nil, values, lengths, formats, 0)
        } == 1
    }
    // libpq refused a command before sending it: what it did send still needs the sync,
    // without which the server answers nothing.
    let refusal = sent ? nil : error(from: nil, sql: sql)
    if sent { commands.append(sql) }
    guard sync(handle) == 1 else {
      // The connection is gone: nothing comes back. The next transaction resets it.
      try leavePipeline()
      throw refusal ?? error(from: nil, sql: sql)
    }
    var failure = refusal
    var last: PGResult?
    for (index, command) in commands.enumerated() {
      guard let result = pq.PQgetResult(handle) else {
        failure = failure ?? error(from: nil, sql: command)
        break
      }
      let status = pq.PQresultStatus(result)
      if status == PGRES_PIPELINE_ABORTED || failure != nil {
        pq.PQclear(result)
      } else {
        do {
          let checked = try checked(
            result, sql: command, accepting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK])
          if index == commands.count - 1, refusal == nil {
            last = checked
          } else if let preparing, preparing.index == index {
            preparedStatements[sql] = preparing.name
          }
        } catch let error as PGError {
          failure = error
        }
      }
      // The end of this command's results.
      while let extra = pq.PQgetResult(handle) { pq.PQclear(extra) }
    }
    // The sync's result.
    if let result = pq.PQgetResult(handle) {
      if pq.PQresultStatus(result) != PGRES_PIPELINE_SYNC, failure == nil {
        failure = error(from: result, sql: sql)
      }
      pq.PQclear(result)
    }
    try leavePipeline()
    if let failure { throw failure }
    guard let last else { throw error(from: nil, sql: sql) }
    return last
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
