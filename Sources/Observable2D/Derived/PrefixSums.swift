/// Prefix sums over a sequence of counts (a Fenwick tree): changing one count, reading the
/// sum of those before a position, and finding the position that holds the *k*-th unit each
/// cost O(log *n*).
///
/// The derived arrays keep one over the blocks of their position indexes (``RankedBits``,
/// ``IDSequence``), so that finding the block of a position does not walk the blocks.
@usableFromInline
struct PrefixSums {
  /// 1-based: `tree[i]` sums the counts of positions `i - lowbit(i) ..< i`.
  @usableFromInline
  var tree: [Int]
  /// The largest power of two not above the number of counts (0 when there are none).
  @usableFromInline
  var topStep: Int

  /// Creates the sums of `counts`.
  ///
  /// - Complexity: O(*n*).
  @inlinable
  init(_ counts: some Collection<Int>) {
    var tree = [Int](repeating: 0, count: counts.count + 1)
    var index = 1
    for count in counts {
      tree[index] &+= count
      let parent = index + (index & -index)
      if parent < tree.count { tree[parent] &+= tree[index] }
      index += 1
    }
    self.tree = tree
    var step = 1
    while step * 2 <= counts.count { step *= 2 }
    topStep = counts.isEmpty ? 0 : step
  }

  /// The number of counts.
  @inlinable
  var count: Int { tree.count - 1 }

  /// Adds `delta` to the count at `position`.
  @inlinable
  mutating func add(_ delta: Int, at position: Int) {
    var index = position + 1
    while index < tree.count {
      tree[index] &+= delta
      index += index & -index
    }
  }

  /// The sum of the counts before `position`.
  @inlinable
  func sum(before position: Int) -> Int {
    var index = position
    var total = 0
    while index > 0 {
      total &+= tree[index]
      index -= index & -index
    }
    return total
  }

  /// The position whose count holds unit `target` (counting from 0 over all counts in
  /// order), and the unit's offset within that count.
  ///
  /// - Precondition: `0 <= target < ` the sum of all counts, and no count is negative.
  @inlinable
  func locate(_ target: Int) -> (position: Int, offset: Int) {
    var position = 0
    var remaining = target
    var step = topStep
    while step > 0 {
      let next = position + step
      if next < tree.count && tree[next] <= remaining {
        position = next
        remaining -= tree[next]
      }
      step >>= 1
    }
    return (position, remaining)
  }
}
