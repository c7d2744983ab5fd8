import FoundationEssentials
import Observable2D

extension StoredList {
  // MARK: - Everyday helpers (Bond's)

  /// Deletes the last item of a section; one transaction, one changeset.
  /// - Parameter section: The section's index.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``, or
  ///   ``ListStoreError/itemOutOfRange(section:row:count:)`` when it has no items.
  /// - Complexity: O(log *n*).
  public func removeLastItem(inSection section: Int) throws(ListStoreError) {
    try writeRows { rows in
      let count = try rows.itemCount(sectionID: rows.sectionID(at: section))
      try rows.deleteItem(id: rows.itemID(section: section, row: count - 1))
    }
  }

  /// Deletes the last section with its items.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)`` when there is none.
  public func removeLastSection() throws(ListStoreError) {
    try writeRows { rows in try rows.deleteSection(id: rows.sectionID(at: rows.sectionCount() - 1))
    }
  }

  /// Deletes every section with its items (Bond's `removeAll()`); one changeset.
  /// - Throws: ``ListStoreError`` when the list is gone or the write fails.
  public func removeAllSections() throws(ListStoreError) {
    try writeRows { rows in
      for id in try rows.sectionIDs() { try rows.deleteSection(id: id) }
    }
  }

  /// Deletes every item of every section, keeping the sections; one changeset.
  /// - Throws: ``ListStoreError`` when the list is gone or the write fails.
  /// - Complexity: O(*n* log *n*) for the *n* items deleted.
  public func removeAllItems() throws(ListStoreError) {
    try writeRows { rows in
      for (index, id) in try rows.sectionIDs().enumerated() {
        for _ in 0..<(try rows.itemCount(sectionID: id)) {
          try rows.deleteItem(id: rows.itemID(section: index, row: 0))
        }
      }
    }
  }

  /// Deletes a range of a section's items (Bond's `removeSubrange`); one changeset.
  /// - Parameters:
  ///   - section: The section's index.
  ///   - subrange: The rows, within `0 ..< numberOfItems(inSection:)`.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``, or
  ///   ``ListStoreError/itemOutOfRange(section:row:count:)`` when the range does not lie
  ///   within its items (nothing is deleted then).
  /// - Complexity: O(*k* log *n*) for *k* rows.
  public func removeItems(inSection section: Int, subrange: Range<Int>) throws(ListStoreError) {
    try writeRows { rows in
      let count = try rows.itemCount(sectionID: rows.sectionID(at: section))
      guard subrange.lowerBound >= 0, subrange.upperBound <= count else {
        let outside = subrange.lowerBound < 0 ? subrange.lowerBound : subrange.upperBound - 1
        throw ListStoreError.itemOutOfRange(section: section, row: outside, count: count)
      }
      for row in subrange.reversed() {
        try rows.deleteItem(id: rows.itemID(section: section, row: row))
      }
    }
  }

  /// Replaces every item of a section with `items`, which get new ids; the section keeps its
  /// id and metadata. One changeset: the old items deleted, the new ones inserted.
  /// - Parameters:
  ///   - section: The section's index.
  ///   - items: The new items.
  /// - Returns: The new items' ids, in order.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``, or an encoding error.
  @discardableResult
  public func replaceItems(ofSectionAt section: Int, with items: [Item]) throws(ListStoreError)
    -> [Int64]
  {
    var values: [String] = []
    values.reserveCapacity(items.count)
    for item in items { values.append(try ValueCoder.encode(item)) }
    return try writeRows { rows in
      let sectionID = try rows.sectionID(at: section)
      for _ in 0..<(try rows.itemCount(sectionID: sectionID)) {
        try rows.deleteItem(id: rows.itemID(section: section, row: 0))
      }
      return try rows.appendItems(values: values, sectionID: sectionID)
    }
  }

  /// Moves several items, from any sections, to one place, where they end up next to each
  /// other in the order given; one transaction, one changeset of moves, each row written
  /// once.
  /// - Parameters:
  ///   - indexPaths: The items' index paths now; one named twice moves once.
  ///   - destination: Where the first of them is after the move, counted without the moved
  ///     items (`[section, 0]` puts them first).
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)`` or
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``; nothing moves then.
  public func moveItems(from indexPaths: [IndexPath], to destination: IndexPath)
    throws(ListStoreError)
  {
    var seen = Set<IndexPath>()
    var unique: [(section: Int, row: Int)] = []
    for path in indexPaths where seen.insert(path).inserted {
      unique.append(try Self.split(path))
    }
    let target = try Self.split(destination)
    try writeRows { rows in
      let ids = try unique.map { try rows.itemID(section: $0.section, row: $0.row) }
      let count = try rows.itemCount(sectionID: rows.sectionID(at: target.section))
      let movedHere = unique.filter { $0.section == target.section }.map(\.row).sorted()
      let staying = count - movedHere.count
      guard target.row >= 0, target.row <= staying else {
        throw ListStoreError.insertionOutOfRange(
          section: target.section, row: target.row, limit: staying)
      }
      guard let first = ids.first else { return }
      // The staying item the block goes before (its row counts the moved ones above it),
      // else the last staying item it goes after, else the section holds only moved ones.
      var row = target.row
      for moved in movedHere where moved <= row { row += 1 }
      let movedSet = Set(movedHere)
      if row < count {
        try rows.moveItem(
          id: first, nextTo: rows.itemID(section: target.section, row: row), after: false)
      } else if let last = (0..<count).reversed().first(where: { !movedSet.contains($0) }) {
        try rows.moveItem(
          id: first, nextTo: rows.itemID(section: target.section, row: last), after: true)
      } else {
        try rows.moveItem(id: first, toSection: target.section, row: 0)
      }
      for (previous, id) in zip(ids, ids.dropFirst()) {
        try rows.moveItem(id: id, nextTo: previous, after: true)
      }
    }
  }
}
