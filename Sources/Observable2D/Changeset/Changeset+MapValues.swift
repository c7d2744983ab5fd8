extension Changeset {
  /// The same changeset with every section's metadata and every item's value converted:
  /// indexes, index paths and ids stay, so the result applies to an array whose values
  /// are the converted ones wherever this one applies to the original.
  ///
  /// Used to decode a changeset of stored or received JSON into `Codable` values, and by
  /// ``Observable2DArray/mapItems(_:)``.
  ///
  /// - Parameters:
  ///   - metadata: The new metadata of the section with the given id, from its old one.
  ///   - item: The new value of the item with the given id, from its old one.
  /// - Returns: The converted changeset.
  /// - Throws: The first error a conversion throws.
  /// - Complexity: O(*n*) conversions, for *n* values and metadata in the changeset.
  @inlinable
  public func mapValues<NewMetadata, NewItem, Failure: Error>(
    metadata: (_ id: Int64, _ metadata: Metadata) throws(Failure) -> NewMetadata,
    item: (_ id: Int64, _ value: Item) throws(Failure) -> NewItem
  ) throws(Failure) -> Changeset<NewMetadata, NewItem> {
    var result = Changeset<NewMetadata, NewItem>()
    result.deletedSections = deletedSections.map { .init(index: $0.index, id: $0.id) }
    result.insertedSections.reserveCapacity(insertedSections.count)
    for section in insertedSections {
      var items = ItemList<NewItem>()
      items.reserveCapacity(section.items.count)
      for entry in section.items.entries {
        items.append(try item(entry.id, entry.value), id: entry.id)
      }
      result.insertedSections.append(
        .init(
          index: section.index, id: section.id,
          metadata: try metadata(section.id, section.metadata), items: items))
    }
    result.movedSections.reserveCapacity(movedSections.count)
    for section in movedSections {
      result.movedSections.append(
        .init(
          from: section.from, to: section.to, id: section.id,
          metadata: try metadata(section.id, section.metadata)))
    }
    result.updatedSections.reserveCapacity(updatedSections.count)
    for section in updatedSections {
      result.updatedSections.append(
        .init(
          index: section.index, id: section.id, metadata: try metadata(section.id, section.metadata)
        ))
    }
    result.deletedItems = deletedItems.map { .init(at: $0.at, id: $0.id) }
    result.insertedItems.reserveCapacity(insertedItems.count)
    for entry in insertedItems {
      result.insertedItems.append(
        .init(at: entry.at, id: entry.id, value: try item(entry.id, entry.value)))
    }
    result.movedItems.reserveCapacity(movedItems.count)
    for entry in movedItems {
      result.movedItems.append(
        .init(from: entry.from, to: entry.to, id: entry.id, value: try item(entry.id, entry.value)))
    }
    result.updatedItems.reserveCapacity(updatedItems.count)
    for entry in updatedItems {
      result.updatedItems.append(
        .init(at: entry.at, id: entry.id, value: try item(entry.id, entry.value)))
    }
    return result
  }
}
