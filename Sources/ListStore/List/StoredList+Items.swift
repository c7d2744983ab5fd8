public import FoundationEssentials
import Observable2D
import SQLiteKit

extension StoredList {
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
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/itemOutOfRange(section:row:count:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  @discardableResult
  public func moveItem(from: IndexPath, to: IndexPath) throws(ListStoreError) -> Bool {
    let source = try Self.split(from)
    let target = try Self.split(to)
    return try writeRows { rows in
      try rows.moveItem(
        id: rows.itemID(section: source.section, row: source.row), toSection: target.section,
        row: target.row)
    }
  }

  /// Moves an item so that it ends at `to`.
  /// - Parameters:
  ///   - id: The item's id.
  ///   - to: Its index path after the move.
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``.
  @discardableResult
  public func moveItem(id: Int64, to: IndexPath) throws(ListStoreError) -> Bool {
    let target = try Self.split(to)
    return try writeRows { rows in
      try rows.moveItem(id: id, toSection: target.section, row: target.row)
    }
  }

  /// Moves an item right after another one, within its section or to the other's.
  /// - Parameters:
  ///   - id: The id of the item to move.
  ///   - neighbor: The id of the item it should follow.
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  @discardableResult
  public func moveItem(id: Int64, after neighbor: Int64) throws(ListStoreError) -> Bool {
    try writeRows { rows in try rows.moveItem(id: id, nextTo: neighbor, after: true) }
  }

  /// Moves an item right before another one, within its section or to the other's.
  /// - Parameters:
  ///   - id: The id of the item to move.
  ///   - neighbor: The id of the item it should precede.
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``.
  /// - Complexity: O(log *n*).
  @discardableResult
  public func moveItem(id: Int64, before neighbor: Int64) throws(ListStoreError) -> Bool {
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
}
