import FoundationEssentials
import ReactiveCore
import SQLiteKit
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// MARK: - Lists

/// A list's name and size, as ``Repository/lists()`` reports it.
public struct ListSummary: Sendable, Hashable {
  /// The list's id (stable for its lifetime).
  public var id: Int64
  /// The list's unique name.
  public var name: String
  /// How many sections it has.
  public var sectionCount: Int
  /// How many items its sections hold in all.
  public var itemCount: Int

  /// Creates a summary (a remote client reads one from its server).
  ///
  /// - Parameters:
  ///   - id: The list's id.
  ///   - name: The list's name.
  ///   - sectionCount: How many sections it has.
  ///   - itemCount: How many items its sections hold in all.
  public init(id: Int64, name: String, sectionCount: Int, itemCount: Int) {
    self.id = id
    self.name = name
    self.sectionCount = sectionCount
    self.itemCount = itemCount
  }
}

extension Repository {
  /// Creates an empty list.
  /// - Parameter name: A unique, non-empty name, stored verbatim.
  /// - Returns: The new list's id.
  /// - Throws: ``ListStoreError/listExists(name:)``, ``ListStoreError/emptyName``, ``ListStoreError/invalidName(_:)``.
  @discardableResult
  public func createList(_ name: String) throws(ListStoreError) -> Int64 {
    try checkListName(name)
    return try write { db in
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
        throw ListStoreError.listExists(name: name)
      }
      return try RowStore.insertList(named: name, db: db)
    }
  }

  /// Creates an empty list and returns a typed handle on it.
  /// - Parameters:
  ///   - name: A unique, non-empty name.
  ///   - metadata: The type of the sections' metadata.
  ///   - item: The type of the items.
  /// - Returns: The list.
  /// - Throws: ``ListStoreError/listExists(name:)``, ``ListStoreError/emptyName``, ``ListStoreError/invalidName(_:)``.
  public func createList<Metadata: Codable, Item: Codable>(
    _ name: String, metadata: Metadata.Type, item: Item.Type
  ) throws(ListStoreError) -> StoredList<Metadata, Item> {
    StoredList(repository: self, id: try createList(name), name: name)
  }

  /// A typed handle on an existing list.
  /// - Parameters:
  ///   - name: The list's name.
  ///   - metadata: The type its sections' metadata decodes to.
  ///   - item: The type its items decode to.
  /// - Returns: The list.
  /// - Throws: ``ListStoreError/listNotFound(name:)``.
  public func list<Metadata: Codable, Item: Codable>(
    _ name: String, metadata: Metadata.Type, item: Item.Type
  ) throws(ListStoreError) -> StoredList<Metadata, Item> {
    StoredList(repository: self, id: try listID(named: name), name: name)
  }

  /// The id of the list named `name`.
  /// - Parameter name: The list's name.
  /// - Returns: Its id.
  /// - Throws: ``ListStoreError/listNotFound(name:)``.
  public func listID(named name: String) throws(ListStoreError) -> Int64 {
    let id = try read { db in try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) }
    guard let id else { throw .listNotFound(name: name) }
    return id
  }

  /// Deletes a list with all its sections and items.
  /// - Parameter name: The list's name.
  /// - Throws: ``ListStoreError/listNotFound(name:)``.
  public func deleteList(_ name: String) throws(ListStoreError) {
    try write { db in
      guard try db.run("DELETE FROM lists WHERE name = ?", name) > 0 else {
        throw ListStoreError.listNotFound(name: name)
      }
    }
  }

  /// Renames a list; its id, sections and items stay as they are.
  /// - Parameters:
  ///   - name: The current name.
  ///   - newName: A unique, non-empty new name.
  /// - Throws: ``ListStoreError/listNotFound(name:)``,
  ///   ``ListStoreError/listExists(name:)``, ``ListStoreError/emptyName``, ``ListStoreError/invalidName(_:)``.
  public func renameList(_ name: String, to newName: String) throws(ListStoreError) {
    try checkListName(newName)
    try write { db in
      guard let id = try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) else {
        throw ListStoreError.listNotFound(name: name)
      }
      if newName == name { return }
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", newName) != nil {
        throw ListStoreError.listExists(name: newName)
      }
      try db.run("UPDATE lists SET name = ? WHERE id = ?", newName, id)
    }
  }

  /// Every list, by name, with its section and item counts.
  /// - Returns: The lists in name order.
  /// - Throws: ``ListStoreError`` when the database cannot be read.
  public func lists() throws(ListStoreError) -> [ListSummary] {
    try read { db in
      var result: [ListSummary] = []
      let statement = try db.cached(db.dialect.listsWithCounts)
      try statement.forEachRow { row in
        result.append(
          ListSummary(
            id: row.int64(at: 0), name: row.string(at: 1), sectionCount: row.int(at: 2),
            itemCount: row.int(at: 3)))
      }
      return result
    }
  }
}
