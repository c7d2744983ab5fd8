import FoundationEssentials
import Observable2D
import SQLiteKit

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
    try checkListName(name)
    return try write { db in
      if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
        throw ListStoreError.listExists(name: name)
      }
      let rows = RowStore(db: db, listID: try RowStore.insertList(named: name, db: db))
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
  private let rows: RowStore

  fileprivate init(rows: RowStore) { self.rows = rows }

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
    try checkListName(name)
    // One plain transaction: a savepoint would make every insert keep a statement
    // journal. `fill`'s own errors go out as they are, not as storage errors.
    var failure: (any Error)?
    do {
      return try write { db in
        if try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) != nil {
          throw ListStoreError.listExists(name: name)
        }
        var rows = RowStore(db: db, listID: try RowStore.insertList(named: name, db: db))
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

extension StoredList {
  /// Whether the list changed after position `seq` of the change log (see
  /// ``Repository/changeLogPosition()``), read in the transaction under way when there is
  /// one (so that a check and the writes after it are one atomic step): `nil` when that
  /// can no longer be told, because the log was pruned past `seq` or `seq` is ahead of
  /// the database (a restored backup). It reads the log entries after `seq`, a page at a
  /// time, and stops at the first that concerns the list.
  /// - Throws: ``ListStoreError`` when the database cannot be read.
  package func hasChanged(after seq: Int64) throws(ListStoreError) -> Bool? {
    try repository.write { db -> Bool? in
      let (last, horizon) = try ChangeLog.lastSeqAndHorizon(db: db)
      guard seq <= last, seq >= horizon else { return nil }
      var position = seq
      while true {
        let page = try ChangeLog.page(after: position, lists: [id], db: db)
        if !page.entries.isEmpty { return true }
        guard page.isFull, let next = page.lastSeq else { return false }
        position = next
      }
    }
  }
}
