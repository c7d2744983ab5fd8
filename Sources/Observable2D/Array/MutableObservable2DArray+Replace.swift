import FoundationEssentials
import ReactiveCore

// Applying changesets, and replacing the whole state by a diff.
extension MutableObservable2DArray {

  /// Ends the events after those already queued: subscribers receive `completed`, or
  /// `failed(error)`. Later mutations still change the array but emit nothing.
  ///
  /// A store ends the arrays it keeps in sync this way when their list is deleted.
  /// - Parameter error: The failure to report, or `nil` to complete.
  package func finish(failing error: (any Error)? = nil) {
    finishWithoutDelivering(failing: error)
    deliverPending()
  }

  /// ``finish(failing:)`` without delivering: the end is queued for the next
  /// ``deliverPending()``.
  /// - Parameter error: The failure to report, or `nil` to complete.
  package func finishWithoutDelivering(failing error: (any Error)? = nil) {
    state.withLock { $0.enqueue(.finish(error)) }
  }

  /// Applies a changeset, such as one a store built from its change log, and emits it.
  ///
  /// The changeset is validated against the current state first; on error nothing changes.
  /// Inserted sections and items with id `0` get fresh ids (the emitted changeset carries
  /// them).
  ///
  /// - Parameter changeset: The change, in the index spaces of the current state and of the
  ///   state after it.
  /// - Throws: ``Observable2DArrayError/invalidChangeset(rule:message:)`` when it does not fit
  ///   the current state.
  /// - Complexity: O(*s* + *k* (log *n* + 1024)) for *s* sections and *k* entries, independent of
  ///   the number *n* of items; in place unless a snapshot of the previous state is held.
  public func apply(_ changeset: Changeset<Metadata, Item>) throws(Observable2DArrayError) {
    try applyWithoutDelivering(changeset)
    deliverPending()
  }

  /// Sets the version the next events carry (``Observable2DArrayEvent/version``): a store
  /// calls it with the position its changes bring the array to, before applying them.
  @inlinable
  package func setVersion(_ version: Int64) {
    state.withLock { state in
      state.previousVersion = state.version
      state.version = version
    }
  }

  /// ``apply(_:)`` without delivering the event: it is queued, in order, for the next
  /// ``deliverPending()`` (on this thread or another). A store applies changesets
  /// while holding its own lock this way, then delivers after releasing it, so that
  /// no observer runs while the store's lock is held.
  ///
  /// Inlinable, so that a store applying its changesets runs it compiled for its concrete
  /// `Metadata` and `Item`.
  @inlinable
  package func applyWithoutDelivering(_ changeset: Changeset<Metadata, Item>)
    throws(Observable2DArrayError)
  {
    try writer.withLock { _ throws(Observable2DArrayError) in
      try state.withLock { state throws(Observable2DArrayError) in
        try changeset.validate(against: state.sections)
        // Only sections and items without an id yet need the editor's fresh ids.
        let needsIDs =
          changeset.insertedSections.contains { section in
            section.id == 0 || section.items.ids.contains(0)
          } || changeset.insertedItems.contains { $0.id == 0 }
        var identified = changeset
        if needsIDs {
          Self.assignFreshIDs(to: &identified, nextID: &state.nextID)
        } else {
          // Fresh ids made later must stay above the explicit ones.
          var highest = state.nextID - 1
          for section in changeset.insertedSections {
            highest = max(highest, section.id, section.items.ids.max() ?? 0)
          }
          for item in changeset.insertedItems { highest = max(highest, item.id) }
          state.nextID = highest + 1
        }
        var sections = state.sections
        state.sections = []
        identified.applyWithoutValidation(to: &sections)
        state.sections = sections
        Self.enqueue(identified, in: &state)
      }
    }
  }

  /// Gives the sections and items `changeset` inserts with id `0` fresh ids, from `nextID` on.
  @usableFromInline
  static func assignFreshIDs(to changeset: inout Changeset<Metadata, Item>, nextID: inout Int64) {
    var editor = Observable2DArrayEditor<Metadata, Item>(sections: [], nextID: nextID)
    for index in changeset.insertedSections.indices {
      let inserted = changeset.insertedSections[index]
      let section = editor.identified(inserted.section)
      changeset.insertedSections[index].id = section.id
      changeset.insertedSections[index].items = section.items
    }
    for index in changeset.insertedItems.indices {
      changeset.insertedItems[index].id = editor.identify(changeset.insertedItems[index].id)
    }
    nextID = editor.nextID
  }

  /// Replaces the whole state, emitting either the changeset of a diff or, without
  /// `performDiff`, one that deletes every section and inserts the new ones.
  ///
  /// With `performDiff`, sections and items are matched by their **ids**: a copy of
  /// ``sections`` edited by the program keeps them, so replacing with it gives the minimal
  /// changeset (see ``Changeset/diffByID(from:to:isEqual:metadataIsEqual:)``). Sections and
  /// items **without ids** (id `0`, as `Observable2DArraySection(metadata:items:)` makes
  /// them, the way Bond users call it) are matched **by value**, by the rule of
  /// `import --replace`: a section with the first section of equal metadata that no id given
  /// claims, an item with the first unclaimed item of equal value in its paired section, one
  /// to one in order; so `[1, 2, 3]` replaced with `[1, 2, 3, 4]` is one insertion. What
  /// pairs with nothing is new and gets a fresh id. Values are compared with `==` when they
  /// are `Equatable` at run time (and paired through a hash table when `Hashable`); values
  /// that are not never pair without ids, and matched ones are reported as updated. To
  /// match by a key of your own, use ``replace(with:sectionKey:itemKey:isEqual:)``.
  ///
  /// - Parameters:
  ///   - newSections: The new state.
  ///   - performDiff: Whether to compute a minimal changeset.
  /// - Complexity: O(*n*) plus the cost of applying the changeset.
  public func replace(with newSections: [Section], performDiff: Bool = true) {
    replace(with: newSections, performDiff: performDiff) { old, new in
      guard let old = old as? any Equatable else { return false }
      return isEqual(old, new)
    }
  }

  /// Replaces the whole state, matching sections and items by their ids when `performDiff` is
  /// true, and comparing values with `==`.
  ///
  /// See ``replace(with:performDiff:)-(_,_)``.
  ///
  /// - Parameters:
  ///   - newSections: The new state.
  ///   - performDiff: Whether to compute a minimal changeset.
  /// - Complexity: O(*n*) plus the cost of applying the changeset.
  public func replace(with newSections: [Section], performDiff: Bool = true)
  where Item: Equatable {
    replace(with: newSections, performDiff: performDiff, isEqual: ==)
  }

  private func replace(
    with newSections: [Section], performDiff: Bool, isEqual: @escaping (Item, Item) -> Bool
  ) {
    replace { old, ids in
      guard performDiff else {
        return (Self.reloadChangeset(from: old, to: newSections, ids), nil)
      }
      let claimed = Self.claimingByValue(old: old, new: newSections, isEqual: isEqual)
      let changeset = Differ(
        old: old, new: claimed, pairs: SectionPairs(old: old, new: claimed, pairing: .ids),
        symbols: nil, isEqual: isEqual,
        metadataIsEqual: Changeset<Metadata, Item>.dynamicMetadataEquality,
        assignID: ids.assign
      ).run()
      return (changeset, claimed)
    }
  }

  /// `new` with the ids of the old rows that its rows without ids (id `0`) pair with by
  /// value, the rule of `import --replace`: a section without an id takes the first old
  /// section of equal metadata that no id of `new` claims; an item without an id, in a
  /// section paired with an old one, the first unclaimed old item of that section with an
  /// equal value; one to one, in order. What pairs with nothing stays id `0` (new).
  /// - Complexity: O(*s*² + *n*) for *s* sections and *n* items (items are paired through a
  ///   hash table where they are `Hashable`, else by scanning the section's unclaimed ones).
  static func claimingByValue(
    old: [Section], new: [Section], isEqual: @escaping (Item, Item) -> Bool
  ) -> [Section] {
    guard
      new.contains(where: { section in section.id == 0 || section.items.ids.contains(0) })
    else { return new }
    let oldSectionIDs = Set(old.map(\.id))
    var claimedSections = Set(new.map(\.id).filter { oldSectionIDs.contains($0) })
    var result = new
    for index in result.indices where result[index].id == 0 {
      let metadata = result[index].metadata
      if let match = old.first(where: {
        !claimedSections.contains($0.id)
          && Changeset<Metadata, Item>.dynamicMetadataEquality($0.metadata, metadata)
      }) {
        result[index].id = match.id
        claimedSections.insert(match.id)
      }
    }
    var claimedItems = Set<Int64>()
    for section in new { for id in section.items.ids where id != 0 { claimedItems.insert(id) } }
    let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    for index in result.indices where result[index].items.ids.contains(0) {
      guard let oldSection = oldByID[result[index].id] else { continue }
      let candidates = oldSection.items.entries.filter { !claimedItems.contains($0.id) }
      guard !candidates.isEmpty else { continue }
      var pairing = ValuePairing(candidates, isEqual: isEqual)
      var entries = Array(result[index].items.entries)
      for position in entries.indices where entries[position].id == 0 {
        if let id = pairing.take(entries[position].value) { entries[position].id = id }
      }
      result[index].items = ItemList(entries: entries)
    }
    return result
  }

  /// Replaces the whole state with the changeset of a diff that matches items by a key.
  ///
  /// This is the Bond-style replacement for values without ids: for example
  /// `replace(with: new, itemKey: { $0 })` for `Hashable` items. See
  /// ``Changeset/diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the matching;
  /// matched sections and items keep their ids, and everything inserted gets a fresh id
  /// (whatever id it carried in `newSections`).
  ///
  /// - Parameters:
  ///   - newSections: The new state.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - itemKey: The identity of an item.
  ///   - isEqual: Whether two values of the same item are equal.
  /// - Complexity: O(*n*) plus the cost of applying the changeset.
  public func replace<Key: Hashable>(
    with newSections: [Section],
    sectionKey: Changeset<Metadata, Item>.SectionKey? = nil,
    itemKey: @escaping (Item) -> Key,
    isEqual: @escaping (Item, Item) -> Bool
  ) {
    replace { old, ids -> (Changeset<Metadata, Item>, [Section]?) in
      let pairs = SectionPairs(
        old: old, new: newSections, pairing: sectionKey.map { .key($0) } ?? .position)
      var oldKeys = [Key]()
      for index in old.indices where pairs.oldToNew[index] >= 0 {
        for value in old[index].items { oldKeys.append(itemKey(value)) }
      }
      var newKeys = [Key]()
      for index in newSections.indices where pairs.newToOld[index] >= 0 {
        for value in newSections[index].items { newKeys.append(itemKey(value)) }
      }
      // Matching is by key, so the ids the new sections carry mean nothing here: whatever is
      // inserted gets a fresh id (keeping them could duplicate a matched section's id).
      let changeset = Differ(
        old: old, new: newSections, pairs: pairs,
        symbols: ItemSymbols(oldKeys: oldKeys, newKeys: newKeys), isEqual: isEqual,
        metadataIsEqual: Changeset<Metadata, Item>.dynamicMetadataEquality,
        assignID: { _ in ids.assign(0) }
      ).run()
      return (changeset, nil)
    }
  }

  /// Replaces the whole state with the changeset of a diff that matches items by a key and
  /// compares values with `==`.
  ///
  /// See ``replace(with:sectionKey:itemKey:isEqual:)``.
  ///
  /// - Parameters:
  ///   - newSections: The new state.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - itemKey: The identity of an item.
  /// - Complexity: O(*n*) plus the cost of applying the changeset.
  public func replace<Key: Hashable>(
    with newSections: [Section],
    sectionKey: Changeset<Metadata, Item>.SectionKey? = nil,
    itemKey: @escaping (Item) -> Key
  ) where Item: Equatable {
    replace(with: newSections, sectionKey: sectionKey, itemKey: itemKey, isEqual: ==)
  }

  /// Computes a changeset from the current state and applies it, with one event.
  ///
  /// The diff runs with only the writer lock held, so that the caller's key and equality
  /// closures may read the array.
  /// Replaces the state by the changeset `makeChangeset` computes. With the sections it
  /// also returns (adopted), the new state is those sections, with the ids the diff gave
  /// their new sections and items, instead of the old state with the changeset applied
  /// entry by entry: the same result (the changeset matched items by id), without moving
  /// every changed entry one at a time.
  private func replace(
    _ makeChangeset: ([Section], IDCounter) -> (Changeset<Metadata, Item>, adopted: [Section]?)
  ) {
    writer.withLock { _ in
      let (old, nextID) = state.withLock { ($0.sections, $0.nextID) }
      let ids = IDCounter(next: nextID)
      let (changeset, adopted) = makeChangeset(old, ids)
      assert((try? changeset.validate(against: old)) != nil, "diff produced \(changeset)")
      var adoptedSections = adopted
      if adoptedSections != nil {
        for inserted in changeset.insertedSections {
          adoptedSections?[inserted.index] = inserted.section
        }
        for inserted in changeset.insertedItems {
          adoptedSections?[inserted.at[0]].items.setEntry(
            (inserted.id, inserted.value), at: inserted.at[1])
        }
      }
      state.withLock { state in
        var sections = state.sections
        state.sections = []
        if let adoptedSections {
          sections = adoptedSections
        } else {
          changeset.applyWithoutValidation(to: &sections)
        }
        state.sections = sections
        state.nextID = ids.next
        Self.enqueue(changeset, in: &state)
      }
    }
    deliverPending()
  }

  /// The changeset that deletes every old section and inserts every new one.
  private static func reloadChangeset(
    from old: [Section], to new: [Section], _ ids: IDCounter
  ) -> Changeset<Metadata, Item> {
    var editor = Observable2DArrayEditor<Metadata, Item>(sections: [], nextID: ids.next)
    var changeset = Changeset<Metadata, Item>()
    for (index, section) in old.enumerated() {
      changeset.deletedSections.append(.init(index: index, id: section.id))
    }
    for (index, section) in new.enumerated() {
      let identified = editor.identified(section)
      changeset.insertedSections.append(
        .init(
          index: index, id: identified.id, metadata: identified.metadata,
          items: identified.items))
    }
    ids.next = editor.nextID
    return changeset
  }
}

/// `lhs == rhs` for an `Equatable` value against a value of unknown type.
private func isEqual<Value: Equatable>(_ lhs: Value, _ rhs: Any) -> Bool {
  guard let rhs = rhs as? Value else { return false }
  return lhs == rhs
}

/// The next fresh id, shared with the id-assigning closure of a diff.
private final class IDCounter {
  var next: Int64

  init(next: Int64) {
    self.next = next
  }

  /// Gives `0` a fresh id and keeps an explicit one, keeping fresh ids above it.
  func assign(_ id: Int64) -> Int64 {
    if id == 0 {
      defer { next += 1 }
      return next
    }
    if id >= next { next = id + 1 }
    return id
  }
}

/// Old items a section's items without ids may pair with, taken one to one in order: through
/// a hash table of values where they are `Hashable`, else by scanning.
private struct ValuePairing<Item> {
  private var candidates: [(id: Int64, value: Item)]
  private var taken: [Bool]
  private let isEqual: (Item, Item) -> Bool
  /// For `Hashable` values: the candidates' positions by value, in order, reversed.
  private var queues: [AnyHashable: [Int]]?

  init(_ candidates: [(id: Int64, value: Item)], isEqual: @escaping (Item, Item) -> Bool) {
    self.candidates = candidates
    self.isEqual = isEqual
    taken = Array(repeating: false, count: candidates.count)
    if candidates.allSatisfy({ $0.value is any Hashable }) {
      var queues: [AnyHashable: [Int]] = [:]
      for position in candidates.indices.reversed() {
        if let value = candidates[position].value as? any Hashable {
          queues[AnyHashable(value), default: []].append(position)
        }
      }
      self.queues = queues
    }
  }

  /// The id of the first candidate not taken yet whose value equals `value`, now taken.
  mutating func take(_ value: Item) -> Int64? {
    if queues != nil {
      guard let key = (value as? any Hashable).map({ AnyHashable($0) }) else { return nil }
      // A hash match that `isEqual` denies (a type whose == and hash disagree) pairs nothing.
      guard let position = queues?[key]?.popLast() else { return nil }
      taken[position] = true
      return isEqual(candidates[position].value, value) ? candidates[position].id : nil
    }
    for position in candidates.indices where !taken[position] {
      if isEqual(candidates[position].value, value) {
        taken[position] = true
        return candidates[position].id
      }
    }
    return nil
  }
}
