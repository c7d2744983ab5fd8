// A replica's local commits closed into writes (migration 8, docs/replicas.md).

/// Turns the rows a replica's local commit touched (`outbox_rows`, noted by triggers)
/// into one write of the outbox: its intents, each inserted or moved row anchored to its
/// neighbours in the new order.
enum ReplicaOutbox {
  /// The replica protocol's version the writes are made under.
  static let protocolVersion: Int64 = 1

  /// Closes the rows noted since the last write into a new write, in the caller's
  /// transaction; does nothing (one index probe) when none are noted, as in every plain
  /// file.
  /// - Returns: The new write's number, or `nil` when none was made.
  @discardableResult
  static func closeWrite(db: any DatabaseConnection) throws -> Int64? {
    guard try db.scalarInt64("SELECT 1 FROM outbox_rows LIMIT 1") != nil else { return nil }
    var noted: [(kind: Int64, id: Int64, op: Int64, list: Int64?)] = []
    let rows = try db.cached("SELECT kind, id, op, list FROM outbox_rows")
    try rows.forEachRow {
      noted.append(($0.int64(at: 0), $0.int64(at: 1), $0.int64(at: 2), $0.optionalInt64(at: 3)))
    }
    try db.run("DELETE FROM outbox_rows")
    let intents = try self.intents(noted, db: db)
    guard !intents.isEmpty else { return nil }
    let ops = "[" + intents.map(\.json).joined(separator: ",") + "]"
    return try db.insert(
      "INSERT INTO outbox(protocol, digest, ops) VALUES (?, ?, ?)",
      [.integer(protocolVersion), .text(digest(ops)), .text(ops)])
  }

  /// A digest of a write's content: 64-bit FNV-1a of its text, in hex.
  static func digest(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  private struct Placed {
    var parent: Int64
    var position: String
    var intent: (ReplicaAnchor) -> ReplicaIntent
    var id: Int64
  }

  /// The intents of the noted rows, in an order the server applies them in: lists
  /// deleted, renamed, created; sections placed (in their new order) and changed; items
  /// placed and changed; items and sections deleted.
  private static func intents(
    _ noted: [(kind: Int64, id: Int64, op: Int64, list: Int64?)], db: any DatabaseConnection
  ) throws -> [ReplicaIntent] {
    var listDeletes: [ReplicaIntent] = []
    var renames: [ReplicaIntent] = []
    var creates: [ReplicaIntent] = []
    var sections: [Placed] = []
    var sectionSets: [ReplicaIntent] = []
    var items: [Placed] = []
    var itemSets: [ReplicaIntent] = []
    var itemDeletes: [ReplicaIntent] = []
    var sectionDeletes: [ReplicaIntent] = []
    let deletedLists = Set(noted.filter { $0.kind == 0 && $0.op & 8 != 0 }.map(\.id))
    /// Whether a delete of a row of `list` is needed: not when the list goes too.
    func stillThere(_ list: Int64?) throws -> Int64? {
      guard let list, !deletedLists.contains(list),
        try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", list) != nil
      else { return nil }
      return list
    }
    for (kind, id, op, list) in noted {
      let inserted = op & 1 != 0
      if op & 8 != 0 {
        if inserted { continue }  // Made and deleted before the server knew of it.
        switch kind {
        case 0: listDeletes.append(.deleteList(id: id))
        case 1:
          if let list = try stillThere(list) {
            sectionDeletes.append(.deleteSection(list: list, id: id))
          }
        default:
          if let list = try stillThere(list) { itemDeletes.append(.deleteItem(list: list, id: id)) }
        }
        continue
      }
      switch kind {
      case 0:
        guard let name = try db.scalarText("SELECT name FROM lists WHERE id = ?", id) else {
          continue
        }
        if inserted {
          creates.append(.createList(id: id, name: name))
        } else if op & 4 != 0 {
          renames.append(.renameList(id: id, name: name))
        }
      case 1:
        let row = try db.cached("SELECT list_id, position, metadata FROM sections WHERE id = ?")
        try row.bind(id, at: 1)
        defer { row.reset() }
        guard try row.step() else { continue }
        let (list, position, metadata) = (row.int64(at: 0), row.string(at: 1), row.string(at: 2))
        if inserted {
          sections.append(
            Placed(
              parent: list, position: position,
              intent: { anchor in
                .insertSection(list: list, id: id, metadata: metadata, anchor: anchor)
              }, id: id))
          continue
        }
        if op & 2 != 0 {
          sections.append(
            Placed(
              parent: list, position: position,
              intent: { anchor in
                .moveSection(list: list, id: id, anchor: anchor)
              }, id: id))
        }
        if op & 4 != 0 { sectionSets.append(.setSection(list: list, id: id, metadata: metadata)) }
      default:
        let row = try db.cached(
          """
          SELECT s.list_id, i.section_id, i.position, i.value
          FROM items i JOIN sections s ON s.id = i.section_id WHERE i.id = ?
          """)
        try row.bind(id, at: 1)
        defer { row.reset() }
        guard try row.step() else { continue }
        let (list, section, position, value) = (
          row.int64(at: 0), row.int64(at: 1), row.string(at: 2), row.string(at: 3)
        )
        if inserted {
          items.append(
            Placed(
              parent: section, position: position,
              intent: { anchor in
                .insertItem(list: list, section: section, id: id, value: value, anchor: anchor)
              }, id: id))
          continue
        }
        if op & 2 != 0 {
          items.append(
            Placed(
              parent: section, position: position,
              intent: { anchor in
                .moveItem(list: list, section: section, id: id, anchor: anchor)
              }, id: id))
        }
        if op & 4 != 0 { itemSets.append(.setItem(list: list, id: id, value: value)) }
      }
    }
    return listDeletes + renames + creates
      + (try anchored(sections, table: "sections", parentColumn: "list_id", db: db))
      + sectionSets
      + (try anchored(items, table: "items", parentColumn: "section_id", db: db))
      + itemSets + itemDeletes + sectionDeletes
  }

  /// The placed rows in their new order (a row's predecessor, when placed too, first),
  /// each anchored to its neighbours there.
  private static func anchored(
    _ placed: [Placed], table: String, parentColumn: String, db: any DatabaseConnection
  ) throws -> [ReplicaIntent] {
    let ordered = placed.sorted {
      $0.parent != $1.parent
        ? $0.parent < $1.parent : $0.position.utf8.lexicographicallyPrecedes($1.position.utf8)
    }
    let before = try db.cached(
      "SELECT id, position FROM \(table) WHERE \(parentColumn) = ? AND position < ? "
        + "ORDER BY position DESC LIMIT 1")
    let after = try db.cached(
      "SELECT id FROM \(table) WHERE \(parentColumn) = ? AND position > ? "
        + "ORDER BY position LIMIT 1")
    return try ordered.map { row in
      try before.bind(row.parent, at: 1)
      try before.bind(row.position, at: 2)
      var predecessor: (id: Int64, key: String)?
      if try before.step() { predecessor = (before.int64(at: 0), before.string(at: 1)) }
      before.reset()
      try after.bind(row.parent, at: 1)
      try after.bind(row.position, at: 2)
      let successor = try after.step() ? after.int64(at: 0) : nil
      after.reset()
      return row.intent(
        ReplicaAnchor(after: predecessor?.id, before: successor, afterKey: predecessor?.key))
    }
  }
}
