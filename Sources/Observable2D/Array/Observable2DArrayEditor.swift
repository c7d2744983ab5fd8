public import FoundationEssentials

/// The mutations of a 2D array, applied to a working state that records a changeset.
///
/// ``MutableObservable2DArray`` applies each of its mutations through an editor and emits the
/// recorded changeset; ``MutableObservable2DArray/batchUpdate(_:)`` hands an editor to its
/// closure so that many mutations make one changeset:
///
/// ```swift
/// try array.batchUpdate { array in
///   try array.appendItem("Copenhagen", toSection: 0)
///   try array.moveItem(from: IndexPath(row: 0, section: 0), to: IndexPath(row: 2, section: 0))
/// }
/// ```
///
/// Every mutation checks its indexes first and throws ``Observable2DArrayError`` without
/// changing anything when one is invalid. Sections and items added with id `0` get fresh ids;
/// ids given explicitly are kept and must be unique within the array (they are not checked,
/// which would cost O(*n*)).
public struct Observable2DArrayEditor<Metadata, Item> {
  /// The section type.
  public typealias Section = Observable2DArraySection<Metadata, Item>

  /// The working state.
  public internal(set) var sections: [Section]

  /// The next fresh id.
  var nextID: Int64

  /// Records what the mutations change.
  var tracker: ChangeTracker<Metadata, Item>

  init(sections: [Section], nextID: Int64, keepingOldState: Bool = false) {
    self.sections = sections
    self.nextID = nextID
    self.tracker = ChangeTracker(old: sections, keepingOldState: keepingOldState)
  }

  // MARK: Reading

  /// The number of sections.
  public var numberOfSections: Int { sections.count }

  /// The number of items in a section.
  ///
  /// - Parameter section: A section index.
  /// - Returns: The number of items.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func numberOfItems(inSection section: Int) throws(Observable2DArrayError) -> Int {
    try checkSection(section, forInsertion: false)
    return sections[section].items.count
  }

  /// The item at an index path.
  ///
  /// - Parameter indexPath: A `[section, item]` index path.
  /// - Returns: The item.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  public func item(at indexPath: IndexPath) throws(Observable2DArrayError) -> Item {
    let (section, row) = try Self.check(indexPath, in: sections)
    return sections[section].items[row]
  }

  // MARK: Items

  /// Appends an item to a section.
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - section: The index of the section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  /// - Complexity: Amortized O(1).
  public mutating func appendItem(_ item: Item, toSection section: Int)
    throws(Observable2DArrayError)
  {
    try checkSection(section, forInsertion: false)
    try insert(item: item, at: IndexPath(row: sections[section].items.count, section: section))
  }

  /// Inserts an item.
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - indexPath: Where the item will be; its row may be the section's item count.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  /// - Complexity: O(log *n*) plus the cost of one chunk (see ``ItemList``).
  public mutating func insert(item: Item, at indexPath: IndexPath) throws(Observable2DArrayError) {
    let (section, row) = try Self.check(indexPath, in: sections, forInsertion: true)
    let id = freshID()
    sections[section].items.insert(item, id: id, at: row)
    tracker.insertedItem(id, section: sections[section].id, row: row, moved: false)
  }

  /// Inserts items one after the other, the first at `indexPath`.
  ///
  /// - Parameters:
  ///   - items: The items; each gets a fresh id.
  ///   - indexPath: Where the first item will be.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  public mutating func insert(contentsOf items: [Item], at indexPath: IndexPath)
    throws(Observable2DArrayError)
  {
    let (section, row) = try Self.check(indexPath, in: sections, forInsertion: true)
    for (offset, item) in items.enumerated() {
      try insert(item: item, at: IndexPath(row: row + offset, section: section))
    }
  }

  /// Removes an item.
  ///
  /// - Parameter indexPath: The item's index path.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  @discardableResult
  public mutating func removeItem(at indexPath: IndexPath) throws(Observable2DArrayError) -> Item {
    let (section, row) = try Self.check(indexPath, in: sections)
    let sectionID = sections[section].id
    tracker.removingItem(sections[section].items.id(at: row), section: sectionID, row: row)
    return sections[section].items.removeEntry(at: row).value
  }

  /// Moves an item, within its section or to another one.
  ///
  /// - Parameters:
  ///   - from: The item's index path now.
  ///   - to: Its index path after the move (counted without the item at its old place).
  /// - Throws: ``Observable2DArrayError`` when an index path is malformed or out of range.
  public mutating func moveItem(from: IndexPath, to: IndexPath) throws(Observable2DArrayError) {
    let (fromSection, fromRow) = try Self.check(from, in: sections)
    guard to.count == 2 else { throw .malformedIndexPath(to) }
    let toSection = to[0]
    let toRow = to[1]
    try checkSection(toSection, forInsertion: false)
    let count = sections[toSection].items.count - (toSection == fromSection ? 1 : 0)
    guard toRow >= 0 && toRow <= count else {
      throw .itemOutOfRange(to, validRange: 0..<count + 1)
    }
    if fromSection == toSection && fromRow == toRow { return }
    let id = sections[fromSection].items.id(at: fromRow)
    tracker.removingItem(id, section: sections[fromSection].id, row: fromRow)
    let entry = sections[fromSection].items.removeEntry(at: fromRow)
    sections[toSection].items.insert(entry.value, id: entry.id, at: toRow)
    tracker.insertedItem(id, section: sections[toSection].id, row: toRow, moved: true)
  }

  /// Replaces the value of an item, which keeps its id.
  ///
  /// - Parameters:
  ///   - indexPath: The item's index path.
  ///   - item: The new value.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  public mutating func replaceItem(at indexPath: IndexPath, with item: Item)
    throws(Observable2DArrayError)
  {
    let (section, row) = try Self.check(indexPath, in: sections)
    sections[section].items[row] = item
    tracker.replacedItem(
      sections[section].items.id(at: row), section: sections[section].id, row: row)
  }

  // MARK: Sections

  /// Appends a section; it and its items get fresh ids where their id is `0`.
  ///
  /// - Parameter section: The section.
  public mutating func appendSection(_ section: Section) {
    sections.append(identified(section))
  }

  /// Inserts a section; it and its items get fresh ids where their id is `0`.
  ///
  /// - Parameters:
  ///   - section: The section.
  ///   - index: Where it will be; it may be the section count.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public mutating func insert(section: Section, at index: Int) throws(Observable2DArrayError) {
    try checkSection(index, forInsertion: true)
    sections.insert(identified(section), at: index)
  }

  /// Removes a section with its items.
  ///
  /// - Parameter index: The section's index.
  /// - Returns: The removed section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  @discardableResult
  public mutating func removeSection(at index: Int) throws(Observable2DArrayError) -> Section {
    try checkSection(index, forInsertion: false)
    let removed = sections.remove(at: index)
    tracker.removedSection(removed.id)
    return removed
  }

  /// Moves a section with its items.
  ///
  /// - Parameters:
  ///   - from: The section's index now.
  ///   - to: Its index after the move.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public mutating func moveSection(from: Int, to: Int) throws(Observable2DArrayError) {
    try checkSection(from, forInsertion: false)
    try checkSection(to, forInsertion: false)
    if from == to { return }
    let moved = sections.remove(at: from)
    sections.insert(moved, at: to)
  }

  /// Replaces the metadata of a section (its header and footer, say).
  ///
  /// - Parameters:
  ///   - metadata: The new metadata.
  ///   - section: The section's index.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public mutating func setMetadata(_ metadata: Metadata, forSection section: Int)
    throws(Observable2DArrayError)
  {
    try checkSection(section, forInsertion: false)
    sections[section].metadata = metadata
    tracker.replacedMetadata(sections[section].id)
  }

  // MARK: Checks and ids

  /// Checks a section index: `0 ..< count`, or `0 ... count` for an insertion.
  func checkSection(_ index: Int, forInsertion: Bool) throws(Observable2DArrayError) {
    let valid = 0..<(sections.count + (forInsertion ? 1 : 0))
    guard valid.contains(index) else {
      throw .sectionOutOfRange(section: index, validRange: valid)
    }
  }

  /// Checks a `[section, item]` index path against `sections` and returns its two indexes.
  static func check(
    _ indexPath: IndexPath, in sections: [Section], forInsertion: Bool = false
  ) throws(Observable2DArrayError) -> (section: Int, row: Int) {
    guard indexPath.count == 2 else { throw .malformedIndexPath(indexPath) }
    let section = indexPath[0]
    let row = indexPath[1]
    guard section >= 0 && section < sections.count else {
      throw .sectionOutOfRange(section: section, validRange: 0..<sections.count)
    }
    let valid = 0..<(sections[section].items.count + (forInsertion ? 1 : 0))
    guard valid.contains(row) else { throw .itemOutOfRange(indexPath, validRange: valid) }
    return (section, row)
  }

  mutating func freshID() -> Int64 {
    defer { nextID += 1 }
    return nextID
  }

  /// Keeps an explicit id, making sure fresh ids stay above it; gives `0` a fresh id.
  mutating func identify(_ id: Int64) -> Int64 {
    if id == 0 { return freshID() }
    if id >= nextID { nextID = id + 1 }
    return id
  }

  /// The section with ids for itself and its items.
  mutating func identified(_ section: Section) -> Section {
    var section = section
    section.id = identify(section.id)
    var needsIDs = false
    for id in section.items.ids {
      if id == 0 {
        needsIDs = true
      } else if id >= nextID {
        nextID = id + 1
      }
    }
    if needsIDs {
      var items = ItemList<Item>()
      items.reserveCapacity(section.items.count)
      for entry in section.items.entries { items.append(entry.value, id: identify(entry.id)) }
      section.items = items
    }
    return section
  }

  /// Adds initial sections, giving ids where they are `0`, without recording changes.
  mutating func adopt(_ newSections: [Section]) {
    for section in newSections { sections.append(identified(section)) }
    tracker = ChangeTracker(old: sections, keepingOldState: false)
  }
}

// MARK: Primitives for derived arrays

extension Observable2DArrayEditor {
  /// Removes the item at `row` of `section`, recording it; the indexes must be valid.
  @usableFromInline
  @discardableResult
  package mutating func removeEntry(section: Int, row: Int) -> ItemList<Item>.Entry {
    tracker.removingItem(
      sections[section].items.id(at: row), section: sections[section].id, row: row)
    return sections[section].items.removeEntry(at: row)
  }

  /// Inserts an item with its own id at `row` of `section` (`0 ... count`), recording it.
  ///
  /// `moved: false` says that the batch removed it (``removeEntry(section:row:)``) from
  /// this very place, among the same neighbours, so that it is not reported as moved; with
  /// `true` an item the batch removed is reported as moved, and one new to it as inserted.
  @usableFromInline
  package mutating func insertEntry(
    _ value: Item, id: Int64, section: Int, row: Int, moved: Bool
  ) {
    sections[section].items.insert(value, id: id, at: row)
    tracker.insertedItem(id, section: sections[section].id, row: row, moved: moved)
  }

  /// Sets the value of the item at `row` of `section`, recording it as changed.
  @usableFromInline
  package mutating func setValue(_ value: Item, section: Int, row: Int) {
    sections[section].items[row] = value
    tracker.replacedItem(
      sections[section].items.id(at: row), section: sections[section].id, row: row)
  }

  /// The changeset of the mutations made so far.
  @usableFromInline
  package var changeset: Changeset<Metadata, Item> {
    tracker.changeset(to: sections)
  }

  /// Starts an editor of `sections` for a derived array: single changes are made in place;
  /// the old state is kept only when `keepingOldState`.
  @usableFromInline
  package static func editing(_ sections: [Section], keepingOldState: Bool) -> Self {
    Self(sections: sections, nextID: 1, keepingOldState: keepingOldState)
  }
}
