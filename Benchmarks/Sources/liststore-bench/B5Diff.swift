import Observable2D

/// B5: `MutableObservable2DArray.replace(with:performDiff:)` against a hash pass that
/// only finds deleted and inserted ids, and its move count against the minimal one.
enum DiffBenchmark {
  typealias Section = Observable2DArraySection<String, String>

  /// One shape of change.
  struct Shape {
    var name: String
    var sections: Int
    var perSection: Int
    var deleted: Int
    var inserted: Int
    var moved: Int
    /// Whether moves go to another section (else to another row of their own).
    var across: Bool
  }

  static let shapes = [
    Shape(
      name: "100,000 items: 10,000 deleted, 10,000 inserted, 2,000 moved", sections: 1,
      perSection: 100_000, deleted: 10_000, inserted: 10_000, moved: 2_000, across: false),
    Shape(
      name: "5,000 items: 1,000 deleted, 1,000 inserted, 200 moved", sections: 1,
      perSection: 5_000, deleted: 1_000, inserted: 1_000, moved: 200, across: false),
    Shape(
      name: "100 sections × 1,000 items: 1 % deleted, 1 % inserted, 200 moved across sections",
      sections: 100, perSection: 1_000, deleted: 1_000, inserted: 1_000, moved: 200,
      across: true),
  ]

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    try shapes.map { try measure($0, runs: options.quick ? 5 : 15) }
  }

  private static func measure(_ shape: Shape, runs: Int) throws -> Row {
    let (old, new, made) = states(shape, seed: 42)
    var changeset = Changeset<String, String>()
    var final: [Section] = []
    var found = (deleted: 0, inserted: 0)
    let times = sideBySide(
      warmups: 2, runs: runs,
      subject: {
        let array = MutableObservable2DArray(old)
        let subscription = array.subscribe(onNext: { changeset = $0.changeset })
        defer { subscription.dispose() }
        let time = seconds { array.replace(with: new, performDiff: true) }
        final = array.sections
        return time
      },
      baseline: {
        seconds { found = hashPass(old, new) }
      })
    try check(
      final.map(\.id) == new.map(\.id)
        && zip(final, new).allSatisfy { Array($0.items.ids) == Array($1.items.ids) },
      "B5 \(shape.name): the array does not hold the new state")
    try check(
      changeset.deletedItems.count == found.deleted
        && changeset.insertedItems.count == found.inserted,
      "B5 \(shape.name): \(changeset.deletedItems.count) deleted and "
        + "\(changeset.insertedItems.count) inserted, the hash pass found \(found)")
    let minimal = minimalMoves(from: old, to: new)
    let moves = changeset.movedItems.count
    let time = Stats(times.subject).scaled(by: 1e3)
    let baseline = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / baseline.median
    return Row(
      id: "B5", name: "replace(with:performDiff:), " + shape.name, unit: "ms", value: time,
      baseline: baseline, ratio: ratio, target: "≤ 2 × hash pass; moves minimal",
      pass: ratio <= 2 && moves == minimal,
      note:
        "moves: changeset \(moves), minimal (LIS) \(minimal), made \(made); deleted "
        + "\(found.deleted), inserted \(found.inserted); changeset entries \(changeset.entryCount)",
      details: [
        "moves": Double(moves), "minimal moves": Double(minimal), "moves made": Double(made),
        "deleted": Double(found.deleted), "inserted": Double(found.inserted),
      ])
  }

  /// The baseline: which ids were deleted and which inserted, by one hash map.
  static func hashPass(_ old: [Section], _ new: [Section]) -> (deleted: Int, inserted: Int) {
    var index = [Int64: Bool](minimumCapacity: old.reduce(0) { $0 + $1.items.count })
    for section in old {
      for id in section.items.ids { index[id] = true }
    }
    var inserted = 0
    for section in new {
      for id in section.items.ids where index.removeValue(forKey: id) == nil { inserted += 1 }
    }
    return (index.count, inserted)
  }

  /// The old and new states of a shape, and how many moves were made.
  static func states(_ shape: Shape, seed: UInt64) -> (old: [Section], new: [Section], made: Int) {
    var random = SplitMix64(seed: seed)
    func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
    var nextID: Int64 = 0
    let old = (0..<shape.sections).map { index in
      var items = ItemList<String>()
      items.reserveCapacity(shape.perSection)
      for _ in 0..<shape.perSection {
        nextID += 1
        items.append("v\(nextID)", id: nextID)
      }
      return Section(id: Int64(10_000_000 + index), metadata: "S\(index)", items: items)
    }
    let lastOldID = nextID
    var new = old
    var deleted = 0
    while deleted < shape.deleted {
      let section = below(shape.sections)
      guard !new[section].items.isEmpty else { continue }
      _ = new[section].items.removeEntry(at: below(new[section].items.count))
      deleted += 1
    }
    for _ in 0..<shape.inserted {
      let section = below(shape.sections)
      nextID += 1
      new[section].items.insert(
        "v\(nextID)", id: nextID, at: below(new[section].items.count + 1))
    }
    // Each move takes an old item not moved yet to another place.
    var moved = Set<Int64>()
    while moved.count < shape.moved {
      let from = below(shape.sections)
      guard new[from].items.count > 1 else { continue }
      let row = below(new[from].items.count)
      let id = new[from].items.id(at: row)
      guard id <= lastOldID, !moved.contains(id) else { continue }
      let to = shape.across ? (from + 1 + below(shape.sections - 1)) % shape.sections : from
      let entry = new[from].items.removeEntry(at: row)
      var target = below(new[to].items.count + 1)
      if !shape.across && target == row { target = row == 0 ? 1 : row - 1 }
      new[to].items.insert(entry.value, id: entry.id, at: target)
      moved.insert(id)
    }
    return (old, new, moved.count)
  }

  /// The fewest item moves that turn `old` into `new`: every kept item that changed
  /// section, plus, in each section, the kept items outside a longest increasing
  /// subsequence of their old rows (patience sorting).
  static func minimalMoves(from old: [Section], to new: [Section]) -> Int {
    var place: [Int64: (section: Int64, row: Int)] = [:]
    for section in old {
      for (row, id) in section.items.ids.enumerated() { place[id] = (section.id, row) }
    }
    let oldSections = Set(old.map(\.id))
    let newSections = Set(new.map(\.id))
    var moves = 0
    for section in new where oldSections.contains(section.id) {
      var rows: [Int] = []
      for id in section.items.ids {
        guard let old = place[id], newSections.contains(old.section) else { continue }
        if old.section == section.id { rows.append(old.row) } else { moves += 1 }
      }
      moves += rows.count - longestIncreasingSubsequence(rows)
    }
    return moves
  }

  /// The length of a longest strictly increasing subsequence, in O(n log n).
  static func longestIncreasingSubsequence(_ values: [Int]) -> Int {
    var tails: [Int] = []
    for value in values {
      var low = 0
      var high = tails.count
      while low < high {
        let middle = (low + high) / 2
        if tails[middle] < value { low = middle + 1 } else { high = middle }
      }
      if low == tails.count { tails.append(value) } else { tails[low] = value }
    }
    return tails.count
  }
}
