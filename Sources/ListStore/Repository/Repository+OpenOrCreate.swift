extension Repository {
  /// A typed handle on the list named `name`, creating it empty first when there is none
  /// and `createIfMissing` is true — in one transaction, so that two programs starting at
  /// once end up with one list.
  ///
  /// ```swift
  /// let cities = try repository.list(
  ///   "cities", metadata: SectionMetadata.self, item: City.self, createIfMissing: true)
  /// if try cities.numberOfSections() == 0 {  // new: fill it
  ///   try cities.appendSection(SectionMetadata(header: "Cities"))
  /// }
  /// ```
  /// - Parameters:
  ///   - name: The list's name; a new list's must not be blank.
  ///   - metadata: The type its sections' metadata decodes to.
  ///   - item: The type its items decode to.
  ///   - createIfMissing: Whether a missing list is created; when false this is
  ///     ``list(_:metadata:item:)``.
  /// - Returns: The list.
  /// - Throws: ``ListStoreError/listNotFound(name:)`` when the list is missing and may not
  ///   be created, ``ListStoreError/emptyName``, ``ListStoreError/invalidName(_:)``, or a storage error.
  public func list<Metadata: Codable, Item: Codable>(
    _ name: String, metadata: Metadata.Type, item: Item.Type, createIfMissing: Bool
  ) throws(ListStoreError) -> StoredList<Metadata, Item> {
    guard createIfMissing else { return try list(name, metadata: metadata, item: item) }
    let id = try write { db in
      if let id = try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) { return id }
      // A list that exists opens whatever its name; a new one's name is checked.
      try checkListName(name)
      return try RowStore.insertList(named: name, db: db)
    }
    return StoredList(repository: self, id: id, name: name)
  }
}
