import FoundationEssentials
import Observable2D
import Testing

@Suite struct ChangesetDiffTests {
  func check(
    _ changeset: TestChangeset, from old: [TestSection], to new: [TestSection],
    _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      ruleViolations(of: changeset, from: old, to: new) == [], comment,
      sourceLocation: sourceLocation)
    #expect(throws: Never.self, comment, sourceLocation: sourceLocation) {
      try changeset.validate(against: old)
    }
    #expect(
      (try? changeset.applied(to: old)) == new, comment, sourceLocation: sourceLocation)
  }

  @Test func oneItemMovedToTheFrontIsOneMove() {
    let old = [makeSection(1, "A", Array(1...100))]
    let new = [makeSection(1, "A", [100] + Array(1...99))]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset
        == TestChangeset(movedItems: [
          .init(from: path(0, 99), to: path(0, 0), id: 100, value: "v100")
        ]))
    check(changeset, from: old, to: new)
  }

  @Test func reversingNItemsIsNMinusOneMoves() {
    let old = [makeSection(1, "A", Array(1...50))]
    let new = [makeSection(1, "A", Array((1...50).reversed()))]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(changeset.movedItems.count == 49)
    #expect(changeset.entryCount == 49)
    check(changeset, from: old, to: new)
  }

  @Test func insertionsAndDeletionsShiftRowsWithoutMoves() {
    let old = [makeSection(1, "A", [1, 2, 3, 4, 5])]
    let new = [makeSection(1, "A", [9, 1, 3, 4, 8, 5])]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset
        == TestChangeset(
          deletedItems: [.init(at: path(0, 1), id: 2)],
          insertedItems: [
            .init(at: path(0, 0), id: 9, value: "v9"), .init(at: path(0, 4), id: 8, value: "v8"),
          ]))
    check(changeset, from: old, to: new)
  }

  @Test func itemThatChangesSectionIsAMove() {
    let old = [makeSection(1, "A", [1, 2]), makeSection(2, "B", [3])]
    let new = [makeSection(1, "A", [1]), makeSection(2, "B", [3, 2])]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset
        == TestChangeset(movedItems: [.init(from: path(0, 1), to: path(1, 1), id: 2, value: "v2")]))
    check(changeset, from: old, to: new)
  }

  @Test func changedValuesAreUpdatesOrMovesCarryingTheNewValue() {
    let old = [makeSection(1, "A", entries: [(1, "a"), (2, "b"), (3, "c")])]
    let new = [makeSection(1, "A", entries: [(3, "C"), (1, "a"), (2, "B")])]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset
        == TestChangeset(
          movedItems: [.init(from: path(0, 2), to: path(0, 0), id: 3, value: "C")],
          updatedItems: [.init(at: path(0, 1), id: 2, value: "B")]))
    check(changeset, from: old, to: new)
  }

  @Test func sectionsMoveByLongestIncreasingSubsequence() {
    let old = (1...5).map { makeSection(Int64($0), "S\($0)", [Int64($0 * 10)]) }
    let new = [old[4], old[0], old[1], old[2], old[3]]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset == TestChangeset(movedSections: [.init(from: 4, to: 0, id: 5, metadata: "S5")]))
    check(changeset, from: old, to: new)
  }

  @Test func itemsOfDeletedAndInsertedSectionsAreNotListed() {
    let old = [makeSection(1, "A", [1, 2]), makeSection(2, "B", [3])]
    let new = [makeSection(3, "C", [2, 4]), makeSection(2, "B", [3])]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(
      changeset
        == TestChangeset(
          deletedSections: [.init(index: 0, id: 1)],
          insertedSections: [
            .init(
              index: 0, id: 3, metadata: "C", items: [(id: 2, value: "v2"), (id: 4, value: "v4")])
          ]))
    check(changeset, from: old, to: new)
  }

  @Test func sectionsPairByPositionByDefault() {
    let old = [
      TestSection(metadata: "A", items: ["x", "y"]), TestSection(metadata: "B", items: ["z"]),
    ]
    let new = [TestSection(metadata: "A2", items: ["y", "x"])]
    let changeset = TestChangeset.diff(from: old, to: new)
    #expect(changeset.deletedSections.map(\.index) == [1])
    #expect(changeset.updatedSections.map(\.index) == [0])
    #expect(changeset.movedSections.isEmpty)
    #expect(changeset.movedItems.count == 1)
    check(changeset, from: old, to: new)
  }

  @Test func sectionKeyDetectsMovedSections() {
    let old = [TestSection(metadata: "A", items: ["x"]), TestSection(metadata: "B", items: ["y"])]
    let new = [old[1], old[0]]
    let changeset = TestChangeset.diff(from: old, to: new, sectionKey: { $0.metadata })
    #expect(changeset.movedSections.count == 1)
    #expect(changeset.entryCount == 1)
    check(changeset, from: old, to: new)
  }

  @Test func duplicateValuesFollowTheirUniqueNeighbours() {
    // "y" is unique on both sides, so the "x" next to it on each side are the same items and
    // the first "x" is the one deleted: no move.
    let old = [TestSection(metadata: "A", items: ["x", "x", "y", "x"])]
    let new = [TestSection(metadata: "A", items: ["x", "y", "x"])]
    let changeset = TestChangeset.diff(from: old, to: new)
    #expect(changeset == TestChangeset(deletedItems: [.init(at: path(0, 0), id: 0)]))
  }

  @Test func remainingDuplicatesAreMatchedInOrder() throws {
    let old = [TestSection(metadata: "A", items: ["x", "x", "x"])]
    let new = [TestSection(metadata: "A", items: ["x", "x"])]
    let changeset = TestChangeset.diff(from: old, to: new)
    #expect(changeset == TestChangeset(deletedItems: [.init(at: path(0, 2), id: 0)]))
    #expect(try changeset.applied(to: old) == new)
  }

  struct Person: Identifiable, Equatable, Sendable {
    var id: String
    var age: Int
  }

  @Test func identifiableItemsMatchByIdAndUpdateByValue() throws {
    typealias People = Observable2DArraySection<String, Person>
    let old = [People(metadata: "P", items: [Person(id: "a", age: 1), Person(id: "b", age: 2)])]
    let new = [People(metadata: "P", items: [Person(id: "b", age: 3), Person(id: "a", age: 1)])]
    let changeset = Changeset.diff(from: old, to: new)
    #expect(changeset.movedItems.count == 1)
    #expect(changeset.entryCount == 1)
    #expect(try changeset.applied(to: old) == new)
  }

  @Test func tupleMetadataIsReportedUpdatedBecauseItCannotBeCompared() throws {
    typealias Metadata = (header: String, footer: String)
    let old = [
      Observable2DArraySection<Metadata, String>(metadata: ("H", "F"), items: ["Paris", "Berlin"])
    ]
    var new = old
    new[0].items.append("Copenhagen")
    let changeset = Changeset.diff(from: old, to: new)
    #expect(changeset.updatedSections.count == 1)
    #expect(changeset.insertedItems.map(\.value) == ["Copenhagen"])
    let compared = Changeset.diff(
      from: old, to: new, metadataIsEqual: { $0.header == $1.header && $0.footer == $1.footer })
    #expect(compared.updatedSections.isEmpty)
    let applied = try compared.applied(to: old)
    #expect(Array(applied[0].items) == ["Paris", "Berlin", "Copenhagen"])
  }

  @Test func aDiffOfAHundredThousandItemsListsOnlyTheDifferences() throws {
    var nextID: Int64 = 0
    func ids(_ count: Int) -> [Int64] {
      (0..<count).map { _ in
        nextID += 1
        return nextID
      }
    }
    let old = (0..<10).map { makeSection(Int64(1_000_000 + $0), "S\($0)", ids(10_000)) }
    var new = old
    new[0].items.removeEntry(at: 5)
    new[1].items.insert("fresh", id: 999_999, at: 7)
    new[2].items[100] = "changed"
    let moved = new[3].items.removeEntry(at: 9_000)
    new[3].items.insert(moved.value, id: moved.id, at: 0)
    let across = new[4].items.removeEntry(at: 1)
    new[5].items.insert(across.value, id: across.id, at: 5_000)
    new[6].metadata = "S6 renamed"
    let gone = new.remove(at: 7)
    new.append(makeSection(2_000_000, "new", [3_000_000]))
    new.swapAt(7, 8)
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(changeset.deletedItems.count == 1)
    #expect(changeset.insertedItems.count == 1)
    #expect(changeset.updatedItems.count == 1)
    #expect(changeset.movedItems.count == 2)
    #expect(changeset.updatedSections.count == 1)
    #expect(changeset.deletedSections == [.init(index: 7, id: gone.id)])
    #expect(changeset.insertedSections.count == 1)
    #expect(changeset.movedSections.count == 1)
    #expect(changeset.entryCount == 9)
    #expect(try changeset.applied(to: old) == new)
  }

  @Test func twoHundredMovesAcrossAHundredSectionsAreTwoHundredMoves() throws {
    var random = SeededRandom(seed: 7)
    let old: [TestSection] = (0..<100).map { (section: Int) -> TestSection in
      let first = Int64(section * 1_000 + 1)
      return makeSection(Int64(100_000 + section), "S\(section)", Array(first..<first + 1_000))
    }
    var new = old
    var moved = Set<Int64>()
    while moved.count < 200 {
      let from = Int.random(in: 0..<100, using: &random)
      let row = Int.random(in: 0..<new[from].items.count, using: &random)
      guard !moved.contains(new[from].items.id(at: row)) else { continue }
      let to = (from + Int.random(in: 1..<100, using: &random)) % 100
      let entry = new[from].items.removeEntry(at: row)
      new[to].items.insert(
        entry.value, id: entry.id, at: Int.random(in: 0...new[to].items.count, using: &random))
      moved.insert(entry.id)
    }
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(changeset.movedItems.count == 200)
    #expect(changeset.entryCount == 200)
    #expect(Set(changeset.movedItems.map { $0.id }) == moved)
    #expect(try changeset.applied(to: old) == new)
  }

  @Test func randomDiffsApplyToTheNewStateWithMinimalMoves() {
    let iterations = PropertyTestSettings.iterations(default: 2_000)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let old = states.state()
      let new = states.edited(old)
      let comment = Comment(rawValue: "seed \(seed)\nold: \(old)\nnew: \(new)")
      let byID = TestChangeset.diffByID(from: old, to: new)
      check(byID, from: old, to: new, comment)
      #expect(byID.movedItems.count == minimalMoveCount(from: old, to: new), comment)
      // Keyed by value (duplicates allowed), sections by id: valid, and gives the new values.
      let byValue = TestChangeset.diff(from: old, to: new, sectionKey: { $0.id })
      #expect(throws: Never.self, comment) { try byValue.validate(against: old) }
      let applied = (try? byValue.applied(to: old)) ?? []
      #expect(applied.map { Array($0.items) } == new.map { Array($0.items) }, comment)
      #expect(applied.map(\.id) == new.map(\.id), comment)
      #expect(applied.map(\.metadata) == new.map(\.metadata), comment)
    }
  }

  /// Ids close together are matched through a table indexed by id, ids far apart through a
  /// hash table: both give the same changeset, also with an id given twice (which falls back
  /// to the general matching) and with ids far outside the stored ones.
  @Test func closeAndFarApartIDsGiveTheSameDiff() {
    /// The same ids spread far apart, some of them negative (`0` and ids that are far out
    /// already stay).
    func spread(_ id: Int64) -> Int64 {
      id == 0 || id.magnitude > 1 << 40 ? id : id * 1_000_003 - 5_000_000
    }
    func spread(_ state: [TestSection]) -> [TestSection] {
      state.map { section in
        TestSection(
          id: spread(section.id), metadata: section.metadata,
          items: ItemList(entries: section.items.entries.map { (spread($0.id), $0.value) }))
      }
    }
    func spread(_ changeset: TestChangeset) -> TestChangeset {
      var result = changeset
      for index in result.deletedSections.indices {
        result.deletedSections[index].id = spread(result.deletedSections[index].id)
      }
      result.insertedSections = result.insertedSections.map { entry in
        .init(
          index: entry.index, id: spread(entry.id), metadata: entry.metadata,
          items: ItemList(entries: entry.items.entries.map { (spread($0.id), $0.value) }))
      }
      for index in result.movedSections.indices {
        result.movedSections[index].id = spread(result.movedSections[index].id)
      }
      for index in result.updatedSections.indices {
        result.updatedSections[index].id = spread(result.updatedSections[index].id)
      }
      for index in result.deletedItems.indices {
        result.deletedItems[index].id = spread(result.deletedItems[index].id)
      }
      for index in result.insertedItems.indices {
        result.insertedItems[index].id = spread(result.insertedItems[index].id)
      }
      for index in result.movedItems.indices {
        result.movedItems[index].id = spread(result.movedItems[index].id)
      }
      for index in result.updatedItems.indices {
        result.updatedItems[index].id = spread(result.updatedItems[index].id)
      }
      return result
    }
    let iterations = PropertyTestSettings.iterations(default: 1_000)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 9_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let old = states.state()
      var new = states.edited(old)
      if let section = new.indices.randomElement(using: &states.random) {
        if states.chance(20), let id = old.lazy.flatMap({ $0.items.ids }).first {
          new[section].items.append("again", id: id)  // An old id twice in the new state.
        }
        if states.chance(20) {
          new[section].items.append("far", id: states.chance(50) ? .max : .min + 1)
        }
      }
      let comment = Comment(rawValue: "seed \(seed)\nold: \(old)\nnew: \(new)")
      let close = TestChangeset.diffByID(from: old, to: new)
      let farApart = TestChangeset.diffByID(from: spread(old), to: spread(new))
      #expect(spread(close) == farApart, comment)
    }
  }
}

/// The fewest item moves any valid changeset needs, by a naive O(m²) longest increasing
/// subsequence: items that change section, plus, per section that stays, the items that stay
/// in it minus the longest run of them that keeps its order.
func minimalMoveCount(from old: [TestSection], to new: [TestSection]) -> Int {
  var oldPlace: [Int64: (section: Int64, row: Int)] = [:]
  for section in old {
    for (row, id) in section.items.ids.enumerated() { oldPlace[id] = (section.id, row) }
  }
  let oldSectionIDs = Set(old.map(\.id))
  var moves = 0
  for section in new where oldSectionIDs.contains(section.id) {
    var rows: [Int] = []
    for id in section.items.ids {
      guard let place = oldPlace[id], oldSectionIDs.contains(place.section),
        new.contains(where: { $0.id == place.section })
      else { continue }
      if place.section == section.id { rows.append(place.row) } else { moves += 1 }
    }
    var best = [Int](repeating: 1, count: rows.count)
    for i in rows.indices {
      for j in 0..<i where rows[j] < rows[i] { best[i] = max(best[i], best[j] + 1) }
    }
    moves += rows.count - (best.max() ?? 0)
  }
  return moves
}
