public import ReactiveCore

/// The metadata of a list without sections: nothing.
public struct NoMetadata: Hashable, Codable, Sendable, CustomStringConvertible {
  /// The only value.
  public init() {}

  /// An empty description.
  public var description: String { "" }
}

/// An observable list without sections (Bond's `MutableObservableArray`): one section of
/// items, mutated by index, whose events are those of a one-section
/// ``MutableObservable2DArray`` — which ``array`` is, to bind to a table view, derive from
/// (``Observable2DArray/filterItems(_:)``…) or read as ``Observable2DArray/changesets(bufferingLimit:entryLimit:)``.
///
/// ```swift
/// let todos = MutableObservableArray(["milk", "eggs"])
/// todos.observeNext { event in print(event.changeset.insertedItems.map(\.value)) }
///   .disposed(by: bag)
/// todos.append("bread")       // prints ["bread"]
/// todos[0] = "oat milk"       // one update
/// try todos.move(from: 2, to: 0)
/// ```
///
/// Index paths in its events are `[0, index]`. Mutations throw
/// ``Observable2DArrayError`` on an index out of range (the subscript traps, as an array's
/// does) and change nothing then; each emits one event, and the threading is the 2D
/// array's.
public final class MutableObservableArray<Item>: ObservableType {
  /// The event type: one per change.
  public typealias Element = Observable2DArrayEvent<NoMetadata, Item>

  /// The list as a one-section 2D array, which always has its one section.
  public var array: Observable2DArray<NoMetadata, Item> { storage }

  let storage: MutableObservable2DArray<NoMetadata, Item>

  /// Creates a list of `items`, which get fresh ids.
  ///
  /// - Parameter items: The items, in order.
  /// - Complexity: O(*n*).
  public init(_ items: [Item] = []) {
    storage = MutableObservable2DArray([
      Observable2DArraySection(metadata: NoMetadata(), items: items)
    ])
  }

  /// The items, with their ids.
  public var items: ItemList<Item> {
    array.sections[0].items
  }

  /// The number of items.
  public var count: Int {
    array.numberOfItems(inSection: 0)
  }

  /// Whether the list is empty.
  public var isEmpty: Bool { count == 0 }

  /// The item at `index`; setting it replaces its value (its id stays) with one event.
  ///
  /// - Parameter index: A valid index (it traps otherwise, like an array subscript).
  public subscript(index: Int) -> Item {
    get { array[[0, index]] }
    set { storage[[0, index]] = newValue }
  }

  /// Appends an item; one event.
  ///
  /// - Parameter item: The item; it gets a fresh id.
  public func append(_ item: Item) {
    do {
      try storage.appendItem(item, toSection: 0)
    } catch {
      preconditionFailure("MutableObservableArray: its one section is gone: \(error)")
    }
  }

  /// Inserts an item; one event.
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - index: Where it goes, `0 ... count`.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public func insert(_ item: Item, at index: Int) throws(Observable2DArrayError) {
    try storage.insert(item: item, at: [0, index])
  }

  /// Removes the item at `index`; one event.
  ///
  /// - Parameter index: The item's index.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  @discardableResult
  public func remove(at index: Int) throws(Observable2DArrayError) -> Item {
    try storage.removeItem(at: [0, index])
  }

  /// Removes the last item; one event.
  ///
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)`` when the list is
  ///   empty.
  @discardableResult
  public func removeLast() throws(Observable2DArrayError) -> Item {
    try storage.removeLastItem(inSection: 0)
  }

  /// Removes the items in `range`; one event.
  ///
  /// - Parameter range: Indexes within `0 ..< count`.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public func removeSubrange(_ range: Range<Int>) throws(Observable2DArrayError) {
    try storage.removeItems(inSection: 0, subrange: range)
  }

  /// Removes every item; one event (none when the list is empty).
  public func removeAll() {
    storage.removeAllItems()
  }

  /// Moves an item; one event.
  ///
  /// - Parameters:
  ///   - from: The item's index.
  ///   - to: Its index after the move.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public func move(from: Int, to: Int) throws(Observable2DArrayError) {
    try storage.moveItem(from: [0, from], to: [0, to])
  }

  /// Moves several items, in the order given, to consecutive places starting at `index`
  /// of the list without them; one event.
  ///
  /// - Parameters:
  ///   - indexes: The items' indexes; one named twice moves once.
  ///   - index: Where the first of them goes, counted without the moved items.
  /// - Throws: ``Observable2DArrayError`` when an index is out of range; nothing moves then.
  public func move(from indexes: [Int], to index: Int) throws(Observable2DArrayError) {
    try storage.moveItems(from: indexes.map { [0, $0] }, to: [0, index])
  }

  /// Replaces all items: with `performDiff`, the minimal changeset (items matched by id,
  /// and those without ids by value, as ``MutableObservable2DArray/replace(with:performDiff:)``
  /// does); without it, one that removes all and inserts all.
  ///
  /// - Parameters:
  ///   - items: The new items.
  ///   - performDiff: Whether to compute a minimal changeset.
  public func replace(with items: [Item], performDiff: Bool = true) {
    storage.replace(
      with: [
        Observable2DArraySection(
          id: array.sections[0].id, metadata: NoMetadata(), items: ItemList(items))
      ], performDiff: performDiff)
  }

  /// Applies many changes as one event; see ``MutableObservable2DArray/batchUpdate(_:)``.
  ///
  /// - Parameter body: The changes, made to an editor of the items.
  /// - Throws: What `body` throws; nothing changes then.
  public func batchUpdate<Failure: Error>(
    _ body: (inout ObservableArrayEditor<Item>) throws(Failure) -> Void
  ) throws(Failure) {
    try storage.batchUpdate { editor throws(Failure) in
      var flat = ObservableArrayEditor(editor: editor)
      defer { editor = flat.editor }
      try body(&flat)
    }
  }

  /// Applies changes the views already show; see
  /// ``MutableObservable2DArray/silentUpdate(_:)``.
  ///
  /// - Parameter body: The changes, made to an editor of the items.
  /// - Throws: What `body` throws; nothing changes then.
  public func silentUpdate<Failure: Error>(
    _ body: (inout ObservableArrayEditor<Item>) throws(Failure) -> Void
  ) throws(Failure) {
    try storage.silentUpdate { editor throws(Failure) in
      var flat = ObservableArrayEditor(editor: editor)
      defer { editor = flat.editor }
      try body(&flat)
    }
  }

  /// Subscribes to the events of the changes made from now on.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription.
  public func subscribe(_ observer: Observer<Element>) -> any Disposable {
    storage.subscribe(observer)
  }

  /// Returns the events as an ``Observable``.
  ///
  /// - Returns: An observable of the events of the changes made after subscribing.
  public func asObservable() -> Observable<Element> {
    storage.asObservable()
  }
}

// Its one stored property is a thread-safe array.
extension MutableObservableArray: @unchecked Sendable where Item: Sendable {}

/// The mutations of a ``MutableObservableArray`` inside one batch.
public struct ObservableArrayEditor<Item> {
  var editor: Observable2DArrayEditor<NoMetadata, Item>

  /// The number of items.
  public var count: Int { editor.sections[0].items.count }

  /// The item at `index`.
  ///
  /// - Parameter index: A valid index.
  /// - Returns: The item.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public func item(at index: Int) throws(Observable2DArrayError) -> Item {
    try editor.item(at: [0, index])
  }

  /// Appends an item.
  ///
  /// - Parameter item: The item; it gets a fresh id.
  public mutating func append(_ item: Item) {
    do {
      try editor.appendItem(item, toSection: 0)
    } catch {
      preconditionFailure("MutableObservableArray: its one section is gone: \(error)")
    }
  }

  /// Inserts an item at `index` (`0 ... count`).
  ///
  /// - Parameters:
  ///   - item: The item; it gets a fresh id.
  ///   - index: Where it goes.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public mutating func insert(_ item: Item, at index: Int) throws(Observable2DArrayError) {
    try editor.insert(item: item, at: [0, index])
  }

  /// Removes the item at `index`.
  ///
  /// - Parameter index: The item's index.
  /// - Returns: The removed item.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  @discardableResult
  public mutating func remove(at index: Int) throws(Observable2DArrayError) -> Item {
    try editor.removeItem(at: [0, index])
  }

  /// Moves an item.
  ///
  /// - Parameters:
  ///   - from: The item's index.
  ///   - to: Its index after the move.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public mutating func move(from: Int, to: Int) throws(Observable2DArrayError) {
    try editor.moveItem(from: [0, from], to: [0, to])
  }

  /// Replaces the value of the item at `index` (its id stays).
  ///
  /// - Parameters:
  ///   - index: The item's index.
  ///   - item: The new value.
  /// - Throws: ``Observable2DArrayError/itemOutOfRange(_:validRange:)``.
  public mutating func replace(at index: Int, with item: Item) throws(Observable2DArrayError) {
    try editor.replaceItem(at: [0, index], with: item)
  }
}
