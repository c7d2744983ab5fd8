public import FoundationEssentials

extension Observable2DArrayEditor {
  // MARK: Everyday helpers (Bond's)

  /// Removes the last section with its items.
  ///
  /// - Returns: The removed section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)`` when there is
  ///   no section.
  @discardableResult
  public mutating func removeLastSection() throws(Observable2DArrayError) -> Section {
    try removeSection(at: sections.count - 1)
  }

  /// Removes the last item of a section.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError`` when the section does not exist or has no items.
  @discardableResult
  public mutating func removeLastItem(inSection section: Int) throws(Observable2DArrayError)
    -> Item
  {
    let count = try numberOfItems(inSection: section)
    return try removeItem(at: IndexPath(row: count - 1, section: section))
  }

  /// Removes every section with its items.
  public mutating func removeAllSections() {
    while !sections.isEmpty { _ = try? removeSection(at: sections.count - 1) }
  }

  /// Removes every item of every section; the sections stay.
  public mutating func removeAllItems() {
    for section in sections.indices {
      _ = try? removeItems(inSection: section, subrange: 0..<sections[section].items.count)
    }
  }

  /// Removes a range of a section's items.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - subrange: The rows, within `0 ..< numberOfItems(inSection:)`.
  /// - Throws: ``Observable2DArrayError`` when the section does not exist or the range does
  ///   not lie within its items; nothing is removed then.
  public mutating func removeItems(inSection section: Int, subrange: Range<Int>)
    throws(Observable2DArrayError)
  {
    let count = try numberOfItems(inSection: section)
    guard subrange.lowerBound >= 0, subrange.upperBound <= count else {
      let outside = subrange.lowerBound < 0 ? subrange.lowerBound : subrange.upperBound - 1
      throw .itemOutOfRange(IndexPath(row: outside, section: section), validRange: 0..<count)
    }
    for row in subrange.reversed() { try removeItem(at: IndexPath(row: row, section: section)) }
  }

  /// Replaces every item of a section with `items`, which get fresh ids; the section keeps
  /// its id and metadata.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - items: The new items.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public mutating func replaceItems(ofSectionAt section: Int, with items: [Item])
    throws(Observable2DArrayError)
  {
    let count = try numberOfItems(inSection: section)
    try removeItems(inSection: section, subrange: 0..<count)
    try insert(contentsOf: items, at: IndexPath(row: 0, section: section))
  }

  /// Moves several items, from any sections, to one place, where they end up next to each
  /// other in the order given.
  ///
  /// - Parameters:
  ///   - indexPaths: The items' index paths now; one named twice moves once.
  ///   - destination: Where the first of them is after the move, counted without the moved
  ///     items (`[section, 0]` puts them first, `[section, count]` last, where `count` is the
  ///     section's items that do not move).
  /// - Throws: ``Observable2DArrayError`` when an index path is malformed or out of range;
  ///   nothing moves then.
  public mutating func moveItems(from indexPaths: [IndexPath], to destination: IndexPath)
    throws(Observable2DArrayError)
  {
    var seen = Set<IndexPath>()
    var paths: [(section: Int, row: Int)] = []
    for path in indexPaths where seen.insert(path).inserted {
      paths.append(try Self.check(path, in: sections))
    }
    guard destination.count == 2 else { throw .malformedIndexPath(destination) }
    try checkSection(destination[0], forInsertion: false)
    let staying =
      sections[destination[0]].items.count - paths.filter { $0.section == destination[0] }.count
    guard destination[1] >= 0, destination[1] <= staying else {
      throw .itemOutOfRange(destination, validRange: 0..<staying + 1)
    }
    // Take them out from the last up, then put them in, in the order given.
    var taken: [Int: (id: Int64, value: Item)] = [:]
    for (position, path) in paths.enumerated().sorted(by: {
      ($0.1.section, $0.1.row) > ($1.1.section, $1.1.row)
    }) {
      let id = sections[path.section].items.id(at: path.row)
      tracker.removingItem(id, section: sections[path.section].id, row: path.row)
      let entry = sections[path.section].items.removeEntry(at: path.row)
      taken[position] = (entry.id, entry.value)
    }
    let section = destination[0]
    for position in paths.indices {
      guard let entry = taken[position] else { continue }
      let row = destination[1] + position
      sections[section].items.insert(entry.value, id: entry.id, at: row)
      tracker.insertedItem(entry.id, section: sections[section].id, row: row, moved: true)
    }
  }
}
