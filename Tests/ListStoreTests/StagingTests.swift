import Foundation
import Observable2D
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

/// Observers stage a write's changes on their own mirror, in place, and undo them when the
/// write does not commit.
@Suite struct StagingTests {
  let folder = TemporaryDirectory()

  /// A list `cities` with two sections of two items each, observed through a feed of its
  /// own that hears of commits only when the test refreshes it.
  func makeObservedCities() throws -> (
    repository: Repository, feed: ChangeFeed, recorder: ArrayRecorder<RawJSON, RawJSON>
  ) {
    let repository = try Repository(
      path: folder.file("db.sqlite"), busyTimeout: .seconds(10), readOnly: false,
      maximumPageCount: nil, watchesDatabase: false)
    let list = try repository.createList("cities", metadata: RawJSON.self, item: RawJSON.self)
    for (index, (header, items)) in [
      ("Europe", ["Paris", "Berlin"]), ("Asia", ["Tokyo", "Seoul"]),
    ]
    .enumerated() {
      try list.appendSection(RawJSON("{\"header\":\"\(header)\"}"))
      try list.appendItems(items.map { RawJSON("\"\($0)\"") }, toSection: index)
    }
    let feed = try ChangeFeed(
      engine: SQLiteEngine(path: repository.path), busyTimeout: .seconds(10), readOnly: false,
      watchesDatabase: false)
    let array = try feed.register(list.observer(undecodable: .fail))
    let recorder = ArrayRecorder(array, describe: { $0.text }, header: { $0.text })
    return (repository, feed, recorder)
  }

  /// A write whose commit fails after the observers staged it leaves them where they were:
  /// the same change, committed later, is seen in full, and every kind of row change after
  /// it too.
  @Test(arguments: [
    "UPDATE items SET value = '\"Lutetia\"' WHERE id = 1",
    "INSERT INTO items(section_id, position, value) VALUES (1, 'a0V', '\"Rome\"')",
    "UPDATE items SET section_id = 2, position = 'a0V' WHERE id = 1",
    "DELETE FROM items WHERE id = 2",
    "UPDATE sections SET metadata = '{\"header\":\"Old world\"}' WHERE id = 1",
    "INSERT INTO sections(list_id, position, metadata) VALUES (1, 'Zz', 'null')",
    "DELETE FROM sections WHERE id = 2",
  ])
  func aWriteThatDoesNotCommitLeavesObserversWhereTheyWere(sql: String) throws {
    defer { folder.remove() }
    let (repository, feed, recorder) = try makeObservedCities()
    let path = repository.path
    let writer = SQLiteDatabase(try Connection(path: path))
    // Staged, then the commit fails: nothing is applied, and nothing is left staged.
    try writer.begin(.write)
    try writer.execute(sql)
    struct CommitFailed: Error {}
    #expect(throws: CommitFailed.self) {
      _ = try feed.committing(db: writer) { throw CommitFailed() }
    }
    writer.rollback()
    #expect(recorder.changesets.isEmpty)
    // The same write, committed: exactly its change.
    try writer.execute(sql)
    feed.refresh()
    #expect(recorder.changesets.count == 1)
    #expect(
      ListContents(recorder.array.sections) == (try ListContents.read(list: "cities", path: path)))
    // And later writes of every kind still apply exactly.
    try writer.execute(
      """
      UPDATE items SET value = '"Lutèce"' WHERE id = 1;
      UPDATE items SET position = 'Zz' WHERE id = 3;
      INSERT INTO items(section_id, position, value) VALUES (1, 'a1V', '"Vienna"');
      """)
    feed.refresh()
    #expect(recorder.changesets.count == 2)
    #expect(
      ListContents(recorder.array.sections) == (try ListContents.read(list: "cities", path: path)))
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    #expect(recorder.error == nil)
  }

  /// Random edits of a mirror, undone, leave it as it was.
  @Test func undoingAJournalRestoresTheMirror() {
    var random = SeededGenerator(seed: 0x3A11_0C)
    for iteration in 0..<500 {
      var mirror = PositionMirror()
      for section in 1...Int64(4) {
        mirror.sections.append(.init(key: "a\(section)", hash: Int(section)), id: section)
        var items = ItemList<PositionMirror.Slot>()
        for item in 0..<Int64(random.next() % 6) {
          items.append(.init(key: "a\(item)", hash: Int(item)), id: section * 100 + item)
        }
        mirror.items[section] = items
      }
      let original = mirror
      var journal = PositionMirror.Journal()
      var nextID: Int64 = 1_000
      for _ in 0..<Int(random.next() % 8) {
        let sectionIDs = Array(mirror.sections.ids)
        let section =
          sectionIDs.isEmpty ? 0 : sectionIDs[Int(random.next() % UInt64(sectionIDs.count))]
        let count = mirror.items[section]?.count ?? 0
        nextID += 1
        switch random.next() % 7 {
        case 0 where count > 0:
          mirror.setItemHash(
            section: section, at: Int(random.next() % UInt64(count)), to: -1, journal: &journal)
        case 1 where count > 0:
          mirror.removeItem(
            section: section, at: Int(random.next() % UInt64(count)), journal: &journal)
        case 2 where mirror.items[section] != nil:
          mirror.insertItem(
            .init(key: "b\(nextID)", hash: 7), id: nextID, section: section, journal: &journal)
        case 3 where !sectionIDs.isEmpty:
          mirror.setSectionHash(
            at: Int(random.next() % UInt64(sectionIDs.count)), to: -2, journal: &journal)
        case 4 where !sectionIDs.isEmpty:
          let index = Int(random.next() % UInt64(sectionIDs.count))
          let id = mirror.sections.id(at: index)
          mirror.removeSection(at: index, journal: &journal)
          mirror.setItems(nil, ofSection: id, journal: &journal)
        case 5:
          mirror.insertSection(.init(key: "b\(nextID)", hash: 9), id: nextID, journal: &journal)
          mirror.setItems(ItemList(), ofSection: nextID, journal: &journal)
        default:
          continue
        }
      }
      mirror.undo(journal)
      #expect(mirror.sections == original.sections, "iteration \(iteration)")
      #expect(mirror.items == original.items, "iteration \(iteration)")
    }
  }
}
