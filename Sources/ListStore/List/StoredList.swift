import FoundationEssentials
import Observable2D
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

  func writeRows<Result: Sendable>(_ body: (RowStore) throws -> Result)
    throws(ListStoreError)
    -> Result
  {
    try repository.write { db in
      try RowStore.checked(db: db, listID: id, name: name) { rows in
        var rows = rows
        rows.canonicalMetadata = Metadata.self != RawJSON.self
        rows.canonicalValues = Item.self != RawJSON.self
        return try body(rows)
      }
    }
  }

  func read<Result: Sendable>(_ body: (RowStore) throws -> Result) throws(ListStoreError)
    -> Result
  {
    try repository.read { db in try RowStore.checked(db: db, listID: id, name: name, body) }
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

  static func split(_ indexPath: IndexPath) throws(ListStoreError) -> (
    section: Int, row: Int
  ) {
    guard indexPath.count == 2 else { throw .invalidIndexPath("\(Array(indexPath))") }
    return (indexPath[0], indexPath[1])
  }
}
