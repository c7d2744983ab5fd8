import FoundationEssentials
import SQLiteKit

/// One thing `Repository.check()` found wrong.
public struct IntegrityProblem: Sendable, Hashable, CustomStringConvertible {
  /// Which check found it, e.g. `sqlite`, `positions`, `json`, `schema`, `change log`.
  public var check: String
  /// What is wrong, naming the rows.
  public var detail: String

  /// `positions: section 3 has two items at position "a0"`.
  public var description: String { "\(check): \(detail)" }
}

extension Repository {
  /// The tables and triggers ListStore's schema consists of; `check()` reports any
  /// that another client dropped (without the triggers, changes go unobserved).
  static let schemaObjects: [(type: String, name: String)] = [
    ("table", "lists"), ("table", "sections"), ("table", "items"), ("table", "changes"),
    ("table", "change_log_horizon"), ("table", "change_log_readers"),
    ("trigger", "lists_delete_sections"), ("trigger", "sections_delete_items"),
    ("trigger", "sections_need_list"), ("trigger", "sections_move_need_list"),
    ("trigger", "items_need_section"), ("trigger", "items_move_need_section"),
    ("trigger", "items_log_insert"), ("trigger", "items_log_update"),
    ("trigger", "items_log_update_id"),
    ("trigger", "items_log_delete"), ("trigger", "sections_log_insert"),
    ("trigger", "sections_log_update"),
    ("trigger", "sections_log_update_id"), ("trigger", "sections_log_delete"),
    ("trigger", "lists_log_delete"),
  ]

  /// Checks the database: SQLite's own `PRAGMA integrity_check`, then ListStore's
  /// invariants — every item in an existing section and every section in an existing
  /// list, position keys unique per parent and well formed, values and metadata valid
  /// JSON, the schema's tables and triggers present, and the change log consistent
  /// (its horizon and entries within the sequence it was numbered from).
  /// - Returns: What is wrong; empty when all is well.
  /// - Throws: ``ListStoreError`` when the database cannot be read at all.
  public func check() throws(ListStoreError) -> [IntegrityProblem] {
    try read { db in
      var problems: [IntegrityProblem] = []
      func add(_ check: String, _ detail: String) {
        problems.append(IntegrityProblem(check: check, detail: detail))
      }

      try db.prepare("PRAGMA integrity_check").forEachRow { row in
        let text = row.string(at: 0)
        if text != "ok" { add("sqlite", text) }
      }
      for (type, name) in Self.schemaObjects
      where try db.scalarInt64(
        "SELECT 1 FROM sqlite_schema WHERE type = ? AND name = ?", type, name) == nil
      {
        add("schema", "the \(type) \(name) is missing")
      }
      guard problems.allSatisfy({ $0.check != "schema" || !$0.detail.contains("table") }) else {
        return problems
      }

      try db.prepare(
        "SELECT i.id, i.section_id FROM items i LEFT JOIN sections s ON s.id = i.section_id WHERE s.id IS NULL"
      ).forEachRow {
        add(
          "rows", "item \($0.int64(at: 0)) is in section \($0.int64(at: 1)), which does not exist")
      }
      try db.prepare(
        "SELECT s.id, s.list_id FROM sections s LEFT JOIN lists l ON l.id = s.list_id WHERE l.id IS NULL"
      ).forEachRow {
        add(
          "rows", "section \($0.int64(at: 0)) is in list \($0.int64(at: 1)), which does not exist")
      }
      for (table, parent, noun) in [
        ("sections", "list_id", "list"), ("items", "section_id", "section"),
      ] {
        try db.prepare(
          "SELECT \(parent), position, count(*) FROM \(table) GROUP BY \(parent), position HAVING count(*) > 1"
        ).forEachRow { row in
          add(
            "positions",
            "\(noun) \(row.int64(at: 0)) has \(row.int64(at: 2)) \(table) at position \(row.string(at: 1).debugDescription)"
          )
        }
        try db.prepare("SELECT id, position FROM \(table)").forEachRow { row in
          let key = row.string(at: 1)
          if !PositionKey.isValid(key) {
            add(
              "positions",
              "\(table.dropLast()) \(row.int64(at: 0)) has a malformed position \(key.debugDescription)"
            )
          }
        }
      }
      try db.prepare("SELECT id FROM items WHERE NOT json_valid(value)").forEachRow {
        add("json", "item \($0.int64(at: 0)) holds a value that is not JSON")
      }
      try db.prepare("SELECT id FROM sections WHERE NOT json_valid(metadata)").forEachRow {
        add("json", "section \($0.int64(at: 0)) holds metadata that is not JSON")
      }
      let last = try ChangeLog.lastSeq(db: db)
      let horizon = try ChangeLog.horizon(db: db)
      let highest = try db.scalarInt64("SELECT max(seq) FROM changes") ?? 0
      if horizon > last {
        add("change log", "pruned through \(horizon), beyond its last entry \(last)")
      }
      if highest > last { add("change log", "entry \(highest) is beyond the sequence's \(last)") }
      if let lowest = try db.scalarInt64("SELECT min(seq) FROM changes"), lowest <= horizon {
        add("change log", "entry \(lowest) is at or below the pruning horizon \(horizon)")
      }
      return problems
    }
  }

  /// Writes a consistent copy of the database to `path` with SQLite's online backup
  /// API, while other connections go on reading and writing.
  ///
  /// The copy is a complete ListStore database; observers' read positions are not
  /// copied.
  /// - Parameters:
  ///   - path: The new file; it must not exist yet.
  ///   - progress: Called with the pages copied and the total, as the copy goes.
  /// - Throws: ``ListStoreError/cannotOpen(path:reason:)`` when `path` exists, its
  ///   folder does not, or it cannot be written, or another ``ListStoreError``.
  public func backup(to path: String, progress: (Int, Int) -> Void = { _, _ in })
    throws(ListStoreError)
  {
    guard !FileManager.default.fileExists(atPath: path) else {
      throw .cannotOpen(path: path, reason: "the file exists already; choose a new name")
    }
    let folder = Migrator.parentFolder(of: path)
    if !folder.isEmpty, !DatabaseFile.isFolder(folder) {
      throw .cannotOpen(
        path: path, reason: "the folder \(folder) does not exist; create it first (mkdir -p)")
    }
    do {
      let source = try Connection(path: self.path, mode: .readOnly, busyTimeout: busyTimeout)
      defer { source.close() }
      try source.backup(to: path, progress: progress)
      let copy = try Connection(path: path, mode: .readWrite, busyTimeout: busyTimeout)
      defer { copy.close() }
      try copy.execute("DELETE FROM change_log_readers")
    } catch {
      try? FileManager.default.removeItem(atPath: path)
      if let error = error as? SQLiteError {
        throw error.code ~= .cannotOpen
          ? .cannotOpen(path: path, reason: error.message)
          : ListStoreError(error, path: path, busyTimeout: busyTimeout)
      }
      throw .cannotOpen(path: path, reason: "\(error)")
    }
  }
}
