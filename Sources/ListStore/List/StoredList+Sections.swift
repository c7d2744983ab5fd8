import FoundationEssentials
import Observable2D
import SQLiteKit

extension StoredList {
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
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/sectionOutOfRange(index:count:)``,
  ///   ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``.
  @discardableResult
  public func moveSection(from: Int, to: Int) throws(ListStoreError) -> Bool {
    try writeRows { rows in try rows.moveSection(id: rows.sectionID(at: from), to: to) }
  }

  /// Moves a section so that it ends at index `to`.
  /// - Parameters:
  ///   - id: The section's id.
  ///   - to: Its index after the move.
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``,
  ///   ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``.
  @discardableResult
  public func moveSection(id: Int64, to: Int) throws(ListStoreError) -> Bool {
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
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  @discardableResult
  public func moveSection(id: Int64, before neighbor: Int64) throws(ListStoreError) -> Bool {
    try writeRows { rows in try rows.moveSection(id: id, nextTo: neighbor, after: false) }
  }

  /// Moves a section right after another one.
  /// - Parameters:
  ///   - id: The id of the section to move.
  ///   - neighbor: The id of the section it should follow.
  /// - Returns: Whether it moved: `false` when it was there already, and then nothing is
  ///   written and observers see nothing.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``.
  /// - Complexity: O(log *s*) for *s* sections.
  @discardableResult
  public func moveSection(id: Int64, after neighbor: Int64) throws(ListStoreError) -> Bool {
    try writeRows { rows in try rows.moveSection(id: id, nextTo: neighbor, after: true) }
  }
}
