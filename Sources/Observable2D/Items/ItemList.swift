/// The items of one section: an ordered list of values, each with a stable `Int64` id.
///
/// `ItemList` behaves like an array of `Item` (it is a random-access, mutable,
/// range-replaceable collection with `Int` indices) but is stored as a two-level chunked list:
/// an array of copy-on-write chunks of at most ``maximumChunkCount`` entries, plus the
/// cumulative entry count at the end of each chunk. Finding a position is a binary search over
/// the chunks, so inserting, removing or replacing one entry anywhere touches one chunk and the
/// chunk table instead of shifting every later entry. Copies share all chunks; a mutation of a
/// copy duplicates only the chunk it touches (and the chunk table), which keeps a held snapshot
/// of the previous state cheap.
///
/// Every entry is `(id: Int64, value: Item)`. Ids are stable names given by the owner of the
/// list (the observable 2D array or the repository); `0` means "not assigned yet". Plain
/// collection operations (`append(_:)`, `insert(_:at:)`, `replaceSubrange(_:with:)`) add
/// entries with id `0`; replacing a value through the subscript keeps the entry's id.
///
/// ```swift
/// var cities: ItemList<String> = ["Paris", "Berlin"]
/// cities.insert("Rome", id: 42, at: 1)
/// cities[2] = "Bonn"  // keeps Berlin's id
/// print(Array(cities), Array(cities.ids))  // ["Paris", "Rome", "Bonn"] [0, 42, 0]
/// ```
public struct ItemList<Item> {
  /// One stored entry: a stable id and its value.
  public typealias Entry = (id: Int64, value: Item)

  /// The largest number of entries a chunk holds; a fuller chunk is split in two halves.
  @inlinable
  public static var maximumChunkCount: Int { 1024 }

  /// A chunk smaller than this is merged with a neighbour when their sum fits in one chunk.
  @inlinable
  static var minimumChunkCount: Int { 256 }

  /// The chunks, each an `ItemChunk<Item>`; none is empty or holds more than
  /// `maximumChunkCount` entries. A chunk is mutated only when this table holds the only
  /// reference to it (copy-on-write). The table's element type is `AnyObject` rather than
  /// `ItemChunk<Item>` so that copying or releasing it is specialized code (a retain per chunk)
  /// even when the list is used from unspecialized generic code.
  @usableFromInline
  var chunks: ContiguousArray<AnyObject>

  /// `ends[c]` is the number of entries in chunks `0 ... c`.
  @usableFromInline
  var ends: ContiguousArray<Int>

  /// Creates an empty list.
  ///
  /// - Complexity: O(1).
  @inlinable
  public init() {
    chunks = []
    ends = []
  }

  /// Creates a list from entries that already carry their ids.
  ///
  /// - Parameter entries: The ids and values, in order.
  /// - Complexity: O(*n*) where *n* is the number of entries.
  @inlinable
  public init<S: Sequence>(entries: S) where S.Element == Entry {
    self.init()
    for entry in entries {
      append(entry.value, id: entry.id)
    }
  }

  /// Creates a list from values whose ids are all `0` ("not assigned yet").
  ///
  /// - Parameter values: The values, in order.
  /// - Complexity: O(*n*) where *n* is the number of values.
  @inlinable
  public init<S: Sequence>(_ values: S) where S.Element == Item {
    self.init()
    for value in values {
      append(value, id: 0)
    }
  }
}

extension ItemList {
  /// Creates a list from parallel ids and values, a whole chunk at a time.
  ///
  /// - Parameters:
  ///   - ids: The ids, in order.
  ///   - values: As many values, in order.
  /// - Complexity: O(*n*) where *n* is the number of entries.
  @inlinable
  package init(ids: some Collection<Int64>, values: some Collection<Item>) {
    precondition(ids.count == values.count, "ItemList: as many ids as values")
    self.init()
    var idStart = ids.startIndex
    var valueStart = values.startIndex
    var remaining = ids.count
    chunks.reserveCapacity((remaining + Self.maximumChunkCount - 1) / Self.maximumChunkCount)
    ends.reserveCapacity(chunks.capacity)
    while remaining > 0 {
      let count = Swift.min(remaining, Self.maximumChunkCount)
      let idEnd = ids.index(idStart, offsetBy: count)
      let valueEnd = values.index(valueStart, offsetBy: count)
      chunks.append(
        ItemChunk(
          ids: ContiguousArray(ids[idStart..<idEnd]),
          values: ContiguousArray(values[valueStart..<valueEnd])))
      ends.append((ends.last ?? 0) &+ count)
      idStart = idEnd
      valueStart = valueEnd
      remaining &-= count
    }
  }
}

/// One chunk of an ``ItemList``: parallel arrays of ids and values.
///
/// A class, so that copying the chunk table (when a snapshot of the list is held) costs one
/// retain per chunk even in unspecialized generic code; and parallel arrays rather than one
/// array of `(id, value)`, so that copying a shared chunk copies the ids with a `memcpy` and the
/// values with `Item`'s own value witness instead of a tuple's field-by-field one.
@usableFromInline
final class ItemChunk<Item> {
  // A chunk is only mutated by the one list that uniquely references it, which the value
  // semantics of `ItemList` already make exclusive; dynamic exclusivity checks on every access
  // would cost more than the append they guard.
  @usableFromInline
  @exclusivity(unchecked)
  var ids: ContiguousArray<Int64>

  @usableFromInline
  @exclusivity(unchecked)
  var values: ContiguousArray<Item>

  @inlinable
  init(ids: ContiguousArray<Int64>, values: ContiguousArray<Item>) {
    self.ids = ids
    self.values = values
  }

  @inlinable
  var count: Int { ids.count }
}

// MARK: - Locating positions

extension ItemList {
  /// The chunk and the offset within it of the entry at `position` (`0 ..< count`).
  @inlinable
  func locate(_ position: Int) -> (chunk: Int, offset: Int) {
    if ends.count == 1 { return (0, position) }
    var low = 0
    var high = ends.count &- 1
    while low < high {
      let middle = (low &+ high) >> 1
      if ends[middle] > position { high = middle } else { low = middle &+ 1 }
    }
    return (low, low == 0 ? position : position &- ends[low &- 1])
  }

  /// The chunk at `index`, to read.
  @inlinable
  func storage(at index: Int) -> ItemChunk<Item> {
    unsafeDowncast(chunks[index], to: ItemChunk<Item>.self)
  }

  /// The chunk at `chunk`, copied first if another list shares it, ready to be mutated.
  @inlinable
  mutating func uniqueChunk(_ chunk: Int) -> ItemChunk<Item> {
    if !isKnownUniquelyReferenced(&chunks[chunk]) {
      let shared = storage(at: chunk)
      chunks[chunk] = ItemChunk(ids: shared.ids, values: shared.values)
    }
    return storage(at: chunk)
  }

  /// Adds `delta` to the cumulative counts of `chunk` and every later chunk.
  @inlinable
  mutating func shiftEnds(from chunk: Int, by delta: Int) {
    ends.withUnsafeMutableBufferPointer { buffer in
      var index = chunk
      while index < buffer.count {
        buffer[index] &+= delta
        index &+= 1
      }
    }
  }

  /// Recomputes the cumulative counts from `chunk` on.
  @usableFromInline
  mutating func rebuildEnds(from chunk: Int) {
    ends.removeSubrange(chunk...)
    var total = chunk == 0 ? 0 : ends[chunk - 1]
    for index in chunk..<chunks.count {
      total += storage(at: index).count
      ends.append(total)
    }
  }

  /// Moves the entries of `chunk` from `offset` on into a new chunk right after it.
  @usableFromInline
  mutating func splitChunk(_ chunk: Int, at offset: Int) {
    let source = uniqueChunk(chunk)
    let tail = ItemChunk(
      ids: ContiguousArray(source.ids[offset...]), values: ContiguousArray(source.values[offset...])
    )
    source.ids.removeSubrange(offset...)
    source.values.removeSubrange(offset...)
    chunks.insert(tail, at: chunk + 1)
    ends.insert(ends[chunk], at: chunk + 1)
    ends[chunk] -= tail.count
  }

  /// Makes `position` the first entry of a chunk, splitting one if needed, and returns that
  /// chunk's index (the chunk count when `position == count`).
  @usableFromInline
  mutating func makeBoundary(at position: Int) -> Int {
    if position == count { return chunks.count }
    let (chunk, offset) = locate(position)
    if offset == 0 { return chunk }
    splitChunk(chunk, at: offset)
    return chunk + 1
  }

  /// Merges the chunk at `chunk` with a neighbour when it is small and they fit together.
  @usableFromInline
  mutating func mergeIfSmall(_ chunk: Int) {
    guard chunk >= 0, chunk < chunks.count, storage(at: chunk).count < Self.minimumChunkCount
    else { return }
    let previous = chunk > 0 ? storage(at: chunk - 1).count : Int.max
    let next = chunk + 1 < chunks.count ? storage(at: chunk + 1).count : Int.max
    let left = previous <= next ? chunk - 1 : chunk
    guard left >= 0, left + 1 < chunks.count,
      storage(at: left).count + storage(at: left + 1).count <= Self.maximumChunkCount
    else { return }
    let moved = unsafeDowncast(chunks.remove(at: left + 1), to: ItemChunk<Item>.self)
    let target = uniqueChunk(left)
    target.ids.append(contentsOf: moved.ids)
    target.values.append(contentsOf: moved.values)
    ends.remove(at: left)
  }

  /// Appends a new chunk holding one entry.
  @usableFromInline
  mutating func appendChunk(_ value: Item, id: Int64) {
    var ids = ContiguousArray<Int64>()
    var values = ContiguousArray<Item>()
    if !ends.isEmpty {
      // The list is being built in bulk: give the chunk its final size at once.
      ids.reserveCapacity(Self.maximumChunkCount)
      values.reserveCapacity(Self.maximumChunkCount)
    }
    ids.append(id)
    values.append(value)
    chunks.append(ItemChunk(ids: ids, values: values))
    ends.append((ends.last ?? 0) + 1)
  }
}

// MARK: - Entry access and mutation

extension ItemList {
  /// The id of the entry at `position`.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Returns: The entry's stable id (`0` when not assigned yet).
  /// - Complexity: O(log *c*) where *c* is the number of chunks.
  @inlinable
  public func id(at position: Int) -> Int64 {
    precondition(position >= 0 && position < count, "ItemList index out of range")
    let (chunk, offset) = locate(position)
    return storage(at: chunk).ids[offset]
  }

  /// The id and value of the entry at `position`.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Returns: The entry.
  /// - Complexity: O(log *c*) where *c* is the number of chunks.
  @inlinable
  public func entry(at position: Int) -> Entry {
    precondition(position >= 0 && position < count, "ItemList index out of range")
    let (chunk, offset) = locate(position)
    let found = storage(at: chunk)
    return (found.ids[offset], found.values[offset])
  }

  /// The first position whose value satisfies `isAtOrAfter`, or ``count`` when none does:
  /// a binary search, for a list whose values are partitioned by the predicate (every value
  /// that satisfies it comes after every one that does not), as a list sorted by a key is by
  /// "not below this key".
  ///
  /// - Parameter isAtOrAfter: Whether a value belongs at or after the position sought.
  /// - Returns: The position.
  /// - Complexity: O(log *n*) calls of `isAtOrAfter`; each step reads a chunk's storage
  ///   directly instead of locating a position among the chunks.
  @inlinable
  public func partitioningIndex(where isAtOrAfter: (Item) throws -> Bool) rethrows -> Int {
    // The first chunk whose last value satisfies the predicate holds the answer.
    var low = 0
    var high = ends.count
    while low < high {
      let middle = (low &+ high) >> 1
      let values = storage(at: middle).values
      if try isAtOrAfter(values[values.count &- 1]) { high = middle } else { low = middle &+ 1 }
    }
    guard low < ends.count else { return count }
    let start = low == 0 ? 0 : ends[low &- 1]
    return try storage(at: low).values.withUnsafeBufferPointer { values in
      var first = 0
      var last = values.count &- 1  // Satisfies the predicate.
      while first < last {
        let middle = (first &+ last) >> 1
        if try isAtOrAfter(values[middle]) { last = middle } else { first = middle &+ 1 }
      }
      return start &+ first
    }
  }

  /// Replaces the id and value of the entry at `position`.
  ///
  /// - Parameters:
  ///   - entry: The new id and value.
  ///   - position: A valid index of the list.
  /// - Complexity: O(log *c*), plus O(*k*) to copy the touched chunk of *k* ≤ 1024 entries
  ///   when it is shared with a copy.
  @inlinable
  public mutating func setEntry(_ entry: Entry, at position: Int) {
    precondition(position >= 0 && position < count, "ItemList index out of range")
    let (chunk, offset) = locate(position)
    let storage = uniqueChunk(chunk)
    storage.ids[offset] = entry.id
    storage.values[offset] = entry.value
  }

  /// Appends a value with the given id.
  ///
  /// - Parameters:
  ///   - value: The value to append.
  ///   - id: Its stable id (`0` when not assigned yet).
  /// - Complexity: Amortized O(1).
  @inlinable
  public mutating func append(_ value: Item, id: Int64) {
    let last = ends.count &- 1
    if last >= 0 && storage(at: last).count < Self.maximumChunkCount {
      let chunk = uniqueChunk(last)
      chunk.ids.append(id)
      chunk.values.append(value)
      ends[last] &+= 1
    } else {
      appendChunk(value, id: id)
    }
  }

  /// Inserts a value with the given id at `position`.
  ///
  /// - Parameters:
  ///   - value: The value to insert.
  ///   - id: Its stable id (`0` when not assigned yet).
  ///   - position: An index in `0 ... count`.
  /// - Complexity: O(log *c* + *c* + *k*) for *c* chunks of at most *k* = 1024 entries,
  ///   independent of the total count.
  @inlinable
  public mutating func insert(_ value: Item, id: Int64, at position: Int) {
    precondition(position >= 0 && position <= count, "ItemList insertion index out of range")
    if position == count {
      append(value, id: id)
      return
    }
    var (chunk, offset) = locate(position)
    if offset == 0 && chunk > 0 && storage(at: chunk &- 1).count < Self.maximumChunkCount {
      chunk &-= 1
      offset = storage(at: chunk).count
    } else if storage(at: chunk).count >= Self.maximumChunkCount {
      let half = storage(at: chunk).count / 2
      splitChunk(chunk, at: half)
      if offset > half {
        chunk &+= 1
        offset &-= half
      }
    }
    let storage = uniqueChunk(chunk)
    storage.ids.insert(id, at: offset)
    storage.values.insert(value, at: offset)
    shiftEnds(from: chunk, by: 1)
  }

  /// Removes the entry at `position` and returns it.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Returns: The removed id and value.
  /// - Complexity: O(log *c* + *c* + *k*) for *c* chunks of at most *k* = 1024 entries.
  @inlinable
  @discardableResult
  public mutating func removeEntry(at position: Int) -> Entry {
    precondition(position >= 0 && position < count, "ItemList index out of range")
    let (chunk, offset) = locate(position)
    let storage = uniqueChunk(chunk)
    let id = storage.ids.remove(at: offset)
    let value = storage.values.remove(at: offset)
    shiftEnds(from: chunk, by: -1)
    if storage.ids.isEmpty {
      chunks.remove(at: chunk)
      ends.remove(at: chunk)
    } else {
      mergeIfSmall(chunk)
    }
    return (id, value)
  }

  /// Replaces the entries in `range` with `newEntries`, which keep their ids.
  ///
  /// - Parameters:
  ///   - range: A range of valid positions (it may be empty).
  ///   - newEntries: The entries to put in its place.
  /// - Complexity: O(log *c* + *c* + *k* + *m* + *r*) for *c* chunks of at most *k* entries,
  ///   *m* new entries and *r* removed ones.
  public mutating func replaceEntries<C: Collection>(
    in range: Range<Int>, with newEntries: C
  ) where C.Element == Entry {
    precondition(
      range.lowerBound >= 0 && range.upperBound <= count, "ItemList range out of bounds")
    let newCount = newEntries.count
    switch (range.count, newCount) {
    case (0, 0):
      return
    case (0, 1):
      if let entry = newEntries.first { insert(entry.value, id: entry.id, at: range.lowerBound) }
      return
    case (1, 0):
      removeEntry(at: range.lowerBound)
      return
    case (1, 1):
      if let entry = newEntries.first { setEntry(entry, at: range.lowerBound) }
      return
    default:
      break
    }
    if range.isEmpty && range.lowerBound == count {
      for entry in newEntries { append(entry.value, id: entry.id) }
      return
    }
    let first = makeBoundary(at: range.lowerBound)
    let last = makeBoundary(at: range.upperBound)
    chunks.removeSubrange(first..<last)
    var built = ContiguousArray<AnyObject>()
    var ids = ContiguousArray<Int64>()
    var values = ContiguousArray<Item>()
    for entry in newEntries {
      if ids.count == Self.maximumChunkCount {
        built.append(ItemChunk(ids: ids, values: values))
        ids = []
        values = []
      }
      if ids.isEmpty {
        let capacity = Swift.min(
          newCount - built.count * Self.maximumChunkCount, Self.maximumChunkCount)
        ids.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
      }
      ids.append(entry.id)
      values.append(entry.value)
    }
    if !ids.isEmpty { built.append(ItemChunk(ids: ids, values: values)) }
    chunks.insert(contentsOf: built, at: first)
    rebuildEnds(from: first)
    // Merge the small pieces that the boundaries may have left, right to left so that indices
    // of chunks not yet visited stay valid.
    mergeIfSmall(first + built.count)
    mergeIfSmall(first + built.count - 1)
    mergeIfSmall(first)
    mergeIfSmall(first - 1)
  }
}

// MARK: - Bulk reads

extension ItemList {
  /// Appends every id, in order, a chunk at a time.
  ///
  /// - Complexity: O(*n*), copying the ids of each chunk with one `memcpy`.
  @usableFromInline
  func appendIDs(to ids: inout [Int64]) {
    for index in chunks.indices { ids.append(contentsOf: storage(at: index).ids) }
  }

  /// Appends every value, in order, a chunk at a time.
  ///
  /// - Complexity: O(*n*).
  @usableFromInline
  func appendValues(to values: inout ContiguousArray<Item>) {
    for index in chunks.indices { values.append(contentsOf: storage(at: index).values) }
  }

  /// Calls `body` with the values of each chunk, in order: every value without a search or a
  /// copy of the list. The buffer is valid only during the call.
  ///
  /// - Complexity: O(*c*) calls for *c* chunks.
  @inlinable
  package func forEachChunk(_ body: (UnsafeBufferPointer<Item>) -> Void) {
    for index in chunks.indices { storage(at: index).values.withUnsafeBufferPointer(body) }
  }

  /// Reads values by position, keeping the chunk of the last read: without a search when
  /// positions ascend (or stay within a chunk).
  @usableFromInline
  struct Reader {
    @usableFromInline
    let list: ItemList
    /// The positions of the current chunk's values.
    @usableFromInline
    var start = 0
    @usableFromInline
    var end = 0
    @usableFromInline
    var values: ContiguousArray<Item> = []

    @inlinable
    init(_ list: ItemList) {
      self.list = list
    }

    /// The value at `position`, a valid index of the list.
    @inlinable
    mutating func value(at position: Int) -> Item {
      if position < start || position >= end {
        let (chunk, offset) = list.locate(position)
        start = position &- offset
        end = list.ends[chunk]
        values = list.storage(at: chunk).values
      }
      return values[position &- start]
    }
  }
}
