import FoundationEssentials
import Observable2D
import Testing

/// The quick check that `validate(against:)` runs first (`isCertainlyValid(against:)`, for small
/// changesets that leave the sections in place) against the general check it stands in for.
@Suite struct ChangesetQuickCheckTests {
  /// Small changesets that keep the sections in place, valid ones (diffs of item edits) and
  /// broken ones (a diff with one field disturbed), over random states: the quick check accepts
  /// exactly what the general check accepts, so `validate` keeps its answers and its errors.
  @Test func theQuickCheckAcceptsExactlyWhatTheGeneralCheckAccepts() {
    let iterations = PropertyTestSettings.iterations(default: 20_000)
    var accepted = 0
    var refused = 0
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 4_000 &+ UInt64(iteration)
      var states = RandomStates(seed: seed)
      let old = states.state(maxSections: 4, maxItems: 6)
      let new = states.editedItems(old, maxEdits: 3)
      var changeset = TestChangeset.diffByID(from: old, to: new)
      if states.chance(60) { states.disturb(&changeset, in: old) }
      let general = Result { () throws(Observable2DArrayError) in
        try changeset.validateFully(against: old)
      }
      let quick = changeset.isCertainlyValid(against: old)
      let context = Comment(rawValue: "seed \(seed)\nold: \(old)\nchangeset: \(changeset)")
      if quick {
        // Never accepts what the general check refuses.
        #expect(throws: Never.self, context) { try general.get() }
      } else if changeset.keepsSectionsInPlace && changeset.entryCount <= 8 {
        // In its domain, refuses only what the general check refuses.
        #expect(throws: Observable2DArrayError.self, context) { try general.get() }
      }
      // `validate` answers as the general check does, with its error.
      let validated = Result { () throws(Observable2DArrayError) in
        try changeset.validate(against: old)
      }
      switch (validated, general) {
      case (.success, .success): accepted += 1
      case (.failure(let lhs), .failure(let rhs)):
        refused += 1
        #expect("\(lhs)" == "\(rhs)", context)
      default: Issue.record("validate and the general check disagree\n\(context.rawValue)")
      }
    }
    // Both kinds were exercised.
    #expect(accepted > iterations / 10 && refused > iterations / 10)
  }

  /// A single-row change costs the quick check a few comparisons, however many sections the
  /// state has: the general check is never needed for it.
  @Test func aSingleRowChangeIsCheckedWithoutTheGeneralCheck() {
    let old = (0..<1_000).map { makeSection(Int64($0 + 1), "S", [Int64(10_000 + $0)]) }
    let update = TestChangeset(updatedItems: [.init(at: path(500, 0), id: 10_500, value: "x")])
    let move = TestChangeset(
      movedItems: [.init(from: path(3, 0), to: path(999, 1), id: 10_003, value: "y")])
    let insert = TestChangeset(insertedItems: [.init(at: path(7, 0), id: 0, value: "z")])
    let delete = TestChangeset(deletedItems: [.init(at: path(0, 0), id: 10_000)])
    for changeset in [update, move, insert, delete] {
      let certain = changeset.isCertainlyValid(against: old)
      #expect(certain, "\(changeset)")
    }
    // A wrong id or row is not certainly valid, and `validate` then names the rule.
    let wrongID = TestChangeset(deletedItems: [.init(at: path(0, 0), id: 10_001)])
    let pastTheEnd = TestChangeset(insertedItems: [.init(at: path(7, 2), id: 0, value: "z")])
    for changeset in [wrongID, pastTheEnd] {
      let certain = changeset.isCertainlyValid(against: old)
      #expect(!certain, "\(changeset)")
      #expect(throws: Observable2DArrayError.self, "\(changeset)") {
        try changeset.validate(against: old)
      }
    }
  }
}

extension TestChangeset {
  /// Whether no section is inserted, deleted or moved.
  fileprivate var keepsSectionsInPlace: Bool {
    deletedSections.isEmpty && insertedSections.isEmpty && movedSections.isEmpty
  }
}

extension RandomStates {
  /// `state` after up to `maxEdits` random edits of items and metadata, sections in place.
  fileprivate mutating func editedItems(_ state: [TestSection], maxEdits: Int) -> [TestSection] {
    var state = state
    for _ in 0..<int(0...maxEdits) {
      let itemPaths = state.indices.flatMap { s in state[s].items.indices.map { (s, $0) } }
      switch int(0...4) {
      case 0 where !itemPaths.isEmpty:
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        state[s].items.removeEntry(at: r)
      case 1 where !state.isEmpty:
        let s = int(0...state.count - 1)
        state[s].items.insert(value(), id: freshID(), at: int(0...state[s].items.count))
      case 2 where !itemPaths.isEmpty:
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        let entry = state[s].items.removeEntry(at: r)
        let target = int(0...state.count - 1)
        state[target].items.insert(
          entry.value, id: entry.id, at: int(0...state[target].items.count))
      case 3 where !itemPaths.isEmpty:
        let (s, r) = itemPaths[int(0...itemPaths.count - 1)]
        state[s].items[r] = value() + "'"
      case 4 where !state.isEmpty:
        state[int(0...state.count - 1)].metadata += "'"
      default:
        continue
      }
    }
    return state
  }

  /// A small random disturbance of one entry of `changeset`: an index or a row off by one or
  /// far out, a wrong id, a malformed index path, an entry listed twice or an extra one.
  fileprivate mutating func disturb(_ changeset: inout TestChangeset, in old: [TestSection]) {
    func disturbed(_ value: Int) -> Int {
      [value + 1, value - 1, -1, old.count, value + 5, 0][int(0...5)]
    }
    func disturbed(_ path: IndexPath) -> IndexPath {
      switch int(0...4) {
      case 0: return IndexPath(indexes: [disturbed(path[0]), path[1]])
      case 1: return IndexPath(indexes: [path[0], disturbed(path[1])])
      case 2: return IndexPath(indexes: [path[0]])
      case 3: return IndexPath(indexes: [path[0], path[1], 0])
      default: return IndexPath(indexes: [int(0...4), int(0...6)])
      }
    }
    func someID() -> Int64 { [Int64(int(1...40)), 0, -3][int(0...2)] }
    func someOldPath() -> IndexPath {
      let s = old.isEmpty ? 0 : int(0...old.count - 1)
      let rows = old.isEmpty ? 0 : old[s].items.count
      return IndexPath(indexes: [s, int(0...max(rows, 1))])
    }
    switch int(0...11) {
    case 0 where !changeset.updatedItems.isEmpty:
      let i = int(0...changeset.updatedItems.count - 1)
      changeset.updatedItems[i].at = disturbed(changeset.updatedItems[i].at)
    case 1 where !changeset.updatedItems.isEmpty:
      changeset.updatedItems[int(0...changeset.updatedItems.count - 1)].id = someID()
    case 2 where !changeset.deletedItems.isEmpty:
      let i = int(0...changeset.deletedItems.count - 1)
      changeset.deletedItems[i].at = disturbed(changeset.deletedItems[i].at)
    case 3 where !changeset.insertedItems.isEmpty:
      let i = int(0...changeset.insertedItems.count - 1)
      changeset.insertedItems[i].at = disturbed(changeset.insertedItems[i].at)
    case 4 where !changeset.movedItems.isEmpty:
      let i = int(0...changeset.movedItems.count - 1)
      if chance(50) {
        changeset.movedItems[i].from = disturbed(changeset.movedItems[i].from)
      } else {
        changeset.movedItems[i].to = disturbed(changeset.movedItems[i].to)
      }
    case 5 where !changeset.movedItems.isEmpty:
      changeset.movedItems[int(0...changeset.movedItems.count - 1)].id = someID()
    case 6 where !changeset.updatedSections.isEmpty:
      let i = int(0...changeset.updatedSections.count - 1)
      if chance(50) {
        changeset.updatedSections[i].index = disturbed(changeset.updatedSections[i].index)
      } else {
        changeset.updatedSections[i].id = someID()
      }
    case 7:
      // The same old row named twice, or twice as a new row.
      if let entry = changeset.deletedItems.first, chance(50) {
        changeset.updatedItems.append(.init(at: entry.at, id: entry.id, value: "u"))
      } else if let entry = changeset.insertedItems.first {
        changeset.insertedItems.append(.init(at: entry.at, id: 0, value: "i"))
      } else if let entry = changeset.movedItems.first {
        changeset.insertedItems.append(.init(at: entry.to, id: 0, value: "i"))
      }
    case 8:
      changeset.deletedItems.append(.init(at: someOldPath(), id: someID()))
    case 9:
      changeset.insertedItems.append(.init(at: someOldPath(), id: 0, value: "n"))
    case 10:
      changeset.updatedItems.append(.init(at: someOldPath(), id: someID(), value: "n"))
    default:
      changeset.movedItems.append(
        .init(from: someOldPath(), to: someOldPath(), id: someID(), value: "m"))
    }
  }
}
