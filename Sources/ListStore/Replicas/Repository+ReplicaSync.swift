import FoundationEssentials

// The replica's side of a sync, on its file (docs/replicas.md): what it pushes, what
// became of it, and what it pulled, applied under its pending writes.

/// A replica's record of itself.
package struct ReplicaRecord: Sendable, Equatable {
  /// The server's URL.
  package var server: String
  /// Its number on the server: the origin of its ids (0 for a read-only replica).
  package var number: Int64
  /// The ids of the lists it follows; `nil` for every list its token may read.
  package var lists: [Int64]?
  /// The server's position its confirmed state is at.
  package var seq: Int64
  /// The last write whose result it kept.
  package var ackedThrough: Int64
  /// Whether its token may only read.
  package var readOnly: Bool
}

/// A write of the outbox, as pushed.
package struct OutboxWrite: Sendable, Equatable {
  package var number: Int64
  package var digest: String
  package var protocolVersion: Int64
  /// The intents, a JSON array.
  package var ops: String

  /// The write as the server reads it.
  /// - Throws: ``ReplicaWire/Failure`` when the stored intents do not read.
  package func decoded() throws -> ReplicaWrite {
    let bytes = Array(json.utf8)
    let node: JSONSyntax.Node
    do {
      node = try JSONSyntax.parse(bytes)
    } catch {
      throw ReplicaWire.Failure(message: "write \(number): \(error.message)")
    }
    return try ReplicaWire.write(
      node, in: bytes, at: "write \(number)", protocolVersion: protocolVersion)
  }

  /// `{"n", "digest", "protocol", "ops"}`.
  package var json: String {
    "{\"n\":\(number),\"digest\":\(JSONText.quote(digest)),\"protocol\":\(protocolVersion),"
      + "\"ops\":\(ops)}"
  }
}

/// A write the server rejected, as the replica records and publishes it.
package struct RejectedWrite: Sendable, Equatable {
  package var number: Int64
  package var code: String
  package var error: String
  /// The write's intents, a JSON array.
  package var ops: String
}

extension Repository {
  /// Makes this file a replica of `server`: its record, and its own origin of ids.
  package func makeReplica(
    server: String, number: Int64, lists: [Int64]?, seq: Int64, readOnly: Bool
  ) throws(ListStoreError) {
    try write { db in
      try db.run(
        "INSERT INTO replica(id, server, number, lists, seq, read_only) VALUES (1, ?, ?, ?, ?, ?)",
        server, number, lists.map { "[" + $0.map(String.init).joined(separator: ",") + "]" }, seq,
        readOnly ? 1 : 0)
      if number > 0 { try db.run("UPDATE replica_origin SET origin = ? WHERE id = 1", number) }
      try ReplicaOutbox.createTriggers(db: db)
    }
  }

  /// The file's replica record; `nil` for a file that is not a replica's.
  package func replicaRecord() throws(ListStoreError) -> ReplicaRecord? {
    // A replica is a SQLite file.
    guard engine.dialect.engine == .sqlite else { return nil }
    return try read { db in
      let statement = try db.cached(
        "SELECT server, number, lists, seq, acked_through, read_only FROM replica WHERE id = 1")
      defer { statement.reset() }
      guard try statement.step() else { return nil }
      let lists = statement.optionalString(at: 2).map(Self.listIDs)
      return ReplicaRecord(
        server: statement.string(at: 0), number: statement.int64(at: 1), lists: lists,
        seq: statement.int64(at: 3), ackedThrough: statement.int64(at: 4),
        readOnly: statement.int64(at: 5) == 1)
    }
  }

  /// The writes the server has not answered yet, oldest first (another client's last
  /// commits closed into a write first).
  package func outboxToPush() throws(ListStoreError) -> [OutboxWrite] {
    try write { db in
      var writes: [OutboxWrite] = []
      let statement = try db.cached(
        "SELECT n, digest, protocol, ops FROM outbox WHERE applied_at IS NULL ORDER BY n")
      try statement.forEachRow {
        writes.append(
          OutboxWrite(
            number: $0.int64(at: 0), digest: $0.string(at: 1), protocolVersion: $0.int64(at: 2),
            ops: $0.string(at: 3)))
      }
      return writes
    }
  }

  /// Records the server's results: an applied write stays, replayed, until the replica
  /// pulled its seq; a rejected one leaves the outbox (kept among the last 1,000
  /// rejections), and its effect goes with the next pull.
  /// - Returns: The rejected writes, to publish.
  @discardableResult
  package func recordPushResults(
    _ results: [(number: Int64, result: ReplicaResult)], at time: String
  ) throws(ListStoreError) -> [RejectedWrite] {
    try write { db in
      var rejected: [RejectedWrite] = []
      for (number, result) in results {
        switch result {
        case .applied(let seq):
          try db.run("UPDATE outbox SET applied_at = ? WHERE n = ?", seq, number)
        case .rejected(let rejection):
          guard let ops = try db.scalarText("SELECT ops FROM outbox WHERE n = ?", number) else {
            continue
          }
          try db.run(
            "INSERT OR REPLACE INTO replica_rejections(n, code, error, at, ops) VALUES (?, ?, ?, ?, ?)",
            number, rejection.code, rejection.error, time, ops)
          try db.run("DELETE FROM outbox WHERE n = ?", number)
          rejected.append(
            RejectedWrite(number: number, code: rejection.code, error: rejection.error, ops: ops))
        }
        try db.run(
          "UPDATE replica SET acked_through = max(acked_through, ?) WHERE id = 1", number)
      }
      try db.run(
        "DELETE FROM replica_rejections WHERE n < (SELECT min(n) FROM "
          + "(SELECT n FROM replica_rejections ORDER BY n DESC LIMIT 1000))")
      return rejected
    }
  }

  /// Applies what the replica pulled — the rows changed up to `seq`, or every row of its
  /// lists when `reset` — to its confirmed state, and replays the writes the server has
  /// not applied by then on it; the file's rows are then set to the outcome, writing only
  /// what differs, in one transaction that notes nothing in the outbox. Writes the server
  /// applied at or before `seq` leave the outbox.
  package func applyPull(seq: Int64, reset: Bool, rows: [PulledRow]) throws(ListStoreError) {
    do {
      try transaction { db in
        // Another client's last commits become a write before anything moves.
        try ReplicaOutbox.closeWrite(db: db)
        try db.run("UPDATE replica_origin SET applying = 1 WHERE id = 1")
        try db.run("DELETE FROM outbox WHERE applied_at <= ?", seq)
        let number = try db.scalarInt64("SELECT number FROM replica WHERE id = 1") ?? 0
        let lists = try replicaRecordLists(db)
        try ReplicaRebase(db: db, replica: number).apply(
          seq: seq, reset: reset, rows: rows, lists: lists)
        try db.run("UPDATE replica SET seq = ? WHERE id = 1", seq)
        try db.run("UPDATE replica_origin SET applying = 0 WHERE id = 1")
      }
    } catch {
      throw mapped(error)
    }
  }

  private func replicaRecordLists(_ db: any DatabaseConnection) throws -> [Int64]? {
    try db.scalarText("SELECT lists FROM replica WHERE id = 1").map(Self.listIDs)
  }

  /// The ids of the record's `lists`, a JSON array of whole numbers.
  private static func listIDs(_ text: String) -> [Int64] {
    text.dropFirst().dropLast().split(separator: ",").compactMap { Int64($0) }
  }
}

/// A pull applied under the pending writes.
struct ReplicaRebase {
  let db: any DatabaseConnection
  let replica: Int64

  private struct RolledBack: Error {}

  func apply(seq: Int64, reset: Bool, rows: [PulledRow], lists: [Int64]?) throws {
    let states = RowStates(db: db)
    var pending: [[ReplicaIntent]] = []
    let statement = try db.cached("SELECT ops FROM outbox ORDER BY n")
    try statement.forEachRow { row in
      let ops = Array(row.string(at: 0).utf8)
      guard case .array(let nodes) = try JSONSyntax.parse(ops).kind else { return }
      pending.append(
        try nodes.enumerated().map { index, node in
          try ReplicaWire.intent(node, in: ops, at: "ops[\(index)]")
        })
    }
    // The rows the writes not yet confirmed (or rejected) touched, as the server had them.
    var before: [RowKey: RowState?] = [:]
    let images = try db.cached(
      "SELECT kind, id, existed, parent, position, value FROM outbox_before")
    try images.forEachRow { row in
      let key = RowKey(kind: row.int64(at: 0), id: row.int64(at: 1))
      before[key] =
        row.int64(at: 2) == 0
        ? RowState?.none
        : RowState(
          kind: key.kind, id: key.id, parent: row.optionalInt64(at: 3),
          position: row.optionalString(at: 4), value: row.string(at: 5))
    }
    guard !before.isEmpty || !pending.isEmpty else {
      // The file shows the server's state: the pulled rows are applied as they are.
      try states.apply(try targets(rows, reset: reset, lists: lists))
      return
    }
    var outcome: [RowKey: RowState?] = [:]
    var confirmed: [RowKey: RowState?] = [:]
    // Worked out on the rows themselves — the server's state put back, the pulled rows
    // applied, the pending writes replayed — then undone: only the outcome is written.
    do {
      try db.savepoint {
        try states.apply(before)
        let pulled = try targets(rows, reset: reset, lists: lists)
        try states.apply(pulled)
        if !pending.isEmpty {
          for key in before.keys { confirmed[key] = try states.state(key) }
        }
        let applier = PushApplier(db: db, replica: replica, mayWrite: { _ in true })
        for intents in pending {
          do {
            try db.savepoint { for intent in intents { try applier.apply(intent) } }
          } catch is ReplicaRejection {
            // The server will say so; until then the write's effect is not shown.
          } catch is PositionKey.InvalidKey {}
        }
        for key in Set(before.keys).union(pulled.keys) { outcome[key] = try states.state(key) }
        throw RolledBack()
      }
    } catch is RolledBack {}
    try states.apply(outcome)
    try db.run("DELETE FROM outbox_before")
    for (key, state) in confirmed {
      try db.run(
        "INSERT INTO outbox_before(kind, id, existed, parent, position, value) VALUES (?, ?, ?, ?, ?, ?)",
        key.kind, key.id, state == nil ? 0 : 1, state?.parent, state?.position, state?.value)
    }
  }

  /// The states the pulled rows give; for a reset, also the deletion of every row of the
  /// lists followed that it does not name.
  private func targets(_ rows: [PulledRow], reset: Bool, lists: [Int64]?) throws
    -> [RowKey: RowState?]
  {
    var targets: [RowKey: RowState?] = [:]
    func gone(_ kind: Int64, _ id: Int64) { targets[RowKey(kind: kind, id: id)] = RowState?.none }
    if reset {
      var listIDs: [Int64] = []
      let statement = try db.cached("SELECT id FROM lists")
      try statement.forEachRow { listIDs.append($0.int64(at: 0)) }
      for list in listIDs where lists == nil || lists?.contains(list) == true {
        gone(0, list)
        let sections = try db.cached("SELECT id FROM sections WHERE list_id = ?")
        try sections.bind(list, at: 1)
        var sectionIDs: [Int64] = []
        try sections.forEachRow { sectionIDs.append($0.int64(at: 0)) }
        for section in sectionIDs {
          gone(1, section)
          let items = try db.cached("SELECT id FROM items WHERE section_id = ?")
          try items.bind(section, at: 1)
          try items.forEachRow { gone(2, $0.int64(at: 0)) }
        }
      }
    }
    for row in rows {
      switch row {
      case .list(let id, let name):
        targets[RowKey(kind: 0, id: id)] = RowState(
          kind: 0, id: id, parent: nil, position: nil, value: name)
      case .section(let list, let id, let position, let metadata):
        targets[RowKey(kind: 1, id: id)] = RowState(
          kind: 1, id: id, parent: list, position: position, value: metadata)
      case .item(_, let id, let section, let position, let value):
        targets[RowKey(kind: 2, id: id)] = RowState(
          kind: 2, id: id, parent: section, position: position, value: value)
      case .listDeleted(let id):
        gone(0, id)
        try cascade(list: id, into: &targets)
      case .sectionDeleted(_, let id):
        gone(1, id)
        try cascade(section: id, into: &targets)
      case .itemDeleted(_, let id): gone(2, id)
      }
    }
    return targets
  }

  /// The rows a deleted list or section takes with it, unless the pull says where they went.
  private func cascade(
    list: Int64? = nil, section: Int64? = nil, into targets: inout [RowKey: RowState?]
  )
    throws
  {
    var sections: [Int64] = section.map { [$0] } ?? []
    if let list {
      let statement = try db.cached("SELECT id FROM sections WHERE list_id = ?")
      try statement.bind(list, at: 1)
      try statement.forEachRow { sections.append($0.int64(at: 0)) }
    }
    for section in sections {
      let key = RowKey(kind: 1, id: section)
      if targets[key] == nil { targets[key] = RowState?.none }
      let statement = try db.cached("SELECT id FROM items WHERE section_id = ?")
      try statement.bind(section, at: 1)
      try statement.forEachRow {
        let item = RowKey(kind: 2, id: $0.int64(at: 0))
        if targets[item] == nil { targets[item] = RowState?.none }
      }
    }
  }
}
