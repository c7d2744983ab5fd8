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

  /// Readers that have not refreshed their position or heartbeat for this long, and
  /// that the engine cannot see alive (a PostgreSQL session), no longer hold the log
  /// back; a live reader's feed beats every quarter of it.
  static let staleReaderAge: Double = 60

  /// The least time between two marks of when the log reached a seq (for its retention).
  static let markInterval: Double = 60

  /// How many log entries one read of the log covers at most: what a reader holds of
  /// other lists' entries at a time, whatever the size of the transactions it follows.
  static let pageSize = 1000

  /// One page of the log: up to ``pageSize`` entries after a position, of which those
  /// that concern the lists asked for, each with its row as that row is now.
  struct Page {
    /// The entries of the page that concern the lists, in order.
    var entries: [ChangeLogEntry] = []
    /// The first and last seq of the page, whatever list its entries concern; `nil`
    /// when the log has nothing after the position.
    var firstSeq: Int64?
    var lastSeq: Int64?
    /// Whether the page holds ``pageSize`` entries: the log may go on after it.
    var isFull = false
  }

  /// The log entries after `seq`, at most ``pageSize`` of them, with the rows named by
  /// those that concern `lists` (sorted list ids): read in one query, however many rows,
  /// and without a value, metadata or position of anything else.
  ///
  /// An entry concerns a list when it names the list (list entries), when its section
  /// belongs to the list before or after the change (section entries), or when the
  /// section it names before or after the change belongs to the list now (item
  /// entries). That is every entry an observer of the list needs: an item entry whose
  /// sections both left the list, or were deleted, is covered by those sections'
  /// entries. Item rows are joined; section rows, rarely touched, are read by
  /// subqueries that run only for section entries.
  ///
  /// With no lists (`nil`), every entry of the page comes with its row: what a write of
  /// this process reads in its own transaction, which is one page at most, and mostly its
  /// own entries (the check of the entries' lists would cost each write more than it
  /// saves).
  static func page(after seq: Int64, lists: [Int64]?, db: any DatabaseConnection) throws -> Page {
    let dialect = db.dialect
    let statement: any DatabaseStatement
    if let lists {
      statement = try db.cached(
        lists.count == 1 ? dialect.changeLogPage.single : dialect.changeLogPage.many)
      try statement.bind(
        lists.count == 1 ? .integer(lists[0]) : dialect.listIDsParameter(lists), at: 1)
      try statement.bind(seq, at: 2)
    } else {
      statement = try db.cached(dialect.changeLogPage.all)
      try statement.bind(seq, at: 1)
    }
    var page = Page()
    var count = 0
    var ordered = true
    try statement.forEachRow { row in
      let seq = row.int64(at: 0)
      count += 1
      if let last = page.lastSeq, last >= seq { ordered = false }
      page.firstSeq = min(page.firstSeq ?? seq, seq)
      page.lastSeq = max(page.lastSeq ?? seq, seq)
      guard row.optionalInt64(at: 1) == 1,
        let kind = ChangeLogEntry.Kind(rawValue: row.int64(at: 4)),
        let operation = ChangeLogEntry.Operation(rawValue: row.int64(at: 5))
      else { return }  // Another list's, or written by something newer than us.
      var current: CurrentRow?
      if let parent = row.optionalInt64(at: 10) {
        current = CurrentRow(parent: parent, key: row.string(at: 11), json: row.string(at: 12))
      }
      page.entries.append(
        ChangeLogEntry(
          seq: seq, listID: row.optionalInt64(at: 2), oldListID: row.optionalInt64(at: 3),
          kind: kind, operation: operation, rowID: row.int64(at: 6),
          parent: row.optionalInt64(at: 7), oldParent: row.optionalInt64(at: 8),
          oldPosition: row.optionalString(at: 9), current: current))
    }
    // Both queries ask for the log's order; should an engine not give it, the entries
    // are sorted here.
    if !ordered { page.entries.sort { $0.seq < $1.seq } }
    page.isFull = count >= pageSize
    return page
  }

  /// The text of ``page(after:lists:db:)``'s query of every list's entries, with their
  /// rows (`?`: the position), shaped for the engine as `shape` says.
  package static func allListsPageQuery(shape: ChangeLogPageShape) -> String {
    """
    SELECT c.seq, 1, c.list_id, c.old_list_id, c.kind, c.op, c.row_id, c.parent, c.old_parent,
      c.old_position,
      CASE c.kind WHEN 2 THEN i.section_id
        WHEN 1 THEN (SELECT list_id FROM sections WHERE id = c.row_id) END,
      CASE c.kind WHEN 2 THEN i.position
        WHEN 1 THEN (SELECT position FROM sections WHERE id = c.row_id) END,
      CASE c.kind WHEN 2 THEN i.value
        WHEN 1 THEN (SELECT metadata FROM sections WHERE id = c.row_id) END
    FROM changes c
    \(shape.itemOfEntry(when: "c.kind = 2"))
    WHERE c.seq > ? ORDER BY c.seq LIMIT \(pageSize)
    """
  }

  /// The text of ``page(after:lists:db:)``'s query, with `membership` the test that an
  /// expression is one of the lists (parameter `$1`); `$2` is the position.
  package static func pageQuery(membership: String, shape: ChangeLogPageShape) -> String {
    func isObserved(_ expression: String) -> String { "\(expression) \(membership)" }
    switch shape {
    case .joined:
      // The sections before and after an item's change are joined (a seek each, none for
      // the section before when it is the same), and the item's row sought only when one
      // of them is observed.
      let item = "(\(isObserved("ps.list_id")) OR \(isObserved("os.list_id")))"
      let section = "(\(isObserved("c.list_id")) OR \(isObserved("c.old_list_id")))"
      func current(_ itemColumn: String, _ sectionColumn: String) -> String {
        """
        CASE c.kind WHEN 2 THEN CASE WHEN \(item) THEN i.\(itemColumn) END
          WHEN 1 THEN CASE WHEN \(section)
            THEN (SELECT \(sectionColumn) FROM sections WHERE id = c.row_id) END END
        """
      }
      return """
        SELECT c.seq,
          CASE c.kind WHEN 2 THEN \(item) WHEN 1 THEN \(section)
            ELSE \(isObserved("c.row_id")) END,
          c.list_id, c.old_list_id, c.kind, c.op, c.row_id, c.parent, c.old_parent,
          c.old_position, \(current("section_id", "list_id")), \(current("position", "position")),
          \(current("value", "metadata"))
        FROM changes c
        LEFT JOIN sections ps ON c.kind = 2 AND ps.id = c.parent
        LEFT JOIN sections os ON c.kind = 2 AND c.old_parent IS NOT NULL
          AND c.old_parent IS NOT c.parent AND os.id = c.old_parent
        \(shape.itemOfEntry(when: "c.kind = 2 AND \(item)"))
        WHERE c.seq > $2 ORDER BY c.seq LIMIT \(pageSize)
        """
    case .nested:
      return """
        SELECT c.seq, c.concerns, c.list_id, c.old_list_id, c.kind, c.op, c.row_id, c.parent,
          c.old_parent, c.old_position,
          CASE WHEN c.concerns = 0 THEN NULL WHEN c.kind = 2 THEN i.section_id
            WHEN c.kind = 1 THEN (SELECT list_id FROM sections WHERE id = c.row_id) END,
          CASE WHEN c.concerns = 0 THEN NULL WHEN c.kind = 2 THEN i.position
            WHEN c.kind = 1 THEN (SELECT position FROM sections WHERE id = c.row_id) END,
          CASE WHEN c.concerns = 0 THEN NULL WHEN c.kind = 2 THEN i.value
            WHEN c.kind = 1 THEN (SELECT metadata FROM sections WHERE id = c.row_id) END
        FROM (
          SELECT seq, list_id, old_list_id, kind, op, row_id, parent, old_parent, old_position,
            CASE kind
              WHEN 2 THEN CASE
                WHEN \(isObserved("(SELECT list_id FROM sections WHERE id = parent)"))
                  OR \(isObserved("(SELECT list_id FROM sections WHERE id = old_parent)"))
                THEN 1 ELSE 0 END
              WHEN 1 THEN CASE
                WHEN \(isObserved("list_id")) OR \(isObserved("old_list_id")) THEN 1 ELSE 0 END
              ELSE CASE WHEN \(isObserved("row_id")) THEN 1 ELSE 0 END
            END AS concerns
          FROM changes WHERE seq > $2 ORDER BY seq LIMIT \(pageSize)) AS c
        \(shape.itemOfEntry(when: "c.kind = 2 AND c.concerns = 1"))
        ORDER BY c.seq
        """
    }
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
    var through = max(min(slowest, last), last - maximumBacklog)
    // A log kept for a time: only what was reached longer ago goes, whatever the readers.
    let retention =
      try db.scalarDouble("SELECT retain_seconds FROM change_log_horizon WHERE id = 1") ?? 0
    if retention > 0 {
      let time = now()
      let newest = try db.scalarDouble("SELECT max(at) FROM change_log_marks") ?? 0
      if time - newest >= markInterval {
        try db.run("DELETE FROM change_log_marks WHERE seq >= ?", last)
        try db.run("INSERT INTO change_log_marks(seq, at) VALUES (?, ?)", last, time)
      }
      let reached =
        try db.scalarInt64(
          "SELECT max(seq) FROM change_log_marks WHERE at <= ?", time - retention) ?? 0
      through = min(through, reached)
      try db.run("DELETE FROM change_log_marks WHERE seq < ?", reached)
    }
    guard through > (try horizon(db: db)) else { return }
    try db.run("DELETE FROM changes WHERE seq <= ?", through)
    try db.run("UPDATE change_log_horizon SET pruned_through = ? WHERE id = 1", through)
  }

  private static func now() -> Double { Date().timeIntervalSince1970 }
}

/// How the query of a page of the change log (`ChangeLog.page(after:lists:db:)`) is shaped for an engine.
package enum ChangeLogPageShape: Sendable {
  /// One ordered scan of the log joined to the rows: for an engine whose plan follows
  /// the query's joins and stops at the limit (SQLite), the cheapest.
  case joined
  /// The page first (a subquery with the limit), then the rows: for an engine whose
  /// planner might otherwise join whole tables before it applies the limit.
  case nested

  /// The join of the item row a log entry `c` names, as `i`, when `condition` holds: by
  /// a seek of the row for each entry. For `nested`, a lateral subquery kept apart by
  /// `OFFSET 0`: otherwise, for a plan made before the parameters are known (a prepared
  /// statement's generic plan), PostgreSQL guesses that a third of the log follows the
  /// position and may hash every item of every list to join a few.
  func itemOfEntry(when condition: String) -> String {
    switch self {
    case .joined: return "LEFT JOIN items i ON \(condition) AND i.id = c.row_id"
    case .nested:
      return """
        LEFT JOIN LATERAL (SELECT section_id, position, value FROM items
          WHERE \(condition) AND id = c.row_id OFFSET 0) i ON true
        """
    }
  }
}
