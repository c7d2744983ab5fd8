import FoundationEssentials

extension Changeset {
  /// Checks the changeset against the state it claims to start from, without building the new
  /// state.
  ///
  /// It checks rules 1 to 5 of the changeset contract: every index and index path is in bounds
  /// of its state (new item rows against the counts that rule 4 gives each surviving section);
  /// no old index or index path is named twice among deletions, moves and updates, and no new
  /// one twice among insertions and moves; no item of a deleted or inserted section is listed;
  /// and every entry that names something in the old state carries that thing's id.
  ///
  /// - Parameter old: The state before the batch.
  /// - Throws: ``Observable2DArrayError/invalidChangeset(rule:message:)`` naming the first broken
  ///   rule and the entry that broke it.
  /// - Complexity: O(*k* log *n*) for a changeset of *k* ≤ 8 item entries (and updated
  ///   sections) that inserts, deletes and moves no section; otherwise O(*s* + *k* log *n*) for
  ///   *s* sections. It never walks the items.
  @inlinable
  public func validate(against old: [Section]) throws(Observable2DArrayError) {
    if isCertainlyValid(against: old) { return }
    try validateFully(against: old)
  }

  /// The general validation, which names the first broken rule.
  @usableFromInline
  package func validateFully(against old: [Section]) throws(Observable2DArrayError) {
    _ = try checkedSectionMap(against: old)
  }

  /// The largest number of item entries (plus updated sections) that
  /// ``isCertainlyValid(against:)`` checks pairwise.
  @inlinable
  static var quickCheckLimit: Int { 8 }

  /// Whether the changeset certainly obeys the rules ``validate(against:)`` checks, checked in O(*k²* + *k* log
  /// *n*) for its *k* entries, whatever the number of sections: the check of the store's
  /// single-row changesets. It answers only for small changesets that leave the sections in
  /// place (no section inserted, deleted or moved), where the new state's sections are the old
  /// ones; for any other changeset, and for any that breaks a rule, it returns `false` and
  /// ``validate(against:)`` runs the general check, which names the broken rule. It never
  /// accepts what the general check refuses (a property test compares both).
  @inlinable
  package func isCertainlyValid(against old: [Section]) -> Bool {
    guard deletedSections.isEmpty, insertedSections.isEmpty, movedSections.isEmpty else {
      return false
    }
    let oldClaims = deletedItems.count + movedItems.count + updatedItems.count
    let newClaims = insertedItems.count + movedItems.count
    guard oldClaims + newClaims + updatedSections.count <= Self.quickCheckLimit else {
      return false
    }
    let sectionCount = old.count
    // Updated sections: in bounds, with their ids, each named once.
    for position in updatedSections.indices {
      let index = updatedSections[position].index
      guard index >= 0, index < sectionCount, old[index].id == updatedSections[position].id
      else { return false }
      for earlier in 0..<position where updatedSections[earlier].index == index { return false }
    }
    // Old rows (deleted, moved from, updated): in bounds, with their ids, each named once.
    // Sections stay where they are, so a row's section is the same index in both states.
    for claim in 0..<oldClaims {
      let (path, id) = oldClaim(claim)
      guard path.count == 2 else { return false }
      let section = path[0]
      let row = path[1]
      guard section >= 0, section < sectionCount, row >= 0, row < old[section].items.count,
        old[section].items.id(at: row) == id
      else { return false }
      for earlier in 0..<claim where oldClaim(earlier).path == path { return false }
    }
    // New rows (inserted, moved to): in bounds of their section's count after the batch
    // (rule 4: before, minus the rows deleted or moved out, plus those inserted or moved in),
    // each named once.
    for claim in 0..<newClaims where newClaim(claim).count != 2 { return false }
    for claim in 0..<newClaims {
      let path = newClaim(claim)
      let section = path[0]
      let row = path[1]
      guard section >= 0, section < sectionCount, row >= 0 else { return false }
      var count = old[section].items.count
      for entry in deletedItems where entry.at[0] == section { count -= 1 }
      for entry in movedItems where entry.from[0] == section { count -= 1 }
      for entry in insertedItems where entry.at[0] == section { count += 1 }
      for entry in movedItems where entry.to[0] == section { count += 1 }
      guard row < count else { return false }
      for earlier in 0..<claim where newClaim(earlier) == path { return false }
    }
    return true
  }

  /// The `index`th index path of the old state the changeset names: its deleted items, then
  /// the items it moves (where from), then its updated items; with the id it gives there.
  @inlinable
  func oldClaim(_ index: Int) -> (path: IndexPath, id: Int64) {
    if index < deletedItems.count { return (deletedItems[index].at, deletedItems[index].id) }
    let moved = index - deletedItems.count
    if moved < movedItems.count { return (movedItems[moved].from, movedItems[moved].id) }
    let updated = moved - movedItems.count
    return (updatedItems[updated].at, updatedItems[updated].id)
  }

  /// The `index`th index path of the new state the changeset names: its inserted items, then
  /// the items it moves (where to).
  @inlinable
  func newClaim(_ index: Int) -> IndexPath {
    index < insertedItems.count
      ? insertedItems[index].at : movedItems[index - insertedItems.count].to
  }

  /// Applies the changeset to `old` by the normative algorithm of the changeset contract.
  ///
  /// The changeset is validated first; on error nothing is built. Then, in the old index
  /// space, deleted and moved-from items are removed from the highest index path down, then
  /// deleted and moved-from sections (a moved section keeps its remaining items); in the new
  /// index space, inserted and moved-to sections are inserted from the lowest index up, then
  /// inserted and moved-to items ordered by section, then row; finally the metadata of updated
  /// sections and the values of updated items are set (by id, which is where the old index
  /// names them).
  ///
  /// - Parameter old: The state before the batch.
  /// - Returns: The state after the batch.
  /// - Throws: ``Observable2DArrayError/invalidChangeset(rule:message:)`` when the changeset
  ///   does not fit `old`.
  /// - Complexity: O(*s* + *k* (log *n* + *c* + 1024)) for *s* sections, *k* entries and item
  ///   lists of *n* items in *c* chunks: proportional to the change, not to the total count.
  @inlinable
  public func applied(to old: [Section]) throws(Observable2DArrayError) -> [Section] {
    try validate(against: old)
    var sections = old
    applyWithoutValidation(to: &sections)
    return sections
  }

  /// Applies a changeset that ``validate(against:)`` accepted for `sections`.
  ///
  /// Inlinable so that callers with concrete types copy shared chunks with specialized code.
  @inlinable
  func applyWithoutValidation(to sections: inout [Section]) {
    // Updates name surviving, unmoved things by their old position, which is where their id is
    // now; setting them first gives the same result as setting them by id at the end.
    for update in updatedSections { sections[update.index].metadata = update.metadata }
    for update in updatedItems { sections[update.at[0]].items[update.at[1]] = update.value }

    // The store's usual batch: one item removed, added or moved, sections in place. The
    // general steps below do the same with their sorting and bookkeeping.
    if deletedSections.isEmpty && insertedSections.isEmpty && movedSections.isEmpty
      && deletedItems.count + insertedItems.count + movedItems.count <= 1
    {
      if let deletion = deletedItems.first {
        sections[deletion.at[0]].items.removeEntry(at: deletion.at[1])
      } else if let insertion = insertedItems.first {
        sections[insertion.at[0]].items.insert(
          insertion.value, id: insertion.id, at: insertion.at[1])
      } else if let move = movedItems.first {
        sections[move.from[0]].items.removeEntry(at: move.from[1])
        sections[move.to[0]].items.insert(move.value, id: move.id, at: move.to[1])
      }
      return
    }

    var removals = [(section: Int, row: Int)]()
    removals.reserveCapacity(deletedItems.count + movedItems.count)
    for deletion in deletedItems { removals.append((deletion.at[0], deletion.at[1])) }
    for move in movedItems { removals.append((move.from[0], move.from[1])) }
    removals.sort { $0 > $1 }
    for removal in removals { sections[removal.section].items.removeEntry(at: removal.row) }

    var movedFrom = [Int: Int]()
    for position in movedSections.indices { movedFrom[movedSections[position].from] = position }
    var sectionRemovals = [Int]()
    sectionRemovals.reserveCapacity(deletedSections.count + movedSections.count)
    for deletion in deletedSections { sectionRemovals.append(deletion.index) }
    for move in movedSections { sectionRemovals.append(move.from) }
    sectionRemovals.sort(by: >)
    var keptSections = [Int: Section]()
    for index in sectionRemovals {
      let removed = sections.remove(at: index)
      if let position = movedFrom[index] { keptSections[position] = removed }
    }

    var sectionInsertions = [(index: Int, section: Section)]()
    sectionInsertions.reserveCapacity(insertedSections.count + movedSections.count)
    for insertion in insertedSections {
      sectionInsertions.append((insertion.index, insertion.section))
    }
    for position in movedSections.indices {
      let move = movedSections[position]
      if var section = keptSections[position] {
        section.metadata = move.metadata
        sectionInsertions.append((move.to, section))
      }
    }
    sectionInsertions.sort { $0.index < $1.index }
    for insertion in sectionInsertions { sections.insert(insertion.section, at: insertion.index) }

    var itemInsertions = [(section: Int, row: Int, id: Int64, value: Item)]()
    itemInsertions.reserveCapacity(insertedItems.count + movedItems.count)
    for insertion in insertedItems {
      itemInsertions.append((insertion.at[0], insertion.at[1], insertion.id, insertion.value))
    }
    for move in movedItems { itemInsertions.append((move.to[0], move.to[1], move.id, move.value)) }
    itemInsertions.sort { ($0.section, $0.row) < ($1.section, $1.row) }
    for insertion in itemInsertions {
      sections[insertion.section].items.insert(
        insertion.value, id: insertion.id, at: insertion.row)
    }
  }
}

// MARK: - Validation

/// What a changeset does to a section of the old state.
private enum OldFate {
  case stays
  case deleted
  case moved
}

/// A `[section, row]` pair, cheaper to hash than an `IndexPath`.
private struct RowKey: Hashable {
  var section: Int
  var row: Int
}

extension Changeset {
  /// Which entry of which field named something, for error messages.
  private struct EntryName: CustomStringConvertible {
    var field: String
    var position: Int
    var description: String { "\(field)[\(position)]" }
  }

  private func invalid(_ rule: Int, _ message: String) -> Observable2DArrayError {
    .invalidChangeset(rule: rule, message: message)
  }

  /// Validates the changeset and returns, for every section of the new state, the index of the
  /// old section it continues, or `nil` for an inserted section.
  func checkedSectionMap(against old: [Section]) throws(Observable2DArrayError) -> [Int?] {
    let oldCount = old.count

    // Sections in the old state: bounds, ids, and at most one claim each.
    var oldFate = [OldFate](repeating: .stays, count: oldCount)
    var oldClaims = [Int: EntryName]()
    func claimOldSection(_ index: Int, id: Int64, by name: EntryName) throws(Observable2DArrayError)
    {
      guard index >= 0 && index < oldCount else {
        throw invalid(
          1,
          "\(name) names section \(index), but there are only \(oldCount) sections before "
            + "the update")
      }
      if let earlier = oldClaims[index] {
        throw invalid(2, "\(name) names old section \(index), which \(earlier) already names")
      }
      guard old[index].id == id else {
        throw invalid(
          6,
          "\(name) names section \(index) with id \(id), but that section has id "
            + "\(old[index].id) before the update")
      }
      oldClaims[index] = name
    }
    for position in deletedSections.indices {
      let entry = deletedSections[position]
      try claimOldSection(
        entry.index, id: entry.id, by: EntryName(field: "deletedSections", position: position))
      oldFate[entry.index] = .deleted
    }
    for position in movedSections.indices {
      let entry = movedSections[position]
      try claimOldSection(
        entry.from, id: entry.id, by: EntryName(field: "movedSections", position: position))
      oldFate[entry.from] = .moved
    }
    for position in updatedSections.indices {
      let entry = updatedSections[position]
      try claimOldSection(
        entry.index, id: entry.id, by: EntryName(field: "updatedSections", position: position))
    }

    // Sections in the new state: bounds and at most one claim each.
    let newCount = oldCount - deletedSections.count + insertedSections.count
    var newToOld = [Int?](repeating: nil, count: newCount)
    var newClaimed = [Bool](repeating: false, count: newCount)
    var newClaims = [Int: EntryName]()
    func claimNewSection(_ index: Int, by name: EntryName) throws(Observable2DArrayError) {
      guard index >= 0 && index < newCount else {
        throw invalid(
          1,
          "\(name) names section \(index), but there are only \(newCount) sections after "
            + "the update (\(oldCount) before, \(insertedSections.count) inserted, "
            + "\(deletedSections.count) deleted)")
      }
      if let earlier = newClaims[index] {
        throw invalid(2, "\(name) names new section \(index), which \(earlier) already names")
      }
      newClaims[index] = name
      newClaimed[index] = true
    }
    for position in insertedSections.indices {
      let entry = insertedSections[position]
      try claimNewSection(entry.index, by: EntryName(field: "insertedSections", position: position))
    }
    for position in movedSections.indices {
      let entry = movedSections[position]
      try claimNewSection(entry.to, by: EntryName(field: "movedSections", position: position))
      newToOld[entry.to] = entry.from
    }
    // Sections that neither move nor go keep their order in the remaining slots.
    var slot = 0
    for (index, fate) in oldFate.enumerated() where fate == .stays {
      while newClaimed[slot] { slot += 1 }
      newToOld[slot] = index
      slot += 1
    }

    // Items in the old state.
    var removedFrom = [Int: Int]()
    var oldRowClaims = [RowKey: EntryName]()
    func claimOldItem(_ path: IndexPath, id: Int64, by name: EntryName)
      throws(Observable2DArrayError)
    {
      guard path.count == 2 else {
        throw invalid(1, "\(name) names \(path.shortDescription), which is not [section, row]")
      }
      let section = path[0]
      let row = path[1]
      guard section >= 0 && section < oldCount else {
        throw invalid(
          1,
          "\(name) names row \(row) of section \(section), but there are only "
            + "\(oldCount) sections before the update")
      }
      guard oldFate[section] != .deleted else {
        throw invalid(
          3,
          "\(name) names row \(row) of section \(section), which is deleted; items of a "
            + "deleted section are not listed")
      }
      let rowCount = old[section].items.count
      guard row >= 0 && row < rowCount else {
        throw invalid(
          1,
          "\(name) names row \(row) of section \(section), which only contains "
            + "\(rowCount) rows before the update")
      }
      let key = RowKey(section: section, row: row)
      if let earlier = oldRowClaims[key] {
        throw invalid(
          2,
          "\(name) names old row \(row) of section \(section), which \(earlier) already "
            + "names")
      }
      let actual = old[section].items.id(at: row)
      guard actual == id else {
        throw invalid(
          6,
          "\(name) names row \(row) of section \(section) with id \(id), but that row has "
            + "id \(actual) before the update")
      }
      oldRowClaims[key] = name
    }
    for position in deletedItems.indices {
      let entry = deletedItems[position]
      try claimOldItem(
        entry.at, id: entry.id, by: EntryName(field: "deletedItems", position: position))
      removedFrom[entry.at[0], default: 0] += 1
    }
    for position in movedItems.indices {
      let entry = movedItems[position]
      try claimOldItem(
        entry.from, id: entry.id, by: EntryName(field: "movedItems", position: position))
      removedFrom[entry.from[0], default: 0] += 1
    }
    for position in updatedItems.indices {
      let entry = updatedItems[position]
      try claimOldItem(
        entry.at, id: entry.id, by: EntryName(field: "updatedItems", position: position))
    }

    // Items in the new state: their section must survive, and their rows must fit the count
    // that rule 4 gives it.
    var addedTo = [Int: Int]()
    func checkNewSection(_ path: IndexPath, by name: EntryName) throws(Observable2DArrayError) {
      guard path.count == 2 else {
        throw invalid(1, "\(name) names \(path.shortDescription), which is not [section, row]")
      }
      let section = path[0]
      guard section >= 0 && section < newCount else {
        throw invalid(
          1,
          "\(name) names row \(path[1]) of section \(section), but there are only "
            + "\(newCount) sections after the update")
      }
      guard newToOld[section] != nil else {
        throw invalid(
          3,
          "\(name) names row \(path[1]) of section \(section), which is inserted; its items "
            + "come inside insertedSections and are not listed again")
      }
      addedTo[section, default: 0] += 1
    }
    for position in insertedItems.indices {
      let entry = insertedItems[position]
      try checkNewSection(entry.at, by: EntryName(field: "insertedItems", position: position))
    }
    for position in movedItems.indices {
      let entry = movedItems[position]
      try checkNewSection(entry.to, by: EntryName(field: "movedItems", position: position))
    }
    var newRowClaims = [RowKey: EntryName]()
    func claimNewItem(_ path: IndexPath, by name: EntryName) throws(Observable2DArrayError) {
      let section = path[0]
      let row = path[1]
      guard let oldSection = newToOld[section] else { return }
      let before = old[oldSection].items.count
      let removed = removedFrom[oldSection, default: 0]
      let added = addedTo[section, default: 0]
      let after = before - removed + added
      guard row >= 0 && row < after else {
        throw invalid(
          4,
          "\(name) names row \(row) of section \(section), which only contains \(after) "
            + "rows after the update (\(before) before, \(removed) deleted or moved out, "
            + "\(added) inserted or moved in)")
      }
      let key = RowKey(section: section, row: row)
      if let earlier = newRowClaims[key] {
        throw invalid(
          2,
          "\(name) names new row \(row) of section \(section), which \(earlier) already "
            + "names")
      }
      newRowClaims[key] = name
    }
    for position in insertedItems.indices {
      let entry = insertedItems[position]
      try claimNewItem(entry.at, by: EntryName(field: "insertedItems", position: position))
    }
    for position in movedItems.indices {
      let entry = movedItems[position]
      try claimNewItem(entry.to, by: EntryName(field: "movedItems", position: position))
    }
    return newToOld
  }
}
