import SQLiteKit

/// The rows of one list, read and written inside a caller's transaction, with values
/// and metadata as JSON text. Every structural change writes exactly one section or
/// item row: positions come from ``PositionKey``, never from renumbering.
///
/// Index paths are resolved with ordered index scans (`LIMIT 1 OFFSET n`), so
/// addressing row `n` costs O(n) index steps; ids cost O(log n).
struct RowStore {
  let db: any DatabaseConnection
  let listID: Int64
  /// Whether metadata and values come from ListStore's own encoder, hence are
  /// compact valid JSON already; other text (``RawJSON`` from users) is checked and
  /// compacted by SQLite's `json()` as it is written.
  var canonicalMetadata = false
  var canonicalValues = false

  init(db: any DatabaseConnection, listID: Int64) {
    self.db = db
    self.listID = listID
  }

  /// Inserts a list row; returns its id.
  static func insertList(named name: String, db: any DatabaseConnection) throws -> Int64 {
    try db.insert(db.dialect.insertList, [.text(name)])
  }

  /// Runs `body` on the rows of list `listID`; when it fails because the list is gone
  /// (deleted by another process since the handle was made), the error says so.
  ///
  /// Every operation of `RowStore` is scoped by the list, so on a deleted list it finds
  /// nothing and fails: the list is looked up only then, not on every success.
  static func checked<Result>(
    db: any DatabaseConnection, listID: Int64, name: String, _ body: (RowStore) throws -> Result
  ) throws -> Result {
    do {
      return try body(RowStore(db: db, listID: listID))
    } catch let failure {
      // (A server that aborted the transaction answers nothing: keep its error then.
      // Not `try?`, which flattens that failure into the `nil` of a missing list.)
      let listExists: Bool
      do {
        listExists = try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil
      } catch {
        throw failure
      }
      if !listExists { throw ListStoreError.listNotFound(name: name) }
      throw failure
    }
  }

  /// Runs an `INSERT` of one row and returns its id.
  private func inserted(_ sql: String, _ values: any SQLBindable...) throws -> Int64 {
    try db.insert(sql, values.map(\.sqlValue))
  }

  // MARK: Sections

  /// Throws when the list is gone, for reads that would otherwise find nothing and
  /// succeed (a count, a snapshot).
  func requireList() throws {
    guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
      throw NeedsReload(reason: "the list is gone")
    }
  }

  func sectionCount() throws -> Int {
    try requireList()
    return Int(try db.scalarInt64("SELECT count(*) FROM sections WHERE list_id = ?", listID) ?? 0)
  }

  /// The id of the section at `index`.
  func sectionID(at index: Int) throws -> Int64 {
    if index >= 0,
      let id = try db.scalarInt64(
        "SELECT id FROM sections WHERE list_id = ? ORDER BY position LIMIT 1 OFFSET ?", listID,
        index)
    {
      return id
    }
    throw ListStoreError.sectionOutOfRange(index: index, count: try sectionCount())
  }

  /// Checks that section `id` belongs to this list.
  func checkSection(id: Int64) throws {
    guard
      try db.scalarInt64("SELECT 1 FROM sections WHERE id = ? AND list_id = ?", id, listID) != nil
    else { throw ListStoreError.sectionNotFound(id: id) }
  }

  /// The keys around gap `index` among the list's sections, leaving out `excluded`.
  private func sectionGap(at index: Int, excluding excluded: Int64 = 0) throws -> (String?, String?)
  {
    try gap(in: .sections, parent: listID, excluding: excluded, at: index) { limit in
      ListStoreError.sectionInsertionOutOfRange(index: index, limit: limit)
    }
  }

  func insertSection(metadata: String, at index: Int?) throws -> Int64 {
    // The one write that names the list itself: make sure it is there.
    try requireList()
    let position: String
    if let index {
      let (lower, upper) = try sectionGap(at: index)
      position = try PositionKey.between(lower, upper)
    } else {
      let last = try db.scalarText("SELECT max(position) FROM sections WHERE list_id = ?", listID)
      position = try PositionKey.between(last, nil)
    }
    return try inserted(
      db.dialect.insertSection[canonical: canonicalMetadata],
      listID, position, metadata)
  }

  func deleteSection(id: Int64) throws {
    guard try db.run("DELETE FROM sections WHERE id = ? AND list_id = ?", id, listID) == 1 else {
      throw ListStoreError.sectionNotFound(id: id)
    }
  }

  /// Moves section `id` so that it ends at `index`.
  /// Moves section `id` to `index`; `false` when it is there already (nothing written).
  @discardableResult
  func moveSection(id: Int64, to index: Int) throws -> Bool {
    try checkSection(id: id)
    let (lower, upper) = try sectionGap(at: index, excluding: id)
    let current = try db.scalarText("SELECT position FROM sections WHERE id = ?", id)
    if let current, isBetween(current, lower, upper) { return false }  // Already there.
    try db.run(
      "UPDATE sections SET position = ? WHERE id = ?", try PositionKey.between(lower, upper), id)
    return true
  }

  func setMetadata(_ metadata: String, sectionID id: Int64) throws {
    guard
      try db.run(
        db.dialect.setMetadata[canonical: canonicalMetadata],
        metadata, id, listID) == 1
    else { throw ListStoreError.sectionNotFound(id: id) }
  }

  // MARK: Items

  func itemCount(sectionID: Int64) throws -> Int {
    Int(try db.scalarInt64("SELECT count(*) FROM items WHERE section_id = ?", sectionID) ?? 0)
  }

  /// The id of the item at `row` of section number `section`.
  func itemID(section: Int, row: Int) throws -> Int64 {
    let sectionID = try sectionID(at: section)
    if row >= 0,
      let id = try db.scalarInt64(
        "SELECT id FROM items WHERE section_id = ? ORDER BY position LIMIT 1 OFFSET ?", sectionID,
        row)
    {
      return id
    }
    throw ListStoreError.itemOutOfRange(
      section: section, row: row, count: try itemCount(sectionID: sectionID))
  }

  /// Checks that item `id` belongs to this list.
  func checkItem(id: Int64) throws {
    guard
      try db.scalarInt64(
        "SELECT 1 FROM items i JOIN sections s ON s.id = i.section_id WHERE i.id = ? AND s.list_id = ?",
        id, listID) != nil
    else { throw ListStoreError.itemNotFound(id: id) }
  }

  private func itemGap(sectionID: Int64, section: Int, at row: Int, excluding excluded: Int64 = 0)
    throws -> (String?, String?)
  {
    try gap(in: .items, parent: sectionID, excluding: excluded, at: row) { limit in
      ListStoreError.insertionOutOfRange(section: section, row: row, limit: limit)
    }
  }

  /// Inserts an item into section number `section`, at `row` or at the end.
  func insertItem(value: String, section: Int, row: Int?) throws -> Int64 {
    let sectionID = try sectionID(at: section)
    return try insertItem(value: value, sectionID: sectionID, row: row) { row in
      try itemGap(sectionID: sectionID, section: section, at: row)
    }
  }

  /// Inserts an item into section `sectionID` at `row` (between the keys `gap` gives for
  /// it) or at the end.
  private func insertItem(
    value: String, sectionID: Int64, row: Int?, gap: (Int) throws -> (String?, String?)
  ) throws -> Int64 {
    let position: String
    if let row {
      let (lower, upper) = try gap(row)
      position = try PositionKey.between(lower, upper)
    } else {
      position = try PositionKey.between(try lastItemPosition(sectionID: sectionID), nil)
    }
    return try inserted(
      db.dialect.insertItem[canonical: canonicalValues], sectionID, position, value)
  }

  /// Appends many items to one section, the engine's fastest way.
  func appendItems(values: [String], sectionID: Int64) throws -> [Int64] {
    let keys = try PositionKey.keys(
      between: try lastItemPosition(sectionID: sectionID), nil, count: values.count)
    return try db.appendItems(
      sectionID: sectionID, keys: keys, values: values, checkingJSON: !canonicalValues)
  }

  private func lastItemPosition(sectionID: Int64) throws -> String? {
    try db.scalarText("SELECT max(position) FROM items WHERE section_id = ?", sectionID)
  }

  func deleteItem(id: Int64) throws {
    guard
      try db.run(
        """
        DELETE FROM items WHERE id = ?
        AND EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id AND s.list_id = ?)
        """,
        id, listID) == 1
    else { throw ListStoreError.itemNotFound(id: id) }
  }

  /// Moves item `id` to `row` of section number `section`, `row` counted after the move.
  /// Moves item `id` to `section`:`row`; `false` when it is there already.
  @discardableResult
  func moveItem(id: Int64, toSection section: Int, row: Int) throws -> Bool {
    try checkItem(id: id)
    let target = try sectionID(at: section)
    let (lower, upper) = try itemGap(sectionID: target, section: section, at: row, excluding: id)
    let statement = try db.cached("SELECT section_id, position FROM items WHERE id = ?")
    try statement.bind(id, at: 1)
    var current: (section: Int64, position: String)?
    if try statement.step() { current = (statement.int64(at: 0), statement.string(at: 1)) }
    statement.reset()
    if let current, current.section == target, isBetween(current.position, lower, upper) {
      return false
    }
    try db.run(
      "UPDATE items SET section_id = ?, position = ? WHERE id = ?", target,
      try PositionKey.between(lower, upper), id)
    return true
  }

  /// The section and position key of item `id`, which must be in this list.
  func place(ofItem id: Int64) throws -> (section: Int64, key: String) {
    let statement = try db.cached(
      """
      SELECT i.section_id, i.position FROM items i JOIN sections s ON s.id = i.section_id
      WHERE i.id = ? AND s.list_id = ?
      """)
    try statement.bind(id, at: 1)
    try statement.bind(listID, at: 2)
    defer { statement.reset() }
    guard try statement.step() else { throw ListStoreError.itemNotFound(id: id) }
    return (statement.int64(at: 0), statement.string(at: 1))
  }

  /// The gap right after (or before) item `neighbor`, which must be in this list, among
  /// its section's items other than `excluded`: one statement of two index seeks,
  /// whatever the section's size.
  private func gap(nextTo neighbor: Int64, after: Bool, excluding excluded: Int64 = 0) throws
    -> (section: Int64, lower: String?, upper: String?)
  {
    let statement = try db.cached(after ? Self.gapAfter : Self.gapBefore)
    try statement.bind(excluded, at: 1)
    try statement.bind(neighbor, at: 2)
    try statement.bind(listID, at: 3)
    defer { statement.reset() }
    guard try statement.step() else { throw ListStoreError.itemNotFound(id: neighbor) }
    let (section, key, other) = (
      statement.int64(at: 0), statement.string(at: 1), statement.optionalString(at: 2)
    )
    return after ? (section, key, other) : (section, other, key)
  }

  /// The statements of ``gap(nextTo:after:excluding:)``, built once.
  private static let gapAfter = gapSQL(
    "o.position > i.position ORDER BY o.position")
  private static let gapBefore = gapSQL(
    "o.position < i.position ORDER BY o.position DESC")
  private static func gapSQL(_ neighbor: String) -> String {
    """
    SELECT i.section_id, i.position, (
      SELECT o.position FROM items o
      WHERE o.section_id = i.section_id AND o.id <> ? AND \(neighbor) LIMIT 1)
    FROM items i JOIN sections s ON s.id = i.section_id
    WHERE i.id = ? AND s.list_id = ?
    """
  }

  /// Inserts an item right after (or before) item `neighbor`.
  func insertItem(value: String, nextTo neighbor: Int64, after: Bool) throws -> Int64 {
    let (section, lower, upper) = try gap(nextTo: neighbor, after: after)
    return try inserted(
      db.dialect.insertItem[canonical: canonicalValues],
      section, try PositionKey.between(lower, upper), value)
  }

  /// Moves item `id` right after (or before) item `neighbor`, in whichever section.
  /// Moves item `id` next to item `neighbor`; `false` when it is there already.
  @discardableResult
  func moveItem(id: Int64, nextTo neighbor: Int64, after: Bool) throws -> Bool {
    let current = try place(ofItem: id)
    guard neighbor != id else { return false }
    let (section, lower, upper) = try gap(nextTo: neighbor, after: after, excluding: id)
    if current.section == section, isBetween(current.key, lower, upper) { return false }
    try db.run(
      "UPDATE items SET section_id = ?, position = ? WHERE id = ?", section,
      try PositionKey.between(lower, upper), id)
    return true
  }

  func setValue(_ value: String, itemID id: Int64) throws {
    guard
      try db.run(db.dialect.setValue[canonical: canonicalValues], value, id, listID) == 1
    else { throw ListStoreError.itemNotFound(id: id) }
  }

  // MARK: Sections by neighbour

  /// The index of section `id` among the list's sections.
  func sectionIndex(id: Int64) throws -> Int {
    guard
      let key = try db.scalarText(
        "SELECT position FROM sections WHERE id = ? AND list_id = ?", id, listID)
    else { throw ListStoreError.sectionNotFound(id: id) }
    return Int(
      try db.scalarInt64(
        "SELECT count(*) FROM sections WHERE list_id = ? AND position < ?", listID, key) ?? 0)
  }

  /// The gap right after (or before) section `neighbor`, among the list's sections other
  /// than `excluded`: two index seeks, whatever the number of sections.
  private func sectionGap(nextTo neighbor: Int64, after: Bool, excluding excluded: Int64 = 0)
    throws -> (lower: String?, upper: String?)
  {
    guard
      let key = try db.scalarText(
        "SELECT position FROM sections WHERE id = ? AND list_id = ?", neighbor, listID)
    else { throw ListStoreError.sectionNotFound(id: neighbor) }
    let other = try db.scalarText(
      after
        ? "SELECT position FROM sections WHERE list_id = ? AND position > ? AND id <> ? ORDER BY position LIMIT 1"
        : "SELECT position FROM sections WHERE list_id = ? AND position < ? AND id <> ? ORDER BY position DESC LIMIT 1",
      listID, key, excluded)
    return after ? (key, other) : (other, key)
  }

  /// Inserts a section right after (or before) section `neighbor`.
  func insertSection(metadata: String, nextTo neighbor: Int64, after: Bool) throws -> Int64 {
    let (lower, upper) = try sectionGap(nextTo: neighbor, after: after)
    return try inserted(
      db.dialect.insertSection[canonical: canonicalMetadata],
      listID, try PositionKey.between(lower, upper), metadata)
  }

  /// Moves section `id` right after (or before) section `neighbor`.
  /// Moves section `id` next to section `neighbor`; `false` when it is there already.
  @discardableResult
  func moveSection(id: Int64, nextTo neighbor: Int64, after: Bool) throws -> Bool {
    try checkSection(id: id)
    guard neighbor != id else { return false }
    let (lower, upper) = try sectionGap(nextTo: neighbor, after: after, excluding: id)
    let current = try db.scalarText("SELECT position FROM sections WHERE id = ?", id)
    if let current, isBetween(current, lower, upper) { return false }  // Already there.
    try db.run(
      "UPDATE sections SET position = ? WHERE id = ?", try PositionKey.between(lower, upper), id)
    return true
  }

  /// Inserts an item into section `sectionID` (of this list), at `row` or at the end.
  func insertItem(value: String, sectionID: Int64, row: Int?) throws -> Int64 {
    try checkSection(id: sectionID)
    return try insertItem(value: value, sectionID: sectionID, row: row) { row in
      try gap(in: .items, parent: sectionID, excluding: 0, at: row) { limit in
        ListStoreError.insertionOutOfRange(
          section: (try? sectionIndex(id: sectionID)) ?? 0, row: row, limit: limit)
      }
    }
  }

  // MARK: Helpers

  /// The two ordered tables, with the column naming each row's parent.
  private enum Table: String {
    case sections, items
    var parentColumn: String { self == .sections ? "list_id" : "section_id" }
  }

  /// The position keys on both sides of gap `index` (0 = before the first row) among
  /// the rows of `parent` other than `excluded`; throws `outOfRange(count)` when the
  /// gap does not exist.
  private func gap(
    in table: Table, parent: Int64, excluding excluded: Int64, at index: Int,
    outOfRange: (Int) -> ListStoreError
  ) throws -> (String?, String?) {
    let rows = "FROM \(table.rawValue) WHERE \(table.parentColumn) = ? AND id <> ?"
    let count = { Int(try db.scalarInt64("SELECT count(*) \(rows)", parent, excluded) ?? 0) }
    guard index >= 0 else { throw outOfRange(try count()) }
    let statement = try db.cached(
      "SELECT position \(rows) ORDER BY position LIMIT ? OFFSET ?")
    try statement.bind(parent, at: 1)
    try statement.bind(excluded, at: 2)
    try statement.bind(Int64(index == 0 ? 1 : 2), at: 3)
    try statement.bind(Int64(max(index - 1, 0)), at: 4)
    var keys: [String] = []
    try statement.forEachRow { keys.append($0.string(at: 0)) }
    if index == 0 { return (nil, keys.first) }
    guard let lower = keys.first else { throw outOfRange(try count()) }
    return (lower, keys.count > 1 ? keys[1] : nil)
  }

  /// Whether `key` sorts strictly between the bounds, in SQLite's byte order.
  private func isBetween(_ key: String, _ lower: String?, _ upper: String?) -> Bool {
    (lower.map { $0.utf8.lexicographicallyPrecedes(key.utf8) } ?? true)
      && (upper.map { key.utf8.lexicographicallyPrecedes($0.utf8) } ?? true)
  }
}
