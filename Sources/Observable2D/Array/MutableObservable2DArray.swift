public import FoundationEssentials
import ReactiveCore

/// An observable 2D array with Bond's mutations; each mutation emits one event.
///
/// ```swift
/// let array = MutableObservable2DArray([
///   Observable2DArraySection<String, String>(metadata: "Cities", items: ["Paris", "Berlin"])
/// ])
/// try array.appendItem("Copenhagen", toSection: 0)   // one event: inserted [0, 2]
/// try array.batchUpdate { array in                    // one event for both
///   try array.removeItem(at: IndexPath(row: 0, section: 0))
///   try array.setMetadata("Capitals", forSection: 0)
/// }
/// ```
///
/// Every mutation checks its indexes first and throws ``Observable2DArrayError`` without
/// changing anything when one is invalid; none traps on bad input. Sections and items added with
/// id `0` get fresh ids from the array. A mutation that changes nothing emits nothing.
///
/// Mutations are serialized (see ``Observable2DArray`` for threading and the order of
/// events). A mutation costs O(log *n*) plus one chunk of the touched item list, independent
/// of the array's size, and is done in place unless a snapshot of the previous state (an
/// event, say) is still held, in which case the touched chunk and the chunk table are copied.
public final class MutableObservable2DArray<Metadata, Item>: Observable2DArray<Metadata, Item> {
  /// Serializes mutations; held while a batch's closure runs.
  @usableFromInline let writer = Locked(())

  /// Creates an array with `sections`; sections and items with id `0` get fresh ids.
  ///
  /// - Parameter sections: The initial sections.
  /// - Complexity: O(*n*) for *n* items.
  public override init(_ sections: [Section] = []) {
    super.init(sections)
  }

  /// Runs one mutation on the state, in place, and queues its event.
  private func mutate<Result>(
    _ body: (inout Observable2DArrayEditor<Metadata, Item>) throws(Observable2DArrayError) -> Result
  ) throws(Observable2DArrayError) -> Result {
    let result = try writer.withLock { _ throws(Observable2DArrayError) -> Result in
      try state.withLock { state throws(Observable2DArrayError) -> Result in
        // Move the sections out so that the editor holds the only reference to them.
        var editor = Observable2DArrayEditor(sections: state.sections, nextID: state.nextID)
        state.sections = []
        defer {
          state.sections = editor.sections
          state.nextID = editor.nextID
        }
        // Mutations check their indexes before changing anything, so a throw leaves the
        // editor's sections as they were.
        let result = try body(&editor)
        let changeset = editor.tracker.changeset(to: editor.sections)
        state.sections = editor.sections
        Self.enqueue(changeset, in: &state)
        return result
      }
    }
    deliverPending()
    return result
  }

  // MARK: Items

  /// Appends an item to a section.
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - section: The index of the section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  /// - Complexity: Amortized O(1).
  public func appendItem(_ item: Item, toSection section: Int) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.appendItem(item, toSection: section)
    }
  }

  /// Inserts an item.
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - indexPath: Where the item will be; its row may be the section's item count.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  /// - Complexity: O(log *n*) plus one chunk, independent of the array's size.
  public func insert(item: Item, at indexPath: IndexPath) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.insert(item: item, at: indexPath)
    }
  }

  /// Inserts items one after the other, the first at `indexPath`, in one event.
  ///
  /// - Parameters:
  ///   - items: The items; each gets a fresh id.
  ///   - indexPath: Where the first item will be.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  public func insert(contentsOf items: [Item], at indexPath: IndexPath)
    throws(Observable2DArrayError)
  {
    try batchUpdate { editor throws(Observable2DArrayError) in
      try editor.insert(contentsOf: items, at: indexPath)
    }
  }

  /// Removes an item.
  ///
  /// - Parameter indexPath: The item's index path.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  /// - Complexity: O(log *n*) plus one chunk, independent of the array's size.
  @discardableResult
  public func removeItem(at indexPath: IndexPath) throws(Observable2DArrayError) -> Item {
    try mutate { editor throws(Observable2DArrayError) in try editor.removeItem(at: indexPath) }
  }

  /// Moves an item, within its section or to another one.
  ///
  /// - Parameters:
  ///   - from: The item's index path now.
  ///   - to: Its index path after the move.
  /// - Throws: ``Observable2DArrayError`` when an index path is malformed or out of range.
  /// - Complexity: O(log *n*) plus two chunks, independent of the array's size.
  public func moveItem(from: IndexPath, to: IndexPath) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in try editor.moveItem(from: from, to: to) }
  }

  /// Replaces the value of an item, which keeps its id.
  ///
  /// - Parameters:
  ///   - indexPath: The item's index path.
  ///   - item: The new value.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  /// - Complexity: O(log *n*) plus one chunk, independent of the array's size.
  public func replaceItem(at indexPath: IndexPath, with item: Item) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.replaceItem(at: indexPath, with: item)
    }
  }

  // MARK: Sections

  /// Appends a section; it and its items get fresh ids where their id is `0`.
  ///
  /// - Parameter section: The section.
  public func appendSection(_ section: Section) {
    // Appending cannot fail.
    try? mutate { editor throws(Observable2DArrayError) in editor.appendSection(section) }
  }

  /// Inserts a section; it and its items get fresh ids where their id is `0`.
  ///
  /// - Parameters:
  ///   - section: The section.
  ///   - index: Where it will be; it may be the section count.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func insert(section: Section, at index: Int) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.insert(section: section, at: index)
    }
  }

  /// Removes a section with its items.
  ///
  /// - Parameter index: The section's index.
  /// - Returns: The removed section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  @discardableResult
  public func removeSection(at index: Int) throws(Observable2DArrayError) -> Section {
    try mutate { editor throws(Observable2DArrayError) in try editor.removeSection(at: index) }
  }

  /// Moves a section with its items.
  ///
  /// - Parameters:
  ///   - from: The section's index now.
  ///   - to: Its index after the move.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func moveSection(from: Int, to: Int) throws(Observable2DArrayError) {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.moveSection(from: from, to: to)
    }
  }

  /// Replaces the metadata of a section (its header and footer, say).
  ///
  /// - Parameters:
  ///   - metadata: The new metadata.
  ///   - section: The section's index.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func setMetadata(_ metadata: Metadata, forSection section: Int)
    throws(Observable2DArrayError)
  {
    try mutate { editor throws(Observable2DArrayError) in
      try editor.setMetadata(metadata, forSection: section)
    }
  }

  // MARK: Batches

  /// Applies many mutations as one change, with one event.
  ///
  /// The closure receives an editor with the same mutations as the array; the changeset of the
  /// event composes them (an item inserted and then removed in the batch does not appear, an
  /// item moved twice is one move). If the closure throws, nothing changes and nothing is
  /// emitted: the batch is all or nothing.
  ///
  /// Other mutations wait until the batch ends; reads see the state before the batch until
  /// then. Inside the closure, mutate through its argument: mutating the array itself from
  /// the closure is a programming error that traps (its writer lock is held).
  ///
  /// - Parameter body: The mutations.
  /// - Throws: What `body` throws.
  /// - Complexity: Each mutation costs O(log *n*) plus O(*t*) for the *t* items the batch
  ///   touched so far in that section; past 1,024 touched items the batch ends with an id-based
  ///   diff instead, O(*n*).
  public func batchUpdate<Failure: Error>(
    _ body: (inout Observable2DArrayEditor<Metadata, Item>) throws(Failure) -> Void
  ) throws(Failure) {
    try batchUpdate(silent: false, body)
  }

  /// Applies mutations that the views already show, as one change whose event is marked
  /// silent (Bond's `silentUpdate`): a row the user already moved or edited in place.
  ///
  /// The array, and everything that follows it — derived arrays, ``changesets()``,
  /// a `ListModel` — change as with ``batchUpdate(_:)``; only a bound table view takes the
  /// new state as its data source without a batch update, since it shows the change
  /// already. A silent change the table view does not show (a row added off-screen, say)
  /// leaves its rows behind the array: its next batch update is then refused and the
  /// binding reloads it (see ``TableView/rejectedUpdateCount``).
  ///
  /// - Parameter body: The mutations, as in ``batchUpdate(_:)``.
  /// - Throws: What `body` throws; nothing changes then.
  public func silentUpdate<Failure: Error>(
    _ body: (inout Observable2DArrayEditor<Metadata, Item>) throws(Failure) -> Void
  ) throws(Failure) {
    try batchUpdate(silent: true, body)
  }

  private func batchUpdate<Failure: Error>(
    silent: Bool, _ body: (inout Observable2DArrayEditor<Metadata, Item>) throws(Failure) -> Void
  ) throws(Failure) {
    try writer.withLock { _ throws(Failure) in
      var editor = state.withLock { state in
        Observable2DArrayEditor(
          sections: state.sections, nextID: state.nextID, keepingOldState: true)
      }
      try body(&editor)
      let changeset = editor.tracker.changeset(to: editor.sections)
      state.withLock { state in
        state.sections = editor.sections
        state.nextID = editor.nextID
        Self.enqueue(changeset, in: &state, silent: silent)
      }
    }
    deliverPending()
  }

  /// The item at an index path; setting it replaces the item's value (its id stays), with
  /// one event, as ``replaceItem(at:with:)`` does.
  ///
  /// It traps on an invalid index path, like an array subscript; use
  /// ``replaceItem(at:with:)`` to get an error instead.
  ///
  /// - Parameter indexPath: A valid `[section, item]` index path.
  public override subscript(indexPath: IndexPath) -> Item {
    get {
      super[indexPath]
    }
    set {
      do {
        try replaceItem(at: indexPath, with: newValue)
      } catch {
        preconditionFailure("MutableObservable2DArray: \(error)")
      }
    }
  }

  // MARK: Changesets and replacement

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
    state.withLock { $0.version = version }
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

// Adds only a mutex to the base class, whose invariant (everything mutable is behind a lock)
// it keeps.
extension MutableObservable2DArray: @unchecked Sendable where Metadata: Sendable, Item: Sendable {}

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
