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

  @usableFromInline
  typealias Chunk = ContiguousArray<Entry>

  /// The largest number of entries a chunk holds; a fuller chunk is split in two halves.
  @inlinable
  public static var maximumChunkCount: Int { 1024 }

  /// A chunk smaller than this is merged with a neighbour when their sum fits in one chunk.
  @inlinable
  static var minimumChunkCount: Int { 256 }

  /// The chunks, none of them empty, each with at most `maximumChunkCount` entries.
  @usableFromInline
  var chunks: ContiguousArray<Chunk>

  /// `ends[c]` is the number of entries in `chunks[0...c]`.
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

// MARK: - Locating positions

extension ItemList {
  /// The chunk and the offset within it of the entry at `position` (`0 ..< count`).
  @inlinable
  func locate(_ position: Int) -> (chunk: Int, offset: Int) {
    if chunks.count == 1 { return (0, position) }
    var low = 0
    var high = ends.count - 1
    while low < high {
      let middle = (low &+ high) >> 1
      if ends[middle] > position { high = middle } else { low = middle &+ 1 }
    }
    return (low, low == 0 ? position : position &- ends[low &- 1])
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
  @inlinable
  mutating func rebuildEnds(from chunk: Int) {
    ends.removeSubrange(chunk...)
    var total = chunk == 0 ? 0 : ends[chunk &- 1]
    var index = chunk
    while index < chunks.count {
      total &+= chunks[index].count
      ends.append(total)
      index &+= 1
    }
  }

  /// Splits the chunk at `chunk` into two halves.
  @inlinable
  mutating func splitChunk(_ chunk: Int) {
    let half = chunks[chunk].count / 2
    let tail = Chunk(chunks[chunk][half...])
    chunks[chunk].removeSubrange(half...)
    chunks.insert(tail, at: chunk &+ 1)
    ends.insert(ends[chunk], at: chunk &+ 1)
    ends[chunk] &-= tail.count
  }

  /// Makes `position` the first entry of a chunk, splitting one if needed, and returns that
  /// chunk's index (`chunks.count` when `position == count`).
  @usableFromInline
  mutating func makeBoundary(at position: Int) -> Int {
    if position == count { return chunks.count }
    let (chunk, offset) = locate(position)
    if offset == 0 { return chunk }
    let tail = Chunk(chunks[chunk][offset...])
    chunks[chunk].removeSubrange(offset...)
    chunks.insert(tail, at: chunk &+ 1)
    ends.insert(ends[chunk], at: chunk &+ 1)
    ends[chunk] &-= tail.count
    return chunk &+ 1
  }

  /// Merges the chunk at `chunk` with a neighbour when it is small and they fit together.
  @usableFromInline
  mutating func mergeIfSmall(_ chunk: Int) {
    guard chunk >= 0, chunk < chunks.count, chunks[chunk].count < Self.minimumChunkCount
    else { return }
    let previous = chunk > 0 ? chunks[chunk - 1].count : Int.max
    let next = chunk + 1 < chunks.count ? chunks[chunk + 1].count : Int.max
    let left = previous <= next ? chunk - 1 : chunk
    guard left >= 0, left + 1 < chunks.count,
      chunks[left].count + chunks[left + 1].count <= Self.maximumChunkCount
    else { return }
    let moved = chunks[left + 1]
    chunks[left].append(contentsOf: moved)
    chunks.remove(at: left + 1)
    ends.remove(at: left)
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
    return chunks[chunk][offset].id
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
    return chunks[chunk][offset]
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
    chunks[chunk][offset] = entry
  }

  /// Appends a value with the given id.
  ///
  /// - Parameters:
  ///   - value: The value to append.
  ///   - id: Its stable id (`0` when not assigned yet).
  /// - Complexity: Amortized O(1).
  @inlinable
  public mutating func append(_ value: Item, id: Int64) {
    let last = chunks.count &- 1
    if last >= 0 && chunks[last].count < Self.maximumChunkCount {
      chunks[last].append((id, value))
      ends[last] &+= 1
    } else {
      var chunk = Chunk()
      if last >= 0 { chunk.reserveCapacity(Self.maximumChunkCount) }
      chunk.append((id, value))
      chunks.append(chunk)
      ends.append((last >= 0 ? ends[last] : 0) &+ 1)
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
    if offset == 0 && chunk > 0 && chunks[chunk &- 1].count < Self.maximumChunkCount {
      chunk &-= 1
      offset = chunks[chunk].count
    } else if chunks[chunk].count >= Self.maximumChunkCount {
      splitChunk(chunk)
      let firstCount = chunks[chunk].count
      if offset > firstCount {
        chunk &+= 1
        offset &-= firstCount
      }
    }
    chunks[chunk].insert((id, value), at: offset)
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
    let removed = chunks[chunk].remove(at: offset)
    shiftEnds(from: chunk, by: -1)
    if chunks[chunk].isEmpty {
      chunks.remove(at: chunk)
      ends.remove(at: chunk)
    } else {
      mergeIfSmall(chunk)
    }
    return removed
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
    var built = ContiguousArray<Chunk>()
    var current = Chunk()
    current.reserveCapacity(Swift.min(newCount, Self.maximumChunkCount))
    for entry in newEntries {
      if current.count == Self.maximumChunkCount {
        built.append(current)
        current = Chunk()
        current.reserveCapacity(Self.maximumChunkCount)
      }
      current.append(entry)
    }
    if !current.isEmpty { built.append(current) }
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

// MARK: - Collection conformances

extension ItemList: RandomAccessCollection, MutableCollection {
  /// The position of the first item; always `0`.
  @inlinable
  public var startIndex: Int { 0 }

  /// The position one past the last item; equal to `count`.
  @inlinable
  public var endIndex: Int { ends.last ?? 0 }

  /// The number of items.
  ///
  /// - Complexity: O(1).
  @inlinable
  public var count: Int { ends.last ?? 0 }

  /// Whether the list has no items.
  ///
  /// - Complexity: O(1).
  @inlinable
  public var isEmpty: Bool { chunks.isEmpty }

  /// The value at `position`. Setting it keeps the entry's id.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Complexity: O(log *c*) where *c* is the number of chunks.
  @inlinable
  public subscript(position: Int) -> Item {
    get {
      precondition(position >= 0 && position < count, "ItemList index out of range")
      let (chunk, offset) = locate(position)
      return chunks[chunk][offset].value
    }
    set {
      precondition(position >= 0 && position < count, "ItemList index out of range")
      let (chunk, offset) = locate(position)
      chunks[chunk][offset].value = newValue
    }
  }

  /// Iterates over the values chunk by chunk, without a search per element.
  public struct Iterator: IteratorProtocol {
    @usableFromInline
    var entries: EntryIterator

    @inlinable
    init(entries: EntryIterator) {
      self.entries = entries
    }

    /// The next value, or `nil` at the end.
    ///
    /// - Returns: The next value.
    @inlinable
    public mutating func next() -> Item? {
      entries.next()?.value
    }
  }

  /// Returns an iterator over the values.
  ///
  /// - Returns: The iterator.
  @inlinable
  public func makeIterator() -> Iterator {
    Iterator(entries: EntryIterator(chunks: chunks))
  }
}

extension ItemList: RangeReplaceableCollection {
  /// Replaces the items in `subrange` with `newElements`, which get id `0`.
  ///
  /// - Parameters:
  ///   - subrange: A range of valid positions.
  ///   - newElements: The values to put in its place.
  /// - Complexity: O(log *c* + *c* + *k* + *m* + *r*) for *c* chunks of at most *k* entries,
  ///   *m* new values and *r* removed ones.
  public mutating func replaceSubrange<C: Collection>(
    _ subrange: Range<Int>, with newElements: C
  ) where C.Element == Item {
    replaceEntries(in: subrange, with: newElements.lazy.map { (id: Int64(0), value: $0) })
  }

  /// Appends a value with id `0`.
  ///
  /// - Parameter newElement: The value to append.
  /// - Complexity: Amortized O(1).
  @inlinable
  public mutating func append(_ newElement: Item) {
    append(newElement, id: 0)
  }

  /// Appends values with id `0`.
  ///
  /// - Parameter newElements: The values to append.
  /// - Complexity: O(*m*) for *m* values.
  @inlinable
  public mutating func append<S: Sequence>(contentsOf newElements: S) where S.Element == Item {
    for value in newElements { append(value, id: 0) }
  }

  /// Inserts a value with id `0` at `i`.
  ///
  /// - Parameters:
  ///   - newElement: The value to insert.
  ///   - i: An index in `0 ... count`.
  /// - Complexity: O(log *c* + *c* + *k*), independent of the total count.
  @inlinable
  public mutating func insert(_ newElement: Item, at i: Int) {
    insert(newElement, id: 0, at: i)
  }

  /// Removes the item at `position` and returns its value.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Returns: The removed value.
  /// - Complexity: O(log *c* + *c* + *k*), independent of the total count.
  @inlinable
  @discardableResult
  public mutating func remove(at position: Int) -> Item {
    removeEntry(at: position).value
  }

  /// Removes every item.
  ///
  /// - Parameter keepCapacity: Ignored; chunks are always released.
  /// - Complexity: O(*n*).
  @inlinable
  public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
    chunks = []
    ends = []
  }

  /// Reserves room for the chunk table of `n` items.
  ///
  /// - Parameter n: The number of items expected.
  /// - Complexity: O(*c*).
  @inlinable
  public mutating func reserveCapacity(_ n: Int) {
    let chunkCount = (n + Self.maximumChunkCount - 1) / Self.maximumChunkCount
    chunks.reserveCapacity(chunkCount)
    ends.reserveCapacity(chunkCount)
  }
}

extension ItemList: ExpressibleByArrayLiteral {
  /// Creates a list from values whose ids are all `0`.
  ///
  /// - Parameter elements: The values, in order.
  @inlinable
  public init(arrayLiteral elements: Item...) {
    self.init(elements)
  }
}

extension ItemList: Equatable where Item: Equatable {
  /// Whether both lists hold the same ids with the same values, in the same order.
  ///
  /// - Parameters:
  ///   - lhs: A list.
  ///   - rhs: Another list.
  /// - Returns: `true` when ids and values are equal position by position.
  /// - Complexity: O(*n*).
  @inlinable
  public static func == (lhs: ItemList, rhs: ItemList) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var left = EntryIterator(chunks: lhs.chunks)
    var right = EntryIterator(chunks: rhs.chunks)
    while let a = left.next(), let b = right.next() {
      if a.id != b.id || a.value != b.value { return false }
    }
    return true
  }
}

extension ItemList: Sendable where Item: Sendable {}

extension ItemList: CustomStringConvertible, CustomDebugStringConvertible {
  /// The values, rendered like an array.
  public var description: String {
    "[" + map { String(describing: $0) }.joined(separator: ", ") + "]"
  }

  /// The ids and values, rendered like an array of pairs.
  public var debugDescription: String {
    "ItemList(["
      + entries.map { "\($0.id): " + String(reflecting: $0.value) }.joined(separator: ", ")
      + "])"
  }
}

// MARK: - Views over ids and entries

extension ItemList {
  /// Walks the entries chunk by chunk.
  public struct EntryIterator: IteratorProtocol {
    @usableFromInline
    let chunks: ContiguousArray<Chunk>

    @usableFromInline
    var current: Chunk

    @usableFromInline
    var chunk = 0

    @usableFromInline
    var offset = 0

    @inlinable
    init(chunks: ContiguousArray<Chunk>) {
      self.chunks = chunks
      self.current = chunks.first ?? []
    }

    /// The next entry, or `nil` at the end.
    ///
    /// - Returns: The next entry.
    @inlinable
    public mutating func next() -> Entry? {
      if offset < current.count {
        defer { offset &+= 1 }
        return current[offset]
      }
      chunk &+= 1
      guard chunk < chunks.count else { return nil }
      // Chunks are never empty, so the new chunk has an entry at offset 0.
      current = chunks[chunk]
      offset = 1
      return current[0]
    }
  }

  /// The entries (`(id, value)` pairs) of a list, as a random-access collection.
  public struct Entries: RandomAccessCollection {
    @usableFromInline
    let base: ItemList

    @inlinable
    init(base: ItemList) {
      self.base = base
    }

    /// Always `0`.
    @inlinable
    public var startIndex: Int { 0 }

    /// The number of entries.
    @inlinable
    public var endIndex: Int { base.count }

    /// The entry at `position`.
    ///
    /// - Parameter position: A valid index.
    /// - Complexity: O(log *c*).
    @inlinable
    public subscript(position: Int) -> Entry { base.entry(at: position) }

    /// Returns an iterator that walks the entries chunk by chunk.
    ///
    /// - Returns: The iterator.
    @inlinable
    public func makeIterator() -> EntryIterator { EntryIterator(chunks: base.chunks) }
  }

  /// The ids of a list, as a random-access collection.
  public struct IDs: RandomAccessCollection {
    @usableFromInline
    let base: ItemList

    @inlinable
    init(base: ItemList) {
      self.base = base
    }

    /// Always `0`.
    @inlinable
    public var startIndex: Int { 0 }

    /// The number of ids.
    @inlinable
    public var endIndex: Int { base.count }

    /// The id at `position`.
    ///
    /// - Parameter position: A valid index.
    /// - Complexity: O(log *c*).
    @inlinable
    public subscript(position: Int) -> Int64 { base.id(at: position) }

    /// Walks the ids chunk by chunk.
    public struct Iterator: IteratorProtocol {
      @usableFromInline
      var entries: EntryIterator

      @inlinable
      init(entries: EntryIterator) {
        self.entries = entries
      }

      /// The next id, or `nil` at the end.
      ///
      /// - Returns: The next id.
      @inlinable
      public mutating func next() -> Int64? { entries.next()?.id }
    }

    /// Returns an iterator that walks the ids chunk by chunk.
    ///
    /// - Returns: The iterator.
    @inlinable
    public func makeIterator() -> Iterator {
      Iterator(entries: EntryIterator(chunks: base.chunks))
    }
  }

  /// The entries, `(id, value)` pairs, in order.
  ///
  /// - Complexity: O(1) to create; iteration is O(*n*).
  @inlinable
  public var entries: Entries { Entries(base: self) }

  /// The ids, in order.
  ///
  /// - Complexity: O(1) to create; iteration is O(*n*).
  @inlinable
  public var ids: IDs { IDs(base: self) }
}

extension ItemList.Iterator: Sendable where Item: Sendable {}
extension ItemList.EntryIterator: Sendable where Item: Sendable {}
extension ItemList.Entries: Sendable where Item: Sendable {}
extension ItemList.IDs: Sendable where Item: Sendable {}
extension ItemList.IDs.Iterator: Sendable where Item: Sendable {}

extension ItemList {
  /// Checks the chunk invariants; used by tests.
  package var chunkInvariantsHold: Bool {
    var total = 0
    for (index, chunk) in chunks.enumerated() {
      if chunk.isEmpty || chunk.count > Self.maximumChunkCount { return false }
      total += chunk.count
      if ends[index] != total { return false }
    }
    return ends.count == chunks.count
  }

  /// The number of chunks; used by tests and benchmarks.
  package var chunkCount: Int { chunks.count }
}
