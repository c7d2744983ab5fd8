import Observable2D

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

  /// Appends the text of column `column` of the statement's current row.
  mutating func append(column: Int32, of statement: any DatabaseStatement) {
    statement.withUTF8(at: column) { bytes.append(contentsOf: $0) }
    ends.append(bytes.count)
  }

  /// The strings of `lists`, in order, as JSON string literals (what ListStore stores for a
  /// `String`): the bytes in one buffer sized up front and copied into, without an append
  /// per string.
  init(jsonStrings lists: [ItemList<String>]) {
    var count = 0
    var byteCount = 0
    var plain = true  // Whether no string needs escaping (or is not contiguous UTF-8).
    for list in lists {
      count += list.count
      list.forEachChunk { strings in
        for index in strings.indices {
          let size = strings[index].utf8.withContiguousStorageIfAvailable { utf8 in
            Self.needsEscaping(utf8) ? nil : utf8.count + 2
          }
          if let size = size ?? nil { byteCount += size } else { plain = false }
        }
      }
    }
    guard plain else {
      for list in lists {
        for string in list { appendJSONString(string) }
      }
      return
    }
    var ends: [Int] = []
    ends.reserveCapacity(count)
    bytes = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
      guard let base = buffer.baseAddress else { return }
      for list in lists {
        list.forEachChunk { strings in
          for index in strings.indices {
            strings[index].utf8.withContiguousStorageIfAvailable { utf8 in
              base[initialized] = UInt8(ascii: "\"")
              if let source = utf8.baseAddress {
                (base + initialized + 1).initialize(from: source, count: utf8.count)
              }
              initialized += utf8.count + 2
              base[initialized - 1] = UInt8(ascii: "\"")
              ends.append(initialized)
            }
          }
        }
      }
    }
    self.ends = ends
  }

  /// Appends `text` as a JSON string literal: what ListStore stores for a `String`.
  mutating func appendJSONString(_ text: String) {
    // A native string's bytes without a copy of the string (`withUTF8` needs one).
    let done: Void? = text.utf8.withContiguousStorageIfAvailable { appendJSONString(utf8: $0) }
    if done == nil {
      var text = text
      text.withUTF8 { appendJSONString(utf8: $0) }
    }
  }

  /// Appends a string given as UTF-8 bytes as a JSON string literal.
  private mutating func appendJSONString(utf8: UnsafeBufferPointer<UInt8>) {
    if Self.needsEscaping(utf8) {
      bytes.append(contentsOf: JSONText.quote(String(decoding: utf8, as: UTF8.self)).utf8)
    } else {
      // The common case: nothing to escape.
      bytes.append(UInt8(ascii: "\""))
      bytes.append(contentsOf: utf8)
      bytes.append(UInt8(ascii: "\""))
    }
    ends.append(bytes.count)
  }

  /// Whether a string's UTF-8 bytes hold a quote, a backslash or a control character,
  /// checked eight bytes at a time.
  static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    /// Whether some byte of `word` is zero.
    func hasZero(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
    /// Whether some byte of `word` is below 0x20, or equal to '"' or '\\'.
    func hasSpecial(_ word: UInt64) -> Bool {
      (word &- 0x20 &* ones) & ~word & highs != 0 || hasZero(word ^ (0x22 &* ones))
        || hasZero(word ^ (0x5C &* ones))
    }
    var index = 0
    if let base = UnsafeRawPointer(utf8.baseAddress), utf8.count >= 8 {
      while index + 8 <= utf8.count {
        if hasSpecial(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) { return true }
        index += 8
      }
      // The last bytes in one word that overlaps the ones already checked.
      return index < utf8.count
        && hasSpecial(base.loadUnaligned(fromByteOffset: utf8.count - 8, as: UInt64.self))
    }
    while index < utf8.count {
      let byte = utf8[index]
      if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
      index += 1
    }
    return false
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

  /// Whether text `index` is `text`, given as UTF-8 bytes.
  func equals(_ index: Int, _ text: UnsafeBufferPointer<UInt8>) -> Bool {
    let mine = range(index)
    guard mine.count == text.count else { return false }
    guard !mine.isEmpty else { return true }
    return bytes.withUnsafeBufferPointer { bytes in
      guard let left = bytes.baseAddress, let right = text.baseAddress else { return false }
      return memcmp(left + mine.lowerBound, right, mine.count) == 0
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
