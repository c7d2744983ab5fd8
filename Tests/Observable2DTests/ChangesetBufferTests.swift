import FoundationEssentials
import Observable2D
import ReactiveCore
import Testing

/// `Changeset.coalescing` and the bounded buffer of `changesets()`: what a consumer that
/// fell behind receives has the same effect as every changeset it stands for, one by one.
@Suite struct ChangesetBufferTests {
  /// A random starting state and `count` random mutations of it, with the changeset of
  /// every event and the final state.
  static func history(seed: UInt64, count: Int) -> (
    initial: [TestSection], changesets: [Changeset<String, String>], final: [TestSection],
    array: MutableObservable2DArray<String, String>
  ) {
    var states = RandomStates(seed: seed)
    let initial = states.state(maxSections: 4, maxItems: 6).map {
      TestSection(metadata: $0.metadata, items: Array($0.items))
    }
    let array = MutableObservable2DArray(initial)
    let start = array.sections
    var changesets: [Changeset<String, String>] = []
    let subscription = array.observeNext { changesets.append($0.changeset) }
    var random = SeededRandom(seed: seed &+ 1)
    var model = PlainModel(array.sections)
    for _ in 0..<count {
      var expected = model
      if (try? PropertyRunner.run(Operation.random(&random), on: array, model: &expected)) != nil {
        model = expected
      }
    }
    subscription.dispose()
    return (start, changesets, array.sections, array)
  }

  /// Applying the coalesced changeset to the first state gives the last, and a table view
  /// would accept it, for 300 random histories of up to 40 changes each.
  @Test(arguments: [UInt64(71), 72, 73])
  func coalescingHasTheEffectOfEachChangesetInTurn(seed: UInt64) throws {
    var random = SeededRandom(seed: seed)
    for round in 0..<100 {
      let (initial, changesets, final, _) = Self.history(
        seed: random.next(), count: Int.random(in: 1...40, using: &random))
      var stepwise = initial
      for changeset in changesets { stepwise = try changeset.applied(to: stepwise) }
      #expect(stepwise == final, "seed \(seed) round \(round): the history itself")
      let coalesced = Changeset.coalescing(changesets, from: initial, to: final)
      try coalesced.validate(against: initial)
      #expect(try coalesced.applied(to: initial) == final, "seed \(seed) round \(round)")
    }
  }

  /// A loop that takes nothing while 500 changes happen holds at most `limit` waiting
  /// changesets, and what it then receives, applied in turn, gives the final state.
  @Test(arguments: [UInt64(81), 82])
  func aLoopThatFellBehindReceivesEverythingCoalesced(seed: UInt64) async throws {
    var states = RandomStates(seed: seed)
    let initial = states.state(maxSections: 4, maxItems: 6).map {
      TestSection(metadata: $0.metadata, items: Array($0.items))
    }
    let array = MutableObservable2DArray(initial)
    let start = array.sections
    let stream = array.changesets(bufferingLimit: 4)
    var random = SeededRandom(seed: seed)
    var model = PlainModel(array.sections)
    var events = 0
    let counting = array.observeNext { _ in events += 1 }
    for _ in 0..<500 {
      var expected = model
      if (try? PropertyRunner.run(Operation.random(&random), on: array, model: &expected)) != nil {
        model = expected
      }
    }
    counting.dispose()
    let final = array.sections
    var received = 0
    var state = start
    for try await changeset in stream {
      try changeset.validate(against: state)
      state = try changeset.applied(to: state)
      received += 1
      if state == final { break }
    }
    #expect(state == final)
    #expect(events > 100)
    // At most the limit waited, plus the one that came when it was passed.
    #expect(received <= 5, "\(received) of \(events) changesets")
  }

  /// A loop that keeps up receives each changeset as it was emitted.
  @Test func aLoopThatKeepsUpReceivesEachChangeset() async throws {
    let array = MutableObservable2DArray<String, String>([TestSection(metadata: "s", items: [])])
    let stream = array.changesets(bufferingLimit: 4)
    var iterator = stream.makeAsyncIterator()
    for step in 0..<20 {
      try array.appendItem("v\(step)", toSection: 0)
      let changeset = try await iterator.next()
      #expect(changeset?.insertedItems.map(\.value) == ["v\(step)"])
    }
  }
}
