import SQLiteKit

/// One stored row as JSON text with its position key.
package struct StoredRow: Sendable, Hashable {
  /// The row's id.
  package var id: Int64
  /// Its position key among its siblings.
  package var position: String
  /// Its value (items) or metadata (sections) as JSON text.
  package var json: String

  /// Creates a row.
  package init(id: Int64, position: String, json: String) {
    self.id = id
    self.position = position
    self.json = json
  }
}

/// A section row with its item rows in order.
package struct StoredSection: Sendable, Hashable {
  /// The section row itself; `json` is its metadata.
  package var row: StoredRow
  /// Its items in position order.
  package var items: [StoredRow]

  /// Creates a section.
  package init(row: StoredRow, items: [StoredRow]) {
    self.row = row
    self.items = items
  }
}

extension RowStore {
  /// Every section with its items, in order, as stored.
  func snapshot() throws -> [StoredSection] {
    try requireList()
    let statement = try db.cached(db.dialect.listSnapshot)
    try statement.bind(listID, at: 1)
    var sections: [StoredSection] = []
    try statement.forEachRow { row in
      let sectionID = row.int64(at: 0)
      if sections.last?.row.id != sectionID {
        sections.append(
          StoredSection(
            row: StoredRow(id: sectionID, position: row.string(at: 1), json: row.string(at: 2)),
            items: []))
      }
      if !row.isNull(at: 3) {
        sections[sections.count - 1].items.append(
          StoredRow(id: row.int64(at: 3), position: row.string(at: 4), json: row.string(at: 5)))
      }
    }
    return sections
  }

  /// One section with its items.
  func section(id: Int64) throws -> StoredSection {
    let statement = try db.cached(
      "SELECT id, position, metadata FROM sections WHERE id = ? AND list_id = ?")
    try statement.bind(id, at: 1)
    try statement.bind(listID, at: 2)
    guard try statement.step() else {
      statement.reset()
      throw ListStoreError.sectionNotFound(id: id)
    }
    let row = StoredRow(id: id, position: statement.string(at: 1), json: statement.string(at: 2))
    statement.reset()
    let items = try db.cached(
      "SELECT id, position, value FROM items WHERE section_id = ? ORDER BY position")
    try items.bind(id, at: 1)
    var rows: [StoredRow] = []
    try items.forEachRow {
      rows.append(
        StoredRow(id: $0.int64(at: 0), position: $0.string(at: 1), json: $0.string(at: 2)))
    }
    return StoredSection(row: row, items: rows)
  }

  /// One section's metadata, without its items.
  func metadata(ofSection id: Int64) throws -> String {
    guard
      let json = try db.scalarText(
        "SELECT metadata FROM sections WHERE id = ? AND list_id = ?", id, listID)
    else { throw ListStoreError.sectionNotFound(id: id) }
    return json
  }

  /// One item's value.
  func itemValue(id: Int64) throws -> String {
    try checkItem(id: id)
    return try db.scalarText("SELECT value FROM items WHERE id = ?", id) ?? "null"
  }
}

extension RowStore {
  /// Hands every section and item to the callbacks, in order, as stored JSON bytes (valid
  /// only during each call): the list read without being held in memory.
  func forEachRow(
    section: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void,
    item: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void,
    endSection: () throws -> Void
  ) throws {
    try requireList()
    var sections: [(id: Int64, metadata: String)] = []
    let sectionRows = try db.cached(
      "SELECT id, metadata FROM sections WHERE list_id = ? ORDER BY position")
    try sectionRows.bind(listID, at: 1)
    try sectionRows.forEachRow { sections.append(($0.int64(at: 0), $0.string(at: 1))) }
    let items = try db.cached("SELECT id, value FROM items WHERE section_id = ? ORDER BY position")
    for (id, metadata) in sections {
      var metadata = metadata
      try metadata.withUTF8 { try section(id, $0) }
      try items.bind(id, at: 1)
      defer { items.reset() }
      while try items.step() {
        let itemID = items.int64(at: 0)
        try items.withUTF8(at: 1) { try item(itemID, $0) }
      }
      try endSection()
    }
  }

  /// The number of items in the list.
  func itemCount() throws -> Int {
    try requireList()
    return Int(
      try db.scalarInt64(db.dialect.listItemCount, listID) ?? 0)
  }
}

extension RowStore {
  /// The ids of the list's sections, in order.
  func sectionIDs() throws -> [Int64] {
    try requireList()
    var ids: [Int64] = []
    let sections = try db.cached("SELECT id FROM sections WHERE list_id = ? ORDER BY position")
    try sections.bind(listID, at: 1)
    try sections.forEachRow { ids.append($0.int64(at: 0)) }
    return ids
  }

  /// The ids of the list's first `limit` items, in order: a section at a time, each
  /// read through the index on (section_id, position) no further than needed.
  func leadingItemIDs(limit: Int) throws -> [Int64] {
    var ids: [Int64] = []
    let items = try db.cached("SELECT id FROM items WHERE section_id = ? ORDER BY position LIMIT ?")
    for section in try sectionIDs() where ids.count < limit {
      try items.bind(section, at: 1)
      try items.bind(Int64(limit - ids.count), at: 2)
      try items.forEachRow { ids.append($0.int64(at: 0)) }
    }
    return ids
  }
}
