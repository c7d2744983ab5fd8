import TestSupport
import Testing

@testable import ListStore

@Suite struct PositionKeyTests {
  private func precedes(_ a: String, _ b: String) -> Bool {
    a.utf8.lexicographicallyPrecedes(b.utf8)
  }

  @Test func firstKeysAndNeighbours() throws {
    #expect(try PositionKey.between(nil, nil) == "a0")
    #expect(try PositionKey.between("a0", nil) == "a1")
    #expect(try PositionKey.between(nil, "a0") == "Zz")
    #expect(try PositionKey.between("a0", "a1") == "a0V")
    #expect(try PositionKey.between("az", nil) == "b00")
    #expect(try PositionKey.between(nil, "b00") == "az")
    #expect(try PositionKey.between("Zz", nil) == "a0")
  }

  @Test(arguments: ["", "a", "b0", "a0 ", "a00", "A00000000000000000000000000", "!x", "a0é"])
  func rejectsMalformedKeys(_ key: String) {
    #expect(!PositionKey.isValid(key))
    #expect(throws: PositionKey.InvalidKey.self) { try PositionKey.between(key, nil) }
    #expect(throws: PositionKey.InvalidKey.self) { try PositionKey.between(nil, key) }
  }

  @Test func rejectsBoundsOutOfOrder() {
    #expect(throws: PositionKey.InvalidKey.self) { try PositionKey.between("a1", "a0") }
    #expect(throws: PositionKey.InvalidKey.self) { try PositionKey.between("a1", "a1") }
  }

  /// Random insertions anywhere in a growing list keep every key valid and the keys
  /// strictly increasing, so one insert never needs another row renumbered.
  @Test(arguments: [1, 2, 3, 4, 5])
  func randomInsertionsStayOrdered(seed: UInt64) throws {
    var random = SeededGenerator(seed: testSeed(seed))
    var keys: [String] = []
    for step in 0..<scaled(2000) {
      let index = Int.random(in: 0...keys.count, using: &random)
      let lower = index > 0 ? keys[index - 1] : nil
      let upper = index < keys.count ? keys[index] : nil
      let key = try PositionKey.between(lower, upper)
      #expect(PositionKey.isValid(key), "seed \(seed) step \(step): \(key)")
      if let lower { #expect(precedes(lower, key), "seed \(seed) step \(step)") }
      if let upper { #expect(precedes(key, upper), "seed \(seed) step \(step)") }
      keys.insert(key, at: index)
    }
    #expect(zip(keys, keys.dropFirst()).allSatisfy { precedes($0, $1) })
  }

  /// The shortcut for integer bounds gives what the general algorithm gives, or leaves the
  /// case to it: random bounds near each other and near the alphabet's ends, well formed
  /// or not, in order or not.
  @Test(arguments: [1, 2, 3])
  func integerShortcutAgreesWithTheGeneralAlgorithm(seed: UInt64) throws {
    var random = SeededGenerator(seed: testSeed(seed))
    let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    let heads = Array("ZYXabcyz") + ["A"]
    func randomBound() -> String? {
      switch random.next() % 8 {
      case 0: return nil
      case 1:
        return ["", "a", "a00", "A00000000000000000000000000", "a0é", "b0!"][
          Int(random.next() % 6)]
      default:
        let head = heads[Int(random.next() % UInt64(heads.count))]
        let length =
          head == "A"
          ? 27 : head.isUppercase ? 92 - Int(head.asciiValue ?? 0) : Int(head.asciiValue ?? 0) - 95
        // Digits mostly from the ends of the alphabet, where carries and borrows happen.
        var key = String(head)
        for _ in 1..<length {
          let index = Int(random.next() % 4)
          key.append(
            index == 0 ? alphabet[0] : index == 1 ? alphabet[61] : alphabet[Int(random.next() % 62)]
          )
        }
        // Now and then a fraction.
        if random.next() % 5 == 0 { key.append(alphabet[1 + Int(random.next() % 61)]) }
        return key
      }
    }
    var shortcuts = 0
    for step in 0..<scaled(20_000) {
      var lower = randomBound()
      var upper = randomBound()
      if random.next() % 3 == 0, let key = lower, PositionKey.isValid(key) {
        // Neighbours: the next integer, or a key just above.
        upper = (try? PositionKey.between(key, nil)).flatMap {
          random.next() % 2 == 0 ? $0 : key + "z"
        }
      }
      if random.next() % 4 == 0 { swap(&lower, &upper) }
      let general = Result { () throws(PositionKey.InvalidKey) in
        try PositionKey.generalBetween(lower, upper)
      }
      let chosen = Result { () throws(PositionKey.InvalidKey) in
        try PositionKey.between(lower, upper)
      }
      #expect(
        chosen == general,
        "seed \(seed) step \(step): \(String(describing: lower)), \(String(describing: upper))")
      if PositionKey.integerBetween(lower, upper) != nil { shortcuts += 1 }
    }
    // The shortcut was taken often, and the general algorithm too.
    #expect(shortcuts > scaled(20_000) / 10 && shortcuts < scaled(20_000) * 9 / 10, "\(shortcuts)")
  }

  @Test func repeatedHeadAndTailInsertsStayShort() throws {
    var head = try PositionKey.between(nil, nil)
    var tail = head
    for _ in 0..<100_000 {
      head = try PositionKey.between(nil, head)
      tail = try PositionKey.between(tail, nil)
    }
    #expect(head.count <= 5)
    #expect(tail.count <= 5)
  }

  @Test func repeatedMiddleInsertsGrowSlowly() throws {
    // Always inserting right after the same key: the worst case for the fraction.
    let lower = "a0"
    var upper = "a1"
    for _ in 0..<1000 { upper = try PositionKey.between(lower, upper) }
    // Each character of fraction absorbs about five halvings (62 digits).
    #expect(upper.count < 1000 / 4)
  }

  @Test(arguments: [
    (nil, nil, 1000), ("a5", nil, 300), (nil, "a0", 300), ("a0", "a1", 1000), ("a0V", "a0W", 10),
  ])
  func bulkKeysAreOrderedAndBounded(lower: String?, upper: String?, count: Int) throws {
    let keys = try PositionKey.keys(between: lower, upper, count: count)
    #expect(keys.count == count)
    #expect(keys.allSatisfy(PositionKey.isValid))
    #expect(zip(keys, keys.dropFirst()).allSatisfy { precedes($0, $1) })
    if let lower, let first = keys.first { #expect(precedes(lower, first)) }
    if let upper, let last = keys.last { #expect(precedes(last, upper)) }
    // Balanced: no key much longer than the bisection depth needs.
    #expect((keys.map(\.count).max() ?? 0) <= (upper?.count ?? 2) + 12)
  }
}
