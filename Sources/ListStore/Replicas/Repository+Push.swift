import FoundationEssentials

// Exactly-once application of a replica's writes (docs/replicas.md).

/// What a push did: one result per write, in order.
package struct PushOutcome: Sendable, Equatable {
  /// Each write's number and result; a write sent again gets its stored result.
  package var results: [(number: Int64, result: ReplicaResult)]
  /// The number of the last write applied from the replica.
  package var last: Int64
  /// The change log's position after the push.
  package var seq: Int64

  package static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.last == rhs.last && lhs.seq == rhs.seq
      && lhs.results.elementsEqual(rhs.results) { $0.number == $1.number && $0.result == $1.result }
  }
}

extension ReplicaResult {
  /// The result as the server keeps it and answers it: `{"n","seq"}` or
  /// `{"n","code","error"}`.
  package func json(number: Int64) -> String {
    switch self {
    case .applied(let seq): "{\"n\":\(number),\"seq\":\(seq)}"
    case .rejected(let rejection):
      "{\"n\":\(number),\"code\":\(JSONText.quote(rejection.code)),"
        + "\"error\":\(JSONText.quote(rejection.error))}"
    }
  }

  /// A result from its JSON text; `nil` when the text is not one.
  package init?(json: String) {
    struct Stored: Decodable {
      var seq: Int64?
      var code: String?
      var error: String?
    }
    guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(json.utf8)) else {
      return nil
    }
    if let seq = stored.seq {
      self = .applied(seq: seq)
    } else if let code = stored.code, let error = stored.error {
      self = .rejected(ReplicaRejection(code, error))
    } else {
      return nil
    }
  }
}

extension Repository {
  /// Applies a replica's push exactly once, in one transaction under a lock on the
  /// replica's record: writes the server applied already are answered with their stored
  /// results, the next ones are applied (or rejected) and their results stored, and the
  /// results the replica acknowledged (`ackedThrough`) are forgotten.
  ///
  /// - Parameters:
  ///   - replica: The replica's number.
  ///   - ackedThrough: The last write whose result the replica has kept.
  ///   - writes: Its writes, numbered one after another.
  ///   - mayWrite: Whether the pushing token may write the list of a name.
  /// - Returns: One result per write.
  /// - Throws: ``PushRefusal`` (nothing applied), or what the database throws.
  package func applyPush(
    replica: Int64, ackedThrough: Int64, writes: [ReplicaWrite], mayWrite: (String) -> Bool
  ) throws -> PushOutcome {
    for (earlier, later) in zip(writes, writes.dropFirst())
    where later.number != earlier.number &+ 1 {
      throw PushRefusal.outOfOrder(last: earlier.number, got: later.number)
    }
    do {
      return try transaction { db in
        // The lock: BEGIN IMMEDIATE holds SQLite's; PostgreSQL's is the row's.
        let lock = db.dialect.engine == .postgresql ? " FOR UPDATE" : ""
        let statement = try db.cached(
          "SELECT last_write, acked_through FROM replicas WHERE id = ?" + lock)
        try statement.bind(replica, at: 1)
        guard try statement.step() else {
          statement.reset()
          throw PushRefusal.unknownReplica(replica)
        }
        var (last, acked) = (statement.int64(at: 0), statement.int64(at: 1))
        statement.reset()
        guard ackedThrough <= last else {
          throw PushRefusal.serverBehind(last: last, ackedThrough: ackedThrough)
        }
        if ackedThrough > acked {
          try db.run(
            "DELETE FROM replica_results WHERE replica = ? AND n <= ?", replica, ackedThrough)
          try db.run("UPDATE replicas SET acked_through = ? WHERE id = ?", ackedThrough, replica)
          acked = ackedThrough
        }
        if let first = writes.first, first.number > last + 1 {
          throw PushRefusal.outOfOrder(last: last, got: first.number)
        }
        let sqlite = db.dialect.engine == .sqlite
        if sqlite { try db.run("UPDATE replica_origin SET applying = 1 WHERE id = 1") }
        return try withoutActuallyEscaping(mayWrite) { mayWrite in
          let applier = PushApplier(db: db, replica: replica, mayWrite: mayWrite)
          var results: [(number: Int64, result: ReplicaResult)] = []
          for write in writes {
            // A write acknowledged, or sent again with other content: a copy of the file.
            guard write.number > acked else { throw PushRefusal.forked(number: write.number) }
            if write.number <= last {
              let statement = try db.cached(
                "SELECT digest, result FROM replica_results WHERE replica = ? AND n = ?")
              try statement.bind(replica, at: 1)
              try statement.bind(write.number, at: 2)
              defer { statement.reset() }
              guard try statement.step(), statement.string(at: 0) == write.digest,
                let stored = ReplicaResult(json: statement.string(at: 1))
              else { throw PushRefusal.forked(number: write.number) }
              results.append((write.number, stored))
              continue
            }
            let result: ReplicaResult
            do {
              try db.savepoint { for intent in write.intents { try applier.apply(intent) } }
              result = .applied(seq: try ChangeLog.lastSeq(db: db))
            } catch let rejection as ReplicaRejection {
              result = .rejected(rejection)
            } catch let error as PositionKey.InvalidKey {
              result = .rejected(ReplicaRejection("invalid", "\(error)"))
            }
            try db.run(
              "INSERT INTO replica_results(replica, n, digest, result) VALUES (?, ?, ?, ?)",
              replica, write.number, write.digest, result.json(number: write.number))
            results.append((write.number, result))
            last = write.number
          }
          try db.run("UPDATE replicas SET last_write = ? WHERE id = ?", last, replica)
          if sqlite { try db.run("UPDATE replica_origin SET applying = 0 WHERE id = 1") }
          return PushOutcome(results: results, last: last, seq: try ChangeLog.lastSeq(db: db))
        }
      }
    } catch let refusal as PushRefusal {
      throw refusal
    } catch {
      throw mapped(error)
    }
  }
}
