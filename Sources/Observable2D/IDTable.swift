/// An open-addressing hash table from nonzero `Int64` ids to `Int32` positions, for the diff's
/// hot loop.
///
/// It is a flat array of `(key, value)` slots probed linearly from a mixed hash of the key,
/// kept at most half full; key `0` marks an empty slot, which suits ids since `0` means "no id".
/// Ids come from the store or from the array's own counter, not from an adversary, so a fixed
/// 64-bit mixer is enough. One probe usually touches one cache line, which makes it several
/// times faster than a `Dictionary<Int64, Int32>` (SipHash, separate key and value arrays).
struct IDTable {
  private struct Slot {
    var key: Int64
    var value: Int32
  }

  private var slots: [Slot]
  private let mask: Int

  /// Creates a table with room for `count` ids.
  init(capacity count: Int) {
    var size = 16
    while size < count * 2 { size <<= 1 }
    slots = [Slot](repeating: Slot(key: 0, value: 0), count: size)
    mask = size - 1
  }

  private static func start(of key: Int64, mask: Int) -> Int {
    var mixed = UInt64(bitPattern: key)
    mixed ^= mixed >> 33
    mixed &*= 0xFF51_AFD7_ED55_8CCD
    mixed ^= mixed >> 33
    return Int(truncatingIfNeeded: mixed) & mask
  }

  /// Adds `key` with `value` unless it is already there.
  ///
  /// - Returns: `true` when the key was added, `false` when it was already present.
  mutating func insert(_ key: Int64, value: Int32) -> Bool {
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

  /// The value stored for `key`, or `nil`.
  func value(for key: Int64) -> Int32? {
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
