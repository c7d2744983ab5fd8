/// A sequence of bits that counts the set bits before a position (its *rank*), with bits
/// inserted and removed anywhere, each in O(log *n*).
///
/// A filtered array keeps one per section: bit *r* says whether the source's item at row
/// *r* passes the predicate, and the rank of *r* is that item's row in the filtered
/// section. The bits sit in blocks of at most ``maximumBlockBits``, with prefix sums of
/// the blocks' sizes and set bits, so that an insertion shifts the words of one block.
@usableFromInline
struct RankedBits {
  /// The most bits a block holds; a full block is split in two halves.
  @inlinable
  static var maximumBlockBits: Int { 4_096 }
  /// How many bits a block holds when the sequence is built.
  @inlinable
  static var initialBlockBits: Int { 2_048 }

  @usableFromInline
  struct Block {
    @usableFromInline
    var words: [UInt64]
    @usableFromInline
    var count: Int
    @usableFromInline
    var ones: Int

    @inlinable
    init(words: [UInt64], count: Int, ones: Int) {
      self.words = words
      self.count = count
      self.ones = ones
    }
  }

  @usableFromInline
  var blocks: [Block]
  @usableFromInline
  var sizes: PrefixSums
  @usableFromInline
  var setBits: PrefixSums
  /// The number of bits.
  @usableFromInline
  var count: Int
  /// The number of set bits.
  @usableFromInline
  var trueCount: Int

  /// Creates the sequence of `bits`.
  ///
  /// - Complexity: O(*n*).
  @inlinable
  init(_ bits: some Sequence<Bool>) {
    var blocks: [Block] = []
    var current = Block(words: [], count: 0, ones: 0)
    for bit in bits {
      if current.count == Self.initialBlockBits {
        blocks.append(current)
        current = Block(words: [], count: 0, ones: 0)
      }
      if current.count & 63 == 0 { current.words.append(0) }
      if bit {
        current.words[current.count >> 6] |= 1 << UInt64(current.count & 63)
        current.ones += 1
      }
      current.count += 1
    }
    if current.count > 0 || blocks.isEmpty { blocks.append(current) }
    self.blocks = blocks
    sizes = PrefixSums(blocks.map(\.count))
    setBits = PrefixSums(blocks.map(\.ones))
    count = blocks.reduce(0) { $0 + $1.count }
    trueCount = blocks.reduce(0) { $0 + $1.ones }
  }

  /// Creates an empty sequence.
  @inlinable
  init() {
    self.init(EmptyCollection())
  }

  /// The block holding `position`, and the position within it; one past the end is the
  /// end of the last block.
  @inlinable
  func locate(_ position: Int) -> (block: Int, offset: Int) {
    if position == count { return (blocks.count - 1, blocks[blocks.count - 1].count) }
    let (block, offset) = sizes.locate(position)
    return (block, offset)
  }

  /// The bit at `position`.
  @inlinable
  subscript(position: Int) -> Bool {
    precondition(position >= 0 && position < count, "RankedBits: position out of range")
    let (block, offset) = locate(position)
    return blocks[block].words[offset >> 6] & (1 << UInt64(offset & 63)) != 0
  }

  /// The number of set bits before `position` (`0 ... count`).
  @inlinable
  func rank(_ position: Int) -> Int {
    precondition(position >= 0 && position <= count, "RankedBits: position out of range")
    if position == count { return trueCount }
    let (block, offset) = locate(position)
    var total = setBits.sum(before: block)
    let words = blocks[block].words
    for word in 0..<(offset >> 6) { total += words[word].nonzeroBitCount }
    let partial = offset & 63
    if partial > 0 {
      total += (words[offset >> 6] & ((1 << UInt64(partial)) - 1)).nonzeroBitCount
    }
    return total
  }

  /// Inserts `bit` at `position` (`0 ... count`).
  @inlinable
  mutating func insert(_ bit: Bool, at position: Int) {
    precondition(position >= 0 && position <= count, "RankedBits: position out of range")
    var (block, offset) = locate(position)
    if blocks[block].count == Self.maximumBlockBits {
      split(block)
      if offset >= blocks[block].count {
        offset -= blocks[block].count
        block += 1
      }
    }
    Self.insert(bit, at: offset, into: &blocks[block])
    sizes.add(1, at: block)
    count += 1
    if bit {
      setBits.add(1, at: block)
      trueCount += 1
    }
  }

  /// Removes the bit at `position` and returns it.
  @discardableResult
  @inlinable
  mutating func remove(at position: Int) -> Bool {
    precondition(position >= 0 && position < count, "RankedBits: position out of range")
    let (block, offset) = locate(position)
    let bit = Self.remove(at: offset, from: &blocks[block])
    count -= 1
    if bit { trueCount -= 1 }
    if blocks[block].count == 0 && blocks.count > 1 {
      blocks.remove(at: block)
      rebuildSums()
    } else {
      sizes.add(-1, at: block)
      if bit { setBits.add(-1, at: block) }
    }
    return bit
  }

  /// Sets the bit at `position`; returns its old value.
  @discardableResult
  @inlinable
  mutating func set(_ bit: Bool, at position: Int) -> Bool {
    precondition(position >= 0 && position < count, "RankedBits: position out of range")
    let (block, offset) = locate(position)
    let mask: UInt64 = 1 << UInt64(offset & 63)
    let old = blocks[block].words[offset >> 6] & mask != 0
    guard old != bit else { return old }
    blocks[block].words[offset >> 6] ^= mask
    let delta = bit ? 1 : -1
    blocks[block].ones += delta
    setBits.add(delta, at: block)
    trueCount += delta
    return old
  }

  @inlinable
  mutating func split(_ index: Int) {
    let block = blocks[index]
    let half = block.count / 2
    var low = Block(words: Array(block.words[0..<(half >> 6)]), count: half & ~63, ones: 0)
    var high = Block(words: [], count: 0, ones: 0)
    // `half` is a multiple of 64 for a full block; the general case copies bit by bit.
    for bit in (half & ~63)..<block.count {
      let set = block.words[bit >> 6] & (1 << UInt64(bit & 63)) != 0
      if bit < half {
        Self.insert(set, at: low.count, into: &low)
      } else {
        Self.insert(set, at: high.count, into: &high)
      }
    }
    low.ones = low.words.reduce(0) { $0 + $1.nonzeroBitCount }
    high.ones = block.ones - low.ones
    blocks[index] = low
    blocks.insert(high, at: index + 1)
    rebuildSums()
  }

  @inlinable
  mutating func rebuildSums() {
    sizes = PrefixSums(blocks.map(\.count))
    setBits = PrefixSums(blocks.map(\.ones))
  }

  /// Inserts a bit into a block that has room, shifting the later bits up by one.
  @inlinable
  static func insert(_ bit: Bool, at offset: Int, into block: inout Block) {
    if block.count & 63 == 0 { block.words.append(0) }
    let first = offset >> 6
    let shift = UInt64(offset & 63)
    let lowMask: UInt64 = shift == 0 ? 0 : (1 << shift) - 1
    var word = block.words[first]
    var carry = word >> 63
    word = (word & lowMask) | ((word & ~lowMask) << 1) | ((bit ? 1 : 0) << shift)
    block.words[first] = word
    var index = first + 1
    let last = (block.count) >> 6
    while index <= last {
      let next = block.words[index]
      block.words[index] = (next << 1) | carry
      carry = next >> 63
      index += 1
    }
    block.count += 1
    if bit { block.ones += 1 }
  }

  /// Removes a bit from a block, shifting the later bits down by one; returns the bit.
  @inlinable
  static func remove(at offset: Int, from block: inout Block) -> Bool {
    let first = offset >> 6
    let shift = UInt64(offset & 63)
    let lowMask: UInt64 = shift == 0 ? 0 : (1 << shift) - 1
    let word = block.words[first]
    let bit = word & (1 << shift) != 0
    let lastWord = block.words.count - 1
    var shifted = (word & lowMask) | ((word >> 1) & ~lowMask)
    if first < lastWord { shifted |= (block.words[first + 1] & 1) << 63 }
    block.words[first] = shifted
    var index = first + 1
    while index <= lastWord {
      var next = block.words[index] >> 1
      if index < lastWord { next |= (block.words[index + 1] & 1) << 63 }
      block.words[index] = next
      index += 1
    }
    block.count -= 1
    if block.count & 63 == 0 { block.words.removeLast() }
    if bit { block.ones -= 1 }
    return bit
  }
}

extension RankedBits: Sequence {
  /// The bits in order, block by block.
  @usableFromInline
  struct Iterator: IteratorProtocol {
    @usableFromInline
    let blocks: [Block]
    @usableFromInline
    var block = 0
    @usableFromInline
    var bit = 0

    @inlinable
    init(blocks: [Block]) {
      self.blocks = blocks
    }

    @inlinable
    mutating func next() -> Bool? {
      while block < blocks.count && bit == blocks[block].count {
        block += 1
        bit = 0
      }
      guard block < blocks.count else { return nil }
      defer { bit += 1 }
      return blocks[block].words[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }
  }

  @inlinable
  func makeIterator() -> Iterator {
    Iterator(blocks: blocks)
  }

  @inlinable
  var underestimatedCount: Int { count }
}
