import SQLiteKit
import TestSupport
import Testing

@Suite struct StatementKeyTests {
  /// A random SQL-ish text of `length` bytes, some of them non-ASCII.
  func text(length: Int, using generator: inout SeededGenerator) -> String {
    let alphabet = Array("SELECT abc_xyz0123456789 ,()?'é東🚀")
    var result = ""
    while result.utf8.count < length {
      result.append(alphabet[Int.random(in: alphabet.indices, using: &generator)])
    }
    return result
  }

  @Test func equalTextsAreEqualKeysWithEqualHashes() {
    var generator = SeededGenerator(seed: 14)
    for length in 0..<80 {
      let sql = text(length: length, using: &generator)
      // A copy built separately, so the two do not share storage.
      let copy = String(decoding: Array(sql.utf8), as: UTF8.self)
      #expect(StatementKey(sql) == StatementKey(copy))
      #expect(StatementKey(sql).hashValue == StatementKey(copy).hashValue)
    }
  }

  @Test func textsThatDifferInOneByteAreDifferentKeys() {
    var generator = SeededGenerator(seed: 15)
    var keys: Set<StatementKey> = []
    var hashes: Set<Int> = []
    var sampledCount = 0
    var count = 0
    for length in [1, 7, 8, 9, 16, 23, 64, 65, 600] {
      let base = Array(text(length: length, using: &generator).utf8)
      for position in base.indices where base[position] < 0x80 {
        var changed = base
        changed[position] =
          base[position] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
        let key = StatementKey(String(decoding: changed, as: UTF8.self))
        #expect(key != StatementKey(String(decoding: base, as: UTF8.self)))
        keys.insert(key)
        count += 1
        // The hash reads both ends of a text (all of a short one): a change there shows.
        let sampled = StatementKey.sampled
        if length <= 2 * sampled || position < sampled || position >= length - sampled {
          hashes.insert(key.hashValue)
          sampledCount += 1
        }
      }
    }
    #expect(keys.count == count)
    // The mixing spreads one-byte changes: no two of these texts share a hash.
    #expect(hashes.count == sampledCount)
  }

  @Test func cacheFindsTextsThatDifferOnlyInTheirMiddle() throws {
    let db = try Connection(path: ":memory:")
    // Same length, same ends: the same hash, told apart by the texts themselves.
    let padding = String(repeating: " ", count: StatementKey.sampled)
    let texts = (0..<10).map { "SELECT \(padding)\($0)\(padding) AS value" }
    #expect(Set(texts.map { StatementKey($0).hashValue }).count == 1)
    for _ in 0..<3 {
      for (offset, sql) in texts.enumerated() {
        let statement = try db.cachedStatement(sql)
        #expect(try statement.step())
        #expect(statement.int(at: 0) == offset)
      }
    }
  }

  @Test func cacheFindsEachTextsOwnStatement() throws {
    let db = try Connection(path: ":memory:")
    // Equal lengths, one byte apart, so only the texts tell them apart.
    let texts = (0..<10).map { "SELECT \($0) AS value, 'padding to cross eight-byte words'" }
    for _ in 0..<3 {
      for (offset, sql) in texts.enumerated() {
        let statement = try db.cachedStatement(sql)
        #expect(try statement.step())
        #expect(statement.int(at: 0) == offset)
      }
    }
  }
}
