/// The items of a sectioned source in one order, section after section: where an item
/// stands among all of them. Arrays that reorder items across sections (one sorted
/// section, groups) break ties and order their groups by it.
@usableFromInline
struct FlatOrder {
  @usableFromInline
  var ids = IDSequence()
  /// Per source section, its number of items.
  @usableFromInline
  var counts: [Int] = []
  @usableFromInline
  var starts = PrefixSums([])

  /// Creates the order of `sections`' items.
  ///
  /// - Complexity: O(*n*).
  @inlinable
  init<Metadata, Item>(_ sections: [Observable2DArraySection<Metadata, Item>]) {
    ids = IDSequence(sections.flatMap(\.items.ids))
    counts = sections.map(\.items.count)
    starts = PrefixSums(counts)
  }

  /// Creates an empty order.
  @inlinable
  init() {}

  /// The position among all items of the item at `row` of `section`.
  @inlinable
  func position(section: Int, row: Int) -> Int {
    starts.sum(before: section) + row
  }

  /// The position among all items of item `id`.
  @inlinable
  func position(of id: Int64) -> Int {
    ids.position(of: id) ?? Int.max
  }

  /// The number of items of `section`.
  @inlinable
  func count(ofSection section: Int) -> Int {
    counts[section]
  }

  /// The rows a derivation that places items across sections touches for `changeset`:
  /// its own, and the items of the sections it moves or deletes.
  @inlinable
  func work<Metadata, Item>(for changeset: Changeset<Metadata, Item>) -> Int {
    var work = changeset.rowCount
    for section in changeset.deletedSections { work += count(ofSection: section.index) }
    for section in changeset.movedSections { work += count(ofSection: section.from) }
    return work
  }

  /// The ids of `section`'s items, in order.
  @inlinable
  func ids(ofSection section: Int) -> [Int64] {
    let start = starts.sum(before: section)
    return (start..<start + counts[section]).map { ids.id(at: $0) }
  }

  /// Inserts item `id` at `row` of `section`.
  @inlinable
  mutating func insert(_ id: Int64, section: Int, row: Int) {
    ids.insert(id, at: position(section: section, row: row))
    counts[section] += 1
    starts.add(1, at: section)
  }

  /// Removes the item at `row` of `section` and returns its id.
  @discardableResult
  @inlinable
  mutating func remove(section: Int, row: Int) -> Int64 {
    let id = ids.remove(at: position(section: section, row: row))
    counts[section] -= 1
    starts.add(-1, at: section)
    return id
  }

  /// Inserts a section holding `items` at `index`.
  @inlinable
  mutating func insertSection(_ items: some Collection<Int64>, at index: Int) {
    var position = index < counts.count ? starts.sum(before: index) : ids.count
    for id in items {
      ids.insert(id, at: position)
      position += 1
    }
    counts.insert(items.count, at: index)
    starts = PrefixSums(counts)
  }

  /// Removes the section at `index` and returns its items' ids.
  @discardableResult
  @inlinable
  mutating func removeSection(at index: Int) -> [Int64] {
    let removed = ids(ofSection: index)
    let start = starts.sum(before: index)
    for _ in removed { ids.remove(at: start) }
    counts.remove(at: index)
    starts = PrefixSums(counts)
    return removed
  }

  /// Moves the section at `from` to `to` (as ``Observable2DArrayEditor/moveSection(from:to:)``
  /// does) and returns its items' ids.
  @discardableResult
  @inlinable
  mutating func moveSection(from: Int, to: Int) -> [Int64] {
    let moved = removeSection(at: from)
    insertSection(moved, at: to)
    return moved
  }
}

extension ItemList {
  /// The first row whose entry `comesAfter` says `true` for, in a list where it says
  /// `false` for a prefix and `true` for the rest; with `skipping`, in the list without
  /// that row (the rows after it counted one lower).
  ///
  /// Each step reads a chunk's storage directly, as ``partitioningIndex(where:)`` does.
  /// The skipped row is read as the row after it (or as `true` at the end), which keeps the
  /// list partitioned and gives, once past it, the row one higher than in the list without
  /// it.
  ///
  /// - Complexity: O(log *n*) calls of `comesAfter`.
  @inlinable
  func firstRow(skipping skipped: Int? = nil, where comesAfter: (Entry) -> Bool) -> Int {
    let skipped = skipped ?? -1
    let total = count
    /// `comesAfter` at `row`, read from `chunk` at `offset` unless it is the skipped row.
    func test(_ row: Int, _ chunk: ItemChunk<Item>, _ offset: Int) -> Bool {
      guard row == skipped else { return comesAfter((chunk.ids[offset], chunk.values[offset])) }
      return row + 1 == total ? true : comesAfter(entry(at: row + 1))
    }
    // The first chunk whose last row passes holds the answer.
    var low = 0
    var high = ends.count
    while low < high {
      let middle = (low &+ high) >> 1
      let chunk = storage(at: middle)
      if test(ends[middle] &- 1, chunk, chunk.count &- 1) {
        high = middle
      } else {
        low = middle &+ 1
      }
    }
    var row = total
    if low < ends.count {
      let start = low == 0 ? 0 : ends[low &- 1]
      let chunk = storage(at: low)
      var first = 0
      var last = chunk.count &- 1  // Passes.
      while first < last {
        let middle = (first &+ last) >> 1
        if test(start &+ middle, chunk, middle) { last = middle } else { first = middle &+ 1 }
      }
      row = start &+ first
    }
    return skipped >= 0 && row > skipped ? row - 1 : row
  }
}
