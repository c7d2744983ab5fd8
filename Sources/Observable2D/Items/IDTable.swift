/// The positions of nonzero `Int64` ids in an array of them, for the diff's hot loop (and
/// ListStore's sync, which finds the items of a new state by id as it reads the stored ones).
///
/// It is made for one array of ids. When they lie close together (at most four slots per
/// id between the smallest and the largest), as ids that a store hands out in order do, it is
/// a flat array indexed by id: reading and writing it in id order walks memory in order.
/// Otherwise it is a flat array of `(key, value)` slots probed linearly from a mixed hash of the
/// key, kept at most half full; key `0` marks an empty slot, which suits ids since `0` means
/// "no id". Ids come from the store or from the array's own counter, not from an adversary, so
/// a fixed 64-bit mixer is enough. One probe usually touches one cache line, which makes it
/// several times faster than a `Dictionary<Int64, Int32>` (SipHash, separate key and value
/// arrays).
package struct IDTable {
  private struct Slot {
    var key: Int64
    var value: Int32
  }

  /// Hashed: the slots (empty when indexed by id).
  private var slots: [Slot] = []
  private var mask = 0
  /// Indexed by id: the value of id `low + i` at `i`, `-1` for none (empty when hashed).
  private var positions: [Int32] = []
  private var low: Int64 = 0

  /// The first id that `ids` holds twice (the table keeps its first position), or `nil`.
  package private(set) var repeatedID: Int64?

  /// Creates the table of the positions of the nonzero ids of `ids`.
  package init(positionsOf ids: [Int64]) {
    var smallest = Int64.max
    var largest = Int64.min
    for id in ids where id != 0 {
      smallest = min(smallest, id)
      largest = max(largest, id)
    }
    let (width, overflow) = largest.subtractingReportingOverflow(smallest)
    if smallest <= largest && !overflow && width < Int64(ids.count) * 4 {
      low = smallest
      positions = [Int32](repeating: -1, count: Int(width) + 1)
    } else {
      var size = 16
      while size < ids.count * 2 { size <<= 1 }
      slots = [Slot](repeating: Slot(key: 0, value: 0), count: size)
      mask = size - 1
    }
    for (position, id) in ids.enumerated() where id != 0 {
      if !insert(id, value: Int32(truncatingIfNeeded: position)) && repeatedID == nil {
        repeatedID = id
      }
    }
  }

  private static func start(of key: Int64, mask: Int) -> Int {
    var mixed = UInt64(bitPattern: key)
    mixed ^= mixed >> 33
    mixed &*= 0xFF51_AFD7_ED55_8CCD
    mixed ^= mixed >> 33
    return Int(truncatingIfNeeded: mixed) & mask
  }

  /// The place of `key` in `positions`, or `nil` when it lies outside.
  private func offset(of key: Int64) -> Int? {
    let (offset, overflow) = key.subtractingReportingOverflow(low)
    guard !overflow, offset >= 0, offset < Int64(positions.count) else { return nil }
    return Int(offset)
  }

  /// Adds `key`, one of the ids the table is made for, with `value` unless it is already
  /// there.
  ///
  /// - Returns: `true` when the key was added, `false` when it was already present.
  private mutating func insert(_ key: Int64, value: Int32) -> Bool {
    if !positions.isEmpty {
      let offset = Int(key &- low)  // Within `positions`: the table is made for `key`.
      guard positions[offset] < 0 else { return false }
      positions[offset] = value
      return true
    }
    let mask = self.mask
    return slots.withUnsafeMutableBufferPointer { slots in
      var index = Self.start(of: key, mask: mask)
      while true {
        let found = slots[index].key
        if found == 0 {
          slots[index] = Slot(key: key, value: value)
          return true
        }
        if found == key { return false }
        index = (index &+ 1) & mask
      }
    }
  }

  /// The (first) position of `key`, or `nil` when `key` is `0` or not one of the ids.
  package func value(for key: Int64) -> Int32? {
    guard key != 0 else { return nil }
    if !positions.isEmpty {
      guard let offset = offset(of: key) else { return nil }
      let value = positions[offset]
      return value < 0 ? nil : value
    }
    let mask = self.mask
    return slots.withUnsafeBufferPointer { slots in
      var index = Self.start(of: key, mask: mask)
      while true {
        let found = slots[index].key
        if found == key { return slots[index].value }
        if found == 0 { return nil }
        index = (index &+ 1) & mask
      }
    }
  }
}
