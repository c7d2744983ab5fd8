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

/// What ``Repository/repair()`` changed.
public struct RepairReport: Sendable, Hashable, CustomStringConvertible {
  /// Sections and items that got a new, well-formed position key.
  public var positionsRewritten: Int
  /// Items deleted because their section no longer exists.
  public var orphanedItemsDeleted: Int
  /// Sections deleted (with their items) because their list no longer exists.
  public var orphanedSectionsDeleted: Int

  /// Whether nothing needed repair.
  public var isEmpty: Bool {
    positionsRewritten == 0 && orphanedItemsDeleted == 0 && orphanedSectionsDeleted == 0
  }

  /// `rewrote 2 position keys, deleted 1 orphaned item`.
  public var description: String {
    func count(_ number: Int, _ noun: String) -> String {
      "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
    var parts: [String] = []
    if positionsRewritten > 0 {
      parts.append("rewrote \(count(positionsRewritten, "position key"))")
    }
    if orphanedSectionsDeleted > 0 {
      parts.append("deleted \(count(orphanedSectionsDeleted, "orphaned section"))")
    }
    if orphanedItemsDeleted > 0 {
      parts.append("deleted \(count(orphanedItemsDeleted, "orphaned item"))")
    }
    return parts.isEmpty ? "nothing to repair" : parts.joined(separator: ", ")
  }
}

extension Repository {
  /// The tables and triggers ListStore's schema consists of; `check()` reports any
  /// that another client dropped (without the triggers, changes go unobserved).
  static let schemaObjects: [(type: String, name: String)] =
    [
      "lists", "sections", "items", "changes", "change_log_horizon", "change_log_readers",
      "replica_origin", "origin_ids", "replicas", "replica_results", "change_log_marks",
      "outbox_rows", "outbox", "outbox_before", "replica", "replica_rejections",
    ].map { ("table", $0) }
    + [
      "lists_id_is_new", "lists_id_is_fixed", "lists_log_replaced",
      "lists_log_replaced_by_update", "lists_log_delete", "lists_delete_sections",
      "sections_id_is_new", "sections_id_is_fixed", "sections_position_is_a_key",
      "sections_position_stays_a_key", "sections_need_list", "sections_move_need_list",
      "sections_log_replaced", "sections_log_replaced_by_update", "sections_log_insert",
      "sections_log_update", "sections_log_delete", "sections_delete_items",
      "items_id_is_new", "items_id_is_fixed", "items_position_is_a_key",
      "items_position_stays_a_key", "items_need_section", "items_move_need_section",
      "items_log_insert", "items_log_update", "items_log_delete", "replica_origin_set",
    ].map { ("trigger", $0) }

  /// The tables and triggers of the PostgreSQL schema, for `check()`.
  static let postgreSQLSchemaObjects: [(type: String, name: String)] =
    [
      "liststore_schema", "lists", "sections", "items", "changes", "change_log_horizon",
      "change_log_readers", "replicas", "replica_results", "change_log_marks",
    ].map { ("table", $0) }
    + [
      "lists_lock_writers", "sections_lock_writers", "items_lock_writers",
      "sections_check", "items_check", "items_log", "sections_log",
      "lists_log", "lists_notify", "sections_notify", "items_notify",
    ].map { ("trigger", $0) }

  /// Checks a SQLite database file with SQLite's own `PRAGMA integrity_check` alone,
  /// without opening it as a repository: for a file too damaged to open, where
  /// ``check(progress:)`` cannot run. The file is opened read-only (immutable where
  /// SQLite cannot read it otherwise) and is not changed in any way.
  /// - Parameter path: The database file.
  /// - Returns: What SQLite found wrong, as problems of the `sqlite` check; empty when
  ///   the file is sound. A file whose schema cannot be read is one problem that says so.
  /// - Throws: ``ListStoreError/databaseNotFound(path:)``, or
  ///   ``ListStoreError/cannotOpen(path:reason:)`` when the file cannot be read at all.
  public static func checkFile(atPath path: String) throws(ListStoreError) -> [IntegrityProblem] {
    guard try DatabaseFile.exists(at: path) else { throw .databaseNotFound(path: path) }
    let connection: Connection
    do {
      connection = try SQLiteMigrator.openConnection(
        path: path, readOnly: true, busyTimeout: .seconds(10))
    } catch let error as SQLiteError
      where ResultCode.corrupt ~= error.code || ResultCode.notADatabase ~= error.code
    {
      return [Self.unreadableSchema(error)]
    } catch {
      throw .cannotOpen(path: path, reason: "\(error)")
    }
    defer { connection.close() }
    do {
      var problems: [IntegrityProblem] = []
      try connection.prepare("PRAGMA integrity_check").forEachRow { row in
        for line in integrityLines(row.string(at: 0)) {
          problems.append(IntegrityProblem(check: "sqlite", detail: line))
        }
      }
      return problems
    } catch let error as SQLiteError
      where ResultCode.corrupt ~= error.code || ResultCode.notADatabase ~= error.code
    {
      return [Self.unreadableSchema(error)]
    } catch {
      throw ListStoreError(reading: error, path: path, busyTimeout: .seconds(10))
    }
  }

  /// The problems in a row of `PRAGMA integrity_check`: none for `ok`, one per line
  /// otherwise (SQLite puts several in one row at times), without its headings.
  static func integrityLines(_ text: String) -> [String] {
    guard text != "ok" else { return [] }
    return text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("*** in database") }
  }

  private static func unreadableSchema(_ error: SQLiteError) -> IntegrityProblem {
    IntegrityProblem(
      check: "sqlite",
      detail: "the schema cannot be read (\(error.message)), so no list can be read either")
  }

  /// Checks the database: SQLite's own `PRAGMA integrity_check`, then ListStore's
  /// invariants — every item in an existing section and every section in an existing
  /// list, position keys unique per parent and well formed, values and metadata valid
  /// JSON, the schema's tables and triggers present, and the change log consistent
  /// (its horizon and entries within the sequence it was numbered from).
  /// - Parameter progress: Called with the checks done and their number, as they go.
  /// - Returns: What is wrong; empty when all is well.
  /// - Throws: ``ListStoreError`` when the database cannot be read at all.
  public func check(progress: (_ done: Int, _ total: Int) -> Void = { _, _ in })
    throws(ListStoreError) -> [IntegrityProblem]
  {
    try read { db in
      var problems: [IntegrityProblem] = []
      let steps = 12
      var step = 0
      func advance() {
        step += 1
        progress(min(step, steps), steps)
      }
      progress(0, steps)
      func add(_ check: String, _ detail: String) {
        problems.append(IntegrityProblem(check: check, detail: detail))
      }

      let sqlite = db.dialect.engine == .sqlite
      if sqlite {
        try db.prepared("PRAGMA integrity_check").forEachRow { row in
          for line in Self.integrityLines(row.string(at: 0)) { add("sqlite", line) }
        }
        // A damaged file: ListStore's checks would read the damaged pages.
        if !problems.isEmpty { return problems }
      }
      advance()
      func exists(_ type: String, _ name: String) throws -> Bool {
        if sqlite {
          return try db.scalarInt64(
            "SELECT 1 FROM sqlite_schema WHERE type = ? AND name = ?", type, name) != nil
        }
        return try db.scalarInt64(
          """
          SELECT 1 FROM pg_tables WHERE 'table' = ? AND tablename = ? AND schemaname = current_schema()
          UNION ALL SELECT 1 FROM pg_trigger WHERE 'trigger' = ? AND tgname = ? AND NOT tgisinternal
          """, type, name, type, name) != nil
      }
      for (type, name) in sqlite ? Self.schemaObjects : Self.postgreSQLSchemaObjects
      where try !exists(type, name) {
        add("schema", "the \(type) \(name) is missing")
      }
      // A replica's file notes its local commits by triggers of its own.
      if sqlite, try exists("table", "replica"),
        try db.scalarInt64("SELECT 1 FROM replica WHERE id = 1") != nil
      {
        for name in ReplicaOutbox.triggerNames where try !exists("trigger", name) {
          add("schema", "the trigger \(name) is missing: this replica's local writes are not noted")
        }
      }
      advance()
      guard problems.allSatisfy({ $0.check != "schema" || !$0.detail.contains("table") }) else {
        return problems
      }

      try db.prepared(
        "SELECT i.id, i.section_id FROM items i LEFT JOIN sections s ON s.id = i.section_id WHERE s.id IS NULL"
      ).forEachRow {
        add(
          "rows", "item \($0.int64(at: 0)) is in section \($0.int64(at: 1)), which does not exist")
      }
      advance()
      try db.prepared(
        "SELECT s.id, s.list_id FROM sections s LEFT JOIN lists l ON l.id = s.list_id WHERE l.id IS NULL"
      ).forEachRow {
        add(
          "rows", "section \($0.int64(at: 0)) is in list \($0.int64(at: 1)), which does not exist")
      }
      advance()
      for (table, parent, noun) in [
        ("sections", "list_id", "list"), ("items", "section_id", "section"),
      ] {
        try db.prepared(
          "SELECT \(parent), position, count(*) FROM \(table) GROUP BY \(parent), position HAVING count(*) > 1"
        ).forEachRow { row in
          add(
            "positions",
            "\(noun) \(row.int64(at: 0)) has \(row.int64(at: 2)) \(table) at position \(row.string(at: 1).debugDescription)"
          )
        }
        advance()
        try db.prepared("SELECT id, \(db.dialect.positionType), position FROM \(table)")
          .forEachRow { row in
            let type = row.string(at: 1)
            guard !row.withUTF8(at: 2, { PositionRepair.isGood(type: type, bytes: $0) }) else {
              return
            }
            let key = row.string(at: 2)
            add(
              "positions",
              "\(table.dropLast()) \(row.int64(at: 0)) has "
                + (type == "text"
                  ? "a malformed position \(key.debugDescription)"
                  : "a position that is not text (\(type) \(key.debugDescription))")
                + "; 'liststore repair' rewrites it")
          }
        advance()
        try db.prepared("SELECT id FROM \(table) WHERE id <= 0").forEachRow { row in
          add("ids", "\(table.dropLast()) has the id \(row.int64(at: 0)), which is not positive")
        }
        advance()
      }
      // PostgreSQL's `json` columns hold nothing else.
      if sqlite {
        try db.prepared("SELECT id FROM items WHERE NOT json_valid(value)").forEachRow {
          add("json", "item \($0.int64(at: 0)) holds a value that is not JSON")
        }
        advance()
        try db.prepared("SELECT id FROM sections WHERE NOT json_valid(metadata)").forEachRow {
          add("json", "section \($0.int64(at: 0)) holds metadata that is not JSON")
        }
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
      progress(steps, steps)
      return problems
    }
  }

  /// Repairs what foreign clients could leave behind when the schema's rules were not
  /// in force (before schema version 3, or with its triggers dropped): gives every
  /// section and item whose position is not a well-formed key a new key that keeps its
  /// place, and deletes items of missing sections and sections of missing lists.
  ///
  /// Runs in one transaction; observers see the rewritten rows like any other write.
  /// - Returns: What was changed.
  /// - Throws: ``ListStoreError`` when the database cannot be written.
  @discardableResult
  public func repair() throws(ListStoreError) -> RepairReport {
    try write { db in
      let outcome = try PositionRepair.repairAll(db: db)
      return RepairReport(
        positionsRewritten: outcome.positions, orphanedItemsDeleted: outcome.orphanedItems,
        orphanedSectionsDeleted: outcome.orphanedSections)
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
    guard engine is SQLiteEngine else {
      throw .notSupported(
        "backup copies a SQLite file; for a PostgreSQL database use pg_dump (or the server's own backups)"
      )
    }
    guard !DatabaseFile.isFolder(path) else {
      throw .cannotOpen(
        path: path, reason: "it is a folder; name a new file in it, such as \(path)/backup.sqlite")
    }
    guard !FileManager.default.fileExists(atPath: path) else {
      throw .cannotOpen(path: path, reason: "the file exists already; choose a new name")
    }
    let folder = SQLiteMigrator.parentFolder(of: path)
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
        throw ResultCode.cannotOpen ~= error.code
          ? .cannotOpen(path: path, reason: error.message)
          : ListStoreError(error, path: path, busyTimeout: busyTimeout)
      }
      throw .cannotOpen(path: path, reason: "\(error)")
    }
  }
}
