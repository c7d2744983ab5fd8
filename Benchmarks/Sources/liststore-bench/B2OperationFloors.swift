import CSQLiteBench

/// B2's floors per operation: for each of B2's operations, the statements ListStore runs
/// for it (see `RowStore` in the library), prepared once and committed through the C API
/// on the floor's connection, with foreign keys on as on ListStore's connections: what
/// the operation costs the database alone, observing nothing. ListStore's time over them is
/// what it adds around the same statements (encoding, the statement cache, the log read,
/// staging, locks and delivery to the subscriber, which the floors, timed to the end of
/// `COMMIT`, do not have); the target stays on the single `UPDATE` floor.
///
/// Keys are made the simplest valid way: the key before the neighbour plus one digit of
/// fraction, which lies between the two as long as the key before is an integer (the
/// fixture's keys are, and the item each round inserts is deleted in the same round).
final class OperationFloors {
  private let raw: RawDatabase
  private let listID: Int64
  private let begin: OpaquePointer
  private let commit: OpaquePointer
  private let setValue: OpaquePointer
  private let gapBefore: OpaquePointer
  private let place: OpaquePointer
  private let insert: OpaquePointer
  private let move: OpaquePointer
  private let delete: OpaquePointer
  /// The last write's steps, in microseconds: `BEGIN` with the reads that find the place,
  /// the write statement, `COMMIT`.
  private(set) var lastSteps = Steps()
  /// Where in the current write its reads ended (``monotonicNanoseconds()``).
  private var readsEnd: UInt64 = 0

  /// One write's time by step, in microseconds.
  struct Steps {
    var reads = 0.0
    var write = 0.0
    var commit = 0.0
  }

  /// Prepares the statements on `raw` for the items of list `listID`.
  init(raw: RawDatabase, listID: Int64) throws {
    self.raw = raw
    self.listID = listID
    try raw.execute("PRAGMA foreign_keys = ON")
    begin = try raw.prepare("BEGIN IMMEDIATE")
    commit = try raw.prepare("COMMIT")
    setValue = try raw.prepare(
      """
      UPDATE items SET value = ?
      WHERE id = ?
      AND EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id AND s.list_id = ?)
      """)
    gapBefore = try raw.prepare(
      """
      SELECT i.section_id, i.position, (
        SELECT o.position FROM items o
        WHERE o.section_id = i.section_id AND o.id <> ? AND o.position < i.position ORDER BY o.position DESC LIMIT 1)
      FROM items i JOIN sections s ON s.id = i.section_id
      WHERE i.id = ? AND s.list_id = ?
      """)
    place = try raw.prepare(
      """
      SELECT i.section_id, i.position FROM items i JOIN sections s ON s.id = i.section_id
      WHERE i.id = ? AND s.list_id = ?
      """)
    insert = try raw.prepare("INSERT INTO items(section_id, position, value) VALUES (?, ?, ?)")
    move = try raw.prepare("UPDATE items SET section_id = ?, position = ? WHERE id = ?")
    delete = try raw.prepare(
      """
      DELETE FROM items WHERE id = ?
      AND EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id AND s.list_id = ?)
      """)
  }

  deinit {
    for statement in [begin, commit, setValue, gapBefore, place, insert, move, delete] {
      sqlite3_finalize(statement)
    }
  }

  /// Sets item `id`'s value to the JSON text `value`.
  func update(id: Int64, value: String) throws {
    try transaction {
      bind(setValue, value, at: 1)
      sqlite3_bind_int64(setValue, 2, id)
      sqlite3_bind_int64(setValue, 3, listID)
      try run(setValue, changing: 1)
    }
  }

  /// Inserts an item with the JSON text `value` right before item `neighbor`; its id.
  func insert(value: String, before neighbor: Int64) throws -> Int64 {
    try transaction {
      let (section, key) = try keyBefore(neighbor, excluding: 0)
      readsEnd = monotonicNanoseconds()
      sqlite3_bind_int64(insert, 1, section)
      bind(insert, key, at: 2)
      bind(insert, value, at: 3)
      try run(insert, changing: 1)
      return sqlite3_last_insert_rowid(raw.handle)
    }
  }

  /// Moves item `id` right before item `neighbor`, in whichever section.
  func move(id: Int64, before neighbor: Int64) throws {
    try transaction {
      sqlite3_bind_int64(place, 1, id)
      sqlite3_bind_int64(place, 2, listID)
      try step(place, "item \(id)")
      sqlite3_reset(place)
      let (section, key) = try keyBefore(neighbor, excluding: id)
      readsEnd = monotonicNanoseconds()
      sqlite3_bind_int64(move, 1, section)
      bind(move, key, at: 2)
      sqlite3_bind_int64(move, 3, id)
      try run(move, changing: 1)
    }
  }

  /// Deletes item `id`.
  func delete(id: Int64) throws {
    try transaction {
      sqlite3_bind_int64(delete, 1, id)
      sqlite3_bind_int64(delete, 2, listID)
      try run(delete, changing: 1)
    }
  }

  /// The section of item `neighbor` and a key between it and the item before it (other
  /// than `excluded`).
  private func keyBefore(_ neighbor: Int64, excluding excluded: Int64) throws -> (Int64, String) {
    sqlite3_bind_int64(gapBefore, 1, excluded)
    sqlite3_bind_int64(gapBefore, 2, neighbor)
    sqlite3_bind_int64(gapBefore, 3, listID)
    defer { sqlite3_reset(gapBefore) }
    try step(gapBefore, "item \(neighbor)")
    try check(
      sqlite3_column_type(gapBefore, 2) == SQLITE_TEXT,
      "B2 floors: item \(neighbor) is the first of its section")
    let key = columnText(gapBefore, 2) + "V"
    let upper = columnText(gapBefore, 1)
    try check(
      key.utf8.lexicographicallyPrecedes(upper.utf8),
      "B2 floors: the key \(key) made before item \(neighbor) does not sort below its \(upper)")
    return (sqlite3_column_int64(gapBefore, 0), key)
  }

  /// Steps `statement` to its first row, which must be there (`what` names it).
  private func step(_ statement: OpaquePointer, _ what: String) throws {
    let status = sqlite3_step(statement)
    guard status == SQLITE_ROW else {
      throw BenchError(
        status == SQLITE_DONE
          ? "B2 floors: \(what) not found" : "B2 floors: reading \(what): \(raw.message)")
    }
  }

  private func bind(_ statement: OpaquePointer, _ text: String, at index: Int32) {
    sqlite3_bind_text(statement, index, text, -1, bench_sqlite_transient())
  }

  /// Steps `statement` to its end and checks that it changed `count` rows.
  private func run(_ statement: OpaquePointer, changing count: Int32) throws {
    defer { sqlite3_reset(statement) }
    let sql = String(cString: sqlite3_sql(statement))
    guard sqlite3_step(statement) == SQLITE_DONE else {
      throw BenchError("B2 floors: \(sql): \(raw.message)")
    }
    let changed = sqlite3_changes(raw.handle)
    try check(changed == count, "B2 floors: \(sql): \(changed) rows changed, not \(count)")
  }

  /// `body` between `BEGIN IMMEDIATE` and `COMMIT`, rolled back when it throws.
  private func transaction<Result>(_ body: () throws -> Result) throws -> Result {
    defer { sqlite3_reset(begin) }
    let start = monotonicNanoseconds()
    try check(sqlite3_step(begin) == SQLITE_DONE, "B2 floors: BEGIN: \(raw.message)")
    // An operation without reads (update, delete) has them end with its BEGIN.
    readsEnd = monotonicNanoseconds()
    let result: Result
    do {
      result = try body()
    } catch {
      try? raw.execute("ROLLBACK")
      throw error
    }
    defer { sqlite3_reset(commit) }
    let written = monotonicNanoseconds()
    guard sqlite3_step(commit) == SQLITE_DONE else {
      let message = raw.message
      try? raw.execute("ROLLBACK")
      throw BenchError("B2 floors: COMMIT: \(message)")
    }
    let end = monotonicNanoseconds()
    lastSteps = Steps(
      reads: Double(readsEnd - start) / 1e3, write: Double(written - readsEnd) / 1e3,
      commit: Double(end - written) / 1e3)
    return result
  }
}
