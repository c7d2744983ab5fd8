import FoundationEssentials
import Observable2D
import Testing

/// `replace(with:performDiff: true)` called the way Bond users call it, with sections and
/// items that carry no ids: rows pair with the array's by value (the rule of
/// `import --replace`), so the changeset lists only what differs.
@Suite struct ReplaceByValueTests {
  /// The array's changesets while `body` runs.
  static func changesets(
    of array: MutableObservable2DArray<String, String>, _ body: () -> Void
  ) -> [TestChangeset] {
    var changesets: [TestChangeset] = []
    let subscription = array.observeNext { changesets.append($0.changeset) }
    body()
    subscription.dispose()
    return changesets
  }

  @Test func anItemAddedAtTheEndIsOneInsertion() {
    let array = MutableObservable2DArray([TestSection(metadata: "S", items: ["1", "2", "3"])])
    let ids = Array(array.sections[0].items.ids)
    let changesets = Self.changesets(of: array) {
      array.replace(with: [TestSection(metadata: "S", items: ["1", "2", "3", "4"])])
    }
    #expect(changesets.count == 1)
    #expect(changesets.first?.insertedItems.map(\.at) == [[0, 3]])
    #expect(changesets.first?.entryCount == 1)
    #expect(Array(array.sections[0].items.ids.prefix(3)) == ids)
  }

  @Test func equalValuesPairOffOneToOneInOrder() {
    let array = MutableObservable2DArray([
      TestSection(metadata: "S", items: ["figs", "kiwi", "figs"])
    ])
    let ids = Array(array.sections[0].items.ids)
    let changesets = Self.changesets(of: array) {
      array.replace(with: [TestSection(metadata: "S", items: ["kiwi", "figs", "figs", "figs"])])
    }
    // The two old "figs" keep their ids in order; the third one is new.
    let after = Array(array.sections[0].items.ids)
    #expect(after[1] == ids[0] && after[2] == ids[2] && after[0] == ids[1])
    #expect(!ids.contains(after[3]))
    #expect(changesets.first?.insertedItems.count == 1)
    #expect(changesets.first?.deletedItems.isEmpty == true)
  }

  @Test func sectionsPairByMetadataAndAnIDGivenIsClaimedFirst() {
    let array = MutableObservable2DArray([
      TestSection(metadata: "A", items: ["a"]), TestSection(metadata: "B", items: ["b", "b"]),
    ])
    let sectionA = array.sections[0]
    let sectionB = array.sections[1]
    let secondB = sectionB.items.ids.last ?? 0
    let changesets = Self.changesets(of: array) {
      array.replace(with: [
        // B without its id, its second "b" named by id; "A" unchanged.
        Observable2DArraySection(
          id: 0, metadata: "B", items: ItemList(entries: [(secondB, "b"), (0, "b")])),
        TestSection(metadata: "A", items: ["a"]),
      ])
    }
    #expect(array.sections.map(\.id) == [sectionB.id, sectionA.id])
    #expect(Array(array.sections[0].items.ids) == [secondB, sectionB.items.ids.first ?? 0])
    let changeset = changesets.first
    #expect(changeset?.insertedSections.isEmpty == true)
    #expect(changeset?.deletedSections.isEmpty == true)
    #expect(changeset?.movedSections.count == 1)
    #expect(changeset?.insertedItems.isEmpty == true)
  }

  /// 2,000 random states replaced with a random edit of themselves stripped of every id:
  /// the changeset is valid, the array holds the edit's values, and an edit that changed
  /// nothing emits nothing.
  @Test func randomEditsWithoutIdsGiveTheirValuesWithValidChangesets() throws {
    let iterations = PropertyTestSettings.iterations(default: 2_000)
    var unchanged = 0
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 12_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let array = MutableObservable2DArray(states.state(maxSections: 4, maxItems: 6))
      let before = array.sections
      let edited = iteration % 4 == 0 ? before : states.edited(before, maxEdits: 6)
      let stripped = edited.map { TestSection(metadata: $0.metadata, items: Array($0.items)) }
      let comment = Comment(rawValue: "seed \(seed)\nbefore: \(before)\nnew: \(stripped)")
      let changesets = Self.changesets(of: array) { array.replace(with: stripped) }
      #expect(array.sections.map(\.metadata) == stripped.map(\.metadata), comment)
      #expect(array.sections.map { Array($0.items) } == stripped.map { Array($0.items) }, comment)
      if let changeset = changesets.first {
        #expect(try changeset.applied(to: before) == array.sections, comment)
      }
      if before.map(\.metadata) == stripped.map(\.metadata)
        && before.map({ Array($0.items) }) == stripped.map({ Array($0.items) })
      {
        unchanged += 1
        #expect(changesets.isEmpty, comment)
      }
    }
    #expect(unchanged >= iterations / 4)
  }
}
