public import FoundationEssentials

/// How one state of a 2D array (sections of items) became the next, in the form a table view
/// applies in one batch update.
///
/// Every section and item is named by its index in the relevant state and by its stable id;
/// entries that bring a section or item into view carry its payload. "Old" is the state before
/// the batch, "new" the state after it. The rules are those of `docs/changesets.md`: indexes are
/// in bounds and unique, items of deleted or inserted sections are not listed, a moved item
/// whose value changed is listed once as a move with its new value, and applying the changeset
/// to the old state gives exactly the new state:
///
/// ```swift
/// let changeset = Changeset.diff(from: old, to: new)
/// assert(try changeset.applied(to: old) == new)
/// ```
///
/// The repository builds changesets from its change log with the memberwise initializers and
/// feeds them to ``MutableObservable2DArray/apply(_:)``.
public struct Changeset<Metadata, Item> {
  /// The section type the changeset applies to.
  public typealias Section = Observable2DArraySection<Metadata, Item>

  /// A section that is gone; `index` is in the **old** state.
  public struct DeletedSection {
    /// The section's index in the old state.
    public var index: Int
    /// The section's stable id.
    public var id: Int64

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - index: The section's index in the old state.
    ///   - id: The section's stable id.
    @inlinable
    public init(index: Int, id: Int64) {
      self.index = index
      self.id = id
    }
  }

  /// A section that appears, with all its items; `index` is in the **new** state.
  ///
  /// Its items are not listed again in ``Changeset/insertedItems``.
  public struct InsertedSection {
    /// The section's index in the new state.
    public var index: Int
    /// The section's stable id.
    public var id: Int64
    /// The section's metadata.
    public var metadata: Metadata
    /// All the section's items, with their ids.
    public var items: ItemList<Item>

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - index: The section's index in the new state.
    ///   - id: The section's stable id.
    ///   - metadata: The section's metadata.
    ///   - items: All the section's items, with their ids.
    @inlinable
    public init(index: Int, id: Int64, metadata: Metadata, items: ItemList<Item>) {
      self.index = index
      self.id = id
      self.metadata = metadata
      self.items = items
    }

    /// Creates an entry from `(id, value)` pairs.
    ///
    /// - Parameters:
    ///   - index: The section's index in the new state.
    ///   - id: The section's stable id.
    ///   - metadata: The section's metadata.
    ///   - items: All the section's items, as `(id, value)` pairs.
    @inlinable
    public init(index: Int, id: Int64, metadata: Metadata, items: [(id: Int64, value: Item)]) {
      self.init(index: index, id: id, metadata: metadata, items: ItemList(entries: items))
    }

    /// The inserted section as a value.
    @inlinable
    public var section: Section { Section(id: id, metadata: metadata, items: items) }
  }

  /// A section that moved; `from` is in the **old** state, `to` in the **new** state.
  ///
  /// It carries its metadata as it is in the new state (rule 5: a moved section whose metadata
  /// changed is listed once, here). Its remaining items move with it.
  public struct MovedSection {
    /// The section's index in the old state.
    public var from: Int
    /// The section's index in the new state.
    public var to: Int
    /// The section's stable id.
    public var id: Int64
    /// The section's metadata in the new state.
    public var metadata: Metadata

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - from: The section's index in the old state.
    ///   - to: The section's index in the new state.
    ///   - id: The section's stable id.
    ///   - metadata: The section's metadata in the new state.
    @inlinable
    public init(from: Int, to: Int, id: Int64, metadata: Metadata) {
      self.from = from
      self.to = to
      self.id = id
      self.metadata = metadata
    }
  }

  /// A section whose metadata changed and that did not move; `index` is in the **old** state.
  public struct UpdatedSection {
    /// The section's index in the old state.
    public var index: Int
    /// The section's stable id.
    public var id: Int64
    /// The section's new metadata.
    public var metadata: Metadata

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - index: The section's index in the old state.
    ///   - id: The section's stable id.
    ///   - metadata: The section's new metadata.
    @inlinable
    public init(index: Int, id: Int64, metadata: Metadata) {
      self.index = index
      self.id = id
      self.metadata = metadata
    }
  }

  /// An item that is gone; `at` is an index path in the **old** state, in a section that is not
  /// deleted.
  public struct DeletedItem {
    /// The item's `[section, item]` index path in the old state.
    public var at: IndexPath
    /// The item's stable id.
    public var id: Int64

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - at: The item's index path in the old state.
    ///   - id: The item's stable id.
    @inlinable
    public init(at: IndexPath, id: Int64) {
      self.at = at
      self.id = id
    }
  }

  /// An item that appears; `at` is an index path in the **new** state, in a section that is not
  /// inserted.
  public struct InsertedItem {
    /// The item's `[section, item]` index path in the new state.
    public var at: IndexPath
    /// The item's stable id.
    public var id: Int64
    /// The item's value.
    public var value: Item

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - at: The item's index path in the new state.
    ///   - id: The item's stable id.
    ///   - value: The item's value.
    @inlinable
    public init(at: IndexPath, id: Int64, value: Item) {
      self.at = at
      self.id = id
      self.value = value
    }
  }

  /// An item that moved; `from` is in the **old** state, `to` in the **new** state.
  ///
  /// It carries its value as it is in the new state (rule 5).
  public struct MovedItem {
    /// The item's `[section, item]` index path in the old state.
    public var from: IndexPath
    /// The item's `[section, item]` index path in the new state.
    public var to: IndexPath
    /// The item's stable id.
    public var id: Int64
    /// The item's value in the new state.
    public var value: Item

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - from: The item's index path in the old state.
    ///   - to: The item's index path in the new state.
    ///   - id: The item's stable id.
    ///   - value: The item's value in the new state.
    @inlinable
    public init(from: IndexPath, to: IndexPath, id: Int64, value: Item) {
      self.from = from
      self.to = to
      self.id = id
      self.value = value
    }
  }

  /// An item whose value changed and that did not move; `at` is in the **old** state.
  public struct UpdatedItem {
    /// The item's `[section, item]` index path in the old state.
    public var at: IndexPath
    /// The item's stable id.
    public var id: Int64
    /// The item's new value.
    public var value: Item

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - at: The item's index path in the old state.
    ///   - id: The item's stable id.
    ///   - value: The item's new value.
    @inlinable
    public init(at: IndexPath, id: Int64, value: Item) {
      self.at = at
      self.id = id
      self.value = value
    }
  }

  /// Sections that are gone, by index in the old state.
  public var deletedSections: [DeletedSection]
  /// Sections that appear, by index in the new state, with their metadata and all their items.
  public var insertedSections: [InsertedSection]
  /// Sections that moved, from an index in the old state to one in the new state.
  public var movedSections: [MovedSection]
  /// Sections whose metadata changed, by index in the old state.
  public var updatedSections: [UpdatedSection]
  /// Items that are gone, by index path in the old state.
  public var deletedItems: [DeletedItem]
  /// Items that appear, by index path in the new state, with their values.
  public var insertedItems: [InsertedItem]
  /// Items that moved, from an index path in the old state to one in the new state.
  public var movedItems: [MovedItem]
  /// Items whose value changed, by index path in the old state.
  public var updatedItems: [UpdatedItem]

  /// Creates a changeset; every field defaults to empty.
  ///
  /// - Parameters:
  ///   - deletedSections: Sections that are gone (old indexes).
  ///   - insertedSections: Sections that appear (new indexes), with their items.
  ///   - movedSections: Sections that moved (old to new indexes).
  ///   - updatedSections: Sections whose metadata changed (old indexes).
  ///   - deletedItems: Items that are gone (old index paths).
  ///   - insertedItems: Items that appear (new index paths).
  ///   - movedItems: Items that moved (old to new index paths).
  ///   - updatedItems: Items whose value changed (old index paths).
  @inlinable
  public init(
    deletedSections: [DeletedSection] = [],
    insertedSections: [InsertedSection] = [],
    movedSections: [MovedSection] = [],
    updatedSections: [UpdatedSection] = [],
    deletedItems: [DeletedItem] = [],
    insertedItems: [InsertedItem] = [],
    movedItems: [MovedItem] = [],
    updatedItems: [UpdatedItem] = []
  ) {
    self.deletedSections = deletedSections
    self.insertedSections = insertedSections
    self.movedSections = movedSections
    self.updatedSections = updatedSections
    self.deletedItems = deletedItems
    self.insertedItems = insertedItems
    self.movedItems = movedItems
    self.updatedItems = updatedItems
  }

  /// Whether every field is empty; an empty changeset is never emitted.
  @inlinable
  public var isEmpty: Bool {
    deletedSections.isEmpty && insertedSections.isEmpty && movedSections.isEmpty
      && updatedSections.isEmpty && deletedItems.isEmpty && insertedItems.isEmpty
      && movedItems.isEmpty && updatedItems.isEmpty
  }

  /// The number of entries over all fields (an inserted section counts once).
  @inlinable
  public var entryCount: Int {
    deletedSections.count + insertedSections.count + movedSections.count
      + updatedSections.count + deletedItems.count + insertedItems.count + movedItems.count
      + updatedItems.count
  }
}

// MARK: - Conformances

extension Changeset.DeletedSection: Equatable, Hashable, Sendable {}
extension Changeset.DeletedItem: Equatable, Hashable, Sendable {}
extension Changeset.InsertedSection: Equatable where Metadata: Equatable, Item: Equatable {}
extension Changeset.MovedSection: Equatable where Metadata: Equatable {}
extension Changeset.UpdatedSection: Equatable where Metadata: Equatable {}
extension Changeset.InsertedItem: Equatable where Item: Equatable {}
extension Changeset.MovedItem: Equatable where Item: Equatable {}
extension Changeset.UpdatedItem: Equatable where Item: Equatable {}
extension Changeset: Equatable where Metadata: Equatable, Item: Equatable {}

extension Changeset.InsertedSection: Sendable where Metadata: Sendable, Item: Sendable {}
extension Changeset.MovedSection: Sendable where Metadata: Sendable {}
extension Changeset.UpdatedSection: Sendable where Metadata: Sendable {}
extension Changeset.InsertedItem: Sendable where Item: Sendable {}
extension Changeset.MovedItem: Sendable where Item: Sendable {}
extension Changeset.UpdatedItem: Sendable where Item: Sendable {}
extension Changeset: Sendable where Metadata: Sendable, Item: Sendable {}

extension Changeset: CustomStringConvertible {
  /// A compact rendering of the non-empty fields, for logs and test failures.
  ///
  /// Entries read `index#id`, `from->to#id`, with `=payload` for values and metadata.
  public var description: String {
    var fields: [String] = []
    func add(_ name: String, _ entries: [String]) {
      if !entries.isEmpty { fields.append("\(name): [" + entries.joined(separator: ", ") + "]") }
    }
    add("deletedSections", deletedSections.map { "\($0.index)#\($0.id)" })
    add(
      "insertedSections",
      insertedSections.map { "\($0.index)#\($0.id)=\($0.metadata) \($0.items.debugDescription)" })
    add("movedSections", movedSections.map { "\($0.from)->\($0.to)#\($0.id)=\($0.metadata)" })
    add("updatedSections", updatedSections.map { "\($0.index)#\($0.id)=\($0.metadata)" })
    add("deletedItems", deletedItems.map { "\($0.at.shortDescription)#\($0.id)" })
    add("insertedItems", insertedItems.map { "\($0.at.shortDescription)#\($0.id)=\($0.value)" })
    add(
      "movedItems",
      movedItems.map {
        "\($0.from.shortDescription)->\($0.to.shortDescription)#\($0.id)=\($0.value)"
      })
    add("updatedItems", updatedItems.map { "\($0.at.shortDescription)#\($0.id)=\($0.value)" })
    return "Changeset(" + fields.joined(separator: ", ") + ")"
  }
}
