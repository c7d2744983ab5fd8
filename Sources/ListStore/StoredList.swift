public import FoundationEssentials
public import Observable2D
import SQLiteKit

/// A typed handle on one stored list: sections whose metadata is `Metadata`, holding
/// items of type `Item`, both stored as JSON.
///
/// Its mutations carry the names of Bond's `MutableObservable2DArray`, and each is
/// one transaction that writes exactly one section or item row (deleting a section
/// also deletes its items). Sections and items are addressed by index path, like a
/// table view does, or by their stable ids, which never change while the row exists.
///
/// ```swift
/// struct City: Codable { var name: String }
/// let cities = try repository.createList("cities", metadata: SectionMetadata.self, item: City.self)
/// try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
/// try cities.appendItem(City(name: "Paris"), toSection: 0)
/// try cities.insert(item: City(name: "Berlin"), at: IndexPath(indexes: [0, 0]))
/// try cities.moveItem(from: IndexPath(indexes: [0, 0]), to: IndexPath(indexes: [0, 1]))
/// ```
public struct StoredList<Metadata: Codable, Item: Codable>: Sendable {
  /// The repository holding the list.
  public let repository: Repository
  /// The list's id.
  public let id: Int64
  /// The list's name when the handle was made.
  public let name: String

  func writeRows<Result: Sendable>(_ body: (ListRows) throws -> Result)
    throws(ListStoreError)
    -> Result
  {
    try repository.write { db in
      try ListRows.checked(db: db, listID: id, name: name) { rows in
        var rows = rows
        rows.canonicalMetadata = Metadata.self != RawJSON.self
        rows.canonicalValues = Item.self != RawJSON.self
        return try body(rows)
      }
    }
  }

  private func read<Result: Sendable>(_ body: (ListRows) throws -> Result) throws(ListStoreError)
    -> Result
  {
    try repository.read { db in try ListRows.checked(db: db, listID: id, name: name, body) }
  }

  /// Runs several writes as one transaction: see ``Repository/write(_:)``, which this
  /// calls after checking that the list still exists. Writes to other lists of the same
  /// repository may be part of it too.
  ///
  /// ```swift
  /// try cities.write {
  ///   let rome = try cities.appendItem(City(name: "Rome"), toSection: 0)
  ///   try cities.moveItem(id: rome, to: IndexPath(item: 0, section: 0))
  /// }  // observers get one changeset: Rome inserted at 0:0
  /// ```
  /// - Parameter body: The writes.
  /// - Returns: What `body` returns.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, what `body` throws (everything is
  ///   then rolled back), or ``ListStoreError`` when the transaction cannot commit.
  @discardableResult
  public func write<Result: Sendable>(_ body: () throws -> Result) throws -> Result {
    try repository.write {
      try read { rows in try rows.requireList() }
      return try body()
    }
  }

  private static func split(_ indexPath: IndexPath) throws(ListStoreError) -> (
    section: Int, row: Int
  ) {
    guard indexPath.count == 2 else { throw .invalidIndexPath("\(Array(indexPath))") }
    return (indexPath[0], indexPath[1])
  }

  // MARK: - Sections

  /// Adds a section after the last one.
  /// - Parameter metadata: The new section's metadata.
  /// - Returns: The section's id.
  /// - Throws: ``ListStoreError`` when the list is gone or the write fails.
  @discardableResult
  public func appendSection(_ metadata: Metadata) throws(ListStoreError) -> Int64 {
    let json = try ValueCoder.encode(metadata)
    return try writeRows { rows in try rows.insertSection(metadata: json, at: nil) }
  }

  /// Inserts a section so that it ends at `index`.
  /// - Parameters:
  ///   - metadata: The new section's metadata.
  ///   - index: Its index, from 0 to the number of sections.
  /// - Returns: The section's id.
  /// - Throws: ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``.
  @discardableResult
  public func insert(section metadata: Metadata, at index: Int) throws(ListStoreError) -> Int64 {
    let json = try ValueCoder.encode(metadata)
    return try writeRows { rows in try rows.insertSection(metadata: json, at: index) }
  }

  /// Deletes the section at `index` with all its items.
  /// - Parameter index: The section's index.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  public func removeSection(at index: Int) throws(ListStoreError) {
    try writeRows { rows in try rows.deleteSection(id: rows.sectionID(at: index)) }
  }

  /// Deletes a section with all its items.
  /// - Parameter id: The section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  public func removeSection(id: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.deleteSection(id: id) }
  }

  /// Moves the section at `from` so that it ends at index `to`.
  /// - Parameters:
  ///   - from: The section's current index.
  ///   - to: Its index after the move.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``,
  ///   ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``.
  public func moveSection(from: Int, to: Int) throws(ListStoreError) {
    try writeRows { rows in try rows.moveSection(id: rows.sectionID(at: from), to: to) }
  }

  /// Moves a section so that it ends at index `to`.
  /// - Parameters:
  ///   - id: The section's id.
  ///   - to: Its index after the move.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``,
  ///   ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``.
  public func moveSection(id: Int64, to: Int) throws(ListStoreError) {
    try writeRows { rows in try rows.moveSection(id: id, to: to) }
  }

  /// Replaces the metadata of the section at `index`.
  /// - Parameters:
  ///   - metadata: The new metadata.
  ///   - index: The section's index.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  public func setMetadata(_ metadata: Metadata, forSectionAt index: Int) throws(ListStoreError) {
    let json = try ValueCoder.encode(metadata)
    try writeRows { rows in try rows.setMetadata(json, sectionID: rows.sectionID(at: index)) }
  }

  /// Replaces a section's metadata.
  /// - Parameters:
  ///   - metadata: The new metadata.
  ///   - id: The section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  public func setMetadata(_ metadata: Metadata, forSectionWithID id: Int64) throws(ListStoreError) {
    let json = try ValueCoder.encode(metadata)
    try writeRows { rows in try rows.setMetadata(json, sectionID: id) }
  }

  /// Inserts a section right before another one.
  ///
  /// Addressing by id costs two index seeks whatever the list's size.
  /// - Parameters:
  ///   - metadata: The new section's metadata.
  ///   - neighbor: The id of the section to insert before.
  /// - Returns: The new section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  @discardableResult
  public func insert(section metadata: Metadata, before neighbor: Int64) throws(ListStoreError)
    -> Int64
  {
    let json = try ValueCoder.encode(metadata)
    return try writeRows { rows in
      try rows.insertSection(metadata: json, nextTo: neighbor, after: false)
    }
  }

  /// Inserts a section right after another one.
  /// - Parameters:
  ///   - metadata: The new section's metadata.
  ///   - neighbor: The id of the section to insert after.
  /// - Returns: The new section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  @discardableResult
  public func insert(section metadata: Metadata, after neighbor: Int64) throws(ListStoreError)
    -> Int64
  {
    let json = try ValueCoder.encode(metadata)
    return try writeRows { rows in
      try rows.insertSection(metadata: json, nextTo: neighbor, after: true)
    }
  }

  /// Moves a section right before another one.
  /// - Parameters:
  ///   - id: The id of the section to move.
  ///   - neighbor: The id of the section it should precede.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  public func moveSection(id: Int64, before neighbor: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.moveSection(id: id, nextTo: neighbor, after: false) }
  }

  /// Moves a section right after another one.
  /// - Parameters:
  ///   - id: The id of the section to move.
  ///   - neighbor: The id of the section it should follow.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  public func moveSection(id: Int64, after neighbor: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.moveSection(id: id, nextTo: neighbor, after: true) }
  }

  // MARK: - Items

  /// Adds an item after the last one of a section.
  /// - Parameters:
  ///   - item: The value.
  ///   - section: The section's index.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  @discardableResult
  public func appendItem(_ item: Item, toSection section: Int) throws(ListStoreError) -> Int64 {
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, section: section, row: nil) }
  }

  /// Adds an item after the last one of a section named by its id.
  /// - Parameters:
  ///   - item: The value.
  ///   - sectionID: The section's id.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *n*), whatever the section's size.
  @discardableResult
  public func appendItem(_ item: Item, toSectionWithID sectionID: Int64) throws(ListStoreError)
    -> Int64
  {
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, sectionID: sectionID, row: nil)
    }
  }

  /// Inserts an item so that it ends at `row` of a section named by its id.
  /// - Parameters:
  ///   - item: The value.
  ///   - row: Its row; it may be the section's item count.
  ///   - sectionID: The section's id.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  /// - Complexity: O(*row*): a scan to the row.
  @discardableResult
  public func insert(item: Item, atRow row: Int, inSectionWithID sectionID: Int64)
    throws(ListStoreError) -> Int64
  {
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, sectionID: sectionID, row: row)
    }
  }

  /// Adds items after the last one of a section, in one transaction.
  /// - Parameters:
  ///   - items: The values, in order.
  ///   - section: The section's index.
  /// - Returns: The items' ids, in order.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  /// - Complexity: O(*m*) for *m* items; the section's size does not matter.
  @discardableResult
  public func appendItems(_ items: [Item], toSection section: Int) throws(ListStoreError) -> [Int64]
  {
    let values = try ValueCoder.encodeAll(items)
    return try writeRows { rows in
      try rows.appendItems(values: values, sectionID: rows.sectionID(at: section))
    }
  }

  /// Adds items after the last ones of several sections, all in one transaction:
  /// either every item is stored or none is.
  /// - Parameter batches: For each section index, the values to append, in order.
  /// - Returns: The new items' ids, by section index.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  /// - Complexity: O(*m*) for *m* items in all.
  @discardableResult
  public func appendItems(bySection batches: [Int: [Item]]) throws(ListStoreError) -> [Int: [Int64]]
  {
    var encoded: [(section: Int, values: [String])] = []
    for (section, items) in batches.sorted(by: { $0.key < $1.key }) {
      encoded.append((section, try ValueCoder.encodeAll(items)))
    }
    return try writeRows { rows in
      var ids: [Int: [Int64]] = [:]
      for (section, values) in encoded {
        ids[section] = try rows.appendItems(values: values, sectionID: rows.sectionID(at: section))
      }
      return ids
    }
  }

  /// Inserts an item so that it ends at `indexPath`.
  /// - Parameters:
  ///   - item: The value.
  ///   - indexPath: Its section and row; the row may be the section's item count.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  @discardableResult
  public func insert(item: Item, at indexPath: IndexPath) throws(ListStoreError) -> Int64 {
    let (section, row) = try Self.split(indexPath)
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, section: section, row: row) }
  }

  /// Inserts an item right after another one, in its section.
  ///
  /// Addressing by id costs two index seeks whatever the list's size, while an index
  /// path costs a scan to its row: prefer ids for large sections.
  /// - Parameters:
  ///   - item: The value.
  ///   - neighbor: The id of the item to insert after.
  /// - Returns: The new item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  @discardableResult
  public func insert(item: Item, after neighbor: Int64) throws(ListStoreError) -> Int64 {
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, nextTo: neighbor, after: true) }
  }

  /// Inserts an item right before another one, in its section.
  /// - Parameters:
  ///   - item: The value.
  ///   - neighbor: The id of the item to insert before.
  /// - Returns: The new item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  @discardableResult
  public func insert(item: Item, before neighbor: Int64) throws(ListStoreError) -> Int64 {
    let json = try ValueCoder.encode(item)
    return try writeRows { rows in try rows.insertItem(value: json, nextTo: neighbor, after: false)
    }
  }

  /// Deletes the item at `indexPath`.
  /// - Parameter indexPath: The item's section and row.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``.
  public func removeItem(at indexPath: IndexPath) throws(ListStoreError) {
    let (section, row) = try Self.split(indexPath)
    try writeRows { rows in try rows.deleteItem(id: rows.itemID(section: section, row: row)) }
  }

  /// Deletes an item.
  /// - Parameter id: The item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  public func removeItem(id: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.deleteItem(id: id) }
  }

  /// Moves an item, within its section or to another one.
  /// - Parameters:
  ///   - from: The item's index path now.
  ///   - to: Its index path after the move.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  public func moveItem(from: IndexPath, to: IndexPath) throws(ListStoreError) {
    let source = try Self.split(from)
    let target = try Self.split(to)
    try writeRows { rows in
      try rows.moveItem(
        id: rows.itemID(section: source.section, row: source.row), toSection: target.section,
        row: target.row)
    }
  }

  /// Moves an item so that it ends at `to`.
  /// - Parameters:
  ///   - id: The item's id.
  ///   - to: Its index path after the move.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  public func moveItem(id: Int64, to: IndexPath) throws(ListStoreError) {
    let target = try Self.split(to)
    try writeRows { rows in try rows.moveItem(id: id, toSection: target.section, row: target.row) }
  }

  /// Moves an item right after another one, within its section or to the other's.
  /// - Parameters:
  ///   - id: The id of the item to move.
  ///   - neighbor: The id of the item it should follow.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  public func moveItem(id: Int64, after neighbor: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.moveItem(id: id, nextTo: neighbor, after: true) }
  }

  /// Moves an item right before another one, within its section or to the other's.
  /// - Parameters:
  ///   - id: The id of the item to move.
  ///   - neighbor: The id of the item it should precede.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  public func moveItem(id: Int64, before neighbor: Int64) throws(ListStoreError) {
    try writeRows { rows in try rows.moveItem(id: id, nextTo: neighbor, after: false) }
  }

  /// Replaces the value of the item at `indexPath`.
  /// - Parameters:
  ///   - indexPath: The item's section and row.
  ///   - item: The new value.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``.
  public func replaceItem(at indexPath: IndexPath, with item: Item) throws(ListStoreError) {
    let (section, row) = try Self.split(indexPath)
    let json = try ValueCoder.encode(item)
    try writeRows { rows in try rows.setValue(json, itemID: rows.itemID(section: section, row: row))
    }
  }

  /// Replaces an item's value.
  /// - Parameters:
  ///   - id: The item's id.
  ///   - item: The new value.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  public func replaceItem(id: Int64, with item: Item) throws(ListStoreError) {
    let json = try ValueCoder.encode(item)
    try writeRows { rows in try rows.setValue(json, itemID: id) }
  }

  // MARK: - Reads

  /// The number of sections.
  /// - Returns: The count.
  /// - Throws: ``ListStoreError/listNotFound(name:)`` when the list is gone.
  public func numberOfSections() throws(ListStoreError) -> Int {
    try read { rows in try rows.sectionCount() }
  }

  /// The number of items in a section.
  /// - Parameter section: The section's index.
  /// - Returns: The count.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  public func numberOfItems(inSection section: Int) throws(ListStoreError) -> Int {
    try read { rows in try rows.itemCount(sectionID: rows.sectionID(at: section)) }
  }

  /// The id of the section at `index`.
  /// - Parameter index: The section's index.
  /// - Returns: Its id.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``.
  public func sectionID(at index: Int) throws(ListStoreError) -> Int64 {
    try read { rows in try rows.sectionID(at: index) }
  }

  /// The id of the item at `indexPath`.
  /// - Parameter indexPath: The item's section and row.
  /// - Returns: Its id.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``.
  public func itemID(at indexPath: IndexPath) throws(ListStoreError) -> Int64 {
    let (section, row) = try Self.split(indexPath)
    return try read { rows in try rows.itemID(section: section, row: row) }
  }

  /// The index of a section.
  /// - Parameter sectionID: The section's id.
  /// - Returns: Its index among the list's sections.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(*s*) for *s* sections.
  public func index(ofSectionWithID sectionID: Int64) throws(ListStoreError) -> Int {
    try read { rows in try rows.sectionIndex(id: sectionID) }
  }

  /// The id of the section holding an item.
  /// - Parameter itemID: The item's id.
  /// - Returns: Its section's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  public func sectionID(ofItem itemID: Int64) throws(ListStoreError) -> Int64 {
    try read { rows in try rows.place(ofItem: itemID).section }
  }

  /// The item at `indexPath`.
  /// - Parameter indexPath: The item's section and row.
  /// - Returns: Its value.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``,
  ///   ``ListStoreError/decodingFailed(_:)``.
  public func item(at indexPath: IndexPath) throws(ListStoreError) -> Item {
    let (section, row) = try Self.split(indexPath)
    let json = try read { rows in try rows.itemValue(id: rows.itemID(section: section, row: row)) }
    return try ValueCoder.decode(Item.self, from: json)
  }

  /// The item with id `id`.
  /// - Parameter id: The item's id.
  /// - Returns: Its value.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, ``ListStoreError/decodingFailed(_:)``.
  public func item(id: Int64) throws(ListStoreError) -> Item {
    let json = try read { rows in try rows.itemValue(id: id) }
    return try ValueCoder.decode(Item.self, from: json)
  }

  /// The whole list: every section with its metadata and items, decoded, with ids.
  /// - Returns: The sections in order.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, ``ListStoreError/decodingFailed(_:)``.
  /// - Complexity: O(*n*) for *n* items, in one ordered pass.
  public func sections() throws(ListStoreError) -> [Observable2DArraySection<Metadata, Item>] {
    let listID = id
    let name = name
    do {
      return try repository.read { db in
        guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
          throw ListStoreError.listNotFound(name: name)
        }
        return try ListObserver<Metadata, Item>.load(listID: listID, db: db).sections
      }
    }
  }

  /// The section at `index`, with its metadata and items.
  /// - Parameter index: The section's index.
  /// - Returns: The section.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``,
  ///   ``ListStoreError/decodingFailed(_:)``.
  public func section(at index: Int) throws(ListStoreError) -> Observable2DArraySection<
    Metadata, Item
  > {
    let stored = try read { rows in try rows.section(id: rows.sectionID(at: index)) }
    let decodeItem = ValueCoder.decoder(for: Item.self)
    var items = ItemList<Item>()
    items.reserveCapacity(stored.items.count)
    do {
      for row in stored.items {
        var json = row.json
        items.append(try json.withUTF8 { try decodeItem($0) }, id: row.id)
      }
    } catch let error as ListStoreError {
      throw error
    } catch {
      throw .decodingFailed("\(error)")
    }
    return Observable2DArraySection(
      id: stored.row.id, metadata: try ValueCoder.decode(Metadata.self, from: stored.row.json),
      items: items)
  }

  /// The whole list as stored rows (JSON text), for the CLI and the change feed.
  package func storedSections() throws(ListStoreError) -> [StoredSection] {
    try read { rows in try rows.snapshot() }
  }

  /// The list read in one transaction and handed over a row at a time, as stored JSON
  /// bytes (valid only during each call), without holding it in memory: how the CLI
  /// exports a list of any size. `item` is called for the items of the section last
  /// given to `section`; `endSection` after its last item.
  package func forEachStoredRow(
    section: (_ id: Int64, _ metadata: UnsafeBufferPointer<UInt8>) throws -> Void,
    item: (_ id: Int64, _ value: UnsafeBufferPointer<UInt8>) throws -> Void,
    endSection: () throws -> Void
  ) throws {
    // The callbacks' own errors go out as they are, not as storage errors.
    var failure: (any Error)?
    func guarded(_ body: () throws -> Void) throws {
      do { try body() } catch {
        failure = error
        throw error
      }
    }
    do {
      try read { rows in
        try rows.forEachRow(
          section: { id, bytes in try guarded { try section(id, bytes) } },
          item: { id, bytes in try guarded { try item(id, bytes) } },
          endSection: { try guarded(endSection) })
      }
    } catch {
      throw failure ?? error
    }
  }

  /// The number of items in the whole list.
  package func totalItemCount() throws(ListStoreError) -> Int {
    try read { rows in try rows.itemCount() }
  }
}

extension StoredList {
  /// Rewrites the metadata JSON of the section at `index` in one transaction.
  package func updateMetadataJSON(
    forSectionAt index: Int, _ transform: @escaping @Sendable (String) throws -> String
  ) throws(ListStoreError) {
    try writeRows { rows in
      let id = try rows.sectionID(at: index)
      try rows.setMetadata(try transform(rows.metadata(ofSection: id)), sectionID: id)
    }
  }

  /// Rewrites the metadata JSON of section `id` in one transaction.
  package func updateMetadataJSON(
    forSectionWithID id: Int64, _ transform: @escaping @Sendable (String) throws -> String
  ) throws(ListStoreError) {
    try writeRows { rows in
      try rows.setMetadata(try transform(rows.metadata(ofSection: id)), sectionID: id)
    }
  }
}

extension StoredList {
  /// Reads the value JSON of item `id`, computes its replacement with `transform`, and
  /// writes it, in one transaction: concurrent updates of the same item by other
  /// threads or processes cannot interleave, so none is lost.
  ///
  /// `transform` may throw any error; it is rethrown as is and nothing is written.
  package func updateItemJSON<Output: Sendable>(
    id: Int64, _ transform: (String) throws -> (json: String, output: Output)
  ) throws -> Output {
    var failure: (any Error)?
    do {
      return try writeRows { rows in
        let current = try rows.itemValue(id: id)
        let (json, output): (String, Output)
        do {
          (json, output) = try transform(current)
        } catch {
          // The caller's own error; the storage's errors are mapped by `writeRows`.
          failure = error
          throw error
        }
        try rows.setValue(json, itemID: id)
        return output
      }
    } catch {
      if let failure { throw failure }
      throw error
    }
  }
}

extension Repository {
  /// Creates a list with the given sections (metadata JSON, item value JSON) in one
  /// transaction; nothing is written when any part fails.
  package func createList(_ name: String, contents: [(metadata: String, items: [String])])
    throws(ListStoreError) -> Int64
  {
    guard !name.allSatisfy(\.isWhitespace) else { throw .emptyName }
    return try write { db in
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
        throw ListStoreError.listExists(name: name)
      }
      let rows = ListRows(db: db, listID: try ListRows.insertList(named: name, db: db))
      for section in contents {
        let sectionID = try rows.insertSection(metadata: section.metadata, at: nil)
        _ = try rows.appendItems(values: section.items, sectionID: sectionID)
      }
      return rows.listID
    }
  }
}

/// Writes a new list a section and a batch of items at a time, inside the transaction of
/// ``Repository/createList(_:filling:)``: how the CLI imports a file of any size in
/// bounded memory. Metadata and values must be compact, valid JSON text.
package final class ListWriter {
  private let rows: ListRows

  fileprivate init(rows: ListRows) { self.rows = rows }

  /// The new list's id.
  package var listID: Int64 { rows.listID }

  /// Appends a section; returns its id.
  package func appendSection(metadata: String) throws -> Int64 {
    try rows.insertSection(metadata: metadata, at: nil)
  }

  /// Replaces the metadata of a section appended before.
  package func setMetadata(_ metadata: String, sectionID: Int64) throws {
    try rows.setMetadata(metadata, sectionID: sectionID)
  }

  /// Appends items to a section with the prepared statement of
  /// ``StoredList/appendItems(bySection:)``.
  package func appendItems(_ values: [String], sectionID: Int64) throws {
    _ = try rows.appendItems(values: values, sectionID: sectionID)
  }
}

extension Repository {
  /// Creates the list `name` and fills it with `fill`, in one transaction: when `fill`
  /// throws, nothing is written.
  package func createList(_ name: String, filling fill: (ListWriter) throws -> Void) throws
    -> Int64
  {
    guard !name.allSatisfy(\.isWhitespace) else { throw ListStoreError.emptyName }
    // One plain transaction: a savepoint would make every insert keep a statement
    // journal. `fill`'s own errors go out as they are, not as storage errors.
    var failure: (any Error)?
    do {
      return try write { db in
        if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
          throw ListStoreError.listExists(name: name)
        }
        var rows = ListRows(db: db, listID: try ListRows.insertList(named: name, db: db))
        rows.canonicalMetadata = true
        rows.canonicalValues = true
        do {
          try fill(ListWriter(rows: rows))
        } catch {
          if !engine.isEngineError(error) && !(error is ListStoreError) { failure = error }
          throw error
        }
        return rows.listID
      }
    } catch {
      throw failure ?? error
    }
  }
}
