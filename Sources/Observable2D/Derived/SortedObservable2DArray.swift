public import FoundationEssentials

/// An array of another array's items sorted by a comparator, which can change, following
/// every change of its source with changesets of its own: Bond's sorted collection, for
/// sectioned lists.
///
/// The sort is stable (items that compare equal keep their source order) and it keeps the
/// source's ids; an update that changes where an item sorts is a move. Make one with
/// ``Observable2DArray/sortedItems(by:)``, which sorts within each section (the sections
/// are the source's), or ``Observable2DArray/sortedItems(inOneSection:by:)``, which sorts
/// all items into one section:
///
/// ```swift
/// let byName = cities.sortedItems { $0.name < $1.name }
/// byName.setComparator { $0.population > $1.population }
/// ```
///
/// **Cost.** A change of *k* source rows costs O(*k* log *n*) comparisons (an item's place
/// is found by binary search; ties are broken by the source order, which an index keeps);
/// a change of comparator sorts again, O(*n* log *n*), and emits the moves.
///
/// **Threading.** As ``FilteredObservable2DArray``: events are delivered as part of the
/// source's delivery, the comparator runs there, one call at a time, and
/// ``setComparator(_:)`` takes effect in order with the source's events.
public final class SortedObservable2DArray<Metadata, Item>: Observable2DArray<Metadata, Item> {
  /// The link that keeps the array sorted, which is all this array owns.
  @usableFromInline
  let link: AnyObject
  @usableFromInline
  let changeComparator: (@escaping (Item, Item) -> Bool) -> Void

  @inlinable
  init<D: SortingDerivation>(source: Observable2DArray<D.SourceMetadata, Item>, derivation: D)
  where D.Metadata == Metadata, D.Item == Item, D.SourceItem == Item {
    let link = DerivationLink(source: source, derivation: derivation)
    self.link = link
    changeComparator = { [unowned link] comparator in
      link.change { $0.areInIncreasingOrder = comparator }
    }
    super.init(snapshot: [])
    link.start(into: self)
  }

  /// Replaces the comparator; one event moves the items that sort differently.
  ///
  /// - Parameter areInIncreasingOrder: Whether the first item sorts before the second
  ///   (a strict weak order, like `<`).
  /// - Complexity: O(*n* log *n*) for the *n* items of the source.
  public func setComparator(_ areInIncreasingOrder: @escaping (Item, Item) -> Bool) {
    changeComparator(areInIncreasingOrder)
  }
}

// Everything mutable is behind the base class's lock or the link's.
extension SortedObservable2DArray: @unchecked Sendable where Metadata: Sendable, Item: Sendable {}

extension Observable2DArray {
  /// An array of this one's sections with their items sorted by `areInIncreasingOrder`,
  /// stably, following every change of this array (see ``SortedObservable2DArray``).
  ///
  /// - Parameter areInIncreasingOrder: Whether the first item sorts before the second (a
  ///   strict weak order, like `<`); called on the thread that delivers this array's events.
  /// - Returns: The sorted array; it keeps this one alive.
  /// - Complexity: O(*n* log *n*) to start; then O(*k* log *n*) for a change of *k* rows.
  public func sortedItems(by areInIncreasingOrder: @escaping (Item, Item) -> Bool)
    -> SortedObservable2DArray<Metadata, Item>
  {
    SortedObservable2DArray(
      source: self, derivation: SectionSortDerivation<Metadata, Item>(areInIncreasingOrder))
  }

  /// An array of one section, with `metadata`, that holds all of this array's items sorted
  /// by `areInIncreasingOrder`, stably (equal items in the order of this array's sections
  /// and rows), following every change of this array (see ``SortedObservable2DArray``).
  ///
  /// - Parameters:
  ///   - metadata: The metadata of the one section, whose id is 1.
  ///   - areInIncreasingOrder: Whether the first item sorts before the second (a strict
  ///     weak order, like `<`); called on the thread that delivers this array's events.
  /// - Returns: The sorted array; it keeps this one alive.
  /// - Complexity: O(*n* log *n*) to start; then O(*k* log *n*) for a change of *k* rows (a
  ///   moved or deleted section counts its items).
  public func sortedItems<SortedMetadata>(
    inOneSection metadata: SortedMetadata,
    by areInIncreasingOrder: @escaping (Item, Item) -> Bool
  ) -> SortedObservable2DArray<SortedMetadata, Item> {
    SortedObservable2DArray(
      source: self,
      derivation: OneSectionSortDerivation<Metadata, Item, SortedMetadata>(
        metadata: metadata, areInIncreasingOrder))
  }
}

/// A derivation that sorts by a comparator the array can replace.
@usableFromInline
protocol SortingDerivation: Derivation {
  var areInIncreasingOrder: (Item, Item) -> Bool { get set }
}

extension SortingDerivation {
  /// The entries sorted stably: by the comparator, equal ones in their given order.
  @inlinable
  func sortedStably(_ entries: [ItemList<Item>.Entry]) -> ItemList<Item> {
    var order = Array(entries.indices)
    order.sort { left, right in
      if areInIncreasingOrder(entries[left].value, entries[right].value) { return true }
      if areInIncreasingOrder(entries[right].value, entries[left].value) { return false }
      return left < right
    }
    return ItemList(entries: order.lazy.map { entries[$0] })
  }

  /// The row at which `value`, at `rank` in the source order, belongs in `items` (without
  /// row `skipped`, the item's own), sorted as this derivation sorts; `rankOf` gives the
  /// source rank of an item there.
  @inlinable
  func row(
    for value: Item, rank: Int, in items: ItemList<Item>, skipping skipped: Int? = nil,
    rankOf: (Int64) -> Int
  ) -> Int {
    items.firstRow(skipping: skipped) { other in
      if areInIncreasingOrder(value, other.value) { return true }
      if areInIncreasingOrder(other.value, value) { return false }
      return rank < rankOf(other.id)
    }
  }
}

/// The rule of ``Observable2DArray/sortedItems(by:)``: per section, the source order (for
/// ties) and the sorted order, each an ``IDSequence``.
@usableFromInline
struct SectionSortDerivation<Metadata, Item>: SortingDerivation, StepDerivation {
  @usableFromInline
  typealias SourceMetadata = Metadata
  @usableFromInline
  typealias SourceItem = Item
  @usableFromInline
  typealias Section = Observable2DArraySection<Metadata, Item>
  @usableFromInline
  typealias SourceSection = Section
  @usableFromInline
  typealias SourceChangeset = Changeset<Metadata, Item>

  @usableFromInline
  var areInIncreasingOrder: (Item, Item) -> Bool
  @usableFromInline
  var sourceOrder: [IDSequence] = []
  @usableFromInline
  var sortedOrder: [IDSequence] = []

  @inlinable
  init(_ areInIncreasingOrder: @escaping (Item, Item) -> Bool) {
    self.areInIncreasingOrder = areInIncreasingOrder
  }

  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section] {
    sourceOrder = []
    sortedOrder = []
    var sections: [Section] = []
    sections.reserveCapacity(source.count)
    for section in source { sections.append(derived(section)) }
    return sections
  }

  /// One section sorted, its indexes appended.
  @inlinable
  mutating func derived(_ section: SourceSection) -> Section {
    let items = sortedStably(Array(section.items.entries))
    sourceOrder.append(IDSequence(section.items.ids))
    sortedOrder.append(IDSequence(items.ids))
    return Section(id: section.id, metadata: section.metadata, items: items)
  }

  /// Puts item `id` (removed from the editor and the sorted order before, from `row` of
  /// `section` when `previous` is given) in its place in `section`.
  @inlinable
  mutating func place(
    _ id: Int64, value: Item, section: Int, editor: inout Observable2DArrayEditor<Metadata, Item>,
    previous: (section: Int, row: Int, value: Item)?
  ) {
    let order = sourceOrder[section]
    let row = row(
      for: value, rank: order.position(of: id) ?? 0, in: editor.sections[section].items,
      rankOf: { order.position(of: $0) ?? Int.max })
    sortedOrder[section].insert(id, at: row)
    editor.put(
      value, id: id, section: section, row: row, previous: previous?.value,
      stays: previous?.section == section && previous?.row == row)
  }

  /// Takes item `id` out of `section` of the editor and the sorted order.
  @inlinable
  mutating func takeOut(
    _ id: Int64, section: Int, editor: inout Observable2DArrayEditor<Metadata, Item>
  ) -> (section: Int, row: Int, value: Item) {
    let row = sortedOrder[section].remove(id) ?? 0
    return (section, row, editor.removeEntry(section: section, row: row).value)
  }

  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Metadata, Item>?
  {
    switch step {
    case .insertItem(let at, let id, let value):
      sourceOrder[at[0]].insert(id, at: at[1])
      let order = sourceOrder[at[0]]
      let row = row(
        for: value, rank: at[1], in: sections[at[0]].items,
        rankOf: { order.position(of: $0) ?? Int.max })
      sortedOrder[at[0]].insert(id, at: row)
      return Changeset(insertedItems: [.init(at: [at[0], row], id: id, value: value)])
    case .deleteItem(let at, let id):
      sourceOrder[at[0]].remove(at: at[1])
      let row = sortedOrder[at[0]].remove(id) ?? 0
      return Changeset(deletedItems: [.init(at: [at[0], row], id: id)])
    case .updateItem(let at, let id, let value):
      return moved(id, value: value, from: at[0], to: at[0], rank: at[1], in: sections)
    case .moveItem(let from, let to, let id, let value):
      sourceOrder[from[0]].remove(at: from[1])
      sourceOrder[to[0]].insert(id, at: to[1])
      return moved(id, value: value, from: from[0], to: to[0], rank: to[1], in: sections)
    case .updateSection(let at, let id, let metadata):
      return Changeset(updatedSections: [.init(index: at, id: id, metadata: metadata)])
    case .deleteSection, .insertSection, .moveSection:
      return nil
    }
  }

  /// The change of item `id`, now `value` at `rank` of source section `to`, from where it
  /// sorts in section `from`: an update where it stays, else a move.
  @inlinable
  mutating func moved(
    _ id: Int64, value: Item, from: Int, to: Int, rank: Int, in sections: [Section]
  ) -> Changeset<Metadata, Item> {
    let oldRow = sortedOrder[from].remove(id) ?? 0
    let order = sourceOrder[to]
    let row = row(
      for: value, rank: rank, in: sections[to].items, skipping: from == to ? oldRow : nil,
      rankOf: { order.position(of: $0) ?? Int.max })
    sortedOrder[to].insert(id, at: row)
    guard from != to || row != oldRow else {
      if dynamicallyEqual(sections[from].items[oldRow], value) { return Changeset() }
      return Changeset(updatedItems: [.init(at: [from, oldRow], id: id, value: value)])
    }
    return Changeset(
      movedItems: [.init(from: [from, oldRow], to: [to, row], id: id, value: value)])
  }

  @inlinable
  mutating func apply(
    _ step: SourceChangeset.Step, to editor: inout Observable2DArrayEditor<Metadata, Item>
  ) throws(Observable2DArrayError) {
    switch step {
    case .updateSection(let at, _, let metadata):
      try editor.setMetadata(metadata, forSection: at)
    case .deleteSection(let at, _):
      try editor.removeSection(at: at)
      sourceOrder.remove(at: at)
      sortedOrder.remove(at: at)
    case .insertSection(let at, let section):
      var single = Self(areInIncreasingOrder)
      try editor.insert(section: single.derived(section), at: at)
      sourceOrder.insert(single.sourceOrder[0], at: at)
      sortedOrder.insert(single.sortedOrder[0], at: at)
    case .moveSection(let from, let to, _, let metadata):
      try editor.moveSection(from: from, to: to)
      sourceOrder.insert(sourceOrder.remove(at: from), at: to)
      sortedOrder.insert(sortedOrder.remove(at: from), at: to)
      if !dynamicallyEqual(editor.sections[to].metadata, metadata) {
        try editor.setMetadata(metadata, forSection: to)
      }
    case .deleteItem(let at, let id):
      sourceOrder[at[0]].remove(at: at[1])
      _ = takeOut(id, section: at[0], editor: &editor)
    case .insertItem(let at, let id, let value):
      sourceOrder[at[0]].insert(id, at: at[1])
      place(id, value: value, section: at[0], editor: &editor, previous: nil)
    case .updateItem(let at, let id, let value):
      let previous = takeOut(id, section: at[0], editor: &editor)
      place(id, value: value, section: at[0], editor: &editor, previous: previous)
    case .moveItem(let from, let to, let id, let value):
      sourceOrder[from[0]].remove(at: from[1])
      sourceOrder[to[0]].insert(id, at: to[1])
      let previous = takeOut(id, section: from[0], editor: &editor)
      place(id, value: value, section: to[0], editor: &editor, previous: previous)
    }
  }
}

/// The rule of ``Observable2DArray/sortedItems(inOneSection:by:)``: the source's items in
/// one order across its sections (for ties) and the sorted order.
@usableFromInline
struct OneSectionSortDerivation<SourceMetadata, Item, Metadata>: SortingDerivation,
  StepDerivation
{
  @usableFromInline
  typealias SourceItem = Item
  @usableFromInline
  typealias Section = Observable2DArraySection<Metadata, Item>
  @usableFromInline
  typealias SourceSection = Observable2DArraySection<SourceMetadata, Item>
  @usableFromInline
  typealias SourceChangeset = Changeset<SourceMetadata, Item>

  @usableFromInline
  let metadata: Metadata
  @usableFromInline
  var areInIncreasingOrder: (Item, Item) -> Bool
  @usableFromInline
  var sourceOrder = FlatOrder()
  @usableFromInline
  var sortedOrder = IDSequence()

  @inlinable
  init(metadata: Metadata, _ areInIncreasingOrder: @escaping (Item, Item) -> Bool) {
    self.metadata = metadata
    self.areInIncreasingOrder = areInIncreasingOrder
  }

  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section] {
    sourceOrder = FlatOrder(source)
    let items = sortedStably(source.flatMap { Array($0.items.entries) })
    sortedOrder = IDSequence(items.ids)
    return [Section(id: 1, metadata: metadata, items: items)]
  }

  @inlinable
  func work(for changeset: SourceChangeset) -> Int {
    sourceOrder.work(for: changeset)
  }

  @inlinable
  func changedSectionIDs(in changeset: SourceChangeset) -> Set<Int64> {
    []
  }

  @inlinable
  mutating func place(
    _ id: Int64, value: Item, editor: inout Observable2DArrayEditor<Metadata, Item>,
    previous: (row: Int, value: Item)?, forceMove: Bool = false
  ) {
    let order = sourceOrder
    let row = row(
      for: value, rank: order.position(of: id), in: editor.sections[0].items,
      rankOf: { order.position(of: $0) })
    sortedOrder.insert(id, at: row)
    editor.put(
      value, id: id, section: 0, row: row, previous: previous?.value,
      stays: previous?.row == row && !forceMove)
  }

  @inlinable
  mutating func takeOut(_ id: Int64, editor: inout Observable2DArrayEditor<Metadata, Item>)
    -> (row: Int, value: Item)
  {
    let row = sortedOrder.remove(id) ?? 0
    return (row, editor.removeEntry(section: 0, row: row).value)
  }

  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Metadata, Item>?
  {
    switch step {
    case .insertItem(let at, let id, let value):
      sourceOrder.insert(id, section: at[0], row: at[1])
      let order = sourceOrder
      let row = row(
        for: value, rank: order.position(of: id), in: sections[0].items,
        rankOf: { order.position(of: $0) })
      sortedOrder.insert(id, at: row)
      return Changeset(insertedItems: [.init(at: [0, row], id: id, value: value)])
    case .deleteItem(let at, let id):
      sourceOrder.remove(section: at[0], row: at[1])
      let row = sortedOrder.remove(id) ?? 0
      return Changeset(deletedItems: [.init(at: [0, row], id: id)])
    case .updateItem(_, let id, let value):
      return moved(id, value: value, in: sections)
    case .moveItem(let from, let to, let id, let value):
      sourceOrder.remove(section: from[0], row: from[1])
      sourceOrder.insert(id, section: to[0], row: to[1])
      return moved(id, value: value, in: sections)
    case .updateSection:
      return Changeset()
    case .deleteSection, .insertSection, .moveSection:
      return nil
    }
  }

  /// The change of item `id`, now `value`, from where it sorts: an update where it stays,
  /// else a move.
  @inlinable
  mutating func moved(_ id: Int64, value: Item, in sections: [Section])
    -> Changeset<Metadata, Item>
  {
    let oldRow = sortedOrder.remove(id) ?? 0
    let order = sourceOrder
    let row = row(
      for: value, rank: order.position(of: id), in: sections[0].items, skipping: oldRow,
      rankOf: { order.position(of: $0) })
    sortedOrder.insert(id, at: row)
    guard row != oldRow else {
      if dynamicallyEqual(sections[0].items[oldRow], value) { return Changeset() }
      return Changeset(updatedItems: [.init(at: [0, oldRow], id: id, value: value)])
    }
    return Changeset(movedItems: [.init(from: [0, oldRow], to: [0, row], id: id, value: value)])
  }

  @inlinable
  mutating func apply(
    _ step: SourceChangeset.Step, to editor: inout Observable2DArrayEditor<Metadata, Item>
  ) throws(Observable2DArrayError) {
    switch step {
    case .updateSection:
      break
    case .deleteSection(let at, _):
      for id in sourceOrder.removeSection(at: at) { _ = takeOut(id, editor: &editor) }
    case .insertSection(let at, let section):
      sourceOrder.insertSection(section.items.ids, at: at)
      for entry in section.items.entries {
        place(entry.id, value: entry.value, editor: &editor, previous: nil)
      }
    case .moveSection(let from, let to, _, _):
      // Ties with other sections' items may now break the other way: the section's items
      // are placed again, and reported as moved.
      let ids = sourceOrder.ids(ofSection: from)
      let taken = ids.map { takeOut($0, editor: &editor) }
      sourceOrder.moveSection(from: from, to: to)
      for (id, previous) in zip(ids, taken) {
        place(id, value: previous.value, editor: &editor, previous: previous, forceMove: true)
      }
    case .deleteItem(let at, let id):
      sourceOrder.remove(section: at[0], row: at[1])
      _ = takeOut(id, editor: &editor)
    case .insertItem(let at, let id, let value):
      sourceOrder.insert(id, section: at[0], row: at[1])
      place(id, value: value, editor: &editor, previous: nil)
    case .updateItem(_, let id, let value):
      let previous = takeOut(id, editor: &editor)
      place(id, value: value, editor: &editor, previous: previous)
    case .moveItem(let from, let to, let id, let value):
      sourceOrder.remove(section: from[0], row: from[1])
      sourceOrder.insert(id, section: to[0], row: to[1])
      let previous = takeOut(id, editor: &editor)
      place(id, value: value, editor: &editor, previous: previous)
    }
  }
}
