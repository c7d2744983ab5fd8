public import FoundationEssentials

extension MutableObservable2DArray {
  // MARK: Everyday helpers (Bond's)

  /// Removes the last section with its items; one event.
  ///
  /// - Returns: The removed section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)`` when there is
  ///   no section.
  @discardableResult
  public func removeLastSection() throws(Observable2DArrayError) -> Section {
    var removed: Section?
    try batchUpdate { editor throws(Observable2DArrayError) in
      removed = try editor.removeLastSection()
    }
    guard let removed else { throw .sectionOutOfRange(section: -1, validRange: 0..<0) }
    return removed
  }

  /// Removes the last item of a section; one event.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError`` when the section does not exist or has no items.
  @discardableResult
  public func removeLastItem(inSection section: Int) throws(Observable2DArrayError) -> Item {
    var removed: Item?
    try batchUpdate { editor throws(Observable2DArrayError) in
      removed = try editor.removeLastItem(inSection: section)
    }
    guard let removed else {
      throw .itemOutOfRange(IndexPath(row: -1, section: section), validRange: 0..<0)
    }
    return removed
  }

  /// Removes every section (Bond's `removeAll()`); one event that deletes them.
  public func removeAllSections() {
    batchUpdate { editor in editor.removeAllSections() }
  }

  /// Removes every item of every section, keeping the sections; one event.
  public func removeAllItems() {
    batchUpdate { editor in editor.removeAllItems() }
  }

  /// Removes a range of a section's items (Bond's `removeSubrange`); one event.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - subrange: The rows, within `0 ..< numberOfItems(inSection:)`.
  /// - Throws: ``Observable2DArrayError`` when the section does not exist or the range does
  ///   not lie within its items; nothing changes then.
  public func removeItems(inSection section: Int, subrange: Range<Int>)
    throws(Observable2DArrayError)
  {
    try batchUpdate { editor throws(Observable2DArrayError) in
      try editor.removeItems(inSection: section, subrange: subrange)
    }
  }

  /// Replaces every item of a section with `items`, which get fresh ids; the section keeps
  /// its id and metadata. One event: the old items deleted, the new ones inserted.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - items: The new items.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func replaceItems(ofSectionAt section: Int, with items: [Item])
    throws(Observable2DArrayError)
  {
    try batchUpdate { editor throws(Observable2DArrayError) in
      try editor.replaceItems(ofSectionAt: section, with: items)
    }
  }

  /// Moves several items, from any sections, to one place, where they end up next to each
  /// other in the order given; one event of moves.
  ///
  /// - Parameters:
  ///   - indexPaths: The items' index paths now; one named twice moves once.
  ///   - destination: Where the first of them is after the move, counted without the moved
  ///     items.
  /// - Throws: ``Observable2DArrayError`` when an index path is malformed or out of range;
  ///   nothing moves then.
  public func moveItems(from indexPaths: [IndexPath], to destination: IndexPath)
    throws(Observable2DArrayError)
  {
    try batchUpdate { editor throws(Observable2DArrayError) in
      try editor.moveItems(from: indexPaths, to: destination)
    }
  }
}
