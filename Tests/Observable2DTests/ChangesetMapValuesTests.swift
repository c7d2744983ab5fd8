import Observable2D
import Testing

/// `Changeset.mapValues`: the converted changeset applies to the converted state where the
/// original applies to the original, and a conversion's error ends it.
@Suite struct ChangesetMapValuesTests {
  /// The state with every metadata and value converted, ids kept.
  static func converted(_ state: [TestSection]) -> [Observable2DArraySection<Int, String>] {
    state.map { section in
      Observable2DArraySection(
        id: section.id, metadata: section.metadata.count,
        items: ItemList(entries: section.items.entries.map { ($0.id, "\($0.id):\($0.value)") }))
    }
  }

  /// 2,000 random pairs of states diffed by id: converting the changeset (metadata to its
  /// length, a value to its id and itself) gives the changeset from the converted old state
  /// to the converted new one.
  @Test func aConvertedChangesetTakesTheConvertedStateToTheConvertedNewOne() throws {
    let iterations = PropertyTestSettings.iterations(default: 2_000)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 9_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let old = states.state(maxSections: 5, maxItems: 7)
      let new = states.edited(old, maxEdits: 10)
      let changeset = TestChangeset.diffByID(from: old, to: new)
      let mapped = changeset.mapValues(
        metadata: { _, header in header.count }, item: { id, value in "\(id):\(value)" })
      #expect(mapped.entryCount == changeset.entryCount, "seed \(seed)")
      #expect(try mapped.applied(to: Self.converted(old)) == Self.converted(new), "seed \(seed)")
    }
  }

  struct Refused: Error, Equatable { let id: Int64 }

  @Test func theFirstConversionErrorIsThrown() {
    let changeset = TestChangeset(
      insertedItems: [
        .init(at: [0, 0], id: 7, value: "a"), .init(at: [0, 1], id: 8, value: "b"),
      ],
      updatedItems: [.init(at: [0, 2], id: 9, value: "c")])
    #expect(throws: Refused(id: 8)) {
      try changeset.mapValues(
        metadata: { _, header throws(Refused) in header },
        item: { id, value throws(Refused) in
          if id >= 8 { throw Refused(id: id) }
          return value
        })
    }
  }
}
