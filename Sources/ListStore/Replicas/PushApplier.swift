// The server's side of a push: one replica write's intents resolved against the server's
// rows, inside the push's transaction (docs/replicas.md).

/// Applies a replica's intents to the database, in the push's transaction.
///
/// Every check that can reject a write is made before the write's statements run, so a
/// rejection is a clear sentence; the write's savepoint undoes what ran before it.
struct PushApplier {
  let db: any DatabaseConnection
  /// The replica whose write it is: the origin of the ids its new rows may have.
  let replica: Int64
  /// Whether the pushing token may write the list of this name.
  let mayWrite: (String) -> Bool

  /// The two ordered tables: sections are ordered within their list, items within their
  /// section.
  private enum Table: String {
    case sections, items
    var parentColumn: String { self == .sections ? "list_id" : "section_id" }
    var noun: String { self == .sections ? "section" : "item" }
  }

  /// `OVERRIDING SYSTEM VALUE` where identity columns refuse a given id (PostgreSQL).
  private var overriding: String {
    db.dialect.engine == .postgresql ? " OVERRIDING SYSTEM VALUE" : ""
  }

  func apply(_ intent: ReplicaIntent) throws {
    switch intent {
    case .createList(let id, let name):
      try checkName(name)
      guard mayWrite(name) else { throw Self.forbidden(name) }
      try checkNew(id, in: "lists", noun: "list")
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
        throw ReplicaRejection("nameTaken", "a list named \(quoted(name)) exists on the server")
      }
      try db.run("INSERT INTO lists(id, name)\(overriding) VALUES (?, ?)", id, name)

    case .renameList(let id, let name):
      try checkName(name)
      let old = try writableList(id)
      guard mayWrite(name) else { throw Self.forbidden(name) }
      if old == name { return }
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
        throw ReplicaRejection("nameTaken", "a list named \(quoted(name)) exists on the server")
      }
      try db.run("UPDATE lists SET name = ? WHERE id = ?", name, id)

    case .deleteList(let id):
      // A delete of what is gone already is done.
      guard let name = try listName(id) else { return }
      guard mayWrite(name) else { throw Self.forbidden(name) }
      try db.run("DELETE FROM lists WHERE id = ?", id)

    case .insertSection(let list, let id, let metadata, let anchor):
      _ = try writableList(list)
      try checkNew(id, in: "sections", noun: "section")
      let key = try place(.sections, parent: list, excluding: id, anchor)
      try db.run(
        "INSERT INTO sections(id, list_id, position, metadata)\(overriding) VALUES (?, ?, ?, "
          + db.dialect.checkedJSONParameter + ")", id, list, key, metadata)

    case .moveSection(let list, let id, let anchor):
      _ = try writableList(list)
      guard
        let current = try db.scalarText(
          "SELECT position FROM sections WHERE id = ? AND list_id = ?", id, list)
      else { throw Self.deleted("section", id) }
      try move(.sections, id: id, from: current, parent: list, anchor)

    case .setSection(let list, let id, let metadata):
      _ = try writableList(list)
      guard try db.run(db.dialect.setMetadata.checked, metadata, id, list) == 1 else {
        throw Self.deleted("section", id)
      }

    case .deleteSection(let list, let id):
      _ = try writableList(list)
      try db.run("DELETE FROM sections WHERE id = ? AND list_id = ?", id, list)

    case .insertItem(let list, let section, let id, let value, let anchor):
      _ = try writableList(list)
      try checkSection(section, of: list)
      try checkNew(id, in: "items", noun: "item")
      let key = try place(.items, parent: section, excluding: id, anchor)
      try db.run(
        "INSERT INTO items(id, section_id, position, value)\(overriding) VALUES (?, ?, ?, "
          + db.dialect.checkedJSONParameter + ")", id, section, key, value)

    case .moveItem(let list, let section, let id, let anchor):
      _ = try writableList(list)
      guard
        let current = try db.scalarText(
          """
          SELECT i.position FROM items i JOIN sections s ON s.id = i.section_id
          WHERE i.id = ? AND s.list_id = ?
          """, id, list)
      else { throw Self.deleted("item", id) }
      try checkSection(section, of: list)
      let from = try db.scalarInt64("SELECT section_id FROM items WHERE id = ?", id)
      if from == section {
        try move(.items, id: id, from: current, parent: section, anchor)
      } else {
        let key = try place(.items, parent: section, excluding: id, anchor)
        try db.run("UPDATE items SET section_id = ?, position = ? WHERE id = ?", section, key, id)
      }

    case .setItem(let list, let id, let value):
      _ = try writableList(list)
      guard try db.run(db.dialect.setValue.checked, value, id, list) == 1 else {
        throw Self.deleted("item", id)
      }

    case .deleteItem(let list, let id):
      _ = try writableList(list)
      try db.run(
        "DELETE FROM items WHERE id = ? AND section_id IN (SELECT id FROM sections WHERE list_id = ?)",
        id, list)
    }
  }

  // MARK: Checks

  private func listName(_ id: Int64) throws -> String? {
    try db.scalarText("SELECT name FROM lists WHERE id = ?", id)
  }

  /// The name of list `id`, which must exist and be writable by the token.
  private func writableList(_ id: Int64) throws -> String {
    guard let name = try listName(id) else { throw Self.deleted("list", id) }
    guard mayWrite(name) else { throw Self.forbidden(name) }
    return name
  }

  private func checkSection(_ id: Int64, of list: Int64) throws {
    guard
      try db.scalarInt64("SELECT 1 FROM sections WHERE id = ? AND list_id = ?", id, list) != nil
    else { throw Self.deleted("section", id) }
  }

  private func checkName(_ name: String) throws {
    do {
      try checkListName(name)
    } catch {
      throw ReplicaRejection("invalid", "\(error)")
    }
  }

  /// Checks that a new row's id is one of the replica's, and unused.
  private func checkNew(_ id: Int64, in table: String, noun: String) throws {
    let span = Repository.originSpan
    guard id > replica * span, id / span == replica else {
      throw ReplicaRejection(
        "invalid",
        "\(noun) id \(id) is not one of replica \(replica)'s: its rows' ids are "
          + "\(replica * span + 1) through \(replica * span + span - 1)")
    }
    if try db.scalarInt64("SELECT 1 FROM \(table) WHERE id = ?", id) != nil {
      throw ReplicaRejection("invalid", "\(noun) id \(id) is in use on the server")
    }
  }

  private static func deleted(_ noun: String, _ id: Int64) -> ReplicaRejection {
    ReplicaRejection("deleted", "\(noun) \(id) was deleted on the server")
  }

  private static func forbidden(_ name: String) -> ReplicaRejection {
    ReplicaRejection("forbidden", "the token may not write the list \(quoted(name))")
  }

  // MARK: Anchors

  /// Moves a row already in `parent` (at key `current`) to its anchor's place; writes
  /// nothing when it is there already.
  private func move(
    _ table: Table, id: Int64, from current: String, parent: Int64, _ anchor: ReplicaAnchor
  ) throws {
    let (lower, upper) = try gap(table, parent: parent, excluding: id, anchor)
    let afterLower = lower.map { $0.utf8.lexicographicallyPrecedes(current.utf8) } ?? true
    let beforeUpper = upper.map { current.utf8.lexicographicallyPrecedes($0.utf8) } ?? true
    if afterLower && beforeUpper { return }  // Already between its neighbours.
    try db.run(
      "UPDATE \(table.rawValue) SET position = ? WHERE id = ?",
      try PositionKey.between(lower, upper), id)
  }

  /// A new key for a row of `parent` at its anchor's place.
  private func place(_ table: Table, parent: Int64, excluding id: Int64, _ anchor: ReplicaAnchor)
    throws -> String
  {
    let (lower, upper) = try gap(table, parent: parent, excluding: id, anchor)
    return try PositionKey.between(lower, upper)
  }

  /// The keys around the anchor's place among the rows of `parent` other than `id`: after
  /// the predecessor (the start when there is none), else before the successor, else where
  /// the predecessor's key falls, else at the end.
  private func gap(
    _ table: Table, parent: Int64, excluding id: Int64, _ anchor: ReplicaAnchor
  ) throws -> (String?, String?) {
    if let recorded = anchor.afterKey, !PositionKey.isValid(recorded) {
      throw ReplicaRejection("invalid", "afterKey \(quoted(recorded)) is not a position key")
    }
    let rows = "FROM \(table.rawValue) WHERE \(table.parentColumn) = ? AND id <> ?"
    func key(of row: Int64?) throws -> String? {
      guard let row, row != id else { return nil }
      return try db.scalarText(
        "SELECT position FROM \(table.rawValue) WHERE id = ? AND \(table.parentColumn) = ?",
        row, parent)
    }
    func first(after key: String?) throws -> String? {
      guard let key else {
        return try db.scalarText("SELECT position \(rows) ORDER BY position LIMIT 1", parent, id)
      }
      return try db.scalarText(
        "SELECT position \(rows) AND position > ? ORDER BY position LIMIT 1", parent, id, key)
    }
    func last(before key: String?, including: Bool = false) throws -> String? {
      guard let key else {
        return try db.scalarText(
          "SELECT position \(rows) ORDER BY position DESC LIMIT 1", parent, id)
      }
      return try db.scalarText(
        "SELECT position \(rows) AND position \(including ? "<=" : "<") ? "
          + "ORDER BY position DESC LIMIT 1", parent, id, key)
    }
    guard anchor.after != nil else { return (nil, try first(after: nil)) }
    if let predecessor = try key(of: anchor.after) {
      return (predecessor, try first(after: predecessor))
    }
    if let successor = try key(of: anchor.before) {
      return (try last(before: successor), successor)
    }
    if let recorded = anchor.afterKey {
      let lower = try last(before: recorded, including: true)
      return (lower, try first(after: lower))
    }
    return (try last(before: nil), nil)
  }
}
