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
}

// Adds only a mutex to the base class, whose invariant (everything mutable is behind a lock)
// it keeps.
extension MutableObservable2DArray: @unchecked Sendable where Metadata: Sendable, Item: Sendable {}
