import FoundationEssentials
import ReactiveCore
import Testing

@testable import Observable2D

/// The derived arrays recomputed from scratch: the oracle of the property tests.
enum Recomputed {
  static func filtered(_ sections: [TestSection], _ isIncluded: (String) -> Bool) -> [TestSection] {
    sections.map { section in
      TestSection(
        id: section.id, metadata: section.metadata,
        items: ItemList(entries: section.items.entries.filter { isIncluded($0.value) }))
    }
  }

  /// Stable: equal values keep their order in `entries`.
  static func sortedStably(
    _ entries: [(id: Int64, value: String)], _ areInIncreasingOrder: (String, String) -> Bool
  ) -> ItemList<String> {
    var sorted: [(id: Int64, value: String)] = []
    // Insertion after every entry that does not sort after it: stable by construction.
    for entry in entries {
      let position =
        sorted.lastIndex { !areInIncreasingOrder(entry.value, $0.value) }.map { $0 + 1 } ?? 0
      sorted.insert(entry, at: position)
    }
    return ItemList(entries: sorted)
  }

  static func sorted(_ sections: [TestSection], _ areInIncreasingOrder: (String, String) -> Bool)
    -> [TestSection]
  {
    sections.map { section in
      TestSection(
        id: section.id, metadata: section.metadata,
        items: sortedStably(Array(section.items.entries), areInIncreasingOrder))
    }
  }

  static func sortedInOneSection(
    _ sections: [TestSection], _ areInIncreasingOrder: (String, String) -> Bool
  ) -> [TestSection] {
    [
      TestSection(
        id: 1, metadata: "all",
        items: sortedStably(sections.flatMap { Array($0.items.entries) }, areInIncreasingOrder))
    ]
  }

  /// The groups without their ids, which the grouped array chooses.
  static func grouped(_ sections: [TestSection], _ key: (String) -> String) -> [PlainGroup] {
    var groups: [String: [(id: Int64, value: String)]] = [:]
    for section in sections {
      for entry in section.items.entries { groups[key(entry.value), default: []].append(entry) }
    }
    return groups.keys.sorted().map { PlainGroup(key: $0, entries: groups[$0] ?? []) }
  }

  static func mapped(_ sections: [TestSection]) -> [TestSection] {
    sections.map { section in
      TestSection(
        id: section.id, metadata: section.metadata,
        items: ItemList(entries: section.items.entries.map { ($0.id, $0.value.uppercased()) }))
    }
  }
}

struct PlainGroup: Equatable, CustomStringConvertible {
  var key: String
  var ids: [Int64]
  var values: [String]

  init(key: String, entries: [(id: Int64, value: String)]) {
    self.key = key
    ids = entries.map(\.id)
    values = entries.map(\.value)
  }

  init(_ section: TestSection) {
    self.init(key: section.metadata, entries: Array(section.items.entries))
  }

  var description: String { "\(key): \(zip(ids, values).map { "\($0)=\($1)" })" }
}

/// The rules the property tests switch between: predicates, comparators (several with many
/// ties) and group keys over the random values (`a0` … `d4`).
enum DerivedRules {
  static let predicates: [@Sendable (String) -> Bool] = [
    { $0.hasPrefix("a") }, { $0.hasSuffix("1") || $0.hasSuffix("2") }, { _ in true },
    { _ in false }, { $0 < "c" },
  ]
  static let comparators: [@Sendable (String, String) -> Bool] = [
    { $0 < $1 }, { $0 > $1 }, { $0.suffix(1) < $1.suffix(1) }, { $0.prefix(1) > $1.prefix(1) },
    { _, _ in false },
  ]
  static let keys: [@Sendable (String) -> String] = [
    { String($0.prefix(1)) }, { String($0.suffix(1)) },
  ]
}

/// A derived array under test: its recorder (which checks every changeset against the state
/// before it), a bound table view, and the check of its state against the oracle.
struct DerivedUnderTest {
  let name: String
  let array: Observable2DArray<String, String>
  let recorder: EventRecorder<String, String>
  let tableView = TableView()
  let binding: any Disposable
  let expected: ([TestSection]) -> String?

  init(
    _ name: String, _ array: Observable2DArray<String, String>,
    expected: @escaping ([TestSection]) -> String?
  ) {
    self.name = name
    self.array = array
    recorder = EventRecorder(array)
    binding = array.bind(to: tableView, using: HeaderBond())
    self.expected = expected
  }

  /// The first problem with the array after the source reached `source`.
  func problem(source: [TestSection]) -> String? {
    let sections = array.sections
    if let problem = expected(sections) { return "\(name): \(problem)" }
    if let problem = recorder.problems.first { return "\(name): \(problem)" }
    if recorder.state != sections { return "\(name): its events do not lead to its state" }
    if tableView.rejectedUpdateCount > 0, let error = tableView.lastRejectedUpdate {
      return "\(name): the table view rejected an update: \(error)"
    }
    if let mismatch = PropertyRunner.tableMismatch(tableView, sections) {
      return "\(name): \(mismatch)"
    }
    return nil
  }
}

/// Runs random operations on a source array with filtered, sorted (within sections and in
/// one section), grouped and mapped arrays following it, and filter-then-sort composed,
/// changing their rules now and then; returns the first failure.
func firstDerivedFailure(seed: UInt64, steps: Int, batchSize: Int? = nil) -> String? {
  var random = SeededRandom(seed: seed)
  var states = RandomStates(seed: seed)
  let source = MutableObservable2DArray(states.state(maxSections: 3, maxItems: 6))
  var rules = (
    filter: Int.random(in: 0..<5, using: &random), sort: Int.random(in: 0..<5, using: &random),
    composedFilter: Int.random(in: 0..<5, using: &random),
    composedSort: Int.random(in: 0..<5, using: &random),
    oneSection: Int.random(in: 0..<5, using: &random)
  )
  let keyRule = Int.random(in: 0..<2, using: &random)
  let filtered = source.filterItems(DerivedRules.predicates[rules.filter])
  let sorted = source.sortedItems(by: DerivedRules.comparators[rules.sort])
  let composedFilter = source.filterItems(DerivedRules.predicates[rules.composedFilter])
  let composed = composedFilter.sortedItems(by: DerivedRules.comparators[rules.composedSort])
  let oneSection = source.sortedItems(
    inOneSection: "all", by: DerivedRules.comparators[rules.oneSection])
  let grouped = source.groupedItems(by: DerivedRules.keys[keyRule])
  let mapped = source.mapItems { $0.uppercased() }

  func same(_ actual: [TestSection], _ expected: [TestSection]) -> String? {
    actual == expected ? nil : "state \(actual) != recomputed \(expected)"
  }
  let arrays = [
    DerivedUnderTest("filter", filtered) { [unowned source] in
      same($0, Recomputed.filtered(source.sections, DerivedRules.predicates[rules.filter]))
    },
    DerivedUnderTest("sort", sorted) { [unowned source] in
      same($0, Recomputed.sorted(source.sections, DerivedRules.comparators[rules.sort]))
    },
    DerivedUnderTest("filter+sort", composed) { [unowned source] in
      same(
        $0,
        Recomputed.sorted(
          Recomputed.filtered(source.sections, DerivedRules.predicates[rules.composedFilter]),
          DerivedRules.comparators[rules.composedSort]))
    },
    DerivedUnderTest("one section", oneSection) { [unowned source] in
      same(
        $0,
        Recomputed.sortedInOneSection(
          source.sections, DerivedRules.comparators[rules.oneSection]))
    },
    DerivedUnderTest("grouped", grouped) { [unowned source] in
      let actual = $0.map(PlainGroup.init)
      let expected = Recomputed.grouped(source.sections, DerivedRules.keys[keyRule])
      if Set($0.map(\.id)).count != $0.count { return "section ids repeat: \($0.map(\.id))" }
      return actual == expected ? nil : "groups \(actual) != recomputed \(expected)"
    },
    DerivedUnderTest("map", mapped) { [unowned source] in
      same($0, Recomputed.mapped(source.sections))
    },
  ]
  defer { for array in arrays { array.binding.dispose() } }
  for array in arrays {
    if let problem = array.problem(source: source.sections) { return "at the start: \(problem)" }
  }
  for step in 0..<steps {
    var description: String
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<4:
      rules.filter = Int.random(in: 0..<5, using: &random)
      filtered.setPredicate(DerivedRules.predicates[rules.filter])
      description = "filter predicate \(rules.filter)"
    case 4..<8:
      rules.sort = Int.random(in: 0..<5, using: &random)
      sorted.setComparator(DerivedRules.comparators[rules.sort])
      description = "sort comparator \(rules.sort)"
    case 8..<11:
      rules.composedFilter = Int.random(in: 0..<5, using: &random)
      composedFilter.setPredicate(DerivedRules.predicates[rules.composedFilter])
      description = "composed predicate \(rules.composedFilter)"
    case 11..<14:
      rules.composedSort = Int.random(in: 0..<5, using: &random)
      composed.setComparator(DerivedRules.comparators[rules.composedSort])
      description = "composed comparator \(rules.composedSort)"
    case 14..<16:
      rules.oneSection = Int.random(in: 0..<5, using: &random)
      oneSection.setComparator(DerivedRules.comparators[rules.oneSection])
      description = "one-section comparator \(rules.oneSection)"
    default:
      var operation = Operation.random(&random)
      if let batchSize {
        operation = .batch(
          (0..<batchSize).map { _ in
            var inner = Operation.random(&random, depth: 1)
            while case .invalid = inner { inner = Operation.random(&random, depth: 1) }
            return inner
          })
      }
      description = "\(operation)"
      var model = PlainModel(source.sections)
      try? PropertyRunner.run(operation, on: source, model: &model)
    }
    for array in arrays {
      if let problem = array.problem(source: source.sections) {
        return "step \(step) (\(description)): \(problem)"
      }
    }
  }
  return nil
}

@Suite struct DerivedArrayTests {
  @Test func derivedArraysMatchARecomputationAndTheTableViewAfterEveryChange() {
    let iterations = PropertyTestSettings.iterations(default: 3_000) / 6
    var failures = 0
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 5_000 &+ UInt64(iteration)
      guard let failure = firstDerivedFailure(seed: seed, steps: 30) else { continue }
      Issue.record("seed \(seed): \(failure)")
      failures += 1
      if failures >= 3 { break }
    }
  }

  @Test func largeBatchesAreDerivedByARebuildThatStillEmitsValidChangesets() {
    // Batches past the step limit (512 touched rows) take the rebuild-and-diff path.
    for iteration in 0..<4 {
      let seed = PropertyTestSettings.baseSeed &+ 9_000 &+ UInt64(iteration)
      if let failure = firstDerivedFailure(seed: seed, steps: 6, batchSize: 900) {
        Issue.record("seed \(seed): \(failure)")
      }
    }
  }

  @Test func aNewPredicateEmitsOnlyTheItemsThatAppearAndDisappear() throws {
    let source = MutableObservable2DArray([
      TestSection(metadata: "S", items: ["apple", "avocado", "banana", "apricot", "blueberry"])
    ])
    let results = source.filterItems { $0.hasPrefix("a") }
    let recorder = EventRecorder(results)
    #expect(Array(results.sections[0].items) == ["apple", "avocado", "apricot"])
    results.setPredicate { $0.hasPrefix("ap") || $0.hasPrefix("b") }
    let changeset = try #require(recorder.events.last?.changeset)
    #expect(changeset.deletedItems.map(\.at) == [[0, 1]])
    #expect(changeset.insertedItems.map(\.at) == [[0, 1], [0, 3]])
    #expect(changeset.insertedItems.map(\.value) == ["banana", "blueberry"])
    #expect(changeset.movedItems.isEmpty && changeset.updatedItems.isEmpty)
    // The same items passing again: no event.
    let count = recorder.events.count
    results.setPredicate { $0.hasPrefix("ap") || $0.first == "b" }
    #expect(recorder.events.count == count)
    #expect(recorder.problems.isEmpty)
  }

  @Test func anUpdateThatChangesWhereAnItemSortsIsAMove() throws {
    let source = MutableObservable2DArray([
      TestSection(metadata: "S", items: ["b", "d", "a", "c"])
    ])
    let sorted = source.sortedItems(by: <)
    let recorder = EventRecorder(sorted)
    #expect(Array(sorted.sections[0].items) == ["a", "b", "c", "d"])
    try source.replaceItem(at: [0, 0], with: "e")  // "b" → "e": from row 1 to row 3
    let changeset = try #require(recorder.events.last?.changeset)
    #expect(changeset.movedItems.map(\.from) == [[0, 1]])
    #expect(changeset.movedItems.map(\.to) == [[0, 3]])
    #expect(changeset.movedItems.map(\.value) == ["e"])
    #expect(changeset.entryCount == 1)
    try source.replaceItem(at: [0, 1], with: "dd")  // still between "c" and "e": an update
    #expect(recorder.events.last?.changeset.updatedItems.map(\.at) == [[0, 2]])
    #expect(recorder.problems.isEmpty)
  }

  @Test func groupsAppearAndDisappearWithTheirItems() throws {
    let source = MutableObservable2DArray([
      TestSection(metadata: "S", items: ["b1", "a1", "b2"])
    ])
    let grouped = source.groupedItems { String($0.prefix(1)) }
    let recorder = EventRecorder(grouped)
    #expect(grouped.sections.map(\.metadata) == ["a", "b"])
    try source.appendItem("c1", toSection: 0)
    let inserted = try #require(recorder.events.last?.changeset)
    #expect(inserted.insertedSections.map(\.index) == [2])
    #expect(inserted.insertedSections.map { Array($0.items) } == [["c1"]])
    try source.replaceItem(at: [0, 1], with: "c2")  // "a1" leaves "a" for "c"
    let regrouped = try #require(recorder.events.last?.changeset)
    #expect(regrouped.deletedSections.map(\.index) == [0])
    #expect(regrouped.insertedItems.map(\.value) == ["c2"])
    #expect(grouped.sections.map(\.metadata) == ["b", "c"])
    #expect(grouped.sections.map { Array($0.items) } == [["b1", "b2"], ["c2", "c1"]])
    #expect(recorder.problems.isEmpty)
  }

  @Test func aDerivedArrayReleasesItsSourceSubscriptionWhenReleased() {
    let source = MutableObservable2DArray([TestSection(metadata: "S", items: ["a"])])
    weak var weakFiltered: FilteredObservable2DArray<String, String>?
    do {
      let filtered = source.filterItems { _ in true }
      weakFiltered = filtered
      #expect(filtered.sections[0].items.count == 1)
    }
    #expect(weakFiltered == nil)
    #expect(!source.hasSubscribers)
  }

  @Test func aRuleChangedFromInsideAnObserverFollowsTheCurrentDelivery() throws {
    let source = MutableObservable2DArray([TestSection(metadata: "S", items: ["a", "b"])])
    let filtered = source.filterItems { _ in true }
    let recorder = EventRecorder(filtered)
    let bag = DisposeBag()
    var changed = false
    source.observeNext { _ in
      guard !changed else { return }
      changed = true
      filtered.setPredicate { $0 != "a" }
    }.disposed(by: bag)
    try source.appendItem("c", toSection: 0)
    #expect(Array(filtered.sections[0].items) == ["b", "c"])
    #expect(recorder.events.count == 2)
    #expect(recorder.problems.isEmpty)
  }
}
