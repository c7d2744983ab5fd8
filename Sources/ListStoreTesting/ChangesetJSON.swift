import ListStore
import ListStoreFormats

/// `changeset` as a line of `liststore watch --json`: `{"changes":{…}}`, with the values
/// and metadata as ListStore stores them.
/// - Throws: `ListStoreError.encodingFailed(_:)` when a value does not encode.
func changesJSON<Metadata: Encodable, Item: Encodable>(_ changeset: Changeset<Metadata, Item>)
  throws(ListStoreError) -> String
{
  func raw<Value: Encodable>(_ value: Value) throws(ListStoreError) -> RawJSON {
    if let raw = value as? RawJSON { return raw }
    return RawJSON(try ValueCoder.encode(value))
  }
  var converted = Changeset<RawJSON, RawJSON>()
  for entry in changeset.deletedSections {
    converted.deletedSections.append(.init(index: entry.index, id: entry.id))
  }
  for entry in changeset.insertedSections {
    var items: [(id: Int64, value: RawJSON)] = []
    for item in entry.items.entries { items.append((item.id, try raw(item.value))) }
    converted.insertedSections.append(
      .init(index: entry.index, id: entry.id, metadata: try raw(entry.metadata), items: items))
  }
  for entry in changeset.movedSections {
    converted.movedSections.append(
      .init(from: entry.from, to: entry.to, id: entry.id, metadata: try raw(entry.metadata)))
  }
  for entry in changeset.updatedSections {
    converted.updatedSections.append(
      .init(index: entry.index, id: entry.id, metadata: try raw(entry.metadata)))
  }
  for entry in changeset.deletedItems {
    converted.deletedItems.append(.init(at: entry.at, id: entry.id))
  }
  for entry in changeset.insertedItems {
    converted.insertedItems.append(.init(at: entry.at, id: entry.id, value: try raw(entry.value)))
  }
  for entry in changeset.movedItems {
    converted.movedItems.append(
      .init(from: entry.from, to: entry.to, id: entry.id, value: try raw(entry.value)))
  }
  for entry in changeset.updatedItems {
    converted.updatedItems.append(.init(at: entry.at, id: entry.id, value: try raw(entry.value)))
  }
  return Rendering.json(changes: converted)
}
