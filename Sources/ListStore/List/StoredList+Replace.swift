import FoundationEssentials
public import Observable2D

extension StoredList {
  /// The list's state as the type of the whole array.
  public typealias Section = Observable2DArraySection<Metadata, Item>

  /// Makes the stored list equal to `sections`, in one transaction, with the fewest
  /// row writes: declarative sync, as Bond's `replace(with:performDiff:)` does for an
  /// array in memory.
  ///
  /// Sections and items of `sections` are matched with the stored rows by their ids.
  /// A section with id `0` (no id) takes the first stored section, in order, with the
  /// same metadata (the same JSON text) that no id of `sections` claims. An item with id
  /// `0` takes the first stored item of its section (once the section is matched) with
  /// the same value that no id of `sections` claims. Both pair one to one, in order;
  /// what is left unpaired is new. Then
  /// `Changeset.diffByID(from:to:isEqual:metadataIsEqual:)` of the stored list and
  /// `sections` (values compared as the JSON text they are stored as) decides what to
  /// write, and each of its entries is one row write: a row whose value changed is one
  /// update, a row that moved is one position update (the smallest number of moves:
  /// rows in a longest run that keeps its order stay), and unchanged rows are not
  /// written at all. Observers receive exactly that changeset, which is also returned,
  /// with the ids the inserted rows got.
  ///
  /// An id that is not one of this list's rows (deleted meanwhile, say, or taken from
  /// another list) is a new row too: it gets a new id, since ids are never reused. An
  /// item whose id is a row of a section that `sections` drops moves out of it rather
  /// than being deleted and inserted again.
  ///
  /// ```swift
  /// var state = try cities.sections()
  /// state[0].items.append(City(name: "Rome"), id: 0)  // a new row
  /// state[0].items.remove(at: 0)
  /// try cities.replace(with: state)  // two row writes, one changeset
  /// ```
  ///
  /// - Parameters:
  ///   - sections: The list as it should be.
  ///   - performDiff: When `false`, every stored section is deleted and the new ones are
  ///     inserted with new ids, whatever ids `sections` carries: no diff, and one
  ///     changeset that deletes and inserts whole sections.
  /// - Returns: The changeset the observers receive (empty when nothing changed).
  /// - Throws: ``ListStoreError/duplicateID(kind:id:)`` when `sections` names a section
  ///   or an item id more than once, ``ListStoreError/listNotFound(name:)``,
  ///   ``ListStoreError/encodingFailed(_:)``, or a storage error; nothing is written
  ///   then.
  /// - Complexity: O(*n* + *m* log *m*) for *n* rows, *m* of them in sections that
  ///   both states have; the writes are proportional to the differences.
  @discardableResult
  public func replace(with sections: [Section], performDiff: Bool = true) throws(ListStoreError)
    -> Changeset<Metadata, Item>
  {
    let target = try Self.syncState(of: sections)
    if performDiff {
      let changeset = try writeRows { rows in try ReplacePlanner.run(rows: rows, to: target) }
      return Self.typed(changeset, sections: sections, state: target)
    }
    let (deleted, inserted) = try writeRows {
      rows -> (deleted: [Int64], inserted: [(id: Int64, items: [Int64])]) in
      let deleted = try rows.syncState { _, _, _ in true }.sectionIDs
      for id in deleted { try rows.deleteSection(id: id) }
      var inserted: [(id: Int64, items: [Int64])] = []
      for section in 0..<target.sectionCount {
        let id = try rows.insertSection(metadata: target.metadata.string(section), at: nil)
        let values = target.items(of: section).map { target.values.string($0) }
        inserted.append((id, try rows.appendItems(values: values, sectionID: id)))
      }
      return (deleted, inserted)
    }
    var changeset = Changeset<Metadata, Item>()
    changeset.deletedSections = deleted.enumerated().map { .init(index: $0.offset, id: $0.element) }
    changeset.insertedSections = zip(sections, inserted).enumerated().map { index, pair in
      .init(
        index: index, id: pair.1.id, metadata: pair.0.metadata,
        items: ItemList(entries: zip(pair.1.items, pair.0.items).lazy.map { ($0, $1) }))
    }
    return changeset
  }

  /// `sections` as the JSON text they are stored as.
  private static func syncState(of sections: [Section]) throws(ListStoreError) -> SyncState {
    let encodeMetadata = ValueCoder.encoder(for: Metadata.self)
    let encodeItem = ValueCoder.encoder(for: Item.self)
    // Text given as JSON is stored minified (SQLite's `json()`): compare it so.
    let rawMetadata = Metadata.self == RawJSON.self
    let rawItems = Item.self == RawJSON.self
    var state = SyncState()
    let count = sections.reduce(0) { $0 + $1.items.count }
    state.itemIDs.reserveCapacity(count)
    // The common case, `String` items: their JSON in one go, without a string made per value.
    let strings = sections.compactMap { $0.items as? ItemList<String> }
    let allStrings = !sections.isEmpty && strings.count == sections.count
    if allStrings {
      state.values = PackedTexts(jsonStrings: strings)
    } else {
      state.values.reserveCapacity(texts: count, bytes: count * 16)
    }
    for section in sections {
      let metadata = try encodeMetadata(section.metadata)
      state.appendSection(
        id: section.id, metadata: rawMetadata ? JSONText.minified(metadata) : metadata)
      if allStrings {
        state.itemIDs.append(contentsOf: section.items.ids)
        continue
      }
      for entry in section.items.entries {
        let value = try encodeItem(entry.value)
        state.itemIDs.append(entry.id)
        state.values.append(rawItems ? JSONText.minified(value) : value)
      }
    }
    state.finish()
    return state
  }

  /// The sync's changeset with the values of `sections` in place of indexes.
  private static func typed(
    _ changeset: Changeset<Int32, Int32>, sections: [Section], state: SyncState
  ) -> Changeset<Metadata, Item> {
    func item(at path: IndexPath) -> Item { sections[path[0]].items[path[1]] }
    func item(flat: Int32) -> Item {
      let index = Int(flat)
      let section = state.section(ofItem: index)
      return sections[section].items[index - state.itemStarts[section]]
    }
    var result = Changeset<Metadata, Item>()
    result.deletedSections = changeset.deletedSections.map { .init(index: $0.index, id: $0.id) }
    result.insertedSections = changeset.insertedSections.map { entry in
      .init(
        index: entry.index, id: entry.id, metadata: sections[entry.index].metadata,
        items: ItemList(
          entries: zip(entry.items.ids, sections[entry.index].items).lazy.map { ($0, $1) }))
    }
    result.movedSections = changeset.movedSections.map {
      .init(from: $0.from, to: $0.to, id: $0.id, metadata: sections[$0.to].metadata)
    }
    result.updatedSections = changeset.updatedSections.map {
      .init(index: $0.index, id: $0.id, metadata: sections[Int($0.metadata)].metadata)
    }
    result.deletedItems = changeset.deletedItems.map { .init(at: $0.at, id: $0.id) }
    result.insertedItems = changeset.insertedItems.map {
      .init(at: $0.at, id: $0.id, value: item(at: $0.at))
    }
    result.movedItems = changeset.movedItems.map {
      .init(from: $0.from, to: $0.to, id: $0.id, value: item(at: $0.to))
    }
    result.updatedItems = changeset.updatedItems.map {
      .init(at: $0.at, id: $0.id, value: item(flat: $0.value))
    }
    return result
  }
}
