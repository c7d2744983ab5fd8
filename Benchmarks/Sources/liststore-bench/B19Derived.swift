import FoundationEssentials
import Observable2D
import ReactiveCore

/// B19: one change of a 1,000,000-item array through `filterItems` then `sortedItems`,
/// against the source's own apply of the same change, timed within the same call.
///
/// Each round makes one change of one of four kinds (an insert, a delete, an update that
/// moves the item in sort order, an update that flips the filter) through the source's
/// `apply(_:)`, as a store's observer feeds its array. Three timestamps split the call:
/// before it, in the source's first subscriber (the source validated, applied and started
/// delivering: its own apply), and in the sorted array's subscriber (both derived steps
/// done). Every sorted changeset is then applied to a mirror array, outside the timed
/// part, and the mirror and the sorted array are checked against a sort of the source at
/// the end.
enum DerivedBenchmark {
  struct Entry: Equatable {
    var key: Int
    var passes: Bool
  }

  /// The timestamps of one call, set by the subscribers on the calling thread.
  final class Clock {
    var applied: UInt64 = 0
    var derived: UInt64 = 0
  }

  enum Kind: String, CaseIterable {
    case insert
    case delete
    case moveUpdate = "update that moves"
    case flipUpdate = "update that flips"
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let count = options.quick ? 100_000 : 1_000_000
    let rounds = options.b19Rounds ?? (options.quick ? 400 : 2_000)
    var random = SplitMix64(seed: 19)
    let entries = (0..<count).map { _ in
      Entry(key: Int(random.next() % UInt64(count * 4)), passes: random.next() & 1 == 0)
    }
    let source = MutableObservable2DArray([
      Observable2DArraySection<String, Entry>(metadata: "all", items: entries)
    ])
    let clock = Clock()
    let bag = DisposeBag()
    // Subscribed first, so called first: the end of the source's own apply.
    source.observeNext { _ in clock.applied = monotonicNanoseconds() }.disposed(by: bag)
    let start = monotonicNanoseconds()
    let filtered = source.filterItems { $0.passes }
    let sorted = filtered.sortedItems { $0.key < $1.key }
    let startSeconds = Double(monotonicNanoseconds() - start) / 1e9
    let mirror = MutableObservable2DArray(sorted.sections)
    var mirrorFailure: String?
    sorted.observeNext { event in
      clock.derived = monotonicNanoseconds()
      do {
        try mirror.apply(event.changeset)
      } catch {
        mirrorFailure = "\(error)"
      }
    }.disposed(by: bag)

    var samples: [Kind: (source: [Double], chain: [Double])] = [:]
    var nextID = Int64(count) * 4
    for round in 0..<(rounds * Kind.allCases.count) {
      let kind = Kind.allCases[round % Kind.allCases.count]
      let items = source.sections[0].items
      // A row of the source that passes the filter (so that the change reaches the sort).
      func passingRow() -> Int {
        while true {
          let row = Int(random.next() % UInt64(items.count))
          if items[row].passes { return row }
        }
      }
      let changeset: Changeset<String, Entry>
      switch kind {
      case .insert:
        nextID += 1
        let row = Int(random.next() % UInt64(items.count + 1))
        changeset = Changeset(insertedItems: [
          .init(
            at: [0, row], id: nextID,
            value: Entry(key: Int(random.next() % UInt64(count * 4)), passes: true))
        ])
      case .delete:
        let row = passingRow()
        changeset = Changeset(deletedItems: [.init(at: [0, row], id: items.id(at: row))])
      case .moveUpdate:
        let row = passingRow()
        let value = Entry(key: Int(random.next() % UInt64(count * 4)), passes: true)
        changeset = Changeset(updatedItems: [
          .init(at: [0, row], id: items.id(at: row), value: value)
        ])
      case .flipUpdate:
        let row = Int(random.next() % UInt64(items.count))
        var value = items[row]
        value.passes.toggle()
        changeset = Changeset(updatedItems: [
          .init(at: [0, row], id: items.id(at: row), value: value)
        ])
      }
      clock.applied = 0
      clock.derived = 0
      let before = monotonicNanoseconds()
      try source.apply(changeset)
      try check(
        clock.applied > before && clock.derived > clock.applied,
        "B19: the \(kind.rawValue) did not reach the sorted array")
      samples[kind, default: ([], [])].source.append(Double(clock.applied - before))
      samples[kind, default: ([], [])].chain.append(Double(clock.derived - clock.applied))
    }
    try check(mirrorFailure == nil, "B19: a sorted changeset did not apply: \(mirrorFailure ?? "")")
    let expected = source.sections[0].items.entries.filter { $0.value.passes }
      .enumerated().sorted { left, right in
        left.element.value.key != right.element.value.key
          ? left.element.value.key < right.element.value.key : left.offset < right.offset
      }.map(\.element)
    try check(
      Array(sorted.sections[0].items.ids) == expected.map(\.id)
        && Array(sorted.sections[0].items) == expected.map(\.value),
      "B19: the sorted array differs from a sort of the source")
    try check(mirror.sections == sorted.sections, "B19: the mirror differs from the sorted array")

    var rows: [Row] = []
    var ratios: [Double] = []
    for kind in Kind.allCases {
      guard let (sourceTimes, chainTimes) = samples[kind] else { continue }
      let sourceStats = Stats(sourceTimes).scaled(by: 1e-3)
      let chainStats = Stats(chainTimes).scaled(by: 1e-3)
      let ratio = chainStats.median / sourceStats.median
      ratios.append(ratio)
      rows.append(
        Row(
          id: "B19", name: "\(kind.rawValue) at \(count / 1_000) k items: filter + sort",
          unit: "µs", value: chainStats, baseline: sourceStats, ratio: ratio,
          target: "≤ 3 × the source's own apply", pass: ratio <= 3,
          note: "value: from the source's first subscriber to the sorted array's; baseline: "
            + "from the call to the source's first subscriber"))
    }
    rows.append(
      Row(
        id: "B19", name: "start: filter + sort of \(count / 1_000) k items", unit: "s",
        value: Stats([startSeconds]), target: "—", pass: nil,
        note: "\(rounds) rounds of each change; every sorted changeset applied to a mirror, "
          + "and both checked against a sort of the source",
        details: ["worst ratio": ratios.max() ?? 0]))
    return rows
  }
}
