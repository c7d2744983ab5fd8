import FoundationEssentials
import Observable2D
import ReactiveCore
import Synchronization
import Testing

/// Records every event of an array and checks each against the state before it.
final class EventRecorder<Metadata: Equatable & Sendable, Item: Equatable & Sendable> {
  typealias Section = Observable2DArraySection<Metadata, Item>
  private(set) var events: [Observable2DArrayEvent<Metadata, Item>] = []
  private(set) var problems: [String] = []
  private(set) var state: [Section]
  private var subscription: (any Disposable)?

  init(_ array: Observable2DArray<Metadata, Item>) {
    state = []
    subscription = array.subscribe(
      initial: { [unowned self] in state = $0 },
      onNext: { [unowned self] event in record(event) })
  }

  private func record(_ event: Observable2DArrayEvent<Metadata, Item>) {
    events.append(event)
    let changeset = event.changeset
    if changeset.isEmpty { problems.append("an empty changeset was emitted") }
    do {
      try changeset.validate(against: state)
    } catch {
      problems.append("\(error) in \(changeset)")
    }
    problems += ruleViolations(of: changeset, from: state, to: event.sections).map {
      "\($0) in \(changeset)"
    }
    if (try? changeset.applied(to: state)) != event.sections {
      problems.append("applied(to: old) != new for \(changeset)")
    }
    state = event.sections
  }
}

@Suite struct Observable2DArrayTests {
  func makeArray() -> MutableObservable2DArray<String, String> {
    MutableObservable2DArray([
      TestSection(metadata: "A", items: ["a0", "a1", "a2"]),
      TestSection(metadata: "B", items: ["b0"]),
    ])
  }

  @Test func assignsFreshIdsToSectionsAndItems() {
    let array = makeArray()
    let sections = array.sections
    #expect(sections.map(\.id) == [1, 5])
    #expect(Array(sections[0].items.ids) == [2, 3, 4])
    #expect(Array(sections[1].items.ids) == [6])
    array.appendSection(TestSection(id: 40, metadata: "C", items: ItemList(entries: [(41, "c")])))
    try? array.appendItem("x", toSection: 0)
    #expect(array.sections[0].items.id(at: 3) == 42)
  }

  @Test func readsSectionsItemsAndCounts() throws {
    let array = makeArray()
    #expect(array.numberOfSections == 2)
    #expect(array.numberOfItems(inSection: 0) == 3)
    #expect(array[IndexPath(row: 1, section: 0)] == "a1")
    #expect(array[1].metadata == "B")
    #expect(try array.item(at: IndexPath(row: 0, section: 1)) == "b0")
    #expect(throws: Observable2DArrayError.itemOutOfRange(path(1, 1), validRange: 0..<1)) {
      try array.item(at: path(1, 1))
    }
    #expect(throws: Observable2DArrayError.sectionOutOfRange(section: 2, validRange: 0..<2)) {
      try array.section(at: 2)
    }
  }

  @Test func eachMutationEmitsItsChangeset() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    try array.appendItem("a3", toSection: 0)
    try array.insert(item: "b-1", at: path(1, 0))
    try array.removeItem(at: path(0, 1))
    try array.moveItem(from: path(0, 0), to: path(1, 1))
    try array.replaceItem(at: path(1, 0), with: "B0")
    array.appendSection(TestSection(metadata: "C", items: ["c0"]))
    try array.insert(section: TestSection(metadata: "Z"), at: 0)
    try array.moveSection(from: 0, to: 2)
    try array.setMetadata("A!", forSection: 0)
    try array.removeSection(at: 1)
    let changesets = recorder.events.map(\.changeset)
    #expect(
      changesets == [
        TestChangeset(insertedItems: [.init(at: path(0, 3), id: 7, value: "a3")]),
        TestChangeset(insertedItems: [.init(at: path(1, 0), id: 8, value: "b-1")]),
        TestChangeset(deletedItems: [.init(at: path(0, 1), id: 3)]),
        TestChangeset(movedItems: [.init(from: path(0, 0), to: path(1, 1), id: 2, value: "a0")]),
        TestChangeset(updatedItems: [.init(at: path(1, 0), id: 8, value: "B0")]),
        TestChangeset(insertedSections: [
          .init(index: 2, id: 9, metadata: "C", items: [(id: 10, value: "c0")])
        ]),
        TestChangeset(insertedSections: [.init(index: 0, id: 11, metadata: "Z", items: [])]),
        TestChangeset(movedSections: [.init(from: 0, to: 2, id: 11, metadata: "Z")]),
        TestChangeset(updatedSections: [.init(index: 0, id: 1, metadata: "A!")]),
        TestChangeset(deletedSections: [.init(index: 1, id: 5)]),
      ])
    #expect(recorder.problems == [])
    #expect(recorder.state == array.sections)
  }

  struct Failure: CustomTestStringConvertible, Sendable {
    var name: String
    var error: Observable2DArrayError
    var mutate: @Sendable (MutableObservable2DArray<String, String>) throws -> Void
    var testDescription: String { name }
  }

  static let failures: [Failure] = [
    Failure(
      name: "append to a missing section",
      error: .sectionOutOfRange(section: 2, validRange: 0..<2),
      mutate: { try $0.appendItem("x", toSection: 2) }),
    Failure(
      name: "insert past the end", error: .itemOutOfRange(path(1, 2), validRange: 0..<2),
      mutate: { try $0.insert(item: "x", at: path(1, 2)) }),
    Failure(
      name: "insert at a malformed index path",
      error: .malformedIndexPath(IndexPath(indexes: [0, 1, 2])),
      mutate: { try $0.insert(item: "x", at: IndexPath(indexes: [0, 1, 2])) }),
    Failure(
      name: "remove a missing item", error: .itemOutOfRange(path(0, 3), validRange: 0..<3),
      mutate: { try $0.removeItem(at: path(0, 3)) }),
    Failure(
      name: "remove from a negative section",
      error: .sectionOutOfRange(section: -1, validRange: 0..<2),
      mutate: { try $0.removeItem(at: path(-1, 0)) }),
    Failure(
      name: "move from a missing item", error: .itemOutOfRange(path(1, 1), validRange: 0..<1),
      mutate: { try $0.moveItem(from: path(1, 1), to: path(0, 0)) }),
    Failure(
      name: "move past the end of its own section",
      error: .itemOutOfRange(path(0, 3), validRange: 0..<3),
      mutate: { try $0.moveItem(from: path(0, 0), to: path(0, 3)) }),
    Failure(
      name: "move to a missing section", error: .sectionOutOfRange(section: 5, validRange: 0..<2),
      mutate: { try $0.moveItem(from: path(0, 0), to: path(5, 0)) }),
    Failure(
      name: "replace a missing item", error: .itemOutOfRange(path(1, 4), validRange: 0..<1),
      mutate: { try $0.replaceItem(at: path(1, 4), with: "x") }),
    Failure(
      name: "insert a section past the end",
      error: .sectionOutOfRange(section: 3, validRange: 0..<3),
      mutate: { try $0.insert(section: TestSection(metadata: "x"), at: 3) }),
    Failure(
      name: "remove a missing section", error: .sectionOutOfRange(section: 2, validRange: 0..<2),
      mutate: { try $0.removeSection(at: 2) }),
    Failure(
      name: "move a section past the end",
      error: .sectionOutOfRange(section: 2, validRange: 0..<2),
      mutate: { try $0.moveSection(from: 0, to: 2) }),
    Failure(
      name: "set the metadata of a missing section",
      error: .sectionOutOfRange(section: 9, validRange: 0..<2),
      mutate: { try $0.setMetadata("x", forSection: 9) }),
    Failure(
      name: "apply a changeset that does not fit",
      error: .invalidChangeset(
        rule: 1,
        message: "deletedItems[0] names row 7 of section 0, which only contains 3 rows "
          + "before the update"),
      mutate: { try $0.apply(TestChangeset(deletedItems: [.init(at: path(0, 7), id: 2)])) }),
  ]

  @Test(arguments: failures)
  func invalidMutationsThrowAndChangeNothing(_ failure: Failure) {
    let array = makeArray()
    let before = array.sections
    let recorder = EventRecorder(array)
    #expect(throws: failure.error) { try failure.mutate(array) }
    #expect(array.sections == before)
    #expect(recorder.events.isEmpty)
    try? array.appendItem("after", toSection: 0)
    #expect(recorder.events.count == 1)
  }

  @Test func errorMessagesNameTheProblem() {
    #expect(
      Observable2DArrayError.itemOutOfRange(path(0, 3), validRange: 0..<3).description
        == "item [0, 3] is out of range: valid items of that section are 0..<3")
    #expect(
      Observable2DArrayError.sectionOutOfRange(section: 2, validRange: 0..<0).description
        == "section 2 is out of range: there are no sections")
  }

  @Test func batchUpdateEmitsOneComposedChangeset() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    try array.batchUpdate { array in
      try array.appendItem("a3", toSection: 0)
      try array.removeItem(at: path(0, 3))  // the item just added: cancels out
      try array.moveItem(from: path(0, 0), to: path(1, 1))
      try array.moveItem(from: path(1, 1), to: path(1, 0))  // the same item again: one move
      try array.replaceItem(at: path(0, 0), with: "A1")
      try array.insert(section: TestSection(metadata: "N", items: ["n0"]), at: 0)
      try array.setMetadata("B!", forSection: 2)
    }
    #expect(recorder.events.count == 1)
    #expect(
      recorder.events.first?.changeset
        == TestChangeset(
          insertedSections: [.init(index: 0, id: 8, metadata: "N", items: [(id: 9, value: "n0")])],
          updatedSections: [.init(index: 1, id: 5, metadata: "B!")],
          movedItems: [.init(from: path(0, 0), to: path(2, 0), id: 2, value: "a0")],
          updatedItems: [.init(at: path(0, 1), id: 3, value: "A1")]))
    #expect(recorder.problems == [])
  }

  @Test func throwingBatchChangesNothing() {
    let array = makeArray()
    let before = array.sections
    let recorder = EventRecorder(array)
    #expect(throws: Observable2DArrayError.sectionOutOfRange(section: 7, validRange: 0..<2)) {
      try array.batchUpdate { array in
        try array.removeItem(at: path(0, 0))
        try array.appendItem("x", toSection: 7)
      }
    }
    #expect(array.sections == before)
    #expect(recorder.events.isEmpty)
  }

  @Test func emptyBatchEmitsNothing() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    try array.batchUpdate { array in
      try array.appendItem("x", toSection: 0)
      try array.removeItem(at: path(0, 3))
    }
    #expect(recorder.events.isEmpty)
  }

  @Test func largeBatchesFallBackToADiff() throws {
    let array = MutableObservable2DArray([TestSection(metadata: "A", items: ["a", "b", "c"])])
    let recorder = EventRecorder(array)
    try array.batchUpdate { array in
      for index in 0..<1_500 { try array.appendItem("n\(index)", toSection: 0) }
      try array.replaceItem(at: path(0, 1), with: "B")
      try array.moveItem(from: path(0, 0), to: path(0, 700))
      try array.removeItem(at: path(0, 2))
      array.appendSection(TestSection(metadata: "Z", items: ["z"]))
      try array.setMetadata("A!", forSection: 0)
    }
    #expect(recorder.events.count == 1)
    let changeset = try #require(recorder.events.first?.changeset)
    #expect(changeset.insertedItems.count == 1_499)
    #expect(changeset.updatedItems.map(\.value) == ["B"])
    #expect(changeset.movedItems.count == 1)
    #expect(changeset.updatedSections.count == 1)
    #expect(recorder.problems == [])
  }

  @Test func applyEmitsTheChangesetWithFreshIds() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    try array.apply(
      TestChangeset(
        insertedSections: [
          .init(
            index: 2, id: 0, metadata: "C", items: [(id: 0, value: "c0"), (id: 70, value: "c1")])
        ],
        insertedItems: [.init(at: path(0, 0), id: 0, value: "new")]))
    let changeset = try #require(recorder.events.first?.changeset)
    // Fresh ids continue after the largest id given explicitly.
    #expect(changeset.insertedSections.first?.id == 7)
    #expect(changeset.insertedSections.first.map { Array($0.items.ids) } == [71, 70])
    #expect(changeset.insertedItems.first?.id == 72)
    #expect(recorder.problems == [])
  }

  @Test func appliesOneRowChangesToAMillionItemsQuickly() throws {
    let items = ItemList(entries: (1...1_000_000).lazy.map { (id: Int64($0), value: "v\($0)") })
    let array = MutableObservable2DArray([TestSection(id: 5_000_000, metadata: "All", items: items)]
    )
    var received = 0
    let subscription = array.observeNext { _ in received += 1 }
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
      for index in 0..<100 {
        try array.apply(
          TestChangeset(
            updatedItems: [
              .init(at: path(0, index * 9_000), id: Int64(index * 9_000 + 1), value: "changed")
            ]))
      }
    }
    subscription.dispose()
    #expect(received == 100)
    #expect(array[path(0, 18_000)] == "changed")
    // Generous for debug builds: a walk over the million items per change would take seconds.
    #expect(elapsed < .milliseconds(500))
  }

  @Test func replaceWithPerformDiffMatchesIds() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    var sections = array.sections
    sections[0].items.removeEntry(at: 0)
    sections[1].items.append("b1", id: 0)
    sections.swapAt(0, 1)
    array.replace(with: sections, performDiff: true)
    let changeset = try #require(recorder.events.first?.changeset)
    #expect(changeset.deletedItems.map(\.id) == [2])
    #expect(changeset.insertedItems.map(\.value) == ["b1"])
    #expect(changeset.movedSections.count == 1)
    #expect(changeset.entryCount == 3)
    #expect(recorder.problems == [])
    #expect(array.sections[0].items.id(at: 1) == 7)
  }

  @Test func replaceWithoutDiffReloadsEverything() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    array.replace(with: [TestSection(metadata: "X", items: ["x"])], performDiff: false)
    let changeset = try #require(recorder.events.first?.changeset)
    #expect(changeset.deletedSections.count == 2)
    #expect(changeset.insertedSections.count == 1)
    #expect(recorder.problems == [])
  }

  @Test func replaceByValueIsBondStyle() throws {
    let array = MutableObservable2DArray([TestSection(metadata: "A", items: ["x", "y", "z"])])
    let recorder = EventRecorder(array)
    array.replace(with: [TestSection(metadata: "A", items: ["z", "x", "w"])], itemKey: { $0 })
    let changeset = try #require(recorder.events.first?.changeset)
    #expect(changeset.deletedItems.map(\.id) == [3])
    #expect(changeset.movedItems.map(\.value) == ["z"])
    #expect(changeset.insertedItems.map(\.value) == ["w"])
    #expect(recorder.problems == [])
  }

  @Test func subscribersStartFromTheDeliveredState() throws {
    let array = makeArray()
    var initial: [TestSection] = []
    var events = 0
    let subscription = array.subscribe(initial: { initial = $0 }, onNext: { _ in events += 1 })
    #expect(initial == array.sections)
    try array.appendItem("x", toSection: 1)
    #expect(events == 1)
    subscription.dispose()
    try array.appendItem("y", toSection: 1)
    #expect(events == 1)
  }

  @Test func observersMayMutateTheArrayAndSeeTheirEventAfter() throws {
    let array = makeArray()
    let recorder = EventRecorder(array)
    var order: [String] = []
    let subscription = array.observeNext { event in
      order.append(event.changeset.insertedItems.first?.value ?? "?")
      if event.changeset.insertedItems.first?.value == "first" {
        try? array.appendItem("second", toSection: 1)
        order.append("mutated")
      }
    }
    try array.appendItem("first", toSection: 1)
    #expect(order == ["first", "mutated", "second"])
    #expect(recorder.problems == [])
    subscription.dispose()
  }

  @Test func concurrentMutationsDeliverEveryEventInOrder() async throws {
    let array = MutableObservable2DArray([TestSection(metadata: "A"), TestSection(metadata: "B")])
    let checker = ConcurrentChecker(array)
    await withTaskGroup(of: Void.self) { group in
      for worker in 0..<4 {
        group.addTask {
          var random = SeededRandom(seed: UInt64(worker))
          for step in 0..<200 {
            let section = Int.random(in: 0..<2, using: &random)
            let count = array.numberOfItems(inSection: section)
            switch Int.random(in: 0..<4, using: &random) {
            case 0 where count > 0:
              _ = try? array.removeItem(
                at: path(section, Int.random(in: 0..<count, using: &random)))
            case 1 where count > 0:
              try? array.moveItem(
                from: path(section, Int.random(in: 0..<count, using: &random)),
                to: path(1 - section, 0))
            case 2:
              try? array.batchUpdate { array in
                try array.appendItem("w\(worker)-\(step)", toSection: section)
                try array.insert(item: "v\(worker)-\(step)", at: path(section, 0))
              }
            default:
              try? array.appendItem("w\(worker)-\(step)", toSection: section)
            }
          }
        }
      }
    }
    #expect(checker.problems == [])
    #expect(checker.state == array.sections)
    #expect(checker.overlaps == 0)
  }
}

/// Checks, from any thread, that events arrive one at a time and each fits the state before it.
final class ConcurrentChecker: @unchecked Sendable {
  // Only touched by the array's (serialized) deliveries, or after they all finished.
  private(set) var problems: [String] = []
  private(set) var state: [TestSection] = []
  private(set) var overlaps = 0
  private let delivering = Atomic(false)
  private var subscription: (any Disposable)?

  init(_ array: MutableObservable2DArray<String, String>) {
    subscription = array.subscribe(
      initial: { [unowned self] in state = $0 },
      onNext: { [unowned self] event in
        if delivering.exchange(true, ordering: .acquiringAndReleasing) { overlaps += 1 }
        defer { delivering.store(false, ordering: .releasing) }
        if (try? event.changeset.applied(to: state)) != event.sections {
          problems.append("event does not apply to the previous state: \(event.changeset)")
        }
        state = event.sections
      })
  }
}
