public import FoundationEssentials

/// An array of the items of another array that pass a predicate, which can change (a
/// search field's query, say), following every change of its source with changesets of
/// its own: Bond's `filterCollection`, for sectioned lists.
///
/// Its sections are the source's, with the same ids and metadata; each holds the items of
/// its source section that pass the predicate, in the source's order, with the source's
/// ids. Make one with ``Observable2DArray/filterItems(_:)``:
///
/// ```swift
/// let results = cities.filterItems { _ in true }
/// results.bind(to: tableView, using: CityBond())
/// // When the query changes:
/// results.setPredicate { $0.name.localizedCaseInsensitiveContains(query) }
/// ```
///
/// **Cost.** A change of *k* source rows costs O(*k* log *n*) (an item's place among the
/// kept ones is a rank in a bit index per section); a change of predicate costs one pass
/// over the source and emits one changeset of the items that appear and disappear.
///
/// **Threading.** Its events are delivered on the thread that delivers the source's, as
/// part of that delivery: a write to the source returns after the filtered array's
/// subscribers received its event too (see ``Observable2DArray``). The predicate runs
/// there, one call at a time, while this array's state is locked: it must not read this
/// array (the source, or anything else, it may). ``setPredicate(_:)`` takes effect in order with the source's
/// events: before it returns, unless called from inside a delivery, which it then follows.
/// The array keeps its source alive.
public final class FilteredObservable2DArray<Metadata, Item>: Observable2DArray<Metadata, Item> {
  @usableFromInline
  let link: DerivationLink<FilterDerivation<Metadata, Item>>

  @inlinable
  init(source: Observable2DArray<Metadata, Item>, isIncluded: @escaping (Item) -> Bool) {
    link = DerivationLink(source: source, derivation: FilterDerivation(isIncluded: isIncluded))
    super.init(snapshot: [])
    link.start(into: self)
  }

  /// Replaces the predicate; one event adds the items that now pass and removes those
  /// that no longer do (none when the same items pass).
  ///
  /// - Parameter isIncluded: Returns whether an item is kept.
  /// - Complexity: O(*n*) for the *n* items of the source.
  public func setPredicate(_ isIncluded: @escaping (Item) -> Bool) {
    link.change { $0.isIncluded = isIncluded }
  }
}

extension Observable2DArray {
  /// An array of this one's items that pass `isIncluded`, which follows every change of
  /// this array with its own changesets (see ``FilteredObservable2DArray``).
  ///
  /// Named `filterItems` because the array is also an observable of events, whose
  /// `filter` keeps events.
  ///
  /// - Parameter isIncluded: Returns whether an item is kept; called on the thread that
  ///   delivers this array's events.
  /// - Returns: The filtered array; it keeps this one alive.
  /// - Complexity: O(*n*) to start; then O(*k* log *n*) for a change of *k* rows.
  public func filterItems(_ isIncluded: @escaping (Item) -> Bool)
    -> FilteredObservable2DArray<Metadata, Item>
  {
    FilteredObservable2DArray(source: self, isIncluded: isIncluded)
  }
}

// Everything mutable is behind the base class's lock or the link's.
extension FilteredObservable2DArray: @unchecked Sendable
where Metadata: Sendable, Item: Sendable {}

/// The rule of a ``FilteredObservable2DArray``: per section, one bit per source item that
/// says whether it passes; an item's row in the filtered section is the rank of its bit.
@usableFromInline
struct FilterDerivation<Metadata, Item>: StepDerivation {
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
  var isIncluded: (Item) -> Bool
  /// Per section, in order, a bit per source item.
  @usableFromInline
  var passes: [RankedBits] = []

  @inlinable
  init(isIncluded: @escaping (Item) -> Bool) {
    self.isIncluded = isIncluded
  }

  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section] {
    passes = []
    passes.reserveCapacity(source.count)
    return source.map { section in
      var kept = ItemList<Item>()
      var bits: [Bool] = []
      bits.reserveCapacity(section.items.count)
      for entry in section.items.entries {
        let passes = isIncluded(entry.value)
        bits.append(passes)
        if passes { kept.append(entry.value, id: entry.id) }
      }
      passes.append(RankedBits(bits))
      return Section(id: section.id, metadata: section.metadata, items: kept)
    }
  }

  /// The items that appear and disappear, from the bits before and after: no diff.
  @inlinable
  func changeOfRule(from old: [Section], to new: [Section], previous: Self)
    -> Changeset<Metadata, Item>
  {
    var changeset = Changeset<Metadata, Item>()
    for section in passes.indices {
      var oldRow = 0
      var newRow = 0
      let before = previous.passes[section]
      let after = passes[section]
      for (was, now) in zip(before, after) {
        if was && !now {
          changeset.deletedItems.append(
            .init(at: [section, oldRow], id: old[section].items.id(at: oldRow)))
        } else if now && !was {
          let entry = new[section].items.entry(at: newRow)
          changeset.insertedItems.append(
            .init(at: [section, newRow], id: entry.id, value: entry.value))
        }
        if was { oldRow += 1 }
        if now { newRow += 1 }
      }
    }
    return changeset
  }

  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Metadata, Item>?
  {
    switch step {
    case .insertItem(let at, let id, let value):
      let passing = isIncluded(value)
      passes[at[0]].insert(passing, at: at[1])
      guard passing else { return Changeset() }
      return Changeset(
        insertedItems: [.init(at: [at[0], passes[at[0]].rank(at[1])], id: id, value: value)])
    case .deleteItem(let at, let id):
      let rank = passes[at[0]].rank(at[1])
      guard passes[at[0]].remove(at: at[1]) else { return Changeset() }
      return Changeset(deletedItems: [.init(at: [at[0], rank], id: id)])
    case .updateItem(let at, let id, let value):
      let passing = isIncluded(value)
      let rank = passes[at[0]].rank(at[1])
      let path: IndexPath = [at[0], rank]
      switch (passes[at[0]].set(passing, at: at[1]), passing) {
      case (true, true): return Changeset(updatedItems: [.init(at: path, id: id, value: value)])
      case (true, false): return Changeset(deletedItems: [.init(at: path, id: id)])
      case (false, true): return Changeset(insertedItems: [.init(at: path, id: id, value: value)])
      case (false, false): return Changeset()
      }
    case .moveItem(let from, let to, let id, let value):
      let fromRank = passes[from[0]].rank(from[1])
      let passed = passes[from[0]].remove(at: from[1])
      let passing = isIncluded(value)
      passes[to[0]].insert(passing, at: to[1])
      let toRank = passes[to[0]].rank(to[1])
      let old: IndexPath = [from[0], fromRank]
      let new: IndexPath = [to[0], toRank]
      switch (passed, passing) {
      case (true, true) where old == new:
        if dynamicallyEqual(sections[from[0]].items[fromRank], value) { return Changeset() }
        return Changeset(updatedItems: [.init(at: old, id: id, value: value)])
      case (true, true):
        return Changeset(movedItems: [.init(from: old, to: new, id: id, value: value)])
      case (true, false): return Changeset(deletedItems: [.init(at: old, id: id)])
      case (false, true): return Changeset(insertedItems: [.init(at: new, id: id, value: value)])
      case (false, false): return Changeset()
      }
    case .updateSection(let at, let id, let metadata):
      return Changeset(updatedSections: [.init(index: at, id: id, metadata: metadata)])
    case .deleteSection, .insertSection, .moveSection:
      return nil
    }
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
      passes.remove(at: at)
    case .insertSection(let at, let section):
      var derivation = FilterDerivation(isIncluded: isIncluded)
      let derived = derivation.rebuild(from: [section])
      try editor.insert(section: derived[0], at: at)
      passes.insert(derivation.passes[0], at: at)
    case .moveSection(let from, let to, _, let metadata):
      try editor.moveSection(from: from, to: to)
      passes.insert(passes.remove(at: from), at: to)
      if !dynamicallyEqual(editor.sections[to].metadata, metadata) {
        try editor.setMetadata(metadata, forSection: to)
      }
    case .deleteItem(let at, _):
      let (section, row) = (at[0], at[1])
      let rank = passes[section].rank(row)
      if passes[section].remove(at: row) {
        editor.removeEntry(section: section, row: rank)
      }
    case .insertItem(let at, let id, let value):
      let (section, row) = (at[0], at[1])
      let passing = isIncluded(value)
      passes[section].insert(passing, at: row)
      if passing {
        editor.insertEntry(
          value, id: id, section: section, row: passes[section].rank(row), moved: true)
      }
    case .updateItem(let at, let id, let value):
      let (section, row) = (at[0], at[1])
      let passing = isIncluded(value)
      let rank = passes[section].rank(row)
      let passed = passes[section].set(passing, at: row)
      switch (passed, passing) {
      case (true, true): editor.setValue(value, section: section, row: rank)
      case (true, false): editor.removeEntry(section: section, row: rank)
      case (false, true):
        editor.insertEntry(value, id: id, section: section, row: rank, moved: true)
      case (false, false): break
      }
    case .moveItem(let from, let to, let id, let value):
      let fromRank = passes[from[0]].rank(from[1])
      let passed = passes[from[0]].remove(at: from[1])
      var old: Item?
      if passed { old = editor.removeEntry(section: from[0], row: fromRank).value }
      let passing = isIncluded(value)
      passes[to[0]].insert(passing, at: to[1])
      guard passing else { return }
      let toRank = passes[to[0]].rank(to[1])
      let stays = passed && from[0] == to[0] && fromRank == toRank
      editor.insertEntry(value, id: id, section: to[0], row: toRank, moved: !stays)
      if stays, let old, !dynamicallyEqual(old, value) {
        editor.setValue(value, section: to[0], row: toRank)
      }
    }
  }
}
