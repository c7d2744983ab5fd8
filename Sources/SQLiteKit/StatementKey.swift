/// SQL text as a statement cache's key, hashed cheaply.
///
/// Statement caches are looked up on every write, with the same few texts, some of
/// them hundreds of bytes long: `String`'s own hashing (SipHash over every byte) cost
/// more than some of the statements it found. This key mixes the text eight bytes at a
/// time into one word and gives only that word to the `Hasher`; equality is still the
/// texts' (a literal compared with itself is one pointer comparison). The texts are the
/// library's own, not a caller's, so a hash that is not keyed against flooding is fine.
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

  /// The bytes folded into one word: a multiply-and-rotate over 8-byte words, then
  /// the tail and the length.
  static func mix(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
    var word: UInt64 = UInt64(truncatingIfNeeded: bytes.count) &* multiplier
    guard let base = bytes.baseAddress else { return word }
    let raw = UnsafeRawPointer(base)
    var offset = 0
    while offset + 8 <= bytes.count {
      let chunk = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
      word = ((word ^ chunk) &* multiplier).rotated(by: 29)
      offset += 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while offset < bytes.count {
      tail |= UInt64(bytes[offset]) << shift
      shift += 8
      offset += 1
    }
    return ((word ^ tail) &* multiplier).rotated(by: 29)
  }
}

extension UInt64 {
  fileprivate func rotated(by count: UInt64) -> UInt64 {
    (self << count) | (self >> (64 - count))
  }
}
