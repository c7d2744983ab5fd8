import FoundationEssentials
import Observable2D
import Testing

/// Bond's everyday helpers on `MutableObservable2DArray`: each is one event whose changeset
/// takes the state before it to the state after it, and does what a plain model of the
/// sections does.
@Suite struct ArrayHelpersTests {
  /// A section as ids and values; `nil` ids are fresh ones the array chose.
  typealias ModelSection = (metadata: String, items: [(id: Int64?, value: String)])

  static func model(_ sections: [TestSection]) -> [ModelSection] {
    sections.map { section in
      (section.metadata, section.items.entries.map { (Optional($0.id), $0.value) })
    }
  }

  /// Whether the array's sections are what the model says.
  static func matches(_ sections: [TestSection], _ model: [ModelSection], known: Set<Int64>)
    -> Bool
  {
    guard sections.count == model.count else { return false }
    for (section, expected) in zip(sections, model) {
      guard section.metadata == expected.metadata,
        section.items.count == expected.items.count
      else { return false }
      for (entry, want) in zip(section.items.entries, expected.items) {
        guard entry.value == want.value else { return false }
        if let id = want.id, entry.id != id { return false }
        if want.id == nil, known.contains(entry.id) { return false }
      }
    }
    return true
  }

  @Test func removingTheLastOfNothingThrowsAndChangesNothing() {
    let array = MutableObservable2DArray<String, String>([])
    var events = 0
    let subscription = array.observeNext { _ in events += 1 }
    defer { subscription.dispose() }
    #expect(throws: Observable2DArrayError.self) { try array.removeLastSection() }
    array.appendSection(TestSection(metadata: "S", items: []))
    #expect(throws: Observable2DArrayError.self) { try array.removeLastItem(inSection: 0) }
    #expect(throws: Observable2DArrayError.self) {
      try array.removeItems(inSection: 0, subrange: 0..<1)
    }
    #expect(throws: Observable2DArrayError.self) {
      try array.moveItems(from: [[0, 0]], to: [0, 0])
    }
    #expect(events == 1)
    #expect(array.sections.map(\.items.count) == [0])
  }

  @Test func severalItemsMoveAsOneBlockInTheOrderGiven() throws {
    let array = MutableObservable2DArray([
      makeSection(10, "A", entries: [(1, "a"), (2, "b"), (3, "c"), (4, "d")]),
      makeSection(20, "B", entries: [(5, "e"), (6, "f")]),
    ])
    var changesets: [TestChangeset] = []
    let before = array.sections
    let subscription = array.observeNext { changesets.append($0.changeset) }
    defer { subscription.dispose() }
    // "d" then "a" then "f", before "e" (row 0 of B counted without the moved ones).
    try array.moveItems(from: [[0, 3], [0, 0], [1, 1], [0, 3]], to: [1, 0])
    #expect(array.sections.map { Array($0.items) } == [["b", "c"], ["d", "a", "f", "e"]])
    #expect(array.sections[1].items.entries.map(\.id) == [4, 1, 6, 5])
    #expect(changesets.count == 1)
    #expect(try changesets.first?.applied(to: before) == array.sections)
    #expect(changesets.first?.deletedItems.isEmpty == true)
    #expect(changesets.first?.insertedItems.isEmpty == true)
  }

  /// 1,000 seeded random runs of 12 helpers each against a plain model.
  @Test func randomHelpersDoWhatTheModelDoesWithValidChangesets() throws {
    let iterations = PropertyTestSettings.iterations(default: 1_000)
    var changed = 0
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 9_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let array = MutableObservable2DArray(states.state(maxSections: 4, maxItems: 6))
      var random = SeededRandom(seed: seed)
      var changesets: [TestChangeset] = []
      let subscription = array.observeNext { changesets.append($0.changeset) }
      defer { subscription.dispose() }
      for step in 0..<12 {
        // Helpers that empty the array are in the mix: give it something to work on again.
        if array.sections.isEmpty { array.appendSection(states.section(maxItems: 6)) }
        let before = array.sections
        var model = Self.model(before)
        let known = Set(before.flatMap { $0.items.entries.map(\.id) })
        let sectionCount = model.count
        let section = sectionCount == 0 ? 0 : Int.random(in: 0..<sectionCount, using: &random)
        let count = sectionCount == 0 ? 0 : model[section].items.count
        var label = ""
        var threw = false
        do {
          switch Int.random(in: 0..<9, using: &random) {
          case 0:
            label = "removeLastSection"
            try array.removeLastSection()
            model.removeLast()
          case 1:
            label = "removeLastItem(\(section))"
            try array.removeLastItem(inSection: section)
            model[section].items.removeLast()
          case 2:
            label = "removeAllSections"
            array.removeAllSections()
            model.removeAll()
          case 3:
            label = "removeAllItems"
            array.removeAllItems()
            for index in model.indices { model[index].items.removeAll() }
          case 4:
            let low = Int.random(in: -1...count, using: &random)
            let high = Int.random(in: max(low, 0)...count + 1, using: &random)
            label = "removeItems(\(section), \(low)..<\(high))"
            try array.removeItems(inSection: section, subrange: low..<high)
            model[section].items.removeSubrange(low..<high)
          case 5:
            let values = (0..<Int.random(in: 0...3, using: &random)).map { _ in states.value() }
            label = "replaceItems(\(section), \(values))"
            try array.replaceItems(ofSectionAt: section, with: values)
            model[section].items = values.map { (nil, $0) }
          default:
            var paths: [IndexPath] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) where sectionCount > 0 {
              let from = Int.random(in: 0..<sectionCount, using: &random)
              let rows = model[from].items.count
              paths.append([from, Int.random(in: -1...rows, using: &random)])
            }
            let target = sectionCount == 0 ? 0 : Int.random(in: 0..<sectionCount, using: &random)
            let unique = paths.reduce(into: [IndexPath]()) { if !$0.contains($1) { $0.append($1) } }
            let staying =
              sectionCount == 0
              ? 0
              : model[target].items.count
                - unique.filter { $0[0] == target }.count
            let row = Int.random(in: 0...max(staying, 0) + 1, using: &random)
            label = "moveItems(\(paths), [\(target), \(row)])"
            try array.moveItems(from: paths, to: [target, row])
            let moving = unique.map { model[$0[0]].items[$0[1]] }
            for path in unique.sorted(by: >) { model[path[0]].items.remove(at: path[1]) }
            model[target].items.insert(contentsOf: moving, at: row)
          }
        } catch {
          threw = true
        }
        let comment = Comment(rawValue: "seed \(seed) step \(step): \(label)\n\(before)")
        if threw {
          #expect(array.sections == before, comment)
          continue
        }
        #expect(Self.matches(array.sections, model, known: known), comment)
        if array.sections != before {
          changed += 1
          let changeset = try #require(changesets.last, comment)
          #expect(try changeset.applied(to: before) == array.sections, comment)
        }
      }
    }
    // Most steps change something: the runs are not vacuous.
    #expect(
      changed > iterations * 6, "only \(changed) of \(iterations * 12) steps changed the array")
  }
}
