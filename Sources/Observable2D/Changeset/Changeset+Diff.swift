import FoundationEssentials

// MARK: - Public entry points

extension Changeset {
  /// How ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` pairs sections.
  ///
  /// The default, `nil`, pairs them **by position**: section *i* before is section *i* after,
  /// extra old sections are deleted and extra new ones inserted, no section is ever reported as
  /// moved, and a changed header is an update. Pass a key (for example
  /// `{ $0.metadata.header }`) to detect inserted, deleted and moved sections instead.
  public typealias SectionKey = (Section) -> AnyHashable

  /// Computes the changeset that turns `old` into `new`, matching items by a key.
  ///
  /// The algorithm is Heckel's idea of matching by hashing (O(*n*)) followed by a minimal set of
  /// moves:
  /// 1. Sections are paired by `sectionKey` (see ``SectionKey``; by position when `nil`).
  ///    Unpaired old sections are deleted, unpaired new ones inserted with all their items.
  ///    Among paired sections, those outside a longest increasing subsequence of their old
  ///    indexes (taken in new order) are moves; the others keep their place.
  /// 2. Items of paired sections are matched by `itemKey` across the whole array, as Heckel
  ///    does: keys that occur once on each side match; neighbours with equal keys of matched
  ///    items (in the same sections) follow them; remaining duplicates match in order of
  ///    appearance. Unmatched old items are deleted, unmatched new ones inserted. Items of
  ///    deleted or inserted sections are never listed (they go or come with their section).
  /// 3. A matched item that changed section is a move. Within each paired section, matched
  ///    items move only if they are outside a longest increasing subsequence of their old rows
  ///    (patience sorting, O(*m* log *m*)): for a given matching the number of moves is the
  ///    smallest possible, so moving one item to the front gives one move, not *n* − 1. With
  ///    unique keys (ids) the matching is forced and the result is minimal.
  /// 4. A matched item whose value differs by `isEqual` is an update, or, when it also moves,
  ///    a move carrying the new value. Sections likewise with `metadataIsEqual`; when that is
  ///    `nil`, metadata is compared with `==` if it is `Equatable` at run time, and otherwise
  ///    (a tuple, say) every paired section is reported as updated so that no change is lost.
  ///
  /// Matched items are named by their ids in `old`; inserted ones carry their ids in `new`. So
  /// `try changeset.applied(to: old) == new` holds when `new` gives matched items the same
  /// ids as `old` (as a copy edited by the program does, and always in ``diffByID(from:to:)``).
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - itemKey: The identity of an item: items with equal keys are the same item.
  ///   - isEqual: Whether two values of the same item are equal (no update needed).
  ///   - metadataIsEqual: Whether two metadata values are equal; see step 4.
  /// - Returns: A changeset that lists only the differences and passes
  ///   ``validate(against:)`` for `old`.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*) for *n* items, *s* sections and *m* items
  ///   that stay in their section, with one hash per item on each side; the result has as many
  ///   entries as there are differences.
  @inlinable
  public static func diff<ItemKey: Hashable>(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    itemKey: (Item) -> ItemKey,
    isEqual: (Item, Item) -> Bool,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset {
    let pairs = SectionPairs(old: old, new: new, pairing: sectionKey.map { .key($0) } ?? .position)
    var oldKeys = [ItemKey]()
    oldKeys.reserveCapacity(pairs.pairedItemCount(of: old, sides: pairs.oldToNew))
    for index in old.indices where pairs.oldToNew[index] >= 0 {
      for value in old[index].items { oldKeys.append(itemKey(value)) }
    }
    var newKeys = [ItemKey]()
    newKeys.reserveCapacity(pairs.pairedItemCount(of: new, sides: pairs.newToOld))
    for index in new.indices where pairs.newToOld[index] >= 0 {
      for value in new[index].items { newKeys.append(itemKey(value)) }
    }
    let symbols = ItemSymbols(oldKeys: oldKeys, newKeys: newKeys)
    return withoutActuallyEscaping(isEqual) { isEqual in
      Differ(
        old: old, new: new, pairs: pairs, symbols: symbols, isEqual: isEqual,
        metadataIsEqual: metadataIsEqual ?? dynamicMetadataEquality
      ).run()
    }
  }

  /// Computes the changeset that turns `old` into `new`, matching items by a key and comparing
  /// their values with `==`.
  ///
  /// See ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the algorithm.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - itemKey: The identity of an item: items with equal keys are the same item.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diff<ItemKey: Hashable>(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    itemKey: (Item) -> ItemKey,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Equatable {
    diff(
      from: old, to: new, sectionKey: sectionKey, itemKey: itemKey, isEqual: ==,
      metadataIsEqual: metadataIsEqual)
  }

  /// Computes the changeset that turns `old` into `new`, matching items by their value.
  ///
  /// Equal values are the same item (duplicates are matched in order), so there are never
  /// updates, only insertions, deletions and moves. See
  /// ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the algorithm.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diff(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Hashable {
    diff(
      from: old, to: new, sectionKey: sectionKey, itemKey: { $0 }, isEqual: ==,
      metadataIsEqual: metadataIsEqual)
  }

  /// Computes the changeset that turns `old` into `new`, matching items by their `id`
  /// (`Identifiable`) and comparing values with `==`.
  ///
  /// See ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the algorithm.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diff(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Identifiable & Equatable {
    diff(
      from: old, to: new, sectionKey: sectionKey, itemKey: { $0.id }, isEqual: ==,
      metadataIsEqual: metadataIsEqual)
  }

  /// Computes the changeset that turns `old` into `new`, matching items by their `id`
  /// (`Identifiable` wins over `Hashable`) and comparing values with `==`.
  ///
  /// See ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the algorithm.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diff(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Identifiable & Hashable {
    diff(
      from: old, to: new, sectionKey: sectionKey, itemKey: { $0.id }, isEqual: ==,
      metadataIsEqual: metadataIsEqual)
  }

  /// Computes the changeset that turns `old` into `new`, matching items by their `id`
  /// (`Identifiable`) and comparing values with `isEqual`.
  ///
  /// See ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)`` for the algorithm.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - sectionKey: How sections are paired; `nil` pairs them by position.
  ///   - isEqual: Whether two values of the same item are equal.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diff(
    from old: [Section],
    to new: [Section],
    sectionKey: SectionKey? = nil,
    isEqual: (Item, Item) -> Bool,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Identifiable {
    diff(
      from: old, to: new, sectionKey: sectionKey, itemKey: { $0.id }, isEqual: isEqual,
      metadataIsEqual: metadataIsEqual)
  }

  /// Computes the changeset that turns `old` into `new`, matching sections and items by the
  /// `Int64` ids they carry.
  ///
  /// This is how an observer resynchronises with a store that names rows by id. Ids equal to
  /// `0` ("not assigned yet") never match. Values are compared with `isEqual`, metadata with
  /// `metadataIsEqual` as described in
  /// ``diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)``, which also describes the
  /// algorithm. When ids are unique on each side, `try changeset.applied(to: old) == new`.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - isEqual: Whether two values of the same item are equal.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diffByID(
    from old: [Section],
    to new: [Section],
    isEqual: (Item, Item) -> Bool,
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset {
    let pairs = SectionPairs(old: old, new: new, pairing: .ids)
    return withoutActuallyEscaping(isEqual) { isEqual in
      Differ(
        old: old, new: new, pairs: pairs, symbols: nil, isEqual: isEqual,
        metadataIsEqual: metadataIsEqual ?? dynamicMetadataEquality
      ).run()
    }
  }

  /// Computes the changeset that turns `old` into `new`, matching sections and items by the
  /// `Int64` ids they carry and comparing values with `==`.
  ///
  /// See ``diffByID(from:to:isEqual:metadataIsEqual:)``.
  ///
  /// - Parameters:
  ///   - old: The state before.
  ///   - new: The state after.
  ///   - metadataIsEqual: Whether two metadata values are equal.
  /// - Returns: A changeset that lists only the differences.
  /// - Complexity: O(*n* + *s* log *s* + *m* log *m*).
  @inlinable
  public static func diffByID(
    from old: [Section],
    to new: [Section],
    metadataIsEqual: ((Metadata, Metadata) -> Bool)? = nil
  ) -> Changeset where Item: Equatable {
    diffByID(from: old, to: new, isEqual: ==, metadataIsEqual: metadataIsEqual)
  }
}

// MARK: - Equality without a constraint

extension Equatable {
  /// `self == other` when `other` has the same type.
  fileprivate func isEqual(toAny other: Any) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}

/// `lhs == rhs` when their dynamic type is `Equatable`; `false` otherwise, so that a caller
/// never loses a change it cannot see.
@usableFromInline
func dynamicallyEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool {
  guard let lhs = lhs as? any Equatable else { return false }
  return lhs.isEqual(toAny: rhs)
}

extension Changeset {
  /// Compares metadata with `==` when its dynamic type is `Equatable`; otherwise reports a
  /// difference, so that the diff never loses a change it cannot see.
  @usableFromInline
  static func dynamicMetadataEquality(_ lhs: Metadata, _ rhs: Metadata) -> Bool {
    dynamicallyEqual(lhs, rhs)
  }
}
