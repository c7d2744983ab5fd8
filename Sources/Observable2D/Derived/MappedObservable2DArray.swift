extension Observable2DArray {
  /// An array of this one's items transformed by `transform`, with the same sections,
  /// metadata and ids, following every change of this array with the same changesets, their
  /// values transformed (Bond's `mapCollection`).
  ///
  /// `transform` runs once per item to start, then once per inserted, moved or updated item
  /// of each change — never over the whole array again, which is why Bond's
  /// `lazyMapCollection` has no counterpart here. A transform worth running only for the
  /// rows on screen belongs in the bond's `cellForRow` instead.
  ///
  /// ```swift
  /// let titles = cities.mapItems { "\($0.name) (\($0.population))" }
  /// ```
  ///
  /// Its events are delivered as part of this array's delivery, and `transform` is called
  /// there, one call at a time (see ``FilteredObservable2DArray`` for the threading).
  ///
  /// - Parameter transform: The value an item shows as.
  /// - Returns: The mapped array; it keeps this one alive.
  /// - Complexity: O(*n*) to start; then O(*k*) transforms for a change of *k* rows.
  public func mapItems<Mapped>(_ transform: @escaping (Item) -> Mapped)
    -> Observable2DArray<Metadata, Mapped>
  {
    DerivedObservable2DArray(
      source: self, derivation: MapDerivation<Metadata, Item, Mapped>(transform: transform))
  }
}

/// The rule of ``Observable2DArray/mapItems(_:)``: the same changesets, values transformed.
@usableFromInline
struct MapDerivation<Metadata, SourceItem, Item>: Derivation {
  @usableFromInline
  typealias SourceMetadata = Metadata
  @usableFromInline
  typealias Section = Observable2DArraySection<Metadata, Item>
  @usableFromInline
  typealias SourceSection = Observable2DArraySection<Metadata, SourceItem>
  @usableFromInline
  typealias SourceChangeset = Changeset<Metadata, SourceItem>

  @usableFromInline
  let transform: (SourceItem) -> Item

  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section] {
    source.map(mapped)
  }

  @inlinable
  func mapped(_ section: SourceSection) -> Section {
    Section(
      id: section.id, metadata: section.metadata,
      items: ItemList(entries: section.items.entries.lazy.map { ($0.id, transform($0.value)) }))
  }

  /// Mapping costs the same for any changeset: never rebuild.
  @inlinable
  func work(for changeset: SourceChangeset) -> Int {
    0
  }

  @inlinable
  mutating func derive(_ changeset: SourceChangeset, into sections: inout [Section])
    -> (changeset: Changeset<Metadata, Item>, complete: Bool)
  {
    let result = changeset.mapValues(metadata: { $1 }, item: { transform($1) })
    result.applyWithoutValidation(to: &sections)
    return (result, true)
  }
}
