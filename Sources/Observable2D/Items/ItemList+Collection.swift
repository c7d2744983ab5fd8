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
  public var isEmpty: Bool { ends.isEmpty }

  /// The value at `position`. Setting it keeps the entry's id.
  ///
  /// - Parameter position: A valid index of the list.
  /// - Complexity: O(log *c*) where *c* is the number of chunks.
  @inlinable
  public subscript(position: Int) -> Item {
    get {
      precondition(position >= 0 && position < count, "ItemList index out of range")
      let (chunk, offset) = locate(position)
      return storage(at: chunk).values[offset]
    }
    set {
      precondition(position >= 0 && position < count, "ItemList index out of range")
      let (chunk, offset) = locate(position)
      uniqueChunk(chunk).values[offset] = newValue
    }
  }

  /// Iterates over the values chunk by chunk, without a search per element.
  public struct Iterator: IteratorProtocol {
    @usableFromInline
    var values: ValueWalker<Item>

    @inlinable
    init(values: ValueWalker<Item>) {
      self.values = values
    }

    /// The next value, or `nil` at the end.
    ///
    /// - Returns: The next value.
    @inlinable
    public mutating func next() -> Item? {
      values.next()
    }
  }

  /// Returns an iterator over the values.
  ///
  /// - Returns: The iterator.
  @inlinable
  public func makeIterator() -> Iterator {
    Iterator(values: ValueWalker(values: chunks))
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
    guard lhs.ids.elementsEqual(rhs.ids) else { return false }
    return lhs.elementsEqual(rhs)
  }
}

// The chunks are classes, but a chunk is only ever mutated through `uniqueChunk`, which copies
// it first unless this list holds the only reference: a chunk reachable from two lists (or two
// threads) is never mutated, so sharing lists across threads is as safe as sharing arrays.
extension ItemList: @unchecked Sendable where Item: Sendable {}

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

extension ItemList.Iterator: Sendable where Item: Sendable {}
