import FoundationEssentials

/// Composes the mutations of one batch into one changeset, at a cost per mutation that grows
/// with the number of items the batch touched, not with the size of the array.
///
/// It records every item a mutation touches: where it was in the state before the batch (its
/// old section id and row, computed when it is first touched) and whether it moved or changed
/// value; and, per section of the working state, the current rows of the touched items in it
/// ("marks"). Untouched items of a section that existed before the batch keep their relative
/// order, so the old row of an untouched item at current row `r` follows from the marks before
/// `r` and the old rows of the touched items that came from that section.
///
/// A section removed during the batch is *tainted*: if a section with its id is in the final
/// state, it is reported as deleted and inserted again, and its items are not listed.
///
/// Past ``trackingLimit`` touched items, tracking stops and the batch ends with an id-based
/// diff of the old and final states instead (O(*n*)), using the recorded value and metadata
/// changes instead of comparing values.
struct ChangeTracker<Metadata, Item> {
  /// Where a touched item was before the batch, and what happened to it.
  struct Touch {
    /// The id of the section it was in before the batch, or `nil` for an item new to the batch.
    var oldSection: Int64?
    var oldRow: Int
    var moved = false
    var valueChanged = false
  }

  /// A touched item in the working state.
  struct Mark {
    var row: Int
    var id: Int64
  }

  /// The number of touched items beyond which the batch falls back to a diff.
  static var trackingLimit: Int { 1_024 }

  /// The ids of the sections before the batch, in order.
  let oldSectionIDs: [Int64]
  /// For each old section id, its index before the batch.
  let oldSectionIndex: [Int64: Int]
  /// The state before the batch, kept only by batches that may need the diff fallback.
  let oldSections: [Observable2DArraySection<Metadata, Item>]?

  var touches: [Int64: Touch] = [:]
  /// Per section id of the working state, its touched items, sorted by current row.
  var marks: [Int64: [Mark]] = [:]
  /// Per old section id, the sorted old rows of its touched items.
  var touchedOldRows: [Int64: [Int]] = [:]
  var taintedSections: Set<Int64> = []
  var metadataChanged: Set<Int64> = []
  /// Ids of items whose value was replaced (used by the diff fallback).
  var valueChanged: Set<Int64> = []
  /// Whether tracking stopped and the batch ends with a diff.
  var overflowed = false

  /// Creates a tracker for a batch that starts from `old`.
  ///
  /// - Parameters:
  ///   - old: The sections before the batch.
  ///   - keepingOldState: Whether to keep `old` for the diff fallback of large batches; a
  ///     single mutation never needs it, and not holding it lets that mutation happen in place.
  init(old: [Observable2DArraySection<Metadata, Item>], keepingOldState: Bool) {
    let oldSectionIDs = old.map(\.id)
    self.oldSectionIDs = oldSectionIDs
    var index = [Int64: Int](minimumCapacity: oldSectionIDs.count)
    for (position, id) in oldSectionIDs.enumerated() { index[id] = position }
    self.oldSectionIndex = index
    self.oldSections = keepingOldState ? old : nil
  }

  /// Whether the untouched items of section `id` are the untouched items it had before.
  private func isOriginal(_ section: Int64) -> Bool {
    oldSectionIndex[section] != nil && !taintedSections.contains(section)
  }

  /// The position in `marks` of the first mark at or after `row`.
  private static func firstMark(atOrAfter row: Int, in marks: [Mark]) -> Int {
    var low = 0
    var high = marks.count
    while low < high {
      let middle = (low + high) / 2
      if marks[middle].row < row { low = middle + 1 } else { high = middle }
    }
    return low
  }

  private mutating func stopTracking() {
    guard oldSections != nil else { return }
    overflowed = true
    touches = [:]
    marks = [:]
    touchedOldRows = [:]
  }

  /// Starts tracking the untouched item `id` at `row` of `section`, finding its old place.
  private mutating func touchUntouched(_ id: Int64, section: Int64, row: Int) {
    guard isOriginal(section) else {
      touches[id] = Touch(oldSection: nil, oldRow: 0)
      return
    }
    let sectionMarks = marks[section] ?? []
    var oldRow = row - Self.firstMark(atOrAfter: row, in: sectionMarks)
    var rows = touchedOldRows[section] ?? []
    var insertion = 0
    for touchedRow in rows {
      guard touchedRow <= oldRow else { break }
      oldRow += 1
      insertion += 1
    }
    rows.insert(oldRow, at: insertion)
    touchedOldRows[section] = rows
    touches[id] = Touch(oldSection: section, oldRow: oldRow)
  }

  /// Records that item `id` is about to be removed from `row` of `section`.
  mutating func removingItem(_ id: Int64, section: Int64, row: Int) {
    guard !overflowed else { return }
    var sectionMarks = marks[section] ?? []
    let position = Self.firstMark(atOrAfter: row, in: sectionMarks)
    if position < sectionMarks.count && sectionMarks[position].row == row {
      sectionMarks.remove(at: position)
    } else {
      touchUntouched(id, section: section, row: row)
    }
    for index in position..<sectionMarks.count { sectionMarks[index].row -= 1 }
    marks[section] = sectionMarks
    if touches.count > Self.trackingLimit { stopTracking() }
  }

  /// Records that item `id` was inserted at `row` of `section`; `moved` when it came from
  /// elsewhere in the array.
  mutating func insertedItem(_ id: Int64, section: Int64, row: Int, moved: Bool) {
    guard !overflowed else { return }
    var sectionMarks = marks[section] ?? []
    let position = Self.firstMark(atOrAfter: row, in: sectionMarks)
    for index in position..<sectionMarks.count { sectionMarks[index].row += 1 }
    sectionMarks.insert(Mark(row: row, id: id), at: position)
    marks[section] = sectionMarks
    if touches[id] == nil { touches[id] = Touch(oldSection: nil, oldRow: 0) }
    if moved { touches[id]?.moved = true }
    if touches.count > Self.trackingLimit { stopTracking() }
  }

  /// Records that the value of item `id` at `row` of `section` was replaced.
  mutating func replacedItem(_ id: Int64, section: Int64, row: Int) {
    valueChanged.insert(id)
    guard !overflowed else { return }
    var sectionMarks = marks[section] ?? []
    let position = Self.firstMark(atOrAfter: row, in: sectionMarks)
    if position == sectionMarks.count || sectionMarks[position].row != row {
      touchUntouched(id, section: section, row: row)
      sectionMarks.insert(Mark(row: row, id: id), at: position)
      marks[section] = sectionMarks
    }
    touches[id]?.valueChanged = true
    if touches.count > Self.trackingLimit { stopTracking() }
  }

  /// Records that section `id` was removed from the working state.
  mutating func removedSection(_ id: Int64) {
    if oldSectionIndex[id] != nil { taintedSections.insert(id) }
    marks[id] = nil
  }

  /// Records that the metadata of section `id` was replaced.
  mutating func replacedMetadata(_ id: Int64) {
    metadataChanged.insert(id)
  }
}

extension ChangeTracker {
  /// The changeset from the state before the batch to `final`.
  func changeset(to final: [Observable2DArraySection<Metadata, Item>]) -> Changeset<Metadata, Item>
  {
    if overflowed, let old = oldSections {
      return fallbackChangeset(from: old, to: final)
    }
    var result = Changeset<Metadata, Item>()
    var finalIndex = [Int64: Int](minimumCapacity: final.count)
    for (index, section) in final.enumerated() { finalIndex[section.id] = index }
    func paired(_ id: Int64) -> Bool {
      oldSectionIndex[id] != nil && finalIndex[id] != nil && !taintedSections.contains(id)
    }

    // Sections.
    for (index, id) in oldSectionIDs.enumerated() where !paired(id) {
      result.deletedSections.append(.init(index: index, id: id))
    }
    var pairedOld = [Int]()
    var pairedNew = [Int]()
    for (index, section) in final.enumerated() {
      if let oldIndex = oldSectionIndex[section.id], paired(section.id) {
        pairedOld.append(oldIndex)
        pairedNew.append(index)
      } else {
        result.insertedSections.append(
          .init(index: index, id: section.id, metadata: section.metadata, items: section.items))
      }
    }
    let stays = longestIncreasingSubsequenceMask(pairedOld)
    for position in pairedOld.indices {
      let section = final[pairedNew[position]]
      if !stays[position] {
        result.movedSections.append(
          .init(
            from: pairedOld[position], to: pairedNew[position], id: section.id,
            metadata: section.metadata))
      } else if metadataChanged.contains(section.id) {
        result.updatedSections.append(
          .init(index: pairedOld[position], id: section.id, metadata: section.metadata))
      }
    }

    // Items: those still in a surviving section, by their marks...
    var present = Set<Int64>()
    for (sectionID, sectionMarks) in marks {
      guard paired(sectionID), let newSection = finalIndex[sectionID] else { continue }
      for mark in sectionMarks {
        guard let touch = touches[mark.id] else { continue }
        present.insert(mark.id)
        let to = IndexPath(row: mark.row, section: newSection)
        let value = final[newSection].items[mark.row]
        guard let oldSection = touch.oldSection, paired(oldSection),
          let oldIndex = oldSectionIndex[oldSection]
        else {
          result.insertedItems.append(.init(at: to, id: mark.id, value: value))
          continue
        }
        let from = IndexPath(row: touch.oldRow, section: oldIndex)
        if touch.moved || oldSection != sectionID {
          result.movedItems.append(.init(from: from, to: to, id: mark.id, value: value))
        } else if touch.valueChanged {
          result.updatedItems.append(.init(at: from, id: mark.id, value: value))
        }
      }
    }
    // ... and those that left the surviving sections.
    for (id, touch) in touches where !present.contains(id) {
      guard let oldSection = touch.oldSection, paired(oldSection),
        let oldIndex = oldSectionIndex[oldSection]
      else { continue }
      result.deletedItems.append(.init(at: IndexPath(row: touch.oldRow, section: oldIndex), id: id))
    }
    result.deletedItems.sort { ($0.at[0], $0.at[1]) < ($1.at[0], $1.at[1]) }
    result.insertedItems.sort { ($0.at[0], $0.at[1]) < ($1.at[0], $1.at[1]) }
    result.movedItems.sort { ($0.to[0], $0.to[1]) < ($1.to[0], $1.to[1]) }
    result.updatedItems.sort { ($0.at[0], $0.at[1]) < ($1.at[0], $1.at[1]) }
    return result
  }

  /// The changeset of a batch too large to track: an id-based diff that takes value and
  /// metadata changes from what the batch recorded rather than from comparing values.
  private func fallbackChangeset(
    from old: [Observable2DArraySection<Metadata, Item>],
    to final: [Observable2DArraySection<Metadata, Item>]
  ) -> Changeset<Metadata, Item> {
    let changedItems = valueChanged
    let changedSections = metadataChanged
    return Differ(
      old: old, new: final, pairs: SectionPairs(old: old, new: final, pairing: .ids),
      symbols: nil, isEqual: { _, _ in true }, metadataIsEqual: { _, _ in true },
      changedItemIDs: changedItems, changedSectionIDs: changedSections
    ).run()
  }
}
