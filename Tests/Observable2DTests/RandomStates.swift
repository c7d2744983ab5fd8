import Observable2D

/// Random 2D array states with unique ids, and random edits of them that keep the ids of what
/// they keep, for the seeded property tests.
struct RandomStates {
  var random: SeededRandom
  var nextID: Int64 = 1

  init(seed: UInt64) {
    random = SeededRandom(seed: seed)
  }

  mutating func freshID() -> Int64 {
    defer { nextID += 1 }
    return nextID
  }

  mutating func int(_ range: ClosedRange<Int>) -> Int {
    Int.random(in: range, using: &random)
  }

  mutating func chance(_ percent: Int) -> Bool {
    int(0...99) < percent
  }

  mutating func value() -> String {
    ["a", "b", "c", "d", "e"][int(0...4)] + String(int(0...3))
  }

  mutating func section(maxItems: Int) -> TestSection {
    let id = freshID()
    var items = ItemList<String>()
    for _ in 0..<int(0...maxItems) { items.append(value(), id: freshID()) }
    return TestSection(id: id, metadata: "S\(int(0...3))", items: items)
  }

  mutating func state(maxSections: Int = 4, maxItems: Int = 6) -> [TestSection] {
    (0..<int(0...maxSections)).map { _ in section(maxItems: maxItems) }
  }

  /// Applies between 0 and `maxEdits` random edits (of every kind) to `state`.
  mutating func edited(_ state: [TestSection], maxEdits: Int = 8) -> [TestSection] {
    var state = state
    for _ in 0..<int(0...maxEdits) {
      let itemPaths = state.indices.flatMap { s in state[s].items.indices.map { (s, $0) } }
      switch int(0...9) {
      case 0 where !itemPaths.isEmpty:
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        state[s].items.removeEntry(at: r)
      case 1 where !state.isEmpty:
        let s = int(0...state.count - 1)
        state[s].items.insert(value(), id: freshID(), at: int(0...state[s].items.count))
      case 2, 3:
        guard !itemPaths.isEmpty else { continue }
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        let entry = state[s].items.removeEntry(at: r)
        let target = int(0...state.count - 1)
        let value = chance(30) ? value() : entry.value
        state[target].items.insert(value, id: entry.id, at: int(0...state[target].items.count))
      case 4 where !itemPaths.isEmpty:
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        state[s].items[r] = value()
      case 5 where !state.isEmpty:
        state.remove(at: int(0...state.count - 1))
      case 6:
        state.insert(section(maxItems: 4), at: int(0...state.count))
      case 7 where !state.isEmpty:
        let moved = state.remove(at: int(0...state.count - 1))
        state.insert(moved, at: int(0...state.count))
      case 8 where !state.isEmpty:
        state[int(0...state.count - 1)].metadata = "S\(int(0...3))"
      default:
        continue
      }
    }
    return state
  }
}
