import Testing

@testable import Observable2D

/// The position indexes of the derived arrays against plain arrays, over seeded random
/// operations that cross their block and chunk sizes.
@Suite struct DerivedIndexTests {
  @Test(arguments: [UInt64(1), 2, 3])
  func rankedBitsAgreeWithAnArrayOfBools(seed: UInt64) {
    var random = SeededRandom(seed: PropertyTestSettings.baseSeed &+ seed)
    var model = (0..<Int.random(in: 0...9_000, using: &random)).map { _ in
      Bool.random(using: &random)
    }
    var bits = RankedBits(model)
    for step in 0..<20_000 {
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<4:
        let position = Int.random(in: 0...model.count, using: &random)
        let bit = Bool.random(using: &random)
        model.insert(bit, at: position)
        bits.insert(bit, at: position)
      case 4..<7 where !model.isEmpty:
        let position = Int.random(in: 0..<model.count, using: &random)
        let removed = bits.remove(at: position)
        #expect(removed == model.remove(at: position), "seed \(seed) step \(step)")
      case 7 where !model.isEmpty:
        let position = Int.random(in: 0..<model.count, using: &random)
        let bit = Bool.random(using: &random)
        #expect(bits.set(bit, at: position) == model[position])
        model[position] = bit
      default:
        let position = Int.random(in: 0...model.count, using: &random)
        let rank = model[..<position].lazy.filter { $0 }.count
        #expect(bits.rank(position) == rank, "seed \(seed) step \(step) rank(\(position))")
        if position < model.count { #expect(bits[position] == model[position]) }
      }
      #expect(bits.count == model.count)
    }
    #expect(Array(bits) == model)
    #expect(bits.trueCount == model.lazy.filter { $0 }.count)
  }

  @Test(arguments: [UInt64(1), 2, 3])
  func idSequencesAgreeWithAnArrayOfIDs(seed: UInt64) {
    var random = SeededRandom(seed: PropertyTestSettings.baseSeed &+ 100 &+ seed)
    var nextID: Int64 = 1
    var model: [Int64] = (0..<Int.random(in: 0...3_000, using: &random)).map { _ in
      defer { nextID += 1 }
      return nextID
    }
    var sequence = IDSequence(model)
    for step in 0..<20_000 {
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<4:
        let position = Int.random(in: 0...model.count, using: &random)
        model.insert(nextID, at: position)
        sequence.insert(nextID, at: position)
        nextID += 1
      case 4..<6 where !model.isEmpty:
        let position = Int.random(in: 0..<model.count, using: &random)
        #expect(sequence.remove(at: position) == model.remove(at: position))
      case 6 where !model.isEmpty:
        let id = model[Int.random(in: 0..<model.count, using: &random)]
        let position = model.firstIndex(of: id)
        #expect(sequence.remove(id) == position, "seed \(seed) step \(step)")
        model.removeAll { $0 == id }
      case 7:
        let id = Int64.random(in: 1...nextID, using: &random)
        #expect(sequence.position(of: id) == model.firstIndex(of: id), "seed \(seed) step \(step)")
        #expect(sequence.contains(id) == model.contains(id))
      default:
        guard !model.isEmpty else { continue }
        let position = Int.random(in: 0..<model.count, using: &random)
        #expect(sequence.id(at: position) == model[position])
      }
      #expect(sequence.count == model.count)
    }
    #expect((0..<sequence.count).map { sequence.id(at: $0) } == model)
  }

  @Test func firstRowFindsThePartitionPointWithAndWithoutASkippedRow() {
    var random = SeededRandom(seed: PropertyTestSettings.baseSeed &+ 200)
    // Sorted values over several chunks, with runs of equal values; inserting splits chunks.
    var list = ItemList<Int>(ids: (1...3_000).map { Int64($0) }, values: (0..<3_000).map { $0 / 7 })
    for id in 3_001...3_400 {
      let value = Int.random(in: 0...430, using: &random)
      list.insert(value, id: Int64(id), at: list.partitioningIndex { $0 > value })
    }
    let values = Array(list)
    for _ in 0..<3_000 {
      let target = Int.random(in: -1...431, using: &random)
      let expected = values.firstIndex { $0 > target } ?? values.count
      #expect(list.firstRow { $0.value > target } == expected)
      // Without a random row: the row its value would take in the list without it.
      let skipped = Int.random(in: 0..<values.count, using: &random)
      var without = values
      without.remove(at: skipped)
      let expectedWithout = without.firstIndex { $0 > target } ?? without.count
      #expect(
        list.firstRow(skipping: skipped) { $0.value > target } == expectedWithout,
        "target \(target) skipping \(skipped)")
    }
  }

  @Test func prefixSumsLocateEveryUnit() {
    let counts = [3, 0, 5, 1, 0, 0, 7, 2]
    let sums = PrefixSums(counts)
    var unit = 0
    for (position, count) in counts.enumerated() {
      #expect(sums.sum(before: position) == unit)
      for offset in 0..<count {
        let found = sums.locate(unit)
        #expect(found.position == position && found.offset == offset)
        unit += 1
      }
    }
  }
}
