// What a replica pulls: the rows of the lists it follows that changed after its position,
// each as it is now, or the whole of them (docs/replicas.md).

/// One row as a replica pulls it: its state now, or its deletion.
package enum PulledRow: Sendable, Equatable {
  /// A list, with its name now.
  case list(id: Int64, name: String)
  /// A section of `list`, with its position key and metadata (JSON text).
  case section(list: Int64, id: Int64, position: String, metadata: String)
  /// An item of `section` (of `list`), with its position key and value (JSON text).
  case item(list: Int64, id: Int64, section: Int64, position: String, value: String)
  /// A list deleted, or no longer one the replica may read.
  case listDeleted(id: Int64)
  /// A section deleted from `list` (its items with it), or moved out of the lists followed.
  case sectionDeleted(list: Int64, id: Int64)
  /// An item deleted from `list`, or moved out of the lists followed.
  case itemDeleted(list: Int64, id: Int64)
}

extension Repository {
  /// Reads, in one transaction, what a replica that follows `lists` (every list when
  /// `nil`) and has the database's state at `after` needs to have it at the position
  /// now: each row of those lists that changed after `after` as it is now — lists, then
  /// sections, then items, then the deletions of items, sections and lists — or, when
  /// `after` is `nil`, older than the log keeps, or ahead of the database, every row of
  /// them (a reset: the replica replaces what it has).
  ///
  /// Its cost follows the rows changed after `after` (a reset's, the lists' size), not the
  /// log's length: the log is read from `after` on, by its key.
  ///
  /// - Parameters:
  ///   - lists: The ids of the lists followed; `nil` for every list.
  ///   - mayRead: Whether the replica may read the list of a name: other lists are left
  ///     out (and a list followed that it may no longer read is deleted for it).
  ///   - after: The replica's position, or `nil` for none.
  ///   - start: Called first, with the position the read reflects and whether it is a
  ///     reset.
  ///   - row: Called for each row, in order.
  /// - Throws: What the callbacks throw, as they threw it, or ``ListStoreError`` when the
  ///   database cannot be read.
  package func pull(
    lists: [Int64]?, mayRead: (String) -> Bool, after: Int64?,
    start: (_ seq: Int64, _ reset: Bool) throws -> Void,
    row: (PulledRow) throws -> Void
  ) throws {
    var failure: (any Error)?
    func guarded(_ body: () throws -> Void) throws {
      do { try body() } catch {
        failure = error
        throw error
      }
    }
    do {
      try withoutActuallyEscaping(mayRead) { mayRead in
        try read { db in
          let reader = PullReader(db: db, lists: lists, mayRead: mayRead)
          let (seq, horizon) = try ChangeLog.lastSeqAndHorizon(db: db)
          guard let after, after >= horizon, after <= seq else {
            try guarded { try start(seq, true) }
            try reader.everyRow { pulled in try guarded { try row(pulled) } }
            return
          }
          try guarded { try start(seq, false) }
          try reader.changedRows(after: after, through: seq) { pulled in
            try guarded { try row(pulled) }
          }
        }
      }
    } catch {
      throw failure ?? error
    }
  }

  /// Whether any row of `lists` (every list when `nil`) changed after `after`: what a
  /// long poll checks before it waits.
  package func hasChanges(lists: [Int64]?, after: Int64) throws -> Bool {
    try read { db in
      let (seq, horizon) = try ChangeLog.lastSeqAndHorizon(db: db)
      guard after >= horizon, after <= seq else { return true }
      guard after < seq else { return false }
      guard let lists else { return true }
      let reader = PullReader(db: db, lists: lists, mayRead: { _ in true })
      return try reader.touched(after: after, through: seq, limit: 1).isEmpty == false
    }
  }
}

/// The reads of ``Repository/pull(lists:mayRead:after:start:row:)``.
private struct PullReader {
  let db: any DatabaseConnection
  let lists: [Int64]?
  let mayRead: (String) -> Bool
  private let followed: Set<Int64>?

  init(db: any DatabaseConnection, lists: [Int64]?, mayRead: @escaping (String) -> Bool) {
    self.db = db
    self.lists = lists
    self.mayRead = mayRead
    followed = lists.map(Set.init)
  }

  /// The name of list `id` when it exists, is followed and may be read.
  func visibleName(_ id: Int64) throws -> String? {
    if let followed, !followed.contains(id) { return nil }
    guard let name = try db.scalarText("SELECT name FROM lists WHERE id = ?", id) else {
      return nil
    }
    return mayRead(name) ? name : nil
  }

  // MARK: Reset

  func everyRow(_ row: (PulledRow) throws -> Void) throws {
    var ids: [Int64] = []
    if let lists {
      ids = lists
    } else {
      let statement = try db.cached("SELECT id FROM lists ORDER BY id")
      try statement.forEachRow { ids.append($0.int64(at: 0)) }
    }
    let sections = try db.cached(
      "SELECT id, position, metadata FROM sections WHERE list_id = ? ORDER BY position")
    let items = try db.cached(
      "SELECT id, position, value FROM items WHERE section_id = ? ORDER BY position")
    for list in ids {
      guard let name = try visibleName(list) else {
        if lists != nil { try row(.listDeleted(id: list)) }
        continue
      }
      try row(.list(id: list, name: name))
      var sectionRows: [(Int64, String, String)] = []
      try sections.bind(list, at: 1)
      try sections.forEachRow {
        sectionRows.append(($0.int64(at: 0), $0.string(at: 1), $0.string(at: 2)))
      }
      for (id, position, metadata) in sectionRows {
        try row(.section(list: list, id: id, position: position, metadata: metadata))
        try items.bind(id, at: 1)
        defer { items.reset() }
        while try items.step() {
          try row(
            .item(
              list: list, id: items.int64(at: 0), section: id, position: items.string(at: 1),
              value: items.string(at: 2)))
        }
      }
    }
  }

  // MARK: Changes

  /// The rows changed in `(after, through]` — kind, id, and the followed list the log
  /// names for them — by kind and id.
  func touched(after: Int64, through: Int64, limit: Int? = nil) throws
    -> [(kind: Int64, id: Int64, list: Int64?)]
  {
    var values: [SQLValue] = []
    func member(_ expression: String) -> String {
      guard let lists else { return "(\(expression) IS NOT NULL)" }
      values.append(db.dialect.listIDsParameter(lists))
      return expression + " "
        + db.dialect.manyListsMembership.replacing("$1", with: "?")
    }
    // An item's entry names its sections (before and after); the others their lists.
    let itemList = "coalesce(os.list_id, ps.list_id)"
    let otherList = "coalesce(c.old_list_id, c.list_id)"
    let filter = """
      ((c.kind = 2 AND (\(member("ps.list_id")) OR \(member("os.list_id"))))
        OR (c.kind <> 2 AND (\(member("c.list_id")) OR \(member("c.old_list_id")))))
      """
    values.append(.integer(after))
    values.append(.integer(through))
    let sql = """
      SELECT c.kind, c.row_id, max(CASE WHEN c.kind = 2 THEN \(itemList) ELSE \(otherList) END)
      FROM changes c
      LEFT JOIN sections ps ON c.kind = 2 AND ps.id = c.parent
      LEFT JOIN sections os ON c.kind = 2 AND os.id = c.old_parent
      WHERE \(filter) AND c.seq > ? AND c.seq <= ?
      GROUP BY c.kind, c.row_id ORDER BY c.kind, c.row_id
      """ + (limit.map { " LIMIT \($0)" } ?? "")
    let statement = try db.cached(sql)
    for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
    var rows: [(kind: Int64, id: Int64, list: Int64?)] = []
    try statement.forEachRow {
      rows.append(($0.int64(at: 0), $0.int64(at: 1), $0.optionalInt64(at: 2)))
    }
    return rows
  }

  func changedRows(after: Int64, through: Int64, _ row: (PulledRow) throws -> Void) throws {
    var deletions: [[PulledRow]] = [[], [], []]
    var names: [Int64: String?] = [:]
    func visible(_ list: Int64) throws -> Bool {
      if let name = names[list] { return name != nil }
      let name = try visibleName(list)
      names[list] = name
      return name != nil
    }
    for (kind, id, logged) in try touched(after: after, through: through) {
      switch kind {
      case 0:
        if try visible(id), let name = names[id] ?? nil {
          try row(.list(id: id, name: name))
        } else if lists == nil || followed?.contains(id) == true {
          deletions[0].append(.listDeleted(id: id))
        }
      case 1:
        let statement = try db.cached(
          "SELECT list_id, position, metadata FROM sections WHERE id = ?")
        try statement.bind(id, at: 1)
        var now: PulledRow?
        if try statement.step(), try visible(statement.int64(at: 0)) {
          now = .section(
            list: statement.int64(at: 0), id: id, position: statement.string(at: 1),
            metadata: statement.string(at: 2))
        }
        statement.reset()
        if let now {
          try row(now)
        } else if let logged, try visible(logged) {
          // (A row of a list the replica no longer sees goes with the list's deletion.)
          deletions[1].append(.sectionDeleted(list: logged, id: id))
        }
      default:
        let statement = try db.cached(
          """
          SELECT s.list_id, i.section_id, i.position, i.value
          FROM items i JOIN sections s ON s.id = i.section_id WHERE i.id = ?
          """)
        try statement.bind(id, at: 1)
        var now: PulledRow?
        if try statement.step(), try visible(statement.int64(at: 0)) {
          now = .item(
            list: statement.int64(at: 0), id: id, section: statement.int64(at: 1),
            position: statement.string(at: 2), value: statement.string(at: 3))
        }
        statement.reset()
        if let now {
          try row(now)
        } else if let logged, try visible(logged) {
          deletions[2].append(.itemDeleted(list: logged, id: id))
        }
      }
    }
    for deleted in deletions.reversed().joined() { try row(deleted) }
  }
}

extension Repository {
  /// Watches the database for commits — this process's, another's, any client's — and
  /// calls `onCommit` on a thread of the watch's own after each (several may come as
  /// one call): what wakes a server's long polls of replicas.
  /// - Parameter onCommit: Called after commits.
  /// - Returns: The watch, to cancel; `nil` when this database cannot be watched.
  package func watchCommits(_ onCommit: @escaping @Sendable () -> Void) -> (any ChangeWatch)? {
    engine.watch(ownCommits: nil, onChange: { _ in onCommit() }, status: { _ in onCommit() })
  }
}
