import FoundationEssentials
import Observable2D
import Testing

/// Timings printed for the report; run with
/// `LISTSTORE_BENCHMARKS=1 swift test -c release --filter Observable2DTests.Benchmarks`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["LISTSTORE_BENCHMARKS"] != nil))
struct Benchmarks {
  let clock = ContinuousClock()

  func best(of runs: Int = 5, _ body: () throws -> Void) rethrows -> Duration {
    var best = Duration.seconds(1_000)
    for _ in 0..<runs { best = min(best, try clock.measure(body)) }
    return best
  }

  func micros(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let value = Double(seconds) * 1e6 + Double(attoseconds) / 1e12
    if value < 10 { return String(Double(Int((value * 100).rounded())) / 100) + " µs" }
    return String(Int(value.rounded())) + " µs"
  }

  @Test func itemListCosts() {
    var array: [String] = []
    let arrayTime = best {
      array = []
      for index in 0..<1_000_000 {
        array.append("item")
        _ = index
      }
    }
    var list = ItemList<String>()
    let listTime = best {
      list = ItemList()
      for index in 0..<1_000_000 { list.append("item", id: Int64(index)) }
    }
    var pairs: [(Int64, String)] = []
    let pairTime = best {
      pairs = []
      for index in 0..<1_000_000 { pairs.append((Int64(index), "item")) }
    }
    print(
      "append 1M: Array<String> \(micros(arrayTime)), Array<(Int64, String)> \(micros(pairTime)), ItemList \(micros(listTime))"
    )

    var working = list
    var position = 500_000
    let insertTime = best(of: 1) {
      for _ in 0..<1_000 {
        working.insert("x", id: -1, at: position)
        position += 7
      }
    }
    print("insert in the middle of 1M (unique): \(micros(insertTime / 1_000)) each")
    var snapshots: [ItemList<String>] = []
    snapshots.reserveCapacity(200)
    let snapshotInsert = clock.measure {
      for _ in 0..<200 {
        snapshots.append(working)
        working.insert("y", id: -2, at: 400_000)
      }
    }
    print(
      "insert in the middle of 1M while a snapshot is held: \(micros(snapshotInsert / 200)) each "
        + "(\(working.chunkCount) chunks)")
    #expect(snapshots[0].count == working.count - 200)
    snapshots = []
    let removeTime = best(of: 1) {
      for _ in 0..<1_000 { working.remove(at: 300_000) }
    }
    print("remove in the middle of 1M: \(micros(removeTime / 1_000)) each")
    let arrayInsert = best(of: 1) {
      for _ in 0..<100 { array.insert("x", at: 500_000) }
    }
    print("Array<String>.insert in the middle of 1M: \(micros(arrayInsert / 100)) each")

    let section = [TestSection(id: 1, metadata: "All", items: list)]
    let changeset = TestChangeset(
      updatedItems: [.init(at: path(0, 654_321), id: 654_321, value: "changed")])
    var results: [[TestSection]] = []
    results.reserveCapacity(100)
    let applyTime = clock.measure {
      for _ in 0..<100 { results.append((try? changeset.applied(to: section)) ?? []) }
    }
    let releaseTime = clock.measure { results.removeAll() }
    print(
      "apply a one-row update to 1M items while the old state is held: "
        + "\(micros(applyTime / 100)); releasing such a state later: \(micros(releaseTime / 100))")
    let validateTime = best {
      for _ in 0..<100 { try? changeset.validate(against: section) }
    }
    print("  of which validate: \(micros(validateTime / 100))")
    // Through the observable array, as the repository feeds store changes: in place when no
    // one holds the previous state, with copies when an observer keeps each event's state.
    let observable = MutableObservable2DArray(section)
    func update(_ index: Int) -> TestChangeset {
      TestChangeset(
        updatedItems: [.init(at: path(0, 997 * index), id: Int64(997 * index), value: "x")])
    }
    let inPlace = clock.measure {
      for index in 0..<1_000 { try? observable.apply(update(index)) }
    }
    var kept: [TestSection] = []
    let subscription = observable.observeNext { kept = $0.sections }
    let held = clock.measure {
      for index in 0..<1_000 { try? observable.apply(update(index)) }
    }
    subscription.dispose()
    print(
      "MutableObservable2DArray.apply of a one-row update to 1M items: \(micros(inPlace / 1_000)) "
        + "in place; \(micros(held / 1_000)) when an observer keeps every event's state")
    #expect(kept[0].items[997] == "x")
    let move = clock.measure {
      for _ in 0..<1_000 { try? observable.moveItem(from: path(0, 10), to: path(0, 900_000)) }
    }
    print("MutableObservable2DArray.moveItem across a 1M-item section: \(micros(move / 1_000))")
  }

  @Test func diffAgainstAPlainHashPass() {
    var random = SeededRandom(seed: 42)
    var nextID: Int64 = 0
    func section(_ index: Int) -> TestSection {
      var items = ItemList<String>()
      for _ in 0..<1_000 {
        nextID += 1
        items.append("v\(nextID)", id: nextID)
      }
      return TestSection(id: Int64(1_000_000 + index), metadata: "S\(index)", items: items)
    }
    let old = (0..<100).map(section)
    var new = old
    for _ in 0..<10_000 {
      let s = Int.random(in: 0..<100, using: &random)
      if !new[s].items.isEmpty {
        new[s].items.removeEntry(at: Int.random(in: 0..<new[s].items.count, using: &random))
      }
    }
    for _ in 0..<10_000 {
      let s = Int.random(in: 0..<100, using: &random)
      nextID += 1
      new[s].items.insert(
        "v\(nextID)", id: nextID, at: Int.random(in: 0...new[s].items.count, using: &random))
    }
    // Moves: each picks an item not moved yet; half go to another section, half to another
    // row of their own section, so every one is a real move.
    var movedIDs = Set<Int64>()
    var trueMoves = 0
    while trueMoves < 2_000 {
      let from = Int.random(in: 0..<100, using: &random)
      guard new[from].items.count > 1 else { continue }
      let row = Int.random(in: 0..<new[from].items.count, using: &random)
      guard !movedIDs.contains(new[from].items.id(at: row)) else { continue }
      let across = trueMoves.isMultiple(of: 2)
      let to = across ? (from + Int.random(in: 1..<100, using: &random)) % 100 : from
      let entry = new[from].items.removeEntry(at: row)
      var target = Int.random(in: 0...new[to].items.count, using: &random)
      if !across && target == row { target = row == 0 ? 1 : row - 1 }
      new[to].items.insert(entry.value, id: entry.id, at: target)
      movedIDs.insert(entry.id)
      trueMoves += 1
    }
    var found = (0, 0)
    let baseline = best {
      var index = [Int64: Int](minimumCapacity: 100_000)
      for section in old {
        for id in section.items.ids { index[id] = 1 }
      }
      var inserted = 0
      for section in new {
        for id in section.items.ids where index.removeValue(forKey: id) == nil { inserted += 1 }
      }
      found = (index.count, inserted)
    }
    var changeset = TestChangeset()
    let byID = best { changeset = TestChangeset.diffByID(from: old, to: new) }
    var byValue = TestChangeset()
    let valueTime = best {
      byValue = TestChangeset.diff(from: old, to: new, sectionKey: { $0.id })
    }
    print(
      "diff 100k (\(found.0) deleted, \(found.1) inserted, \(trueMoves) moved): hash pass "
        + "\(micros(baseline)), diffByID \(micros(byID)), diff by String value \(micros(valueTime))"
    )
    print(
      "  moves: \(changeset.movedItems.count) (\(trueMoves) made, "
        + "\(minimalMoveCount(from: old, to: new)) needed), entries \(changeset.entryCount)")
    #expect(changeset.deletedItems.count == found.0)
    #expect(changeset.insertedItems.count == found.1)
    #expect(changeset.movedItems.count == minimalMoveCount(from: old, to: new))
    #expect(changeset.movedItems.count <= trueMoves)
    #expect(byValue.movedItems.count == changeset.movedItems.count)
    #expect((try? changeset.applied(to: old)) == new)
  }
}
