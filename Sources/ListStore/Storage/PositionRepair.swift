import SQLiteKit

/// Rewrites position keys that are not well formed — malformed text, BLOBs, numbers,
/// `NULL`s that an older schema let foreign clients store — so that every row of the
/// database carries a key ListStore can order between.
///
/// Rows keep their current order (SQLite's `ORDER BY position`: numbers, then text by
/// bytes, then BLOBs by bytes). Well-formed keys stay as they are; each run of bad
/// keys between two good ones gets fresh keys between those two, so the rewrite
/// writes exactly one row per bad key, and observers see the rewrite like any other
/// write.
enum PositionRepair {
  /// What a repair changed.
  struct Outcome: Equatable, Sendable {
    /// Position keys rewritten.
    var positions = 0
    /// Items whose section no longer exists, deleted.
    var orphanedItems = 0
    /// Sections whose list no longer exists, deleted.
    var orphanedSections = 0
  }

  /// Rewrites every bad position key, in the caller's transaction.
  /// - Returns: How many keys were rewritten.
  static func run(db: any DatabaseConnection) throws -> Int {
    var rewritten = 0
    for table in [Table.sections, Table.items] {
      for parent in try parentsWithBadKeys(table, db: db) {
        rewritten += try repair(table, parent: parent, db: db)
      }
    }
    return rewritten
  }

  /// Rewrites every bad position key and deletes rows no list can reach (items of a
  /// deleted section, sections of a deleted list, which REPLACE by foreign clients
  /// with foreign keys off can leave behind), in the caller's transaction.
  static func repairAll(db: any DatabaseConnection) throws -> Outcome {
    var outcome = Outcome()
    outcome.orphanedSections = try db.run(
      "DELETE FROM sections WHERE NOT EXISTS (SELECT 1 FROM lists l WHERE l.id = sections.list_id)")
    outcome.orphanedItems = try db.run(
      "DELETE FROM items WHERE NOT EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id)")
    outcome.positions = try run(db: db)
    return outcome
  }

  /// The two ordered tables, with the column naming each row's parent.
  enum Table: String {
    case sections, items
    var parentColumn: String { self == .sections ? "list_id" : "section_id" }
  }

  /// Whether a stored position is a well-formed key: text whose bytes form one.
  static func isGood(type: String, bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    type == "text" && PositionKey.isValid(bytes: bytes)
  }

  /// The parents (lists of sections, sections of items) that hold a bad key.
  static func parentsWithBadKeys(_ table: Table, db: any DatabaseConnection) throws -> [Int64] {
    let statement = try db.prepared(
      "SELECT \(table.parentColumn), \(db.dialect.positionType), position FROM \(table.rawValue)")
    var parents: [Int64] = []
    var seen = Set<Int64>()
    try statement.forEachRow { row in
      let type = row.string(at: 1)
      let good = row.withUTF8(at: 2) { isGood(type: type, bytes: $0) }
      let parent = row.int64(at: 0)
      if !good, seen.insert(parent).inserted { parents.append(parent) }
    }
    return parents
  }

  /// Rewrites the bad keys among the children of `parent`, in their current order.
  private static func repair(_ table: Table, parent: Int64, db: any DatabaseConnection) throws
    -> Int
  {
    let statement = try db.prepared(
      """
      SELECT id, \(db.dialect.positionType), position FROM \(table.rawValue)
      WHERE \(table.parentColumn) = ? ORDER BY position
      """)
    try statement.bind(parent, at: 1)
    var rows: [(id: Int64, good: String?)] = []
    try statement.forEachRow { row in
      let type = row.string(at: 1)
      let good = row.withUTF8(at: 2) { isGood(type: type, bytes: $0) }
      rows.append((row.int64(at: 0), good ? row.string(at: 2) : nil))
    }
    let update = try db.prepared("UPDATE \(table.rawValue) SET position = ? WHERE id = ?")
    var rewritten = 0
    var index = 0
    var lower: String?
    while index < rows.count {
      if let key = rows[index].good {
        lower = key
        index += 1
        continue
      }
      var end = index
      while end < rows.count, rows[end].good == nil { end += 1 }
      let upper = end < rows.count ? rows[end].good : nil
      let keys = try PositionKey.keys(between: lower, upper, count: end - index)
      for (row, key) in zip(rows[index..<end], keys) {
        try update.bind(key, at: 1)
        try update.bind(row.id, at: 2)
        try update.run()
        rewritten += 1
      }
      index = end
    }
    return rewritten
  }
}
