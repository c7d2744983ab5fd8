import FoundationEssentials
import Observable2D
import SQLiteKit

/// Why an observer must reload its list instead of applying the log.
package struct NeedsReload: Error {
  package var reason: String

  package init(reason: String) { self.reason = reason }
}

/// What a batch of log entries did to one observed list.
@usableFromInline
enum ListUpdate {
  /// Rows changed: apply this changeset (never empty), whose metadata and values are
  /// still the stored JSON text.
  case changes(Changeset<String, String>)
  /// The list itself was deleted.
  case deleted
}

/// Turns the change-log entries of one list into one changeset, by the rules of
/// `docs/changesets.md`, and brings the mirror up to date.
///
/// Each touched row is placed twice: where it was, from its first log entry in the
/// batch (which carries the row's parent and position before the batch, exactly as the
/// mirror has them), and where it is now, read from the row itself. Rows that did not
/// change are never read: the cost grows with the number of touched rows, and each one
/// is placed by binary search in O(log n).
///
/// Section entries name their list before and after the change. Item entries name the
/// item's section before and after, never a list: a section's list may change within
/// the same batch, while its id never does. An item entry concerns this list when
/// either section is one of its sections at the start of the batch or one that a
/// section entry of the batch brought into it.
///
/// It is not generic: metadata and values stay JSON text here (the observer decodes
/// the few that changed), so this code is compiled once, for concrete types.
@usableFromInline
struct ChangesetBuilder {
  let listID: Int64
  let db: any DatabaseConnection

  /// A touched row: where it was before the batch (if it was in this list), and what it
  /// is now (read with the log).
  private struct Touch {
    var old: (parent: Int64, key: String)?
    var current: CurrentRow?
  }

  private typealias Current = CurrentRow

  /// What `entries` did to list `listID`, reading rows through `db`; brings `mirror` up
  /// to date, in place, noting every edit in `journal`. Throws ``NeedsReload`` when the
  /// mirror and the log disagree (`mirror` may then be partly edited: undo `journal`).
  @usableFromInline
  static func update(
    listID: Int64, db: any DatabaseConnection, mirror: inout PositionMirror,
    journal: inout PositionMirror.Journal, entries: ArraySlice<ChangeLogEntry>
  ) throws -> ListUpdate? {
    let changes = ChangesetBuilder(listID: listID, db: db)
    // A single write's batch: one item entry, worked out without the tables a batch needs.
    if entries.count == 1, let entry = entries.first, entry.kind == .item {
      return try changes.update(mirror: &mirror, journal: &journal, item: entry)
    }
    // Item entries of other lists' sections change nothing here: a batch of item entries
    // of which one at most is this list's (a write here after one to another list) takes
    // the same path.
    switch soleItemEntry(of: entries, in: mirror) {
    case .none: return nil
    case .one(let entry): return try changes.update(mirror: &mirror, journal: &journal, item: entry)
    case .more: return try changes.update(mirror: &mirror, journal: &journal, entries: entries)
    }
  }

  /// How many of a batch's entries can concern a list (see ``soleItemEntry(of:in:)``).
  enum Concerning {
    case none
    case one(ChangeLogEntry)
    case more
  }

  /// Whether no entry, one item entry or more of `entries` can concern the list that
  /// `mirror` copies. An item entry can when its section before or after the change, or
  /// the row's section now, is one of the list's; with a list or section entry in the
  /// batch the list's sections may change, and every entry counts.
  static func soleItemEntry(of entries: ArraySlice<ChangeLogEntry>, in mirror: PositionMirror)
    -> Concerning
  {
    func isHere(_ section: Int64?) -> Bool { section.map { mirror.items[$0] != nil } ?? false }
    var sole: ChangeLogEntry?
    for entry in entries {
      guard entry.kind == .item else { return .more }
      guard isHere(entry.oldParent) || isHere(entry.parent) || isHere(entry.current?.parent)
      else { continue }
      if sole != nil { return .more }
      sole = entry
    }
    return sole.map { .one($0) } ?? .none
  }

  /// ``update(mirror:journal:entries:)`` for a batch of one item entry, with the same
  /// result: where the item was (from the entry) and where it is (from its row), one
  /// binary search each (none for where it is when it stayed at its key), and at most one
  /// changeset entry.
  func update(
    mirror: inout PositionMirror, journal: inout PositionMirror.Journal, item entry: ChangeLogEntry
  ) throws -> ListUpdate? {
    let id = entry.rowID
    func concernsThisList(_ section: Int64?) -> Bool {
      section.map { mirror.items[$0] != nil } ?? false
    }
    guard concernsThisList(entry.oldParent) || concernsThisList(entry.parent) else { return nil }
    // Where it was: in one of this list's sections, at the key the entry names.
    var oldPlace: (section: Int64, index: Int)?
    if let parent = entry.oldParent, let list = mirror.items[parent], let key = entry.oldPosition {
      guard let index = PositionMirror.index(of: id, key: key, in: list) else {
        throw NeedsReload(reason: "item \(id) is not where the log says it was")
      }
      oldPlace = (parent, index)
    }
    // Where it is: in one of this list's sections, or not here.
    let current = entry.current.flatMap { mirror.items[$0.parent] == nil ? nil : $0 }
    // Its slot when it stayed at its key: then it holds its place itself (keys are unique
    // within a section, in the mirror as in the store).
    var kept: PositionMirror.Slot?
    if let place = oldPlace, let current, current.parent == place.section,
      let slot = mirror.items[place.section]?[place.index],
      PositionMirror.sameKey(current.key, slot.key)
    {
      kept = slot
    }
    let stayed = kept != nil
    // Where its key sorts among the rows of its section now, before this batch's edits.
    var target: Int?
    if !stayed, let current, let list = mirror.items[current.parent] {
      let index = PositionMirror.lowerBound(current.key, in: list)
      // Its place held by another row in the mirror: a REPLACE removed that one, which the
      // general path finds.
      if index < list.count, list.id(at: index) != id,
        PositionMirror.sameKey(list[index].key, current.key)
      {
        return try update(mirror: &mirror, journal: &journal, entries: CollectionOfOne(entry))
      }
      target = index
    }
    var changeset = Changeset<String, String>()
    switch (oldPlace, current) {
    case (let place?, nil):
      let path = IndexPath(indexes: [try oldSectionIndex(place.section, mirror), place.index])
      changeset.deletedItems.append(.init(at: path, id: id))
      mirror.removeItem(section: place.section, at: place.index, journal: &journal)
    case (nil, let current?):
      guard let target else { throw NeedsReload(reason: "item \(id) has no place") }
      let path = try insert(id, current, at: target, into: &mirror, journal: &journal)
      changeset.insertedItems.append(.init(at: path, id: id, value: current.json))
    case (let place?, let current?):
      if !stayed {
        guard var target else { throw NeedsReload(reason: "item \(id) has no place") }
        let from = IndexPath(indexes: [try oldSectionIndex(place.section, mirror), place.index])
        mirror.removeItem(section: place.section, at: place.index, journal: &journal)
        // The rows after its old place moved up by one.
        if current.parent == place.section, place.index < target { target -= 1 }
        let to = try insert(id, current, at: target, into: &mirror, journal: &journal)
        changeset.movedItems.append(.init(from: from, to: to, id: id, value: current.json))
      } else if current.json.mirrorHash != kept?.hash {
        let path = IndexPath(indexes: [try oldSectionIndex(place.section, mirror), place.index])
        changeset.updatedItems.append(.init(at: path, id: id, value: current.json))
        mirror.setItemHash(
          section: place.section, at: place.index, to: current.json.mirrorHash, journal: &journal)
      }
    case (nil, nil):
      break
    }
    return changeset.isEmpty ? nil : .changes(changeset)
  }

  /// Puts item `id` into the mirror where `current` says it is, at `row` of its section
  /// (where its key sorts); returns its index path there.
  private func insert(
    _ id: Int64, _ current: CurrentRow, at row: Int, into mirror: inout PositionMirror,
    journal: inout PositionMirror.Journal
  ) throws -> IndexPath {
    guard
      mirror.insertItem(
        PositionMirror.Slot(key: current.key, hash: current.json.mirrorHash), id: id,
        section: current.parent, at: row, journal: &journal)
    else { throw NeedsReload(reason: "item \(id) lost") }
    return IndexPath(indexes: [try oldSectionIndex(current.parent, mirror), row])
  }

  func update(
    mirror: inout PositionMirror, journal: inout PositionMirror.Journal,
    entries: some Sequence<ChangeLogEntry>
  ) throws -> ListUpdate? {
    var listTouched = false
    var sectionOrder: [Int64] = []
    var sectionTouches: [Int64: Touch] = [:]
    var itemEntries: [ChangeLogEntry] = []
    for entry in entries {
      switch entry.kind {
      case .list:
        if entry.rowID == listID { listTouched = true }
      case .section:
        guard entry.listID == listID || entry.oldListID == listID else { continue }
        if sectionTouches[entry.rowID] == nil {
          var old: (Int64, String)?
          if entry.oldListID == listID, let key = entry.oldPosition { old = (listID, key) }
          sectionTouches[entry.rowID] = Touch(old: old, current: entry.current)
          sectionOrder.append(entry.rowID)
        }
      case .item:
        itemEntries.append(entry)
      }
    }
    // The list is gone (a REPLACE may also have logged a list that stays).
    if listTouched, try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) == nil {
      return .deleted
    }
    var itemOrder: [Int64] = []
    var itemTouches: [Int64: Touch] = [:]
    func concernsThisList(_ section: Int64?) -> Bool {
      guard let section else { return false }
      return mirror.items[section] != nil || sectionTouches[section] != nil
    }
    for entry in itemEntries where itemTouches[entry.rowID] == nil {
      guard concernsThisList(entry.oldParent) || concernsThisList(entry.parent) else { continue }
      var old: (Int64, String)?
      // Its section was in this list when the batch began: the item was there too.
      if let parent = entry.oldParent, mirror.items[parent] != nil, let key = entry.oldPosition {
        old = (parent, key)
      }
      itemTouches[entry.rowID] = Touch(old: old, current: entry.current)
      itemOrder.append(entry.rowID)
    }
    if sectionOrder.isEmpty && itemOrder.isEmpty { return nil }

    // Sections: where they were and where they are.
    var changeset = Changeset<String, String>()
    var deletedSections = Set<Int64>()
    var insertedSections: [(id: Int64, current: Current)] = []
    var movedSections: [(id: Int64, current: Current)] = []
    for id in sectionOrder {
      guard let touch = sectionTouches[id] else { continue }
      var oldIndex: Int?
      if let old = touch.old {
        guard let index = mirror.sectionIndex(of: id, key: old.key) else {
          throw NeedsReload(reason: "section \(id) is not where the log says it was")
        }
        oldIndex = index
      }
      // Now: in this list, or not.
      let current = touch.current.flatMap { $0.parent == listID ? $0 : nil }
      switch (oldIndex, current) {
      case (let index?, nil):
        deletedSections.insert(id)
        changeset.deletedSections.append(.init(index: index, id: id))
      case (nil, let current?):
        insertedSections.append((id, current))
      case (let index?, let current?):
        if !PositionMirror.sameKey(current.key, mirror.sections[index].key) {
          movedSections.append((id, current))
        } else if current.json.mirrorHash != mirror.sections[index].hash {
          changeset.updatedSections.append(
            .init(index: index, id: id, metadata: current.json))
          mirror.setSectionHash(at: index, to: current.json.mirrorHash, journal: &journal)
        }
      case (nil, nil):
        break
      }
    }
    // Closures rather than key paths: in generic code key paths are built at run time.
    let newSections = Set(insertedSections.map { $0.id })

    // Items: a row counts as "here" when its section is here before and after; rows
    // of deleted and inserted sections come and go with their section.
    var removals: [(section: Int64, index: Int, id: Int64)] = []
    var additions: [(id: Int64, current: Current, moved: Bool)] = []
    for id in itemOrder {
      guard let touch = itemTouches[id] else { continue }
      var oldPlace: (section: Int64, index: Int)?
      if let old = touch.old, !deletedSections.contains(old.parent) {
        guard let list = mirror.items[old.parent],
          let index = PositionMirror.index(of: id, key: old.key, in: list)
        else { throw NeedsReload(reason: "item \(id) is not where the log says it was") }
        oldPlace = (old.parent, index)
      }
      var current = touch.current
      if let section = current?.parent,
        newSections.contains(section) || mirror.items[section] == nil
          || deletedSections.contains(section)
      {
        // In an inserted section (it comes with it), or not in this list (any more).
        current = nil
      }
      switch (oldPlace, current) {
      case (let place?, nil):
        removals.append((place.section, place.index, id))
      case (nil, let current?):
        additions.append((id, current, false))
      case (let place?, let current?):
        let slot = mirror.items[place.section]?[place.index]
        if current.parent != place.section || !PositionMirror.sameKey(current.key, slot?.key) {
          removals.append((place.section, place.index, id))
          additions.append((id, current, true))
        } else if current.json.mirrorHash != slot?.hash {
          changeset.updatedItems.append(
            .init(
              at: IndexPath(indexes: [try oldSectionIndex(place.section, mirror), place.index]),
              id: id,
              value: current.json))
          mirror.setItemHash(
            section: place.section, at: place.index, to: current.json.mirrorHash,
            journal: &journal)
        }
      case (nil, nil):
        break
      }
    }

    // Rows a REPLACE removed: SQLite logs no delete for them, so no entry names them. A
    // row that held, at some point of the batch, a place where the mirror has another,
    // untouched row of the section (positions are unique within a section) took the place
    // of one of them, once the store confirms that the other row is gone. The places a row
    // held are where each of its entries found it, and where it is now.
    var places = additions.map { (section: $0.current.parent, key: $0.current.key, id: $0.id) }
    for entry in itemEntries {
      if let section = entry.oldParent, let key = entry.oldPosition {
        places.append((section, key, entry.rowID))
      }
    }
    var displaced = Set<Int64>()
    for place in places where !deletedSections.contains(place.section) {
      guard let list = mirror.items[place.section] else { continue }
      let index = PositionMirror.lowerBound(place.key, in: list)
      guard index < list.count, PositionMirror.sameKey(list[index].key, place.key) else { continue }
      let occupant = list.id(at: index)
      guard occupant != place.id, itemTouches[occupant] == nil,
        displaced.insert(occupant).inserted
      else { continue }
      guard try !itemExists(occupant) else {
        throw NeedsReload(reason: "items \(occupant) and \(place.id) share a position")
      }
      removals.append((place.section, index, occupant))
    }

    // Old index paths of removed items, while the mirror is still the old state.
    var movedFrom: [Int64: IndexPath] = [:]
    let moved = Set(additions.filter { $0.moved }.map { $0.id })
    for removal in removals {
      let path = IndexPath(indexes: [try oldSectionIndex(removal.section, mirror), removal.index])
      if moved.contains(removal.id) {
        movedFrom[removal.id] = path
      } else {
        changeset.deletedItems.append(.init(at: path, id: removal.id))
      }
    }
    var sectionMovedFrom: [Int64: Int] = [:]
    for (id, _) in movedSections {
      guard let index = mirror.sections.ids.firstIndex(of: id) else {
        throw NeedsReload(reason: "section \(id) vanished")
      }
      sectionMovedFrom[id] = index
    }

    // Bring the mirror to the new state: removals first, then insertions by key.
    for removal in removals.sorted(by: { ($0.section, $0.index) > ($1.section, $1.index) }) {
      mirror.removeItem(section: removal.section, at: removal.index, journal: &journal)
    }
    for id in deletedSections.union(movedSections.map { $0.id }) {
      if let index = mirror.sections.ids.firstIndex(of: id) {
        mirror.removeSection(at: index, journal: &journal)
      }
      if deletedSections.contains(id) { mirror.setItems(nil, ofSection: id, journal: &journal) }
    }
    var insertedItems: [Int64: ItemList<String>] = [:]
    for (id, current) in insertedSections {
      let (slots, values) = try itemsOfSection(id)
      mirror.setItems(slots, ofSection: id, journal: &journal)
      insertedItems[id] = values
      mirror.insertSection(
        PositionMirror.Slot(key: current.key, hash: current.json.mirrorHash), id: id,
        journal: &journal)
    }
    for (id, current) in movedSections {
      mirror.insertSection(
        PositionMirror.Slot(key: current.key, hash: current.json.mirrorHash), id: id,
        journal: &journal)
    }
    for addition in additions {
      guard mirror.items[addition.current.parent] != nil else {
        throw NeedsReload(reason: "section \(addition.current.parent) is missing")
      }
      mirror.insertItem(
        PositionMirror.Slot(key: addition.current.key, hash: addition.current.json.mirrorHash),
        id: addition.id, section: addition.current.parent, journal: &journal)
    }

    // New indexes, now that the mirror is the new state: looked up one by one for a few
    // (no table of every section for a single row), from a table for many.
    let lookups = insertedSections.count + movedSections.count + additions.count
    var newSectionIndex: [Int64: Int] = [:]
    if lookups > 4 {
      for (index, id) in mirror.sections.ids.enumerated() { newSectionIndex[id] = index }
    }
    func newIndex(of section: Int64) throws -> Int {
      guard
        let index = lookups > 4
          ? newSectionIndex[section] : mirror.sections.ids.firstIndex(of: section)
      else {
        throw NeedsReload(reason: "section \(section) lost")
      }
      return index
    }
    for (id, current) in insertedSections {
      changeset.insertedSections.append(
        .init(
          index: try newIndex(of: id), id: id, metadata: current.json,
          items: insertedItems[id] ?? []))
    }
    for (id, current) in movedSections {
      guard let from = sectionMovedFrom[id] else { continue }
      changeset.movedSections.append(
        .init(
          from: from, to: try newIndex(of: id), id: id,
          metadata: current.json))
    }
    for addition in additions {
      let section = addition.current.parent
      guard let list = mirror.items[section],
        let row = PositionMirror.index(of: addition.id, key: addition.current.key, in: list)
      else { throw NeedsReload(reason: "item \(addition.id) lost") }
      let path = IndexPath(indexes: [try newIndex(of: section), row])
      let value = addition.current.json
      if let from = movedFrom[addition.id] {
        changeset.movedItems.append(.init(from: from, to: path, id: addition.id, value: value))
      } else {
        changeset.insertedItems.append(.init(at: path, id: addition.id, value: value))
      }
    }
    return changeset.isEmpty ? nil : .changes(changeset)
  }

  // MARK: - Reading rows

  private func itemsOfSection(_ id: Int64) throws -> (
    ItemList<PositionMirror.Slot>, ItemList<String>
  ) {
    let statement = try db.cached(
      "SELECT id, position, value FROM items WHERE section_id = ? ORDER BY position")
    try statement.bind(id, at: 1)
    var slots = ItemList<PositionMirror.Slot>()
    var values = ItemList<String>()
    try statement.forEachRow { row in
      let json = row.string(at: 2)
      slots.append(
        PositionMirror.Slot(key: row.string(at: 1), hash: PositionMirror.hash(json)),
        id: row.int64(at: 0))
      values.append(json, id: row.int64(at: 0))
    }
    return (slots, values)
  }

  /// Whether item `id` is still in the store.
  private func itemExists(_ id: Int64) throws -> Bool {
    try db.scalarInt64("SELECT 1 FROM items WHERE id = ?", id) != nil
  }

  private func oldSectionIndex(_ id: Int64, _ mirror: PositionMirror) throws -> Int {
    guard let index = mirror.sections.ids.firstIndex(of: id) else {
      throw NeedsReload(reason: "section \(id) is not in the list")
    }
    return index
  }

}

extension String {
  /// The hash a ``PositionMirror`` keeps for this stored JSON text.
  fileprivate var mirrorHash: Int { PositionMirror.hash(self) }
}
