public import FoundationEssentials

extension Observable2DArray {
  /// An array of this one's items regrouped into sections by a key, following every change
  /// of this array with changesets of its own.
  ///
  /// There is one section per key that some item has, with the key as its metadata, the
  /// sections in increasing order of key; a section appears with the first item of its key
  /// and disappears with the last. Each section holds the items of its key in this array's
  /// order (section by section, row by row), with their ids. A section's id stands for its
  /// key while the section exists (a key whose section disappeared and comes back gets a new
  /// one). An update that changes an item's key moves it to the other section.
  ///
  /// ```swift
  /// let byInitial = contacts.groupedItems { $0.name.prefix(1).uppercased() }
  /// // sections "A", "B", ... each holding the contacts of that initial
  /// ```
  ///
  /// Its events are delivered as part of this array's delivery, and `key` is called there,
  /// one call at a time (see ``FilteredObservable2DArray`` for the threading).
  ///
  /// - Parameter key: An item's group.
  /// - Returns: The grouped array; it keeps this one alive.
  /// - Complexity: O(*n* log *n*) to start; then O(*k* log *n*) for a change of *k* rows (a
  ///   moved or deleted section counts its items).
  public func groupedItems<Key: Comparable & Hashable>(by key: @escaping (Item) -> Key)
    -> Observable2DArray<Key, Item>
  {
    DerivedObservable2DArray(source: self, derivation: GroupDerivation<Metadata, Item, Key>(key))
  }
}

/// A derived array whose rule does not change (mapped, grouped).
@usableFromInline
final class DerivedObservable2DArray<D: Derivation>: Observable2DArray<D.Metadata, D.Item> {
  @usableFromInline
  let link: DerivationLink<D>

  @inlinable
  init(source: Observable2DArray<D.SourceMetadata, D.SourceItem>, derivation: D) {
    link = DerivationLink(source: source, derivation: derivation)
    super.init(snapshot: [])
    link.start(into: self)
  }
}

// Everything mutable is behind the base class's lock or the link's.
extension DerivedObservable2DArray: @unchecked Sendable
where D.Metadata: Sendable, D.Item: Sendable {}

/// The rule of ``Observable2DArray/groupedItems(by:)``: the source's items in one order
/// across its sections, each item's key, the keys in order, and each group's members in
/// order.
@usableFromInline
struct GroupDerivation<SourceMetadata, Item, Key: Comparable & Hashable>: StepDerivation {
  @usableFromInline
  typealias SourceItem = Item
  @usableFromInline
  typealias Metadata = Key
  @usableFromInline
  typealias Section = Observable2DArraySection<Key, Item>
  @usableFromInline
  typealias SourceSection = Observable2DArraySection<SourceMetadata, Item>
  @usableFromInline
  typealias SourceChangeset = Changeset<SourceMetadata, Item>

  @usableFromInline
  struct Group {
    @usableFromInline
    var id: Int64
    @usableFromInline
    var members: IDSequence

    @inlinable
    init(id: Int64, members: IDSequence) {
      self.id = id
      self.members = members
    }
  }

  @usableFromInline
  let key: (Item) -> Key
  @usableFromInline
  var sourceOrder = FlatOrder()
  @usableFromInline
  var keyOf: [Int64: Key] = [:]
  /// The keys of the groups (the derived sections), in increasing order.
  @usableFromInline
  var keys: [Key] = []
  @usableFromInline
  var groups: [Key: Group] = [:]
  @usableFromInline
  var nextGroupID: Int64 = 1

  @inlinable
  init(_ key: @escaping (Item) -> Key) {
    self.key = key
  }

  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section] {
    sourceOrder = FlatOrder(source)
    keyOf = [:]
    var members: [Key: [ItemList<Item>.Entry]] = [:]
    for section in source {
      for entry in section.items.entries {
        let key = key(entry.value)
        keyOf[entry.id] = key
        members[key, default: []].append(entry)
      }
    }
    keys = members.keys.sorted()
    var oldGroups = groups
    groups = [:]
    return keys.map { key in
      let entries = members[key] ?? []
      // A group that exists before and after a rebuild keeps its id.
      let id = oldGroups.removeValue(forKey: key)?.id ?? newGroupID()
      groups[key] = Group(id: id, members: IDSequence(entries.map(\.id)))
      return Section(id: id, metadata: key, items: ItemList(entries: entries))
    }
  }

  @inlinable
  mutating func newGroupID() -> Int64 {
    defer { nextGroupID += 1 }
    return nextGroupID
  }

  @inlinable
  func work(for changeset: SourceChangeset) -> Int {
    sourceOrder.work(for: changeset)
  }

  @inlinable
  func changedSectionIDs(in changeset: SourceChangeset) -> Set<Int64> {
    []
  }

  /// The index of `key`'s section, or where it would go.
  @inlinable
  func index(of key: Key) -> Int {
    keys.sortedIndex(of: key)
  }

  /// Puts item `id` in its group, at its place in the source order; makes the group's
  /// section when it has none. `previous` is where it was taken out of, if anywhere.
  @inlinable
  mutating func place(
    _ id: Int64, value: Item, editor: inout Observable2DArrayEditor<Key, Item>,
    previous: (key: Key, row: Int, value: Item)?, forceMove: Bool = false
  ) throws(Observable2DArrayError) {
    let key = key(value)
    keyOf[id] = key
    let section = index(of: key)
    if groups[key] == nil {
      let group = Group(id: newGroupID(), members: IDSequence())
      groups[key] = group
      keys.insert(key, at: section)
      try editor.insert(section: Section(id: group.id, metadata: key, items: []), at: section)
    }
    let row = row(of: id, in: editor.sections[section].items)
    groups[key]?.members.insert(id, at: row)
    editor.put(
      value, id: id, section: section, row: row, previous: previous?.value,
      stays: previous?.key == key && previous?.row == row && !forceMove)
  }

  /// Takes item `id` out of its group; the group's section stays until the steps end.
  @inlinable
  mutating func takeOut(_ id: Int64, editor: inout Observable2DArrayEditor<Key, Item>)
    -> (key: Key, row: Int, value: Item)?
  {
    guard let key = keyOf.removeValue(forKey: id), let row = groups[key]?.members.remove(id)
    else { return nil }
    return (key, row, editor.removeEntry(section: index(of: key), row: row).value)
  }

  /// One item's change when no group appears or disappears (else `nil`, the general path).
  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Key, Item>?
  {
    switch step {
    case .insertItem(let at, let id, let value):
      let key = key(value)
      guard groups[key] != nil else { return nil }
      sourceOrder.insert(id, section: at[0], row: at[1])
      keyOf[id] = key
      let section = index(of: key)
      let row = row(of: id, in: sections[section].items)
      groups[key]?.members.insert(id, at: row)
      return Changeset(insertedItems: [.init(at: [section, row], id: id, value: value)])
    case .deleteItem(let at, let id):
      guard let key = keyOf[id], let group = groups[key], group.members.count > 1 else {
        return nil
      }
      sourceOrder.remove(section: at[0], row: at[1])
      keyOf[id] = nil
      let row = groups[key]?.members.remove(id) ?? 0
      return Changeset(deletedItems: [.init(at: [index(of: key), row], id: id)])
    case .updateItem(_, let id, let value):
      return moved(id, value: value, in: sections, reorder: nil)
    case .moveItem(let from, let to, let id, let value):
      return moved(id, value: value, in: sections, reorder: (from, to))
    case .updateSection:
      return Changeset()
    case .deleteSection, .insertSection, .moveSection:
      return nil
    }
  }

  /// The change of item `id`, now `value` (and moved in the source from `reorder.from` to
  /// `reorder.to`), when both its groups exist before and after; else `nil`.
  @inlinable
  mutating func moved(
    _ id: Int64, value: Item, in sections: [Section],
    reorder: (from: IndexPath, to: IndexPath)?
  ) -> Changeset<Key, Item>? {
    let newKey = key(value)
    guard let oldKey = keyOf[id], let oldGroup = groups[oldKey], groups[newKey] != nil,
      oldKey == newKey || oldGroup.members.count > 1
    else { return nil }
    if let (from, to) = reorder {
      sourceOrder.remove(section: from[0], row: from[1])
      sourceOrder.insert(id, section: to[0], row: to[1])
    }
    keyOf[id] = newKey
    let oldSection = index(of: oldKey)
    let oldRow = groups[oldKey]?.members.remove(id) ?? 0
    let section = index(of: newKey)
    let row = row(
      of: id, in: sections[section].items, skipping: oldKey == newKey ? oldRow : nil)
    groups[newKey]?.members.insert(id, at: row)
    guard oldSection != section || oldRow != row else {
      if dynamicallyEqual(sections[section].items[row], value) { return Changeset() }
      return Changeset(updatedItems: [.init(at: [section, row], id: id, value: value)])
    }
    return Changeset(
      movedItems: [
        .init(from: [oldSection, oldRow], to: [section, row], id: id, value: value)
      ])
  }

  /// Where item `id` belongs among `items` (without row `skipped`), by the source order.
  @inlinable
  func row(of id: Int64, in items: ItemList<Item>, skipping skipped: Int? = nil) -> Int {
    let order = sourceOrder
    let rank = order.position(of: id)
    return items.firstRow(skipping: skipped) { rank < order.position(of: $0.id) }
  }

  @inlinable
  mutating func apply(
    _ step: SourceChangeset.Step, to editor: inout Observable2DArrayEditor<Key, Item>
  ) throws(Observable2DArrayError) {
    switch step {
    case .updateSection:
      break
    case .deleteSection(let at, _):
      for id in sourceOrder.removeSection(at: at) { _ = takeOut(id, editor: &editor) }
    case .insertSection(let at, let section):
      sourceOrder.insertSection(section.items.ids, at: at)
      for entry in section.items.entries {
        try place(entry.id, value: entry.value, editor: &editor, previous: nil)
      }
    case .moveSection(let from, let to, _, _):
      // The section's items may now come before or after other sections' items of their
      // groups: they are placed again, and reported as moved.
      let ids = sourceOrder.ids(ofSection: from)
      let taken = ids.map { takeOut($0, editor: &editor) }
      sourceOrder.moveSection(from: from, to: to)
      for (id, previous) in zip(ids, taken) {
        guard let previous else { continue }
        try place(id, value: previous.value, editor: &editor, previous: previous, forceMove: true)
      }
    case .deleteItem(let at, let id):
      sourceOrder.remove(section: at[0], row: at[1])
      _ = takeOut(id, editor: &editor)
    case .insertItem(let at, let id, let value):
      sourceOrder.insert(id, section: at[0], row: at[1])
      try place(id, value: value, editor: &editor, previous: nil)
    case .updateItem(_, let id, let value):
      let previous = takeOut(id, editor: &editor)
      try place(id, value: value, editor: &editor, previous: previous)
    case .moveItem(let from, let to, let id, let value):
      sourceOrder.remove(section: from[0], row: from[1])
      sourceOrder.insert(id, section: to[0], row: to[1])
      let previous = takeOut(id, editor: &editor)
      try place(id, value: value, editor: &editor, previous: previous)
    }
  }

  /// Removes the sections of the groups the steps emptied.
  @inlinable
  mutating func finishSteps(_ editor: inout Observable2DArrayEditor<Key, Item>)
    throws(Observable2DArrayError)
  {
    var index = keys.count - 1
    while index >= 0 {
      let key = keys[index]
      if groups[key]?.members.count == 0 {
        keys.remove(at: index)
        groups[key] = nil
        try editor.removeSection(at: index)
      }
      index -= 1
    }
  }
}
