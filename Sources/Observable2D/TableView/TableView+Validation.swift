import FoundationEssentials

/// The checks a ``TableView`` makes before a batch update, with UIKit's wording.
///
/// Old indexes are checked against the rows the table view shows, new ones against the data
/// source's counts; then the section count and the row count of every section that stays must
/// add up, exactly as UIKit's `performBatchUpdates` demands.
enum TableViewUpdateCheck {
  /// Checks `changeset` and throws the first inconsistency.
  ///
  /// - Parameters:
  ///   - changeset: The update.
  ///   - oldRowCounts: The rows of each section the table view shows.
  ///   - newSectionCount: The data source's number of sections.
  ///   - newRowCount: The data source's number of rows of a section.
  /// - Throws: ``Observable2DArrayError/invalidTableViewUpdate(message:)``.
  static func check<Metadata, Item>(
    _ changeset: Changeset<Metadata, Item>, oldRowCounts: [Int], newSectionCount: Int,
    newRowCount: (Int) -> Int
  ) throws(Observable2DArrayError) {
    func fail(_ message: String) -> Observable2DArrayError {
      .invalidTableViewUpdate(message: "Invalid update: " + message)
    }
    let oldSectionCount = oldRowCounts.count

    // Sections in the old state.
    var deletedSections = Set<Int>()
    for entry in changeset.deletedSections {
      let index = entry.index
      guard index >= 0 && index < oldSectionCount else {
        throw fail(
          "attempt to delete section \(index), but there are only \(oldSectionCount) sections "
            + "before the update")
      }
      guard deletedSections.insert(index).inserted else {
        throw fail("attempt to delete section \(index) twice")
      }
    }
    var movedSectionSources = Set<Int>()
    for entry in changeset.movedSections {
      let from = entry.from
      guard from >= 0 && from < oldSectionCount else {
        throw fail(
          "attempt to move section \(from), but there are only \(oldSectionCount) sections "
            + "before the update")
      }
      guard !deletedSections.contains(from) else {
        throw fail("attempt to perform a delete and a move from the same section (\(from))")
      }
      guard movedSectionSources.insert(from).inserted else {
        throw fail("attempt to move section \(from) twice")
      }
    }
    var reloadedSections = Set<Int>()
    for entry in changeset.updatedSections {
      let index = entry.index
      guard index >= 0 && index < oldSectionCount else {
        throw fail(
          "attempt to reload section \(index), but there are only \(oldSectionCount) sections "
            + "before the update")
      }
      guard !deletedSections.contains(index) else {
        throw fail("attempt to delete and reload the same section (\(index))")
      }
      guard !movedSectionSources.contains(index) else {
        throw fail("attempt to perform a move and a reload of the same section (\(index))")
      }
      guard reloadedSections.insert(index).inserted else {
        throw fail("attempt to reload section \(index) twice")
      }
    }

    // Sections in the new state.
    var insertedSections = Set<Int>()
    for entry in changeset.insertedSections {
      let index = entry.index
      guard index >= 0 && index < newSectionCount else {
        throw fail(
          "attempt to insert section \(index) but there are only \(newSectionCount) sections "
            + "after the update")
      }
      guard insertedSections.insert(index).inserted else {
        throw fail("attempt to insert section \(index) twice")
      }
    }
    var movedSectionTargets = Set<Int>()
    for entry in changeset.movedSections {
      guard entry.to >= 0 && entry.to < newSectionCount else {
        throw fail(
          "attempt to move section \(entry.from) to section \(entry.to), but there are only "
            + "\(newSectionCount) sections after the update")
      }
      guard !insertedSections.contains(entry.to) else {
        throw fail("attempt to perform an insert and a move to the same section (\(entry.to))")
      }
      guard movedSectionTargets.insert(entry.to).inserted else {
        throw fail("attempt to move two sections to the same section (\(entry.to))")
      }
    }
    let expectedSections = oldSectionCount - deletedSections.count + insertedSections.count
    guard newSectionCount == expectedSections else {
      throw fail(
        "invalid number of sections. The number of sections contained in the table view after "
          + "the update (\(newSectionCount)) must be equal to the number of sections contained "
          + "in the table view before the update (\(oldSectionCount)), plus or minus the number "
          + "of sections inserted or deleted (\(insertedSections.count) inserted, "
          + "\(deletedSections.count) deleted).")
    }

    // Which old section each new one continues.
    var newToOld = [Int?](repeating: nil, count: newSectionCount)
    for entry in changeset.movedSections { newToOld[entry.to] = entry.from }
    var slot = 0
    for index in 0..<oldSectionCount
    where !deletedSections.contains(index) && !movedSectionSources.contains(index) {
      while insertedSections.contains(slot) || movedSectionTargets.contains(slot) { slot += 1 }
      newToOld[slot] = index
      slot += 1
    }

    // Rows in the old state.
    var deletedRows = Set<IndexPath>()
    var rowsOut = [Int: (deleted: Int, movedOut: Int)]()
    func checkOld(_ path: IndexPath, _ verb: String) throws(Observable2DArrayError) {
      guard path.count == 2 else {
        throw fail("attempt to \(verb) an invalid index path \(path.shortDescription)")
      }
      let section = path[0]
      let row = path[1]
      guard section >= 0 && section < oldSectionCount else {
        throw fail(
          "attempt to \(verb) row \(row) from section \(section), but there are only "
            + "\(oldSectionCount) sections before the update")
      }
      guard !deletedSections.contains(section) else {
        throw fail(
          "attempt to \(verb) row \(row) from section \(section), which is being deleted")
      }
      guard row >= 0 && row < oldRowCounts[section] else {
        throw fail(
          "attempt to \(verb) row \(row) from section \(section) which only contains "
            + "\(oldRowCounts[section]) rows before the update")
      }
    }
    for entry in changeset.deletedItems {
      try checkOld(entry.at, "delete")
      guard deletedRows.insert(entry.at).inserted else {
        throw fail("attempt to delete row \(entry.at[1]) from section \(entry.at[0]) twice")
      }
      rowsOut[entry.at[0], default: (0, 0)].deleted += 1
    }
    var movedRowSources = Set<IndexPath>()
    for entry in changeset.movedItems {
      try checkOld(entry.from, "move")
      guard !deletedRows.contains(entry.from) else {
        throw fail(
          "attempt to perform a delete and a move from the same index path "
            + "(\(entry.from.shortDescription))")
      }
      guard movedRowSources.insert(entry.from).inserted else {
        throw fail("attempt to move index path \(entry.from.shortDescription) twice")
      }
      rowsOut[entry.from[0], default: (0, 0)].movedOut += 1
    }
    var reloadedRows = Set<IndexPath>()
    for entry in changeset.updatedItems {
      try checkOld(entry.at, "reload")
      guard !deletedRows.contains(entry.at) else {
        throw fail(
          "attempt to delete and reload the same index path (\(entry.at.shortDescription))")
      }
      guard !movedRowSources.contains(entry.at) else {
        throw fail(
          "attempt to perform a move and a reload of the same index path "
            + "(\(entry.at.shortDescription))")
      }
      guard reloadedRows.insert(entry.at).inserted else {
        throw fail("attempt to reload row \(entry.at[1]) from section \(entry.at[0]) twice")
      }
    }

    // Rows in the new state.
    var newRowCounts = [Int: Int]()
    func rowCount(_ section: Int) -> Int {
      if let count = newRowCounts[section] { return count }
      let count = newRowCount(section)
      newRowCounts[section] = count
      return count
    }
    var rowsIn = [Int: (inserted: Int, movedIn: Int)]()
    var insertedRows = Set<IndexPath>()
    for entry in changeset.insertedItems {
      let path = entry.at
      guard path.count == 2 else {
        throw fail("attempt to insert an invalid index path \(path.shortDescription)")
      }
      let section = path[0]
      let row = path[1]
      guard section >= 0 && section < newSectionCount else {
        throw fail(
          "attempt to insert row \(row) into section \(section), but there are only "
            + "\(newSectionCount) sections after the update")
      }
      guard !insertedSections.contains(section) else {
        throw fail(
          "attempt to insert row \(row) into section \(section), which is being inserted "
            + "with its rows")
      }
      guard row >= 0 && row < rowCount(section) else {
        throw fail(
          "attempt to insert row \(row) into section \(section), but there are only "
            + "\(rowCount(section)) rows in section \(section) after the update")
      }
      guard insertedRows.insert(path).inserted else {
        throw fail("attempt to insert row \(row) into section \(section) twice")
      }
      rowsIn[section, default: (0, 0)].inserted += 1
    }
    var movedRowTargets = Set<IndexPath>()
    for entry in changeset.movedItems {
      let path = entry.to
      let move =
        "attempt to move index path \(entry.from.shortDescription) to index path "
        + path.shortDescription
      guard path.count == 2 else { throw fail(move + ", which is not [section, row]") }
      let section = path[0]
      let row = path[1]
      guard section >= 0 && section < newSectionCount else {
        throw fail(
          move + " that does not exist - there are only \(newSectionCount) sections after the "
            + "update")
      }
      guard !insertedSections.contains(section) else {
        throw fail(move + " in section \(section), which is being inserted")
      }
      guard row >= 0 && row < rowCount(section) else {
        throw fail(
          move + " that does not exist - there are only \(rowCount(section)) rows in section "
            + "\(section) after the update")
      }
      guard !insertedRows.contains(path) else {
        throw fail(
          "attempt to perform an insert and a move to the same index path "
            + "(\(path.shortDescription))")
      }
      guard movedRowTargets.insert(path).inserted else {
        throw fail("attempt to move two rows to the same index path (\(path.shortDescription))")
      }
      rowsIn[section, default: (0, 0)].movedIn += 1
    }

    // Every section that stays must add up.
    for section in 0..<newSectionCount {
      guard let oldSection = newToOld[section] else { continue }
      let before = oldRowCounts[oldSection]
      let out = rowsOut[oldSection] ?? (0, 0)
      let added = rowsIn[section] ?? (0, 0)
      let after = rowCount(section)
      guard after == before - out.deleted - out.movedOut + added.inserted + added.movedIn else {
        throw fail(
          "invalid number of rows in section \(section). The number of rows contained in an "
            + "existing section after the update (\(after)) must be equal to the number of rows "
            + "contained in that section before the update (\(before)), plus or minus the "
            + "number of rows inserted or deleted from that section (\(added.inserted) "
            + "inserted, \(out.deleted) deleted) and plus or minus the number of rows moved "
            + "into or out of that section (\(added.movedIn) moved in, \(out.movedOut) moved "
            + "out).")
      }
    }
  }
}
