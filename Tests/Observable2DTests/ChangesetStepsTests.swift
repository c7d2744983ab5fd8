import FoundationEssentials
import Observable2D
import Testing

/// `Changeset.steps`, the patch form of a changeset: single operations that, applied one at
/// a time, each to the state the ones before it left, give what the batch gives.
@Suite struct ChangesetStepsTests {
  /// Replays `changeset`'s steps from `old`, each validated against the state before it,
  /// and returns the state they reach.
  static func replay(_ changeset: TestChangeset, from old: [TestSection]) throws -> [TestSection] {
    var state = old
    for step in changeset.steps {
      let single = step.changeset
      #expect(single.entryCount == 1, "\(step)")
      state = try single.applied(to: state)
    }
    return state
  }

  @Test func aDeletionThenAMoveNameTheStateBetweenThem() throws {
    let old = [makeSection(10, "S", entries: [(1, "a"), (2, "b"), (3, "c")])]
    let changeset = TestChangeset(
      deletedItems: [.init(at: [0, 1], id: 2)],
      movedItems: [.init(from: [0, 2], to: [0, 0], id: 3, value: "c")])
    let steps = changeset.steps.map(\.changeset)
    #expect(
      steps == [
        TestChangeset(deletedItems: [.init(at: [0, 1], id: 2)]),
        // "c" is at row 1 once "b" is gone.
        TestChangeset(movedItems: [.init(from: [0, 1], to: [0, 0], id: 3, value: "c")]),
      ])
    #expect(try Self.replay(changeset, from: old) == changeset.applied(to: old))
  }

  @Test func sectionsThatSwapWhileItemsCrossBetweenThemReplay() throws {
    // Two sections swap, and items cross between them both ways.
    let old = [
      makeSection(10, "A", entries: [(1, "a1"), (2, "a2"), (3, "a3")]),
      makeSection(20, "B", entries: [(4, "b4"), (5, "b5")]),
    ]
    let new = [
      makeSection(20, "B", entries: [(3, "a3"), (4, "b4"), (5, "b5")]),
      makeSection(10, "A!", entries: [(5 + 1, "new"), (2, "a2"), (1, "a1")]),
    ]
    let changeset = TestChangeset.diffByID(from: old, to: new)
    #expect(try Self.replay(changeset, from: old) == new)
    #expect(changeset.steps.count == changeset.entryCount)
  }

  /// 2,000 random pairs of states (sections and items inserted, deleted, moved, edited),
  /// diffed by id: the steps, one per entry, each valid where it is applied, reach the new
  /// state.
  @Test func randomDiffsReplayedStepByStepReachTheNewState() throws {
    let iterations = PropertyTestSettings.iterations(default: 2_000)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 5_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let old = states.state(maxSections: 5, maxItems: 7)
      let new = states.edited(old, maxEdits: 10)
      let changeset = TestChangeset.diffByID(from: old, to: new)
      let comment = Comment(rawValue: "seed \(seed)\nold: \(old)\nnew: \(new)\n\(changeset)")
      #expect(changeset.steps.count == changeset.entryCount, comment)
      #expect(try Self.replay(changeset, from: old) == new, comment)
    }
  }

  /// Every changeset a mutable array emitted over random histories (its own batches, with
  /// several entries of every kind) replays step by step to the state after it.
  @Test(arguments: [UInt64(91), 92])
  func everyEmittedChangesetReplaysStepByStep(seed: UInt64) throws {
    var random = SeededRandom(seed: seed)
    for round in 0..<60 {
      let (initial, changesets, final, _) = ChangesetBufferTests.history(
        seed: random.next(), count: Int.random(in: 1...30, using: &random))
      var state = initial
      for changeset in changesets {
        state = try Self.replay(changeset, from: state)
      }
      #expect(state == final, "seed \(seed) round \(round)")
    }
  }
}
