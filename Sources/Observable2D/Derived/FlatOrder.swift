/// The items of a sectioned source in one order, section after section: where an item
/// stands among all of them. Arrays that reorder items across sections (one sorted
/// section, groups) break ties and order their groups by it.
struct FlatOrder {
  private var ids = IDSequence()
  /// Per source section, its number of items.
  private var counts: [Int] = []
  private var starts = PrefixSums([])

  /// Creates the order of `sections`' items.
  ///
  /// - Complexity: O(*n*).
  init<Metadata, Item>(_ sections: [Observable2DArraySection<Metadata, Item>]) {
    ids = IDSequence(sections.flatMap(\.items.ids))
    counts = sections.map(\.items.count)
    starts = PrefixSums(counts)
  }

  /// Creates an empty order.
  init() {}

  /// The position among all items of the item at `row` of `section`.
  func position(section: Int, row: Int) -> Int {
    starts.sum(before: section) + row
  }

  /// The position among all items of item `id`.
  func position(of id: Int64) -> Int {
    ids.position(of: id) ?? Int.max
  }

  /// The number of items of `section`.
  func count(ofSection section: Int) -> Int {
    counts[section]
  }

  /// The ids of `section`'s items, in order.
  func ids(ofSection section: Int) -> [Int64] {
    let start = starts.sum(before: section)
    return (start..<start + counts[section]).map { ids.id(at: $0) }
  }

  /// Inserts item `id` at `row` of `section`.
  mutating func insert(_ id: Int64, section: Int, row: Int) {
    ids.insert(id, at: position(section: section, row: row))
    counts[section] += 1
    starts.add(1, at: section)
  }

  /// Removes the item at `row` of `section` and returns its id.
  @discardableResult
  mutating func remove(section: Int, row: Int) -> Int64 {
    let id = ids.remove(at: position(section: section, row: row))
    counts[section] -= 1
    starts.add(-1, at: section)
    return id
  }

  /// Inserts a section holding `items` at `index`.
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
  mutating func moveSection(from: Int, to: Int) -> [Int64] {
    let moved = removeSection(at: from)
    insertSection(moved, at: to)
    return moved
  }
}

extension ItemList {
  /// The first row whose entry `comesAfter` says `true` for, in a list where it says
  /// `false` for a prefix and `true` for the rest.
  ///
  /// - Complexity: O(log *n*) calls of `comesAfter`.
  func firstRow(where comesAfter: (Entry) -> Bool) -> Int {
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      if comesAfter(entry(at: middle)) { high = middle } else { low = middle + 1 }
    }
    return low
  }
}
