/// An ordered sequence of distinct ids that finds an id's position as cheaply as the id at
/// a position: insertion, removal and both look-ups cost O(log *n*) plus one chunk.
///
/// Sorted and grouped arrays keep them to know where an item is in their own order and in
/// their source's order (the tie-breaker of a stable sort) without walking either. The ids
/// sit in chunks of at most ``maximumChunkCount``, with prefix sums of the chunks' sizes and
/// a table from each id to its chunk; chunks are named by stable keys, so that splitting one
/// rewrites the table for the ids it moves only.
@usableFromInline
struct IDSequence {
  /// The most ids a chunk holds; a full chunk is split in two halves.
  @inlinable
  static var maximumChunkCount: Int { 512 }

  /// The chunks' ids, by chunk key.
  @usableFromInline
  var chunks: [[Int64]]
  /// The chunk keys in order.
  @usableFromInline
  var order: [Int]
  /// By chunk key, its place in `order` (-1 for a free key).
  @usableFromInline
  var place: [Int]
  @usableFromInline
  var freeKeys: [Int] = []
  @usableFromInline
  var sizes: PrefixSums
  /// The chunk key of each id.
  @usableFromInline
  var chunkOf: [Int64: Int]
  /// The number of ids.
  @usableFromInline
  var count: Int

  /// Creates the sequence of `ids`, which must be distinct.
  ///
  /// - Complexity: O(*n*).
  @inlinable
  init(_ ids: some Collection<Int64>) {
    var chunks: [[Int64]] = []
    var chunkOf = [Int64: Int](minimumCapacity: ids.count)
    var current: [Int64] = []
    let fill = Self.maximumChunkCount / 2
    current.reserveCapacity(fill)
    for id in ids {
      if current.count == fill {
        chunks.append(current)
        current = []
        current.reserveCapacity(fill)
      }
      chunkOf[id] = chunks.count
      current.append(id)
    }
    chunks.append(current)
    self.chunks = chunks
    order = Array(chunks.indices)
    place = Array(chunks.indices)
    sizes = PrefixSums(chunks.map(\.count))
    self.chunkOf = chunkOf
    count = ids.count
  }

  /// Creates an empty sequence.
  @inlinable
  init() {
    self.init(EmptyCollection())
  }

  /// Whether `id` is in the sequence.
  @inlinable
  func contains(_ id: Int64) -> Bool {
    chunkOf[id] != nil
  }

  /// The chunk and the offset within it of `position`; one past the end is the end of the
  /// last chunk.
  @inlinable
  func locate(_ position: Int) -> (place: Int, offset: Int) {
    if position == count {
      let last = order.count - 1
      return (last, chunks[order[last]].count)
    }
    let (place, offset) = sizes.locate(position)
    return (place, offset)
  }

  /// The id at `position`.
  @inlinable
  func id(at position: Int) -> Int64 {
    precondition(position >= 0 && position < count, "IDSequence: position out of range")
    let (place, offset) = locate(position)
    return chunks[order[place]][offset]
  }

  /// The position of `id`, or `nil` when it is not in the sequence.
  @inlinable
  func position(of id: Int64) -> Int? {
    guard let key = chunkOf[id] else { return nil }
    let place = self.place[key]
    guard let offset = chunks[key].firstIndex(of: id) else { return nil }
    return sizes.sum(before: place) + offset
  }

  /// Inserts `id`, which is not in the sequence, at `position` (`0 ... count`).
  @inlinable
  mutating func insert(_ id: Int64, at position: Int) {
    precondition(position >= 0 && position <= count, "IDSequence: position out of range")
    var (place, offset) = locate(position)
    var key = order[place]
    if chunks[key].count == Self.maximumChunkCount {
      split(place)
      if offset >= chunks[key].count {
        offset -= chunks[key].count
        place += 1
        key = order[place]
      }
    }
    chunks[key].insert(id, at: offset)
    chunkOf[id] = key
    sizes.add(1, at: place)
    count += 1
  }

  /// Appends `id`, which is not in the sequence.
  @inlinable
  mutating func append(_ id: Int64) {
    insert(id, at: count)
  }

  /// Removes the id at `position` and returns it.
  @discardableResult
  @inlinable
  mutating func remove(at position: Int) -> Int64 {
    precondition(position >= 0 && position < count, "IDSequence: position out of range")
    let (place, offset) = locate(position)
    let key = order[place]
    let id = chunks[key].remove(at: offset)
    chunkOf[id] = nil
    count -= 1
    if chunks[key].isEmpty && order.count > 1 {
      order.remove(at: place)
      self.place[key] = -1
      freeKeys.append(key)
      renumber(from: place)
      sizes = PrefixSums(order.map { chunks[$0].count })
    } else {
      sizes.add(-1, at: place)
    }
    return id
  }

  /// Removes `id` and returns where it was, or `nil` when it is not in the sequence.
  @discardableResult
  @inlinable
  mutating func remove(_ id: Int64) -> Int? {
    guard let position = position(of: id) else { return nil }
    remove(at: position)
    return position
  }

  @inlinable
  mutating func split(_ place: Int) {
    let key = order[place]
    let half = chunks[key].count / 2
    let moved = Array(chunks[key][half...])
    chunks[key].removeSubrange(half...)
    let newKey: Int
    if let free = freeKeys.popLast() {
      newKey = free
      chunks[newKey] = moved
    } else {
      newKey = chunks.count
      chunks.append(moved)
      self.place.append(-1)
    }
    for id in moved { chunkOf[id] = newKey }
    order.insert(newKey, at: place + 1)
    renumber(from: place + 1)
    sizes = PrefixSums(order.map { chunks[$0].count })
  }

  @inlinable
  mutating func renumber(from start: Int) {
    for index in start..<order.count { place[order[index]] = index }
  }
}
