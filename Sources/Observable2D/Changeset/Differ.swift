import FoundationEssentials

// MARK: - The algorithm

/// How a diff pairs sections.
@usableFromInline
enum SectionPairing<Metadata, Item> {
  /// Section *i* before is section *i* after.
  case position
  /// By their `Int64` ids; `0` never pairs.
  case ids
  /// By a key; equal keys pair in order of appearance.
  case key((Observable2DArraySection<Metadata, Item>) -> AnyHashable)
}

/// Which sections of the old and new states are the same section.
@usableFromInline
struct SectionPairs {
  /// For each old section, the index of its new section, or -1 when it is deleted.
  @usableFromInline
  var oldToNew: [Int]
  /// For each new section, the index of its old section, or -1 when it is inserted.
  @usableFromInline
  var newToOld: [Int]

  @usableFromInline
  init<Metadata, Item>(
    old: [Observable2DArraySection<Metadata, Item>],
    new: [Observable2DArraySection<Metadata, Item>],
    pairing: SectionPairing<Metadata, Item>
  ) {
    oldToNew = [Int](repeating: -1, count: old.count)
    newToOld = [Int](repeating: -1, count: new.count)
    switch pairing {
    case .position:
      for index in 0..<min(old.count, new.count) {
        oldToNew[index] = index
        newToOld[index] = index
      }
    case .ids:
      pair(oldKeys: old.map { $0.id == 0 ? nil : $0.id }, newKeys: new.map(\.id))
    case .key(let key):
      pair(oldKeys: old.map(key), newKeys: new.map(key))
    }
  }

  private mutating func pair<K: Hashable>(oldKeys: [K?], newKeys: [K]) {
    // Sections are few: a queue of old indexes per key, consumed in order of appearance.
    var queues = [K: [Int]]()
    for (index, key) in oldKeys.enumerated().reversed() {
      if let key { queues[key, default: []].append(index) }
    }
    for (index, key) in newKeys.enumerated() {
      if let oldIndex = queues[key]?.popLast() {
        oldToNew[oldIndex] = index
        newToOld[index] = oldIndex
      }
    }
  }

  /// The number of items in the paired sections of one side.
  @usableFromInline
  func pairedItemCount<Metadata, Item>(
    of sections: [Observable2DArraySection<Metadata, Item>], sides: [Int]
  ) -> Int {
    var total = 0
    for index in sections.indices where sides[index] >= 0 { total += sections[index].items.count }
    return total
  }
}

/// Heckel's symbol table, built with one hash lookup per item on each side: every distinct key
/// becomes a symbol that counts its occurrences in the old and new items and chains its old
/// positions in order.
@usableFromInline
struct ItemSymbols {
  /// What the table knows of one distinct key.
  @usableFromInline
  struct Symbol {
    @usableFromInline
    var oldCount: Int32
    @usableFromInline
    var newCount: Int32
    /// The first and last old positions with this key.
    @usableFromInline
    var first: Int32
    @usableFromInline
    var last: Int32

    @inlinable
    init(at position: Int32) {
      oldCount = 1
      newCount = 0
      first = position
      last = position
    }
  }

  /// The symbol of each old item (in the flattened paired sections), or -1 without a key.
  @usableFromInline
  var oldSymbol: [Int32] = []
  /// The symbol of each new item, or -1 when no old item has its key.
  @usableFromInline
  var newSymbol: [Int32] = []
  @usableFromInline
  var symbols: [Symbol] = []
  /// The next old position with the same symbol, or -1.
  @usableFromInline
  var next: [Int32] = []
  /// Whether some key occurs more than once on a side.
  @usableFromInline
  var hasDuplicates = false

  /// Builds the table from the keys of the old and new items; items whose key equals
  /// `noKey` have none and match nothing.
  @inlinable
  init<Key: Hashable>(oldKeys: [Key], newKeys: [Key], noKey: Key? = nil) {
    var index = [Key: Int32](minimumCapacity: oldKeys.count)
    oldSymbol.reserveCapacity(oldKeys.count)
    next = [Int32](repeating: -1, count: oldKeys.count)
    for position in oldKeys.indices {
      let key = oldKeys[position]
      if key == noKey {
        oldSymbol.append(-1)
        continue
      }
      let fresh = Int32(truncatingIfNeeded: symbols.count)
      let symbol = Self.read(&index[key, default: fresh])
      let here = Int32(truncatingIfNeeded: position)
      if symbol == fresh {
        symbols.append(Symbol(at: here))
      } else {
        let slot = Int(symbol)
        symbols[slot].oldCount &+= 1
        next[Int(symbols[slot].last)] = here
        symbols[slot].last = here
        hasDuplicates = true
      }
      oldSymbol.append(symbol)
    }
    newSymbol.reserveCapacity(newKeys.count)
    for key in newKeys {
      guard key != noKey, let symbol = index[key] else {
        newSymbol.append(-1)
        continue
      }
      let slot = Int(symbol)
      symbols[slot].newCount &+= 1
      if symbols[slot].newCount > 1 { hasDuplicates = true }
      newSymbol.append(symbol)
    }
  }

  /// Reads a value through `inout`, so that `dictionary[key, default: x]` inserts `x` when the
  /// key is new with a single lookup.
  @inlinable
  static func read(_ slot: inout Int32) -> Int32 { slot }
}

/// Matches new items to old ones by their ids when no id occurs twice on a side (the usual
/// case), with one lookup per item in an ``IDTable`` (indexed by id when the old ids lie close
/// together, hashed otherwise); `0` never matches.
///
/// - Returns: For each new item, the old position it matches or -1; `nil` when an id repeats,
///   and the general symbol table must be used.
@usableFromInline
func matchUniqueIDs(old: [Int64], new: [Int64]) -> [Int32]? {
  let index = IDTable(positionsOf: old)
  guard index.repeatedID == nil else { return nil }
  var matched = [Bool](repeating: false, count: old.count)
  var newMatch = [Int32](repeating: -1, count: new.count)
  for position in new.indices {
    guard let match = index.value(for: new[position]) else { continue }
    if matched[Int(match)] { return nil }
    matched[Int(match)] = true
    newMatch[position] = match
  }
  return newMatch
}

/// Matches new items to old ones from their symbols, as Heckel's algorithm does: keys that occur
/// once on each side are anchors; neighbours of matched items with equal keys in the same
/// sections follow them (forwards, then backwards); the remaining duplicates are matched in
/// order of appearance.
///
/// - Returns: For each new item, the old position it matches, or -1.
@usableFromInline
func matchItems(
  _ symbols: ItemSymbols, oldSection: [Int32], newSection: [Int32]
) -> [Int32] {
  let oldTotal = symbols.oldSymbol.count
  let newTotal = symbols.newSymbol.count
  var newMatch = [Int32](repeating: -1, count: newTotal)
  var oldMatched = [Bool](repeating: false, count: oldTotal)
  for position in 0..<newTotal {
    let symbol = Int(symbols.newSymbol[position])
    if symbol >= 0 && symbols.symbols[symbol].oldCount == 1
      && symbols.symbols[symbol].newCount == 1
    {
      let match = symbols.symbols[symbol].first
      newMatch[position] = match
      oldMatched[Int(match)] = true
    }
  }
  guard symbols.hasDuplicates else { return newMatch }

  func extend(_ position: Int, to neighbour: Int, step: Int32) {
    guard newMatch[position] >= 0, neighbour >= 0, neighbour < newTotal,
      newMatch[neighbour] < 0, newSection[neighbour] == newSection[position]
    else { return }
    let anchor = Int(newMatch[position])
    let candidate = anchor + Int(step)
    guard candidate >= 0, candidate < oldTotal, !oldMatched[candidate],
      oldSection[candidate] == oldSection[anchor],
      symbols.oldSymbol[candidate] >= 0,
      symbols.oldSymbol[candidate] == symbols.newSymbol[neighbour]
    else { return }
    newMatch[neighbour] = Int32(truncatingIfNeeded: candidate)
    oldMatched[candidate] = true
  }
  for position in 0..<newTotal { extend(position, to: position + 1, step: 1) }
  for position in (0..<newTotal).reversed() { extend(position, to: position - 1, step: -1) }

  var cursor = symbols.symbols.map(\.first)
  for position in 0..<newTotal where newMatch[position] < 0 && symbols.newSymbol[position] >= 0 {
    let symbol = Int(symbols.newSymbol[position])
    var candidate = cursor[symbol]
    while candidate >= 0 && oldMatched[Int(candidate)] { candidate = symbols.next[Int(candidate)] }
    guard candidate >= 0 else {
      cursor[symbol] = -1
      continue
    }
    cursor[symbol] = symbols.next[Int(candidate)]
    newMatch[position] = candidate
    oldMatched[Int(candidate)] = true
  }
  return newMatch
}

/// Marks the elements of a longest strictly increasing subsequence of `values`.
///
/// - Complexity: O(*m*) when `values` is already increasing, O(*m* log *m*) otherwise.
@usableFromInline
func longestIncreasingSubsequenceMask(_ values: [Int]) -> [Bool] {
  let count = values.count
  var increasing = true
  var index = 1
  while index < count {
    if values[index - 1] >= values[index] {
      increasing = false
      break
    }
    index += 1
  }
  if increasing { return [Bool](repeating: true, count: count) }

  // Patience sorting: tails[l] is the index of the smallest tail of an increasing run of
  // length l + 1; predecessors rebuild the run.
  var tails = [Int](repeating: 0, count: count)
  var predecessor = [Int](repeating: -1, count: count)
  var length = 0
  values.withUnsafeBufferPointer { values in
    tails.withUnsafeMutableBufferPointer { tails in
      predecessor.withUnsafeMutableBufferPointer { predecessor in
        for position in 0..<count {
          let value = values[position]
          if length > 0 && values[tails[length - 1]] < value {
            // Extends the longest run: the common case when few values are out of order.
            predecessor[position] = tails[length - 1]
            tails[length] = position
            length += 1
            continue
          }
          var low = 0
          var high = length
          while low < high {
            let middle = (low + high) >> 1
            if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
          }
          if low > 0 { predecessor[position] = tails[low - 1] }
          tails[low] = position
          if low == length { length += 1 }
        }
      }
    }
  }
  var mask = [Bool](repeating: false, count: count)
  var cursor = length > 0 ? tails[length - 1] : -1
  while cursor >= 0 {
    mask[cursor] = true
    cursor = predecessor[cursor]
  }
  return mask
}

/// Builds the changeset of a diff once sections are paired and item keys symbolized; see
/// ``Changeset/diff(from:to:sectionKey:itemKey:isEqual:metadataIsEqual:)``.
@usableFromInline
struct Differ<Metadata, Item> {
  @usableFromInline
  typealias Section = Observable2DArraySection<Metadata, Item>

  @usableFromInline
  let old: [Section]
  @usableFromInline
  let new: [Section]
  @usableFromInline
  let pairs: SectionPairs
  /// The symbolized item keys, or `nil` to match items by their ids.
  @usableFromInline
  let symbols: ItemSymbols?
  @usableFromInline
  let isEqual: (Item, Item) -> Bool
  @usableFromInline
  let metadataIsEqual: (Metadata, Metadata) -> Bool
  /// The id an inserted section or item gets from the id it has in `new`; `nil` keeps it.
  @usableFromInline
  let assignID: ((Int64) -> Int64)?
  /// When set, the items whose values changed, by id, instead of comparing values.
  @usableFromInline
  let changedItemIDs: Set<Int64>?
  /// When set, the sections whose metadata changed, by id, instead of comparing metadata.
  @usableFromInline
  let changedSectionIDs: Set<Int64>?

  @usableFromInline
  var result = Changeset<Metadata, Item>()

  @inlinable
  init(
    old: [Observable2DArraySection<Metadata, Item>],
    new: [Observable2DArraySection<Metadata, Item>],
    pairs: SectionPairs, symbols: ItemSymbols?, isEqual: @escaping (Item, Item) -> Bool,
    metadataIsEqual: @escaping (Metadata, Metadata) -> Bool,
    assignID: ((Int64) -> Int64)? = nil,
    changedItemIDs: Set<Int64>? = nil,
    changedSectionIDs: Set<Int64>? = nil
  ) {
    self.old = old
    self.new = new
    self.pairs = pairs
    self.symbols = symbols
    self.isEqual = isEqual
    self.metadataIsEqual = metadataIsEqual
    self.assignID = assignID
    self.changedItemIDs = changedItemIDs
    self.changedSectionIDs = changedSectionIDs
  }

  @inlinable
  consuming func run() -> Changeset<Metadata, Item> {
    diffSections()
    diffItems()
    return result
  }

  @inlinable
  func assigned(_ id: Int64) -> Int64 {
    assignID?(id) ?? id
  }

  @inlinable
  mutating func diffSections() {
    for index in old.indices where pairs.oldToNew[index] < 0 {
      result.deletedSections.append(.init(index: index, id: old[index].id))
    }
    var pairedOld = [Int]()
    var pairedNew = [Int]()
    for index in new.indices {
      let oldIndex = pairs.newToOld[index]
      if oldIndex < 0 {
        let section = new[index]
        result.insertedSections.append(
          .init(
            index: index, id: assigned(section.id), metadata: section.metadata,
            items: itemsWithAssignedIDs(section.items)))
      } else {
        pairedOld.append(oldIndex)
        pairedNew.append(index)
      }
    }
    let stays = longestIncreasingSubsequenceMask(pairedOld)
    for position in pairedOld.indices {
      let oldIndex = pairedOld[position]
      let newIndex = pairedNew[position]
      let before = old[oldIndex]
      let after = new[newIndex].metadata
      if !stays[position] {
        result.movedSections.append(
          .init(from: oldIndex, to: newIndex, id: before.id, metadata: after))
      } else if changedSectionIDs?.contains(before.id) ?? !metadataIsEqual(before.metadata, after) {
        result.updatedSections.append(.init(index: oldIndex, id: before.id, metadata: after))
      }
    }
    result.updatedSections.sort { $0.index < $1.index }
  }

  @inlinable
  func itemsWithAssignedIDs(_ items: ItemList<Item>) -> ItemList<Item> {
    guard let assignID, items.ids.contains(where: { assignID($0) != $0 }) else { return items }
    return ItemList(entries: items.entries.lazy.map { (id: assignID($0.id), value: $0.value) })
  }

  /// The section index of each item of the paired sections of one side, flattened.
  @inlinable
  func sectionOfFlatItems(_ sections: [Section], sides: [Int]) -> [Int32] {
    var result = [Int32]()
    result.reserveCapacity(pairs.pairedItemCount(of: sections, sides: sides))
    for index in sections.indices where sides[index] >= 0 {
      result.append(
        contentsOf: repeatElement(
          Int32(truncatingIfNeeded: index), count: sections[index].items.count))
    }
    return result
  }

  @inlinable
  mutating func diffItems() {
    // Flatten both sides' paired sections: the ids in bulk, and where each section starts.
    var oldBase = [Int](repeating: 0, count: old.count)
    var oldIDs = [Int64]()
    oldIDs.reserveCapacity(pairs.pairedItemCount(of: old, sides: pairs.oldToNew))
    for index in old.indices where pairs.oldToNew[index] >= 0 {
      oldBase[index] = oldIDs.count
      old[index].items.appendIDs(to: &oldIDs)
    }
    var newBase = [Int](repeating: 0, count: new.count)
    var newIDs = [Int64]()
    newIDs.reserveCapacity(pairs.pairedItemCount(of: new, sides: pairs.newToOld))
    for index in new.indices where pairs.newToOld[index] >= 0 {
      newBase[index] = newIDs.count
      new[index].items.appendIDs(to: &newIDs)
    }
    let oldSection = sectionOfFlatItems(old, sides: pairs.oldToNew)
    let newSection = sectionOfFlatItems(new, sides: pairs.newToOld)
    let newMatch: [Int32]
    if let symbols {
      newMatch = matchItems(symbols, oldSection: oldSection, newSection: newSection)
    } else if let unique = matchUniqueIDs(old: oldIDs, new: newIDs) {
      newMatch = unique
    } else {
      newMatch = matchItems(
        ItemSymbols(oldKeys: oldIDs, newKeys: newIDs, noKey: 0), oldSection: oldSection,
        newSection: newSection)
    }
    var oldMatched = [Bool](repeating: false, count: oldIDs.count)

    // Walk the new items to list insertions and cross-section moves, and, per section, keep
    // the items that stay in it for the longest increasing subsequence.
    var stayingOldRows = [Int]()
    var stayingNewRows = [Int]()
    for newIndex in new.indices {
      let pairedOld = pairs.newToOld[newIndex]
      guard pairedOld >= 0 else { continue }
      stayingOldRows.removeAll(keepingCapacity: true)
      stayingNewRows.removeAll(keepingCapacity: true)
      let base = newBase[newIndex]
      let newItems = new[newIndex].items
      var newValues = ItemList.Reader(newItems)
      for row in 0..<newItems.count {
        let position = base &+ row
        let match = Int(newMatch[position])
        guard match >= 0 else {
          result.insertedItems.append(
            .init(
              at: IndexPath(row: row, section: newIndex), id: assigned(newIDs[position]),
              value: newValues.value(at: row)))
          continue
        }
        oldMatched[match] = true
        let fromSection = Int(oldSection[match])
        let fromRow = match &- oldBase[fromSection]
        if fromSection != pairedOld {
          result.movedItems.append(
            .init(
              from: IndexPath(row: fromRow, section: fromSection),
              to: IndexPath(row: row, section: newIndex), id: oldIDs[match],
              value: newValues.value(at: row)))
        } else {
          stayingOldRows.append(fromRow)
          stayingNewRows.append(row)
        }
      }
      // The items that stay in place are compared in ascending rows on both sides, which the
      // readers serve without a search.
      let stays = longestIncreasingSubsequenceMask(stayingOldRows)
      var oldValues = ItemList.Reader(old[pairedOld].items)
      for index in stays.indices {
        let fromRow = stayingOldRows[index]
        let toRow = stayingNewRows[index]
        let id = oldIDs[oldBase[pairedOld] + fromRow]
        if stays[index] {
          let changed =
            changedItemIDs?.contains(id)
            ?? !isEqual(oldValues.value(at: fromRow), newValues.value(at: toRow))
          guard changed else { continue }
          result.updatedItems.append(
            .init(
              at: IndexPath(row: fromRow, section: pairedOld), id: id,
              value: newValues.value(at: toRow)))
        } else {
          result.movedItems.append(
            .init(
              from: IndexPath(row: fromRow, section: pairedOld),
              to: IndexPath(row: toRow, section: newIndex), id: id,
              value: newValues.value(at: toRow)))
        }
      }
    }

    // Unmatched old items are deletions.
    for position in oldIDs.indices where !oldMatched[position] {
      let section = Int(oldSection[position])
      result.deletedItems.append(
        .init(
          at: IndexPath(row: position - oldBase[section], section: section), id: oldIDs[position]))
    }
    result.movedItems.sort { ($0.to[0], $0.to[1]) < ($1.to[0], $1.to[1]) }
    result.updatedItems.sort { ($0.at[0], $0.at[1]) < ($1.at[0], $1.at[1]) }
  }
}
