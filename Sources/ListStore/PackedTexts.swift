#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Many short texts (JSON values, position keys) packed into one byte buffer and
/// addressed by number: reading a list of a million rows makes two arrays, not a
/// million strings.
struct PackedTexts {
  /// Every text's bytes, one after the other.
  private(set) var bytes: [UInt8] = []
  /// Where each text ends in `bytes`; text `i` starts where text `i - 1` ends.
  private(set) var ends: [Int] = []

  init() {}

  /// The number of texts.
  var count: Int { ends.count }

  mutating func reserveCapacity(texts: Int, bytes byteCount: Int) {
    ends.reserveCapacity(texts)
    bytes.reserveCapacity(byteCount)
  }

  /// Appends a text.
  mutating func append(_ text: String) {
    var text = text
    text.withUTF8 { append($0) }
  }

  /// Appends a text given as UTF-8 bytes.
  mutating func append(_ text: UnsafeBufferPointer<UInt8>) {
    bytes.append(contentsOf: text)
    ends.append(bytes.count)
  }

  /// Appends the bytes `body` writes into the buffer as one text.
  mutating func append(writing body: (inout [UInt8]) throws -> Void) rethrows {
    try body(&bytes)
    ends.append(bytes.count)
  }

  /// Where text `index` is in `bytes`.
  func range(_ index: Int) -> Range<Int> {
    (index == 0 ? 0 : ends[index - 1])..<ends[index]
  }

  /// Text `index` as a string.
  func string(_ index: Int) -> String {
    let range = range(index)
    return bytes.withUnsafeBufferPointer {
      String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self)
    }
  }

  /// Whether text `index` has the same bytes as text `otherIndex` of `other`.
  func equals(_ index: Int, _ other: PackedTexts, _ otherIndex: Int) -> Bool {
    let mine = range(index)
    let theirs = other.range(otherIndex)
    guard mine.count == theirs.count else { return false }
    guard !mine.isEmpty else { return true }
    return bytes.withUnsafeBufferPointer { left in
      other.bytes.withUnsafeBufferPointer { right in
        guard let left = left.baseAddress, let right = right.baseAddress else { return false }
        return memcmp(left + mine.lowerBound, right + theirs.lowerBound, mine.count) == 0
      }
    }
  }
}
