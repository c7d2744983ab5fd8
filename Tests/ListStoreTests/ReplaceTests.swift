import Foundation
import ListStore
import Observable2D
import SQLiteKit
import TestSupport
import Testing

/// `StoredList.replace(with:performDiff:)`: the stored list becomes the given state with
/// one row write per entry of `Changeset.diffByID`, and observers get exactly that diff.
@Suite struct ReplaceTests {
  let folder = TemporaryDirectory()

  typealias List = StoredList<SectionMetadata, String>
  typealias Section = Observable2DArraySection<SectionMetadata, String>

  func makeList(_ repository: Repository, sections: [[String]]) throws -> List {
    let list = try repository.createList("list", metadata: SectionMetadata.self, item: String.self)
    for (index, items) in sections.enumerated() {
      try list.appendSection(SectionMetadata(header: "S\(index)"))
      try list.appendItems(items, toSection: index)
    }
    return list
  }

  /// The number of change-log entries written so far: one per row inserted, updated or
  /// deleted, whoever wrote it (the log's own counter, which pruning does not lower).
  func logCount(_ path: String) throws -> Int64 {
    let db = try Connection(path: path, mode: .readOnly)
    defer { db.close() }
    return try db.scalarInt64("SELECT seq FROM sqlite_sequence WHERE name = 'changes'") ?? 0
  }

  /// The row writes a changeset stands for: one per entry, plus one per item an inserted
  /// section brings, except an item it takes from a kept section (listed as deleted
  /// there: one write moves it). A deleted section's items go with its one write.
  func expectedWrites(_ changeset: Changeset<SectionMetadata, String>) -> Int64 {
    let brought = Set(changeset.insertedSections.flatMap { Array($0.items.ids) })
    let taken = changeset.deletedItems.filter { brought.contains($0.id) }.count
    return Int64(changeset.entryCount + brought.count - taken)
  }

  /// Replaces, then checks the result, the observer's changeset and the number of writes.
  @discardableResult
  func replaceAndCheck(
    _ list: List, _ target: [Section], recorder: ArrayRecorder<SectionMetadata, String>,
    _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> Changeset<SectionMetadata, String> {
    let before = try list.sections()
    let eventsBefore = recorder.changesets.count
    let logBefore = try logCount(list.repository.path)
    let changeset = try list.replace(with: target)
    let after = try list.sections()
    let written = try logCount(list.repository.path) - logBefore

    // The list is the target: same metadata and values in the same places; rows the
    // target names by a known id keep it.
    #expect(
      after.map { $0.metadata } == target.map { $0.metadata }, comment,
      sourceLocation: sourceLocation)
    #expect(
      after.map { Array($0.items) } == target.map { Array($0.items) }, comment,
      sourceLocation: sourceLocation)
    let knownSections = Set(before.map(\.id))
    let known = Set(before.flatMap { Array($0.items.ids) })
    for (stored, wanted) in zip(after, target) {
      if knownSections.contains(wanted.id) {
        #expect(stored.id == wanted.id, comment, sourceLocation: sourceLocation)
      }
      for (storedID, wantedID) in zip(stored.items.ids, wanted.items.ids)
      where known.contains(wantedID) {
        #expect(storedID == wantedID, comment, sourceLocation: sourceLocation)
      }
    }
    // An item without an id takes over the first stored row of its section, in order,
    // that holds an equal value and that no id of the target claims; else it is new.
    // A section without an id takes over the first stored section, in order, with equal
    // metadata that no id of the target claims (and its items pair in it).
    let claimedSections = Set(target.map(\.id).filter { $0 != 0 })
    var freeSections = before.filter { !claimedSections.contains($0.id) }
    var pairedSections: [Int: Int64] = [:]  // Target index → stored id.
    for (index, wanted) in target.enumerated() where wanted.id == 0 {
      if let match = freeSections.firstIndex(where: { $0.metadata == wanted.metadata }) {
        pairedSections[index] = freeSections.remove(at: match).id
      }
    }
    let claimed = Set(target.flatMap { Array($0.items.ids) })
    for (index, (stored, wanted)) in zip(after, target).enumerated() {
      let sectionID = wanted.id != 0 ? wanted.id : pairedSections[index] ?? 0
      if let paired = pairedSections[index] {
        #expect(stored.id == paired, comment, sourceLocation: sourceLocation)
      }
      var free = before.first { $0.id == sectionID && sectionID != 0 }.map { section in
        section.items.entries.filter { !claimed.contains($0.id) }
      }
      for (row, entry) in wanted.items.entries.enumerated() where entry.id == 0 {
        let storedID = stored.items.id(at: row)
        if let match = free?.firstIndex(where: { $0.value == entry.value }) {
          #expect(storedID == free?[match].id, comment, sourceLocation: sourceLocation)
          free?.remove(at: match)
        } else {
          #expect(!known.contains(storedID), comment, sourceLocation: sourceLocation)
        }
      }
    }
    // The changeset is the diff of the two states, and what the observer got.
    let diff = Changeset.diffByID(from: before, to: after)
    #expect(changeset == diff, comment, sourceLocation: sourceLocation)
    #expect(try changeset.applied(to: before) == after, comment, sourceLocation: sourceLocation)
    if diff.isEmpty {
      #expect(recorder.changesets.count == eventsBefore, comment, sourceLocation: sourceLocation)
    } else {
      #expect(
        recorder.changesets.count == eventsBefore + 1, comment, sourceLocation: sourceLocation)
      #expect(recorder.changesets.last == diff, comment, sourceLocation: sourceLocation)
    }
    #expect(recorder.problems.isEmpty, comment, sourceLocation: sourceLocation)
    // One row write per entry.
    #expect(
      written == expectedWrites(diff), comment,
      sourceLocation: sourceLocation)
    return changeset
  }

  @Test func anUnchangedStateWritesNothingAndEmitsNothing() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [["a", "b", "c"], ["d"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    let changeset = try replaceAndCheck(list, try list.sections(), recorder: recorder)
    #expect(changeset.isEmpty)
  }

  @Test func movingOneItemToTheFrontIsOnePositionUpdate() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [(0..<100).map { "item \($0)" }])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    var state = try list.sections()
    let last = state[0].items.removeEntry(at: 99)
    state[0].items.insert(last.value, id: last.id, at: 0)
    let changeset = try replaceAndCheck(list, state, recorder: recorder)
    #expect(changeset.movedItems.map(\.id) == [last.id])
    #expect(changeset.entryCount == 1)
  }

  @Test func stringsAreComparedAsTheJSONTheyAreStoredAs() throws {
    defer { folder.remove() }
    // Every length up to 20 with a character to escape at every place (the escaping
    // check reads eight bytes at a time, the last ones overlapping), and clean ones.
    var clean: [String] = []
    var escaped: [String] = []
    for length in 0...20 {
      clean.append(String(repeating: "a", count: length))
      clean.append(String(repeating: "é", count: length))
      for place in 0..<length {
        for special in ["\"", "\\", "\n", "\u{1}", "\u{1F}"] {
          var characters = Array(repeating: "b", count: length)
          characters[place] = special
          escaped.append(characters.joined())
        }
      }
    }
    // Clean strings alone (encoded in one buffer), and with strings to escape.
    for (name, strings) in [("clean", clean), ("all", clean + escaped)] {
      let repository = try Repository(path: folder.file("\(name).sqlite"))
      let list = try makeList(repository, sections: [strings])
      let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
      // The same strings: nothing to write.
      #expect(try replaceAndCheck(list, try list.sections(), recorder: recorder).isEmpty)
      var state = try list.sections()
      for index in stride(from: 0, to: state[0].items.count, by: 3) {
        state[0].items[index] += index % 2 == 0 ? "\"" : "c"
      }
      let changeset = try replaceAndCheck(list, state, recorder: recorder, "\(name)")
      #expect(changeset.updatedItems.count == (state[0].items.count + 2) / 3)
    }
  }

  @Test func newRowsGetIdsAndChangedValuesAreUpdatesInPlace() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [["a", "b", "c"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    var state = try list.sections()
    state[0].items[1] = "B"  // Keeps b's id.
    state[0].items.insert("new", id: 0, at: 0)
    state.append(Section(metadata: SectionMetadata(header: "Added"), items: ["x", "y"]))
    let changeset = try replaceAndCheck(list, state, recorder: recorder)
    #expect(changeset.updatedItems.map(\.value) == ["B"])
    #expect(changeset.insertedItems.map(\.value) == ["new"])
    #expect(changeset.insertedItems.allSatisfy { $0.id > 0 })
    #expect(changeset.insertedSections.map { Array($0.items) } == [["x", "y"]])
    #expect(changeset.insertedSections.allSatisfy { $0.id > 0 && !$0.items.ids.contains(0) })
  }

  @Test func itemsMoveOutOfDeletedSectionsAndIntoInsertedOnesKeepingTheirIds() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [["a", "b"], ["c", "d"], ["e"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    let state = try list.sections()
    // Section 1 goes; its c moves to section 0; b moves into a new section with e,
    // whose section goes too.
    let (a, b) = (state[0].items.entry(at: 0), state[0].items.entry(at: 1))
    let c = state[1].items.entry(at: 0)
    let e = state[2].items.entry(at: 0)
    let target = [
      Section(id: state[0].id, metadata: state[0].metadata, items: ItemList(entries: [a, c])),
      Section(id: 0, metadata: SectionMetadata(header: "New"), items: ItemList(entries: [b, e])),
    ]
    try replaceAndCheck(list, target, recorder: recorder)
    let after = try list.sections()
    #expect(Array(after[0].items.ids) == [a.id, c.id])
    #expect(Array(after[1].items.ids) == [b.id, e.id])
  }

  /// Items without an id (a file edited by hand, say) pair off by value with stored rows
  /// of the same section that no id claims: one to one, in order; the rest are new.
  @Test(arguments: TestEngine.tested)
  func itemsWithoutIdsTakeOverUnclaimedRowsOfEqualValue(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository, sections: [["a", "b", "a", "c", "a"], ["a", "c"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    let stored = try list.sections()
    let ids = stored.map { Array($0.items.ids) }
    // Section 0: the third "a" claimed by its id; three "a"s without one take the first
    // and fifth rows, and the third is new; "b" keeps its row by value; "c" is dropped
    // and a "c" without id in section 1 does not take it (another section): section 1's
    // own "c" is taken instead, and its "a" is dropped.
    let target = [
      Section(
        id: stored[0].id, metadata: stored[0].metadata,
        items: ItemList(entries: [
          (id: 0, value: "a"), (id: ids[0][2], value: "a"), (id: 0, value: "b"),
          (id: 0, value: "a"), (id: 0, value: "a"), (id: 0, value: "x"),
        ])),
      Section(
        id: stored[1].id, metadata: stored[1].metadata,
        items: ItemList(entries: [(id: 0, value: "c"), (id: 0, value: "c")])),
    ]
    let changeset = try list.replace(with: target)
    let after = try list.sections()
    #expect(after.map { Array($0.items) } == [["a", "a", "b", "a", "a", "x"], ["c", "c"]])
    let newIDs = after.map { Array($0.items.ids) }
    #expect(Array(newIDs[0][0..<5]) == [ids[0][0], ids[0][2], ids[0][1], ids[0][4], newIDs[0][4]])
    #expect(!ids.joined().contains(newIDs[0][4]) && !ids.joined().contains(newIDs[0][5]))
    #expect(newIDs[1][0] == ids[1][1] && !ids.joined().contains(newIDs[1][1]))
    #expect(Set(changeset.insertedItems.map(\.value)) == ["a", "x", "c"])
    #expect(Set(changeset.deletedItems.map(\.id)) == [ids[0][3], ids[1][0]])
    #expect(changeset.updatedItems.isEmpty)
    #expect(recorder.changesets.last == changeset)
    // The same target again: every row without an id pairs with the row it made.
    #expect(try list.replace(with: target).isEmpty)
    #expect(try list.sections() == after)
  }

  /// A state written without any id (a file by hand) syncs onto the list it made:
  /// sections pair by metadata, their items by value; only what differs is written.
  @Test(arguments: TestEngine.tested)
  func aStateWithoutIdsPairsSectionsByMetadataAndItemsByValue(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository, sections: [["a", "b"], ["c"], ["d"]])
    let stored = try list.sections()
    func withoutIDs(_ sections: [(String, [String])]) -> [Section] {
      sections.map { Section(metadata: SectionMetadata(header: $0.0), items: $0.1) }
    }
    // S1 dropped, S0 and S2 kept in another order, and a new section "S9".
    let target = withoutIDs([("S2", ["d", "e"]), ("S0", ["b", "a"]), ("S9", ["a"])])
    let changeset = try list.replace(with: target)
    let after = try list.sections()
    #expect(after.map(\.id).prefix(2) == [stored[2].id, stored[0].id])
    #expect(after[1].items.ids.elementsEqual(stored[0].items.ids.reversed()))
    #expect(changeset.deletedSections.map(\.id) == [stored[1].id])
    #expect(changeset.insertedSections.map(\.metadata.header) == ["S9"])
    #expect(changeset.insertedItems.map(\.value) == ["e"])
    #expect(changeset.updatedItems.isEmpty && changeset.updatedSections.isEmpty)
    #expect(try list.replace(with: target).isEmpty)
  }

  @Test func unknownIdsAreNewRowsAndRepeatedIdsAreRefused() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [["a", "b"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    var state = try list.sections()
    state[0].items.append("stranger", id: 987_654)
    state.append(Section(id: 555, metadata: SectionMetadata(header: "Unknown id"), items: ["z"]))
    let changeset = try replaceAndCheck(list, state, recorder: recorder)
    #expect(!changeset.insertedItems.map(\.id).contains(987_654))
    #expect(!changeset.insertedSections.map(\.id).contains(555))

    let stored = try list.sections()
    let logBefore = try logCount(repository.path)
    for (target, error) in [
      (
        [stored[0], stored[0]], ListStoreError.duplicateID(kind: "section", id: stored[0].id)
      ),
      (
        [
          Section(
            id: stored[0].id, metadata: stored[0].metadata,
            items: ItemList(
              entries: Array(stored[0].items.entries) + [stored[0].items.entry(at: 0)])
          ), stored[1],
        ], ListStoreError.duplicateID(kind: "item", id: stored[0].items.id(at: 0))
      ),
      (
        [
          stored[0],
          Section(
            id: 0, metadata: SectionMetadata(header: "Twice"),
            items: ItemList(entries: [stored[0].items.entry(at: 1)])),
        ], ListStoreError.duplicateID(kind: "item", id: stored[0].items.id(at: 1))
      ),
      (
        [
          stored[0],
          Section(
            id: 0, metadata: SectionMetadata(header: "Twice"),
            items: ItemList(entries: [(id: 4242, value: "p"), (id: 4242, value: "q")])),
        ], ListStoreError.duplicateID(kind: "item", id: 4242)
      ),
    ] {
      #expect(throws: error) { try list.replace(with: target) }
    }
    #expect(try logCount(repository.path) == logBefore)
    #expect(try list.sections() == stored)
  }

  @Test func withoutDiffEverySectionIsReplacedInOneChangeset() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository, sections: [["a", "b"], ["c"]])
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    let before = try list.sections()
    let changeset = try list.replace(with: before, performDiff: false)
    let after = try list.sections()
    #expect(after.map { Array($0.items) } == [["a", "b"], ["c"]])
    #expect(Set(after.map(\.id)).isDisjoint(with: before.map(\.id)))
    #expect(changeset.deletedSections.map(\.id) == before.map(\.id))
    #expect(changeset.insertedSections.map(\.section) == after)
    #expect(recorder.changesets == [changeset])
    #expect(recorder.problems.isEmpty)
  }

  @Test func rawJSONThatDiffersOnlyInWhiteSpaceIsNotWritten() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try repository.createList("raw", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header": "A"}"#))
    try list.appendItems([RawJSON(#"{"b": 1, "a": [1, 2]}"#), RawJSON("3")], toSection: 0)
    var state = try list.sections()
    state[0].metadata = RawJSON("{ \"header\" :\n \"A\" }")
    state[0].items[0] = RawJSON(#"{ "b" : 1 , "a" : [ 1 , 2 ] }"#)
    let logBefore = try logCount(repository.path)
    #expect(try list.replace(with: state).isEmpty)
    #expect(try logCount(repository.path) == logBefore)
    state[0].items[0] = RawJSON(#"{"a": [1, 2], "b": 1}"#)  // Another order is another text.
    #expect(try list.replace(with: state).updatedItems.count == 1)
  }

  /// Seeded random edits of every kind, each synced and checked in full.
  @Test func randomEditsAreSyncedWithOneWritePerEntry() throws {
    defer { folder.remove() }
    let seed = testSeed(1212)
    var random = SeededGenerator(seed: seed)
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(
      repository, sections: (0..<4).map { section in (0..<6).map { "v\(section).\($0)" } })
    let recorder = ArrayRecorder(try list.observe(), header: { $0.header })
    var counter = 0
    func fresh() -> String {
      counter += 1
      return "n\(counter)"
    }
    for round in 0..<scaled(150) {
      var state = try list.sections()
      for _ in 0..<Int.random(in: 1...6, using: &random) {
        Self.randomEdit(&state, using: &random, fresh: fresh)
      }
      try replaceAndCheck(list, state, recorder: recorder, "seed \(seed), round \(round)")
    }
    #expect(try repository.check().isEmpty)
  }

  /// One random change to `state`: any edit a program may make to a copy of the list.
  static func randomEdit(
    _ state: inout [Section], using random: inout SeededGenerator, fresh: () -> String
  ) {
    let nonEmpty = state.indices.filter { !state[$0].items.isEmpty }
    switch Int.random(in: 0..<15, using: &random) {
    case 0 where !nonEmpty.isEmpty:  // Delete an item.
      let section = nonEmpty.randomElement(using: &random) ?? 0
      state[section].items.remove(
        at: Int.random(in: 0..<state[section].items.count, using: &random))
    case 1 where !state.isEmpty:  // Insert a new item.
      let section = Int.random(in: 0..<state.count, using: &random)
      state[section].items.insert(
        fresh(), id: 0, at: Int.random(in: 0...state[section].items.count, using: &random))
    case 2 where !nonEmpty.isEmpty, 3 where !nonEmpty.isEmpty:  // Move an item anywhere.
      let from = nonEmpty.randomElement(using: &random) ?? 0
      let entry = state[from].items.removeEntry(
        at: Int.random(in: 0..<state[from].items.count, using: &random))
      let to = Int.random(in: 0..<state.count, using: &random)
      state[to].items.insert(
        entry.value, id: entry.id, at: Int.random(in: 0...state[to].items.count, using: &random))
    case 4 where !nonEmpty.isEmpty:  // Change a value.
      let section = nonEmpty.randomElement(using: &random) ?? 0
      state[section].items[Int.random(in: 0..<state[section].items.count, using: &random)] =
        fresh()
    case 5 where state.count > 1:  // Move a section.
      let section = state.remove(at: Int.random(in: 0..<state.count, using: &random))
      state.insert(section, at: Int.random(in: 0...state.count, using: &random))
    case 6 where state.count < 7:  // Insert a section, with new items and some taken over.
      var items = ItemList<String>((0..<Int.random(in: 0...3, using: &random)).map { _ in fresh() })
      if let from = nonEmpty.randomElement(using: &random), Bool.random(using: &random) {
        let entry = state[from].items.removeEntry(
          at: Int.random(in: 0..<state[from].items.count, using: &random))
        items.insert(entry.value, id: entry.id, at: Int.random(in: 0...items.count, using: &random))
      }
      state.insert(
        Section(id: 0, metadata: SectionMetadata(header: fresh()), items: items),
        at: Int.random(in: 0...state.count, using: &random))
    case 7 where state.count > 1:  // Delete a section, keeping some of its items elsewhere.
      var section = state.remove(at: Int.random(in: 0..<state.count, using: &random))
      while !section.items.isEmpty, Bool.random(using: &random) {
        let entry = section.items.removeEntry(at: 0)
        let to = Int.random(in: 0..<state.count, using: &random)
        state[to].items.insert(
          entry.value, id: entry.id, at: Int.random(in: 0...state[to].items.count, using: &random))
      }
    case 8 where !state.isEmpty:  // Change a header.
      state[Int.random(in: 0..<state.count, using: &random)].metadata = SectionMetadata(
        header: fresh())
    case 9 where !state.isEmpty:  // An id the list does not know.
      let section = Int.random(in: 0..<state.count, using: &random)
      let value = fresh()
      state[section].items.insert(
        value, id: 900_000 + (Int64(value.dropFirst()) ?? 0),
        at: Int.random(in: 0...state[section].items.count, using: &random))
    case 10 where !nonEmpty.isEmpty:  // Reverse a section.
      let section = nonEmpty.randomElement(using: &random) ?? 0
      state[section].items = ItemList(entries: Array(state[section].items.entries.reversed()))
    case 11 where state.count > 1:  // Swap the items of two sections.
      let (first, second) = (0, state.count - 1)
      (state[first].items, state[second].items) = (state[second].items, state[first].items)
    case 12 where !nonEmpty.isEmpty:  // Forget an item's id, as a file edited by hand may.
      let section = nonEmpty.randomElement(using: &random) ?? 0
      let row = Int.random(in: 0..<state[section].items.count, using: &random)
      let entry = state[section].items.removeEntry(at: row)
      state[section].items.insert(entry.value, id: 0, at: row)
    case 14 where !state.isEmpty:  // Forget a section's id, as a file written by hand may.
      state[Int.random(in: 0..<state.count, using: &random)].id = 0
    case 13 where !nonEmpty.isEmpty:  // Repeat a value without an id.
      let section = nonEmpty.randomElement(using: &random) ?? 0
      let value = state[section].items[
        Int.random(in: 0..<state[section].items.count, using: &random)]
      state[section].items.insert(
        value, id: 0, at: Int.random(in: 0...state[section].items.count, using: &random))
    default:
      break
    }
  }
}
