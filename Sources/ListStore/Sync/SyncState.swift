import Observable2D

/// A list's sections and items with their ids: the state a sync finds stored (with
/// position keys; item values are compared with the new ones as they are read, not kept)
/// or the state it is asked to reach, as JSON text (id 0 for new rows).
///
/// Items are numbered across the whole list ("flat" indexes), section by section.
struct SyncState {
  var sectionIDs: [Int64] = []
  var metadata = PackedTexts()
  /// `itemStarts[s]` is the flat index of section `s`'s first item; the last entry is
  /// the number of items.
  var itemStarts: [Int] = [0]
  var itemIDs: [Int64] = []
  /// The items' values (the new state only).
  var values = PackedTexts()
  /// For each item, whether the new state has an item with its id and the same value (the
  /// stored state only: its values are compared as they are read, not kept).
  var unchanged: [Bool] = []
  /// The stored position keys of the sections (stored state only; item keys are read
  /// when needed, for the few rows next to those that move).
  var sectionKeys = PackedTexts()

  var sectionCount: Int { sectionIDs.count }
  var itemCount: Int { itemIDs.count }

  /// The flat indexes of section `section`'s items.
  func items(of section: Int) -> Range<Int> { itemStarts[section]..<itemStarts[section + 1] }

  /// The section holding flat item `index`.
  func section(ofItem index: Int) -> Int {
    var low = 0
    var high = sectionCount
    while low < high {
      let middle = (low + high) / 2
      if itemStarts[middle + 1] <= index { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// Starts a new section; items appended next belong to it.
  mutating func appendSection(id: Int64, metadata text: String) {
    if !sectionIDs.isEmpty { itemStarts.append(itemIDs.count) }
    sectionIDs.append(id)
    metadata.append(text)
  }

  /// Closes the last section: call once after the last item.
  mutating func finish() {
    if !sectionIDs.isEmpty { itemStarts.append(itemIDs.count) }
  }

  /// The state as sections of an observable array, for the diff: metadata is the
  /// section's index, an item's value its flat index.
  func diffSections() -> [Observable2DArraySection<Int32, Int32>] {
    (0..<sectionCount).map { section in
      Observable2DArraySection(
        id: sectionIDs[section], metadata: Int32(truncatingIfNeeded: section),
        items: ItemList(
          ids: itemIDs[items(of: section)],
          values: items(of: section).lazy.map { Int32(truncatingIfNeeded: $0) }))
    }
  }
}

extension RowStore {
  /// The list as stored, with position keys, in one ordered pass over sections and one
  /// over items. Item values are not kept: `isUnchanged` tells, for each item's section
  /// id, id and value (UTF-8 bytes, valid only during the call), in list order, whether
  /// the new state has that value for that row, as ``SyncState/unchanged`` records.
  ///
  /// `sectionsRead` is called with the state of the sections (no items yet) before the
  /// items are read.
  func syncState(
    sectionsRead: (SyncState) -> Void = { _ in },
    isUnchanged: (_ sectionID: Int64, _ id: Int64, UnsafeBufferPointer<UInt8>) -> Bool
  ) throws -> SyncState {
    try requireList()
    var state = SyncState()
    let sections = try db.cached(
      "SELECT id, position, metadata FROM sections WHERE list_id = ? ORDER BY position")
    try sections.bind(listID, at: 1)
    while try sections.step() {
      state.sectionIDs.append(sections.int64(at: 0))
      state.sectionKeys.append(column: 1, of: sections)
      state.metadata.append(column: 2, of: sections)
    }
    sections.reset()
    sectionsRead(state)
    // Each section's items in order: an index scan per section. Only ids and values:
    // the few position keys a sync needs are read by id.
    let items = try db.cached("SELECT id, value FROM items WHERE section_id = ? ORDER BY position")
    var ids: [Int64] = []
    var unchanged: [Bool] = []
    var starts = [0]
    for sectionID in state.sectionIDs {
      try items.bind(sectionID, at: 1)
      try items.forEachIntegerAndText { id, value in
        ids.append(id)
        unchanged.append(isUnchanged(sectionID, id, value))
      }
      items.reset()
      starts.append(ids.count)
    }
    state.itemIDs = ids
    state.unchanged = unchanged
    state.itemStarts = starts
    return state
  }
}

extension SyncState {
  /// Gives this (new) state's sections without an id the id of a stored section with
  /// the same metadata that no section id of this state claims: one to one, in order
  /// (the first such section of a metadata takes the first such stored one), as items
  /// without an id pair with stored items (``ValueMatches``). So a file written by hand,
  /// without ids, syncs onto the list it made.
  mutating func adoptSectionIDs(from stored: SyncState) {
    guard sectionIDs.contains(0) else { return }
    let claimed = Set(sectionIDs.filter { $0 != 0 })
    var waiting: [String: ArraySlice<Int64>] = [:]
    for index in 0..<stored.sectionCount where !claimed.contains(stored.sectionIDs[index]) {
      waiting[stored.metadata.string(index), default: []].append(stored.sectionIDs[index])
    }
    for index in 0..<sectionCount where sectionIDs[index] == 0 {
      if let id = waiting[metadata.string(index)]?.popFirst() { sectionIDs[index] = id }
    }
  }

  /// Whether stored item `index` is in a section the sync deletes.
  func sectionOfDeletedItem(_ index: Int, _ deletedSection: [Bool]) -> Bool {
    deletedSection[section(ofItem: index)]
  }
}
