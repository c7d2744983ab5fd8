// Rows of a file set to given states, whatever the order their unique keys allow: how a
// replica applies what it pulled and the outcome of replaying its writes.

/// A row as a replica sets it: a list (its name as `value`), a section (its list as
/// `parent`) or an item (its section as `parent`).
struct RowState: Equatable, Sendable {
  var kind: Int64
  var id: Int64
  var parent: Int64?
  var position: String?
  var value: String
}

/// A row's kind (0 list, 1 section, 2 item) and id.
struct RowKey: Hashable, Sendable, Comparable {
  var kind: Int64
  var id: Int64

  static func < (lhs: RowKey, rhs: RowKey) -> Bool {
    (lhs.kind, lhs.id) < (rhs.kind, rhs.id)
  }
}

/// Reads and writes rows by state, in the caller's transaction.
struct RowStates {
  let db: any DatabaseConnection

  private static let tables = ["lists", "sections", "items"]
  private static let parents = ["", "list_id", "section_id"]

  /// The row's state now, or `nil` when it does not exist.
  func state(_ key: RowKey) throws -> RowState? {
    let sql: String
    switch key.kind {
    case 0: sql = "SELECT NULL, NULL, name FROM lists WHERE id = ?"
    case 1: sql = "SELECT list_id, position, metadata FROM sections WHERE id = ?"
    default: sql = "SELECT section_id, position, value FROM items WHERE id = ?"
    }
    let statement = try db.cached(sql)
    try statement.bind(key.id, at: 1)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    return RowState(
      kind: key.kind, id: key.id, parent: statement.optionalInt64(at: 0),
      position: statement.optionalString(at: 1), value: statement.string(at: 2))
  }

  /// Sets each row of `targets` to its state (`nil`: deleted), writing only what differs:
  /// lists, sections and items made or changed (a row in the way of one, and leaving
  /// anyway, first set aside under a key of its own), then items, sections and lists
  /// deleted.
  func apply(_ targets: [RowKey: RowState?]) throws {
    // A row whose list or section goes goes with it (the server deleted them together).
    var targets = targets
    for key in targets.keys.sorted() where key.kind > 0 {
      guard let target = targets[key] ?? nil, let parent = target.parent else { continue }
      let parentKey = RowKey(kind: key.kind - 1, id: parent)
      if let parentTarget = targets[parentKey], parentTarget == nil {
        targets[key] = RowState?.none
      }
    }
    var deletions: [RowKey] = []
    var changes: [RowState] = []
    for key in targets.keys.sorted() {
      let now = try state(key)
      switch targets[key] ?? nil {
      case nil: if now != nil { deletions.append(key) }
      case let target?: if now != target { changes.append(target) }
      }
    }
    let leaving = Set(deletions)
    for kind: Int64 in [0, 1, 2] {
      var queue = changes.filter { $0.kind == kind }
      while !queue.isEmpty {
        var waiting: [RowState] = []
        for target in queue {
          if let occupant = try occupant(of: target), occupant != target.id {
            if leaving.contains(RowKey(kind: kind, id: occupant)) {
              try delete(RowKey(kind: kind, id: occupant))
            } else {
              waiting.append(target)
              continue
            }
          }
          try write(target)
        }
        if waiting.count == queue.count, let first = waiting.first,
          let blocker = try occupant(of: first)
        {
          // Rows that take each other's places: one steps aside first.
          try setAside(RowKey(kind: kind, id: blocker))
        }
        queue = waiting
      }
    }
    for key in deletions.reversed() where try state(key) != nil { try delete(key) }
  }

  /// The row holding the unique place (name, or parent and position) the target takes.
  private func occupant(of target: RowState) throws -> Int64? {
    if target.kind == 0 {
      return try db.scalarInt64("SELECT id FROM lists WHERE name = ?", target.value)
    }
    return try db.scalarInt64(
      "SELECT id FROM \(Self.tables[Int(target.kind)]) WHERE \(Self.parents[Int(target.kind)]) = ? "
        + "AND position = ?", target.parent, target.position)
  }

  private func write(_ target: RowState) throws {
    let table = Self.tables[Int(target.kind)]
    if target.kind == 0 {
      if try db.run("UPDATE lists SET name = ? WHERE id = ?", target.value, target.id) == 0 {
        try db.run("INSERT INTO lists(id, name) VALUES (?, ?)", target.id, target.value)
      }
      return
    }
    let parent = Self.parents[Int(target.kind)]
    let column = target.kind == 1 ? "metadata" : "value"
    if try db.run(
      "UPDATE \(table) SET \(parent) = ?, position = ?, \(column) = ? WHERE id = ?",
      target.parent, target.position, target.value, target.id) == 0
    {
      try db.run(
        "INSERT INTO \(table)(id, \(parent), position, \(column)) VALUES (?, ?, ?, ?)",
        target.id, target.parent, target.position, target.value)
    }
  }

  private func delete(_ key: RowKey) throws {
    try db.run("DELETE FROM \(Self.tables[Int(key.kind)]) WHERE id = ?", key.id)
  }

  /// Moves a row out of the way: a name, or a key after every other of its parent.
  private func setAside(_ key: RowKey) throws {
    if key.kind == 0 {
      try db.run("UPDATE lists SET name = ? WHERE id = ?", "\u{1}moving \(key.id)", key.id)
      return
    }
    let table = Self.tables[Int(key.kind)]
    let parent = Self.parents[Int(key.kind)]
    let last = try db.scalarText(
      "SELECT max(position) FROM \(table) WHERE \(parent) = (SELECT \(parent) FROM \(table) WHERE id = ?)",
      key.id)
    try db.run(
      "UPDATE \(table) SET position = ? WHERE id = ?", try PositionKey.between(last, nil), key.id)
  }
}
