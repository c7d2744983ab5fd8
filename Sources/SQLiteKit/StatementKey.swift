/// SQL text as a statement cache's key, hashed cheaply.
///
/// Statement caches are looked up on every write, with the same few texts, some of
/// them hundreds of bytes long: `String`'s own hashing (SipHash over every byte) cost
/// more than some of the statements it found. This key folds the text's length and its
/// first and last ``sampled`` bytes into one word and gives only that word to the
/// `Hasher`; equality is still the texts' (a literal compared with itself is one pointer
/// comparison), so texts that differ only in their middle share a bucket and are told
/// apart there. The texts are the library's own, not a caller's, so a hash that is not
/// keyed against flooding is fine.
public struct StatementKey: Hashable, Sendable {
  /// The SQL text.
  public let sql: String

  /// A key for `sql`.
  /// - Parameter sql: The statement's text.
  public init(_ sql: String) { self.sql = sql }

  /// Whether two keys hold the same text.
  public static func == (lhs: StatementKey, rhs: StatementKey) -> Bool { lhs.sql == rhs.sql }

  /// Feeds the text, folded into one word, to `hasher`.
  public func hash(into hasher: inout Hasher) {
    let mixed = sql.utf8.withContiguousStorageIfAvailable { Self.mix($0) }
    if let mixed { hasher.combine(mixed) } else { hasher.combine(sql) }
  }

  /// How many bytes at each end of a text its hash reads: enough to tell the library's
  /// statements apart by their start or end (almost all of them differ there).
  public static let sampled = 32

  /// The length and the bytes at both ends (the whole text when it is short) folded into
  /// one word: a multiply-and-rotate over 8-byte words, then the tail.
  static func mix(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
    var word: UInt64 = UInt64(truncatingIfNeeded: bytes.count) &* multiplier
    guard let base = bytes.baseAddress else { return word }
    let raw = UnsafeRawPointer(base)
    func fold(from start: Int, to end: Int) {
      var offset = start
      while offset + 8 <= end {
        let chunk = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        word = ((word ^ chunk) &* multiplier).rotated(by: 29)
        offset += 8
      }
      var tail: UInt64 = 0
      var shift: UInt64 = 0
      while offset < end {
        tail |= UInt64(bytes[offset]) << shift
        shift += 8
        offset += 1
      }
      word = ((word ^ tail) &* multiplier).rotated(by: 29)
    }
    if bytes.count <= 2 * sampled {
      fold(from: 0, to: bytes.count)
    } else {
      fold(from: 0, to: sampled)
      fold(from: bytes.count - sampled, to: bytes.count)
    }
    return word
  }
}

extension UInt64 {
  fileprivate func rotated(by count: UInt64) -> UInt64 {
    (self << count) | (self >> (64 - count))
  }
}
