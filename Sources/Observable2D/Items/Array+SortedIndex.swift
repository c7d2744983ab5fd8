extension Array where Element: Comparable {
  /// How many elements of this array, sorted in increasing order, are below `value`: the
  /// index of `value`'s first occurrence, or where it would be inserted.
  ///
  /// - Complexity: O(log *n*).
  @inlinable
  func sortedIndex(of value: Element) -> Int {
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      if self[middle] < value { low = middle + 1 } else { high = middle }
    }
    return low
  }
}
