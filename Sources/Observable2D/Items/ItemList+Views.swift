// MARK: - Views over ids and entries

extension ItemList {
  /// Walks the entries chunk by chunk.
  public struct EntryIterator: IteratorProtocol {
    @usableFromInline
    var ids: IDWalker<Item>

    @usableFromInline
    var values: ValueWalker<Item>

    @inlinable
    init(_ list: ItemList) {
      ids = IDWalker(ids: list.chunks)
      values = ValueWalker(values: list.chunks)
    }

    /// The next entry, or `nil` at the end.
    ///
    /// - Returns: The next entry.
    @inlinable
    public mutating func next() -> Entry? {
      guard let id = ids.next(), let value = values.next() else { return nil }
      return (id, value)
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
    public func makeIterator() -> EntryIterator { EntryIterator(base) }
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

    /// Returns an iterator that walks the ids chunk by chunk.
    ///
    /// - Returns: The iterator.
    @inlinable
    public func makeIterator() -> IDWalker<Item> {
      IDWalker(ids: base.chunks)
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

extension ItemList.EntryIterator: Sendable where Item: Sendable {}
extension ItemList.Entries: Sendable where Item: Sendable {}
extension ItemList.IDs: Sendable where Item: Sendable {}

extension ItemList {
  /// Checks the chunk invariants; used by tests.
  package var chunkInvariantsHold: Bool {
    guard chunks.count == ends.count else { return false }
    var total = 0
    for index in ends.indices {
      let size = storage(at: index).ids.count
      if size == 0 || size > Self.maximumChunkCount || storage(at: index).values.count != size {
        return false
      }
      total += size
      if ends[index] != total { return false }
    }
    return true
  }

  /// The number of chunks; used by tests and benchmarks.
  package var chunkCount: Int { ends.count }
}

/// Walks one part of every entry of an ``ItemList`` — its values, or its ids — in order,
/// holding the current chunk's array of that part so that each step is one bounds check and
/// no search.
public struct ChunkWalker<Item, Element>: IteratorProtocol {
  @usableFromInline
  let chunks: ContiguousArray<AnyObject>

  /// The part of a chunk walked.
  @usableFromInline
  let part: (ItemChunk<Item>) -> ContiguousArray<Element>

  @usableFromInline
  var current: ContiguousArray<Element>

  @usableFromInline
  var chunk = 0

  @usableFromInline
  var offset = 0

  @inlinable
  init(
    _ chunks: ContiguousArray<AnyObject>,
    part: @escaping (ItemChunk<Item>) -> ContiguousArray<Element>
  ) {
    self.chunks = chunks
    self.part = part
    self.current = chunks.first.map { part(unsafeDowncast($0, to: ItemChunk<Item>.self)) } ?? []
  }

  /// The next element, or `nil` at the end.
  ///
  /// - Returns: The next element.
  @inlinable
  public mutating func next() -> Element? {
    if offset < current.count {
      defer { offset &+= 1 }
      return current[offset]
    }
    chunk &+= 1
    guard chunk < chunks.count else { return nil }
    // Chunks are never empty, so the new chunk has an element at offset 0.
    current = part(unsafeDowncast(chunks[chunk], to: ItemChunk<Item>.self))
    offset = 1
    return current[0]
  }
}

/// Walks the values of an ``ItemList`` in order.
public typealias ValueWalker<Item> = ChunkWalker<Item, Item>
/// Walks the ids of an ``ItemList`` in order.
public typealias IDWalker<Item> = ChunkWalker<Item, Int64>

extension ChunkWalker where Element == Item {
  /// A walker of the values of `chunks`.
  @inlinable
  init(values chunks: ContiguousArray<AnyObject>) { self.init(chunks, part: { $0.values }) }
}

extension ChunkWalker where Element == Int64 {
  /// A walker of the ids of `chunks`.
  @inlinable
  init(ids chunks: ContiguousArray<AnyObject>) { self.init(chunks, part: { $0.ids }) }
}

// A walker only reads; the chunks it holds are never mutated while shared (see `ItemList`).
extension ChunkWalker: @unchecked Sendable where Item: Sendable, Element: Sendable {}
