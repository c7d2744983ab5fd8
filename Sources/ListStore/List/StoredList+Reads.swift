public import FoundationEssentials
public import Observable2D
import SQLiteKit

extension StoredList {
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
        return try StoredListObserver<Metadata, Item>.load(listID: listID, db: db).sections
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
  /// exports a list of any size. `position`, first, gets the position in the change log
  /// that the read reflects; `item` is called for the items of the section last given to
  /// `section`; `endSection` after its last item.
  package func forEachStoredRow(
    position: ((_ seq: Int64) throws -> Void)? = nil,
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
        if let position {
          let seq = try ChangeLog.lastSeq(db: rows.db)
          try guarded { try position(seq) }
        }
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
  /// The ids of the list's sections, in order.
  package func sectionIDs() throws(ListStoreError) -> [Int64] {
    try read { rows in try rows.sectionIDs() }
  }

  /// The ids of the list's first `limit` items, in order; the cost grows with `limit`,
  /// not with the list.
  package func leadingItemIDs(limit: Int) throws(ListStoreError) -> [Int64] {
    try read { rows in try rows.leadingItemIDs(limit: limit) }
  }
}
