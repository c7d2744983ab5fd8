import Observable2D
import Testing

@Suite struct ItemListTests {
  @Test func behavesLikeAnArrayLiteral() {
    let list: ItemList<String> = ["Paris", "Berlin"]
    #expect(Array(list) == ["Paris", "Berlin"])
    #expect(Array(list.ids) == [0, 0])
    #expect(list.count == 2)
    #expect(list.first == "Paris")
    #expect(list.last == "Berlin")
  }

  @Test func keepsIdsAcrossValueReplacement() {
    var list = ItemList(entries: [(id: 1, value: "a"), (id: 2, value: "b")])
    list[1] = "B"
    #expect(list.id(at: 1) == 2)
    #expect(list[1] == "B")
    list.insert("c", id: 3, at: 1)
    #expect(Array(list.ids) == [1, 3, 2])
    #expect(list.removeEntry(at: 0) == (id: 1, value: "a"))
    #expect(list.entries.map(\.id) == [3, 2])
  }

  @Test func equalityComparesIdsAndValues() {
    let a = ItemList(entries: [(id: 1, value: "a")])
    let b = ItemList(entries: [(id: 2, value: "a")])
    let c = ItemList(entries: [(id: 1, value: "a")])
    #expect(a != b)
    #expect(a == c)
  }

  @Test func splitsAndMergesChunksOnLargeLists() {
    var list = ItemList<Int>()
    for value in 0..<10_000 { list.append(value, id: Int64(value)) }
    #expect(list.chunkCount == 10)
    #expect(list.chunkInvariantsHold)
    for _ in 0..<3_000 { list.insert(-1, id: -1, at: 5_000) }
    #expect(list.chunkInvariantsHold)
    #expect(list.count == 13_000)
    #expect(list[5_000] == -1)
    #expect(list[8_000] == 5_000)
    for _ in 0..<12_000 { list.remove(at: list.count / 2) }
    #expect(list.chunkInvariantsHold)
    #expect(list.count == 1_000)
    #expect(list.chunkCount <= 4)
  }

  @Test func copiesKeepTheirSnapshot() {
    var list = ItemList((0..<5_000).map { $0 })
    let snapshot = list
    list[4_000] = -1
    list.insert(7, at: 10)
    list.removeSubrange(100..<3_000)
    #expect(Array(snapshot) == Array(0..<5_000))
    #expect(list.count == 5_000 + 1 - 2_900)
  }

  @Test func matchesArrayUnderRandomOperations() {
    let iterations = PropertyTestSettings.iterations(default: 50)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ UInt64(iteration)
      var random = SeededRandom(seed: seed)
      var list = ItemList<Int>()
      var model: [(id: Int64, value: Int)] = []
      var snapshots: [(ItemList<Int>, [(id: Int64, value: Int)])] = []
      var nextID: Int64 = 1
      func fresh() -> (id: Int64, value: Int) {
        defer { nextID += 1 }
        return (nextID, Int(nextID) * 10)
      }
      for step in 0..<60 {
        let operation = Int.random(in: 0..<9, using: &random)
        switch operation {
        case 0:
          let count = Int.random(in: 0..<3_000, using: &random)
          let entries = (0..<count).map { _ in fresh() }
          for entry in entries { list.append(entry.value, id: entry.id) }
          model.append(contentsOf: entries)
        case 1, 2:
          let entry = fresh()
          let position = Int.random(in: 0...model.count, using: &random)
          list.insert(entry.value, id: entry.id, at: position)
          model.insert(entry, at: position)
        case 3:
          guard !model.isEmpty else { continue }
          let position = Int.random(in: 0..<model.count, using: &random)
          let removed = list.removeEntry(at: position)
          let expected = model.remove(at: position)
          #expect(removed == expected, "seed \(seed) step \(step)")
        case 4:
          guard !model.isEmpty else { continue }
          let position = Int.random(in: 0..<model.count, using: &random)
          list[position] = -step
          model[position].value = -step
        case 5, 6:
          let lower = Int.random(in: 0...model.count, using: &random)
          let upper = Int.random(in: lower...min(model.count, lower + 2_500), using: &random)
          let count = Int.random(in: 0..<2_000, using: &random)
          let entries = (0..<count).map { _ in fresh() }
          list.replaceEntries(in: lower..<upper, with: entries)
          model.replaceSubrange(lower..<upper, with: entries)
        case 7:
          snapshots.append((list, model))
        default:
          guard !model.isEmpty else { continue }
          let lower = Int.random(in: 0..<model.count, using: &random)
          let upper = Int.random(in: lower...model.count, using: &random)
          list.removeSubrange(lower..<upper)
          model.removeSubrange(lower..<upper)
        }
        #expect(list.chunkInvariantsHold, "seed \(seed) step \(step)")
        #expect(list.count == model.count, "seed \(seed) step \(step)")
      }
      #expect(Array(list.ids) == model.map(\.id), "seed \(seed)")
      #expect(Array(list) == model.map(\.value), "seed \(seed)")
      #expect(list.indices.map { list.id(at: $0) } == model.map(\.id), "seed \(seed)")
      for (snapshot, expected) in snapshots {
        #expect(snapshot.entries.map(\.id) == expected.map(\.id), "seed \(seed)")
        #expect(Array(snapshot) == expected.map(\.value), "seed \(seed)")
      }
    }
  }

  @Test func partitioningIndexFindsWhatALinearScanFinds() {
    let iterations = PropertyTestSettings.iterations(default: 30)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ UInt64(iteration)
      var random = SeededRandom(seed: seed)
      // Chunks of every shape: appended, split by inserts, thinned and merged by removals.
      var list = ItemList<Int>()
      for _ in 0..<Int.random(in: 0..<4_000, using: &random) { list.append(0, id: 1) }
      for _ in 0..<Int.random(in: 0..<3_000, using: &random) {
        if Bool.random(using: &random) || list.isEmpty {
          list.insert(0, id: 1, at: Int.random(in: 0...list.count, using: &random))
        } else {
          list.removeEntry(at: Int.random(in: 0..<list.count, using: &random))
        }
      }
      // Sorted values, with runs of equal ones.
      var value = 0
      for position in list.indices {
        value += Int.random(in: 0...2, using: &random)
        list[position] = value
      }
      let model = Array(list)
      for _ in 0..<200 {
        let threshold = Int.random(in: -1...(value + 1), using: &random)
        let expected = model.firstIndex { $0 >= threshold } ?? model.count
        #expect(
          list.partitioningIndex { $0 >= threshold } == expected,
          "seed \(seed), \(model.count) values, threshold \(threshold)")
      }
    }
  }
}
