import Observable2D

/// Makes a stored list equal to a new state with the fewest row writes, inside the
/// caller's transaction, as ``StoredList/replace(with:performDiff:)`` describes.
///
/// `Changeset.diffByID` of the stored state and the new one decides: every entry is one
/// row write. The ids of the new state are checked to be unique first, so the diff
/// compares a stored item only with the new item that has its id, which is what the
/// stored state's `unchanged` was read against. Rows that stay where they are keep their
/// position keys; each moved or inserted row gets a key between its kept neighbours that
/// differs from every key of its new parent, so no write collides with a row that is
/// still to move away. The writes go in the order that makes the observers' changeset,
/// read back from the log, equal to the diff.
struct ReplacePlanner {
  let rows: RowStore
  let old: SyncState
  let new: SyncState

  private var db: any DatabaseConnection { rows.db }

  /// What happened to a stored item.
  private enum Fate: UInt8 {
    /// It stays in its section, at its place (possibly with a new value).
    case kept
    /// It moves within its section or to another kept one.
    case movedAway
    /// The diff deletes it.
    case deleted
    /// Its section is deleted.
    case sectionDeleted
    /// It is taken over by an item of the new state that carries its id (it moves
    /// out of a deleted section, or into an inserted one).
    case claimed
  }

  /// The placed rows of a stored section, planned before any item is written.
  private struct SectionPlan {
    /// Where each moved row comes from: row → old flat index.
    var moveSource: [Int: Int]
    /// The rows placed anew (moved or inserted), in row order, with their keys.
    var placedRows: [(row: Int, key: String)]
  }

  /// A write that moves an existing item into an inserted section, done in place of
  /// the diff's deletion of it, in the deletions' order.
  private struct ClaimedMove {
    var section: Int64
    var key: String
    var newIndex: Int
  }

  /// Reads the stored list and makes it equal to `new`; returns the diff with the ids of
  /// inserted rows filled in (metadata: the new section index; values: new flat item
  /// indexes).
  ///
  /// - Throws: ``ListStoreError/duplicateID(kind:id:)`` when `new` names a section or an
  ///   item id more than once, before anything is read.
  static func run(rows: RowStore, to new: SyncState) throws -> Changeset<Int32, Int32> {
    var sectionIDs = Set<Int64>()
    for id in new.sectionIDs where id != 0 && !sectionIDs.insert(id).inserted {
      throw ListStoreError.duplicateID(kind: "section", id: id)
    }
    let newItems = IDTable(positionsOf: new.itemIDs)
    if let id = newItems.repeatedID { throw ListStoreError.duplicateID(kind: "item", id: id) }
    var new = new
    var matches = ValueMatches()
    return try rows.db.withPageCache(kibibytes: 16_384) {
      let old = try rows.syncState(
        sectionsRead: { stored in
          new.adoptSectionIDs(from: stored)
          matches = ValueMatches(idLessItemsOf: new)
        },
        isUnchanged: { sectionID, id, value in
          if let index = newItems.value(for: id) { return new.values.equals(Int(index), value) }
          // A row no id of the new state claims: an item without an id may take it over.
          return matches.pair(storedItem: id, value: value, inSection: sectionID)
        })
      for (index, id) in matches.paired { new.itemIDs[index] = id }
      return try ReplacePlanner(rows: rows, old: old, new: new).run()
    }
  }

  /// Applies the difference; returns the diff with the ids of inserted rows filled in.
  private func run() throws -> Changeset<Int32, Int32> {
    let unchanged = old.unchanged
    let oldMetadata = old.metadata
    let newMetadata = new.metadata
    var changeset = Changeset<Int32, Int32>.diffByID(
      from: old.diffSections(), to: new.diffSections(),
      isEqual: { old, _ in unchanged[Int(old)] },
      metadataIsEqual: { oldMetadata.equals(Int($0), newMetadata, Int($1)) })
    let writer = try Writer(rows: rows)

    // Sections: which new ones are placed anew (inserted or moved), and their keys.
    var oldSectionIndex: [Int64: Int] = [:]
    for (index, id) in old.sectionIDs.enumerated() { oldSectionIndex[id] = index }
    var newToOldSection = [Int](repeating: -1, count: new.sectionCount)
    for index in 0..<new.sectionCount {
      if let oldIndex = oldSectionIndex[new.sectionIDs[index]] { newToOldSection[index] = oldIndex }
    }
    var insertedSection = [Bool](repeating: false, count: new.sectionCount)
    var unknownSectionIDs = Set<Int64>()
    for entry in changeset.insertedSections {
      insertedSection[entry.index] = true
      let id = new.sectionIDs[entry.index]
      // Paired by id unless the id is new to this list, or given twice.
      if id != 0, oldSectionIndex[id] != nil || !unknownSectionIDs.insert(id).inserted {
        throw ListStoreError.duplicateID(kind: "section", id: id)
      }
      newToOldSection[entry.index] = -1
    }
    var placedSection = insertedSection
    for entry in changeset.movedSections { placedSection[entry.to] = true }
    var sectionKeys = [String](repeating: "", count: new.sectionCount)
    for (index, key) in try placedKeys(
      count: new.sectionCount, placed: placedSection, oldKey: { old.sectionKeys.string($0) },
      oldRange: 0..<old.sectionCount, keptIndex: { newToOldSection[$0] })
    {
      sectionKeys[index] = key
    }

    // Items: the fate of every stored item.
    var fate = [Fate](repeating: .kept, count: old.itemCount)
    var deletedSection = [Bool](repeating: false, count: old.sectionCount)
    for entry in changeset.deletedSections {
      deletedSection[entry.index] = true
      for index in old.items(of: entry.index) { fate[index] = .sectionDeleted }
    }
    for entry in changeset.deletedItems {
      fate[old.itemStarts[entry.at[0]] + entry.at[1]] = .deleted
    }
    for entry in changeset.movedItems {
      fate[old.itemStarts[entry.from[0]] + entry.from[1]] = .movedAway
    }
    // New items that name stored rows the diff did not match: the diff sees them as
    // inserted, but they are rows moving out of deleted sections or into inserted ones.
    var oldItemIndex: [Int64: Int]?
    func claim(_ id: Int64, allowing allowed: Set<Fate>) throws -> Int? {
      if oldItemIndex == nil {
        var table = [Int64: Int](minimumCapacity: old.itemCount)
        for (index, id) in old.itemIDs.enumerated() { table[id] = index }
        oldItemIndex = table
      }
      guard let index = oldItemIndex?[id] else { return nil }  // New to this list.
      guard allowed.contains(fate[index]) else {
        throw ListStoreError.duplicateID(kind: "item", id: id)
      }
      fate[index] = .claimed
      return index
    }
    var unknownItemIDs = Set<Int64>()
    func unknown(_ id: Int64) throws {
      guard unknownItemIDs.insert(id).inserted else {
        throw ListStoreError.duplicateID(kind: "item", id: id)
      }
    }

    // 1. Sections, in new order: inserted, moved, changed.
    var sectionIDs = new.sectionIDs
    for index in 0..<new.sectionCount {
      if insertedSection[index] {
        sectionIDs[index] = try writer.insertSection(
          key: sectionKeys[index], metadata: new.metadata.string(index))
        continue
      }
      let oldIndex = newToOldSection[index]
      let changed = !old.metadata.equals(oldIndex, new.metadata, index)
      if placedSection[index] {
        try writer.moveSection(
          sectionIDs[index], key: sectionKeys[index],
          metadata: changed ? new.metadata.string(index) : nil)
      } else if changed {
        try writer.setMetadata(sectionIDs[index], new.metadata.string(index))
      }
    }

    // 2. Items. First the plan of every stored section, read before any item is written:
    //    the keys of its placed rows lie between stored keys, and a move to a section
    //    that comes earlier in new order changes the key of the row it moves.
    // Value updates of kept items: the diff's, in old order (its values: new indexes).
    let updates = changeset.updatedItems.map { entry in
      (old: old.itemStarts[entry.at[0]] + entry.at[1], new: Int(entry.value))
    }
    var plans = [SectionPlan?](repeating: nil, count: new.sectionCount)
    var moved = changeset.movedItems.makeIterator()
    var nextMove = moved.next()
    var inserted = changeset.insertedItems.makeIterator()
    var nextInsertion = inserted.next()
    for section in 0..<new.sectionCount where !insertedSection[section] {
      // A stored section: its kept items keep their keys; the others go between them.
      let range = new.items(of: section)
      let oldSection = newToOldSection[section]
      let oldRange = old.items(of: oldSection)
      var placed = [Bool](repeating: false, count: range.count)
      var moveSource: [Int: Int] = [:]  // Row → old flat index.
      while let move = nextMove, move.to[0] == section {
        placed[move.to[1]] = true
        moveSource[move.to[1]] = old.itemStarts[move.from[0]] + move.from[1]
        nextMove = moved.next()
      }
      while let insertion = nextInsertion, insertion.at[0] == section {
        placed[insertion.at[1]] = true
        nextInsertion = inserted.next()
      }
      var keptOld: [Int] = []  // The old flat index of each kept row, by row (-1: placed).
      keptOld.reserveCapacity(range.count)
      var cursor = oldRange.lowerBound
      for row in 0..<range.count {
        guard !placed[row] else {
          keptOld.append(-1)
          continue
        }
        while cursor < oldRange.upperBound, fate[cursor] != .kept { cursor += 1 }
        guard cursor < oldRange.upperBound,
          old.itemIDs[cursor] == new.itemIDs[range.lowerBound + row]
        else { throw NeedsReload(reason: "the diff's kept items are not in their old order") }
        keptOld.append(cursor)
        cursor += 1
      }
      let keys = try placedKeys(
        count: range.count, placed: placed, oldKey: { try rows.position(ofItem: old.itemIDs[$0]) },
        oldRange: oldRange, keptIndex: { keptOld[$0] })
      plans[section] = SectionPlan(moveSource: moveSource, placedRows: keys)
    }

    //    Then the writes, section by section in new order: moves and insertions; value
    //    updates of kept items are written after them, in old order.
    var assigned: [Int32: Int64] = [:]
    assigned.reserveCapacity(changeset.insertedItems.count)
    var claimedMoves: [Int: ClaimedMove] = [:]
    for section in 0..<new.sectionCount {
      let range = new.items(of: section)
      let target = sectionIDs[section]
      if insertedSection[section] {
        let keys = try PositionKey.keys(between: nil, nil, count: range.count)
        for (offset, index) in range.enumerated() {
          let id = new.itemIDs[index]
          if id != 0, let oldIndex = try claim(id, allowing: [.deleted, .sectionDeleted]) {
            if old.sectionOfDeletedItem(oldIndex, deletedSection) {
              try writer.moveItem(
                id, section: target, key: keys[offset],
                value: value(ifChangedFrom: oldIndex, to: index))
            } else {
              claimedMoves[oldIndex] = ClaimedMove(
                section: target, key: keys[offset], newIndex: index)
            }
            continue
          }
          if id != 0 { try unknown(id) }
          assigned[Int32(truncatingIfNeeded: index)] = try writer.insertItem(
            section: target, key: keys[offset], value: new.values.string(index))
        }
        continue
      }
      guard let plan = plans[section] else { continue }
      for (row, key) in plan.placedRows {
        let index = range.lowerBound + row
        let id = new.itemIDs[index]
        if let source = plan.moveSource[row] {
          try writer.moveItem(
            id, section: target, key: key, value: value(ifChangedFrom: source, to: index))
          continue
        }
        if id != 0, let oldIndex = try claim(id, allowing: [.sectionDeleted]) {
          try writer.moveItem(
            id, section: target, key: key, value: value(ifChangedFrom: oldIndex, to: index))
          continue
        }
        if id != 0 { try unknown(id) }
        assigned[Int32(truncatingIfNeeded: index)] = try writer.insertItem(
          section: target, key: key, value: new.values.string(index))
      }
    }
    for update in updates {
      try writer.setValue(old.itemIDs[update.old], new.values.string(update.new))
    }

    // 3. Deletions in old order; an item an inserted section takes moves there instead.
    for entry in changeset.deletedItems {
      let index = old.itemStarts[entry.at[0]] + entry.at[1]
      if let move = claimedMoves[index] {
        try writer.moveItem(
          entry.id, section: move.section, key: move.key,
          value: value(ifChangedFrom: index, to: move.newIndex))
      } else {
        try writer.deleteItem(entry.id)
      }
    }
    for entry in changeset.deletedSections {
      try writer.deleteSection(entry.id)
    }

    // The ids the inserted rows got.
    for index in changeset.insertedSections.indices {
      let section = changeset.insertedSections[index].index
      changeset.insertedSections[index].id = sectionIDs[section]
      changeset.insertedSections[index].items = ItemList(
        entries: changeset.insertedSections[index].items.entries.map { entry in
          (id: assigned[entry.value] ?? entry.id, value: entry.value)
        })
    }
    for index in changeset.insertedItems.indices {
      if let id = assigned[changeset.insertedItems[index].value] {
        changeset.insertedItems[index].id = id
      }
    }
    return changeset
  }

  /// The new JSON of item `newIndex`, or `nil` when it equals the stored one (item
  /// `oldIndex`, which has the same id).
  private func value(ifChangedFrom oldIndex: Int, to newIndex: Int) -> String? {
    old.unchanged[oldIndex] ? nil : new.values.string(newIndex)
  }

  /// Keys for the placed rows of one parent, by row: between the keys of the kept rows
  /// around them, and different from every key the parent holds now.
  ///
  /// - Parameters:
  ///   - count: The number of rows the parent ends with.
  ///   - placed: Which of them are placed anew.
  ///   - oldKey: The stored key of a row, by an index of `oldRange`.
  ///   - oldRange: The parent's stored rows, in key order.
  ///   - keptIndex: For a kept row, its index in `oldRange`.
  /// - Returns: The placed rows with their keys, in row order.
  /// - Throws: ``PositionKey/InvalidKey`` for a malformed stored key, or what `oldKey`
  ///   throws.
  private func placedKeys(
    count: Int, placed: [Bool], oldKey: (Int) throws -> String, oldRange: Range<Int>,
    keptIndex: (Int) -> Int
  ) throws -> [(row: Int, key: String)] {
    var keys: [(row: Int, key: String)] = []
    var runStart = 0
    var lower = oldRange.lowerBound - 1  // The kept row before the run, in old order.
    for row in 0...count {
      guard row == count || !placed[row] else { continue }
      let upper = row == count ? oldRange.upperBound : keptIndex(row)
      if runStart < row {
        let run = try Self.keys(
          count: row - runStart, after: lower, before: upper, key: oldKey, range: oldRange)
        for (offset, key) in run.enumerated() { keys.append((runStart + offset, key)) }
      }
      lower = upper
      runStart = row + 1
    }
    return keys
  }

  /// `count` ascending keys between stored rows `lower` and `upper` (exclusive; either
  /// may be outside `range`, meaning no bound) that avoid the keys of the rows between
  /// them, which are all moving away or being deleted.
  private static func keys(
    count: Int, after lower: Int, before upper: Int, key: (Int) throws -> String,
    range: Range<Int>
  ) throws -> [String] {
    let low = lower >= range.lowerBound ? try key(lower) : nil
    if lower + 1 == upper {
      return try PositionKey.keys(
        between: low, upper < range.upperBound ? try key(upper) : nil, count: count)
    }
    if upper == range.upperBound {
      // After the last key there is: appending keeps keys short.
      return try PositionKey.keys(between: try key(upper - 1), nil, count: count)
    }
    return try PositionKey.keys(between: low, try key(lower + 1), count: count)
  }

  /// The single-row statements a sync writes with, prepared once per connection.
  private struct Writer {
    let db: any DatabaseConnection
    let listID: Int64
    let metadata: String
    let value: String
    let newSectionID: (column: String, value: String)
    let newItemID: (column: String, value: String)

    init(rows: RowStore) throws {
      db = rows.db
      listID = rows.listID
      metadata = rows.canonicalMetadata ? "?" : rows.db.dialect.checkedJSONParameter
      value = rows.canonicalValues ? "?" : rows.db.dialect.checkedJSONParameter
      newSectionID = rows.db.dialect.newRowID("sections")
      newItemID = rows.db.dialect.newRowID("items")
    }

    /// Runs a statement that must change exactly one row.
    private func one(_ sql: String, _ values: [SQLValue]) throws {
      let statement = try db.cached(sql)
      for (offset, value) in values.enumerated() {
        try statement.bind(value, at: Int32(offset + 1))
      }
      try statement.run()
      guard statement.rowsChanged == 1 else {
        throw NeedsReload(reason: "a row changed while the list was synchronised")
      }
    }

    private func inserted(_ sql: String, _ values: [SQLValue]) throws -> Int64 {
      try db.insert(sql, values)
    }

    func insertSection(key: String, metadata json: String) throws -> Int64 {
      try inserted(
        "INSERT INTO sections(\(newSectionID.column)list_id, position, metadata) "
          + "VALUES (\(newSectionID.value)?, ?, \(metadata))",
        [.integer(listID), .text(key), .text(json)])
    }

    func moveSection(_ id: Int64, key: String, metadata json: String?) throws {
      if let json {
        try one(
          "UPDATE sections SET position = ?, metadata = \(metadata) WHERE id = ?",
          [.text(key), .text(json), .integer(id)])
      } else {
        try one("UPDATE sections SET position = ? WHERE id = ?", [.text(key), .integer(id)])
      }
    }

    func setMetadata(_ id: Int64, _ json: String) throws {
      try one(
        "UPDATE sections SET metadata = \(metadata) WHERE id = ?", [.text(json), .integer(id)])
    }

    func deleteSection(_ id: Int64) throws {
      try one("DELETE FROM sections WHERE id = ?", [.integer(id)])
    }

    func insertItem(section: Int64, key: String, value json: String) throws -> Int64 {
      try inserted(
        "INSERT INTO items(\(newItemID.column)section_id, position, value) "
          + "VALUES (\(newItemID.value)?, ?, \(value))",
        [.integer(section), .text(key), .text(json)])
    }

    func moveItem(_ id: Int64, section: Int64, key: String, value json: String?) throws {
      if let json {
        try one(
          "UPDATE items SET section_id = ?, position = ?, value = \(value) WHERE id = ?",
          [.integer(section), .text(key), .text(json), .integer(id)])
      } else {
        try one(
          "UPDATE items SET section_id = ?, position = ? WHERE id = ?",
          [.integer(section), .text(key), .integer(id)])
      }
    }

    func setValue(_ id: Int64, _ json: String) throws {
      try one("UPDATE items SET value = \(value) WHERE id = ?", [.text(json), .integer(id)])
    }

    func deleteItem(_ id: Int64) throws {
      try one("DELETE FROM items WHERE id = ?", [.integer(id)])
    }
  }
}

extension RowStore {
  /// The position key of item `id`.
  fileprivate func position(ofItem id: Int64) throws -> String {
    guard let key = try db.scalarText("SELECT position FROM items WHERE id = ?", id) else {
      throw NeedsReload(reason: "item \(id) vanished during a sync")
    }
    return key
  }
}

extension DatabaseConnection {
  /// Runs `body` with SQLite's page cache at least `kibibytes` large, then sets it back.
  ///
  /// A sync reads the whole list, then reads keys and writes rows next to what it read:
  /// the default cache (2 MB, about 30k rows) would have let those pages go by then, and
  /// each would be read from the file again. Other engines, and a cache size given in pages
  /// (SQLite's default is in KiB), run `body` as it is. Setting the size back cannot fail
  /// in a way that matters: the cache would only stay larger.
  fileprivate func withPageCache<Result>(kibibytes: Int, _ body: () throws -> Result) throws
    -> Result
  {
    guard dialect.engine == .sqlite, let size = try scalarInt64("PRAGMA cache_size"),
      size < 0, -size < kibibytes
    else { return try body() }
    try execute("PRAGMA cache_size = -\(kibibytes)")
    defer { try? execute("PRAGMA cache_size = \(size)") }
    return try body()
  }
}

/// The pairing of the new state's items without an id with stored rows that no id of
/// the new state claims, by value, within a section both states have: one to one, in
/// order (the first unclaimed stored row of a value pairs with the first new item of
/// that value). A paired item keeps the stored row's id, so the sync writes nothing for
/// it; only items left unpaired are new rows.
struct ValueMatches {
  /// The new items still unpaired, by section id and value: flat indexes, in order.
  private var waiting: [Int64: [String: ArraySlice<Int>]] = [:]
  /// The pairs made: new flat index → stored row id.
  private(set) var paired: [(index: Int, id: Int64)] = []

  /// No items to pair.
  init() {}

  /// The items without an id of `new`'s sections that have an id.
  init(idLessItemsOf new: SyncState) {
    for section in 0..<new.sectionCount where new.sectionIDs[section] != 0 {
      var byValue: [String: ArraySlice<Int>] = [:]
      for index in new.items(of: section) where new.itemIDs[index] == 0 {
        byValue[new.values.string(index), default: []].append(index)
      }
      if !byValue.isEmpty { waiting[new.sectionIDs[section]] = byValue }
    }
  }

  /// Pairs the unclaimed stored row `id` of section `sectionID`, whose value is `value`
  /// (UTF-8 JSON text), with the first unpaired new item of that section and value.
  /// - Returns: Whether it was paired (its value is then unchanged).
  mutating func pair(
    storedItem id: Int64, value: UnsafeBufferPointer<UInt8>, inSection sectionID: Int64
  ) -> Bool {
    guard !waiting.isEmpty, waiting[sectionID] != nil else { return false }
    let text = String(decoding: value, as: UTF8.self)
    guard let index = waiting[sectionID]?[text]?.popFirst() else { return false }
    paired.append((index, id))
    return true
  }
}
