import FoundationEssentials
import SQLiteKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One row of the `changes` table: a row of `lists`, `sections` or `items` that a
/// committed transaction inserted, updated or deleted.
@usableFromInline
struct ChangeLogEntry: Sendable, Equatable {
  enum Kind: Int64, Sendable {
    case list = 0
    case section = 1
    case item = 2
  }
  enum Operation: Int64, Sendable {
    case insert = 1
    case update = 2
    case delete = 3
  }

  var seq: Int64
  /// Sections: the list the row belongs to after the change (`nil` after a delete).
  var listID: Int64?
  /// Sections: the list it belonged to before (`nil` for an insert). Lists: the list.
  var oldListID: Int64?
  var kind: Kind
  var operation: Operation
  var rowID: Int64
  /// After the change: the section of an item, the list of a section.
  var parent: Int64?
  /// Before the change: the section of an item, the list of a section.
  var oldParent: Int64?
  /// Before the change: the row's position key.
  var oldPosition: String?
  /// The row as it is now, read with the entry: `nil` when it no longer exists.
  var current: CurrentRow?
}

/// A section or item row as it is at the time the log is read.
struct CurrentRow: Sendable, Equatable {
  /// The list of a section, the section of an item.
  var parent: Int64
  /// Its position key.
  var key: String
  /// Its metadata or value, as stored.
  var json: String
}

/// Reading and pruning the change log written by the schema's triggers.
enum ChangeLog {
  /// How many rows the log keeps beyond what live readers still need, at most; a
  /// reader further behind than this reloads its list instead.
  static let maximumBacklog: Int64 = 200_000

  /// Readers that have not refreshed their position for this long, and whose
  /// process is gone, no longer hold the log back.
  static let staleReaderAge: Double = 60

  /// The entries after `seq`, in order, each with the row it names as that row is now
  /// (one query, however many rows: the log and the rows it touched are read together).
  ///
  /// Item rows are joined; section rows, rarely touched, are read by subqueries that run
  /// only for section entries (a join costs every read a cursor on `sections`).
  static func entries(after seq: Int64, db: any DatabaseConnection) throws -> [ChangeLogEntry] {
    let statement = try db.cached(
      """
      SELECT c.seq, c.list_id, c.old_list_id, c.kind, c.op, c.row_id, c.parent, c.old_parent,
        c.old_position,
        CASE c.kind WHEN 2 THEN i.section_id
          WHEN 1 THEN (SELECT list_id FROM sections WHERE id = c.row_id) END,
        CASE c.kind WHEN 2 THEN i.position
          WHEN 1 THEN (SELECT position FROM sections WHERE id = c.row_id) END,
        CASE c.kind WHEN 2 THEN i.value
          WHEN 1 THEN (SELECT metadata FROM sections WHERE id = c.row_id) END
      FROM changes c
      LEFT JOIN items i ON c.kind = 2 AND i.id = c.row_id
      WHERE c.seq > ? ORDER BY c.seq
      """)
    try statement.bind(seq, at: 1)
    var entries: [ChangeLogEntry] = []
    try statement.forEachRow { row in
      guard let kind = ChangeLogEntry.Kind(rawValue: row.int64(at: 3)),
        let operation = ChangeLogEntry.Operation(rawValue: row.int64(at: 4))
      else { return }  // Written by something newer than us: not ours to read.
      var current: CurrentRow?
      if let parent = row.optionalInt64(at: 9) {
        current = CurrentRow(parent: parent, key: row.string(at: 10), json: row.string(at: 11))
      }
      entries.append(
        ChangeLogEntry(
          seq: row.int64(at: 0), listID: row.optionalInt64(at: 1),
          oldListID: row.optionalInt64(at: 2),
          kind: kind, operation: operation, rowID: row.int64(at: 5),
          parent: row.optionalInt64(at: 6), oldParent: row.optionalInt64(at: 7),
          oldPosition: row.optionalString(at: 8), current: current))
    }
    return entries
  }

  /// The seq of the last entry ever written (0 for none).
  static func lastSeq(db: any DatabaseConnection) throws -> Int64 {
    try lastSeqAndHorizon(db: db).lastSeq
  }

  /// The seq of the last entry ever written and the pruning horizon, in one query.
  static func lastSeqAndHorizon(db: any DatabaseConnection) throws -> (
    lastSeq: Int64, horizon: Int64
  ) {
    let statement = try db.cached(db.dialect.lastSeqAndHorizon)
    defer { statement.reset() }
    guard try statement.step() else { return (0, 0) }
    return (statement.int64(at: 0), statement.int64(at: 1))
  }

  /// The last seq pruned away: a reader that has not read past it missed entries.
  static func horizon(db: any DatabaseConnection) throws -> Int64 {
    try db.scalarInt64("SELECT pruned_through FROM change_log_horizon WHERE id = 1") ?? 0
  }

  /// Registers a reader (one per observing process) at `seq`; returns its id.
  static func registerReader(at seq: Int64, process: Int64, db: any DatabaseConnection) throws
    -> Int64
  {
    guard
      let id = try db.scalarInt64(
        "INSERT INTO change_log_readers(pid, seq, heartbeat) VALUES (?, ?, ?) RETURNING id",
        process, seq, now())
    else { throw NeedsReload(reason: "no reader id") }
    return id
  }

  /// Records that reader `id` has read through `seq` and is alive.
  static func updateReader(_ id: Int64, seq: Int64, process: Int64, db: any DatabaseConnection)
    throws
  {
    if try db.run(
      "UPDATE change_log_readers SET seq = ?, heartbeat = ? WHERE id = ?", seq, now(), id) == 0
    {
      // Removed as stale while this process was suspended: come back.
      try db.run(
        "INSERT INTO change_log_readers(id, pid, seq, heartbeat) VALUES (?, ?, ?, ?)", id,
        process, seq, now())
    }
  }

  static func unregisterReader(_ id: Int64, db: any DatabaseConnection) throws {
    try db.run("DELETE FROM change_log_readers WHERE id = ?", id)
  }

  /// Deletes the entries every live reader has read, keeping at most
  /// ``maximumBacklog`` entries for readers that fell behind; raises the horizon
  /// over what it deleted. Runs inside the caller's write transaction.
  static func prune(db: any DatabaseConnection, engine: any StorageEngine) throws {
    let last = try lastSeq(db: db)
    // Forget readers whose process is gone and that stopped reporting.
    let readers = try db.prepared("SELECT id, pid, heartbeat FROM change_log_readers")
    var quiet: [(id: Int64, process: Int64)] = []
    try readers.forEachRow { row in
      if now() - row.double(at: 2) > staleReaderAge {
        quiet.append((row.int64(at: 0), row.int64(at: 1)))
      }
    }
    let gone = try engine.goneReaders(quiet.map(\.process), db: db)
    for reader in quiet where gone.contains(reader.process) {
      try unregisterReader(reader.id, db: db)
    }
    let slowest = try db.scalarInt64("SELECT min(seq) FROM change_log_readers") ?? last
    let through = max(min(slowest, last), last - maximumBacklog)
    guard through > (try horizon(db: db)) else { return }
    try db.run("DELETE FROM changes WHERE seq <= ?", through)
    try db.run("UPDATE change_log_horizon SET pruned_through = ? WHERE id = 1", through)
  }

  private static func now() -> Double { Date().timeIntervalSince1970 }
}
