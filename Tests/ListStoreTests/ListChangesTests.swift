import Observable2D
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

/// A batch of one item entry takes a path of its own (a single write's): it must give
/// what the general path gives for the same batch, for every kind of entry, plausible or
/// not.
@Suite struct ListChangesTests {
  /// What a path made of a batch, and the mirror it left.
  struct Outcome: Equatable {
    enum Result: Equatable {
      case changes(Changeset<String, String>)
      case deleted
      case nothing
      case reload
    }
    var result: Result
    var sections: ItemList<PositionMirror.Slot>
    var items: [Int64: ItemList<PositionMirror.Slot>]

    /// Which kind of outcome this is, for counting.
    var kind: String {
      switch result {
      case .changes(let changeset):
        if !changeset.deletedItems.isEmpty { return "deleted" }
        if !changeset.insertedItems.isEmpty { return "inserted" }
        if !changeset.movedItems.isEmpty { return "moved" }
        return "updated"
      case .deleted: return "list deleted"
      case .nothing: return "nothing"
      case .reload: return "reload"
      }
    }
  }

  /// The ways into ChangesetBuilder that must agree.
  enum Path {
    /// The single write's path, for one item entry.
    case single
    /// The general path, for any batch.
    case general
    /// The entry point observers call, which picks one of the two.
    case chosen
  }

  static func run(
    _ entries: [ChangeLogEntry], on original: PositionMirror, db: SQLiteDatabase, path: Path
  ) throws -> Outcome {
    let changes = ChangesetBuilder(listID: 1, db: db)
    var mirror = original
    var journal = PositionMirror.Journal()
    let result: Outcome.Result
    do {
      let update: ListUpdate?
      switch path {
      case .single:
        update = try changes.update(mirror: &mirror, journal: &journal, item: entries[0])
      case .general:
        update = try changes.update(mirror: &mirror, journal: &journal, entries: entries)
      case .chosen:
        update = try ChangesetBuilder.update(
          listID: 1, db: db, mirror: &mirror, journal: &journal, entries: entries[...])
      }
      switch update {
      case .changes(let changeset)?: result = .changes(changeset)
      case .deleted?: result = .deleted
      case nil: result = .nothing
      }
    } catch is NeedsReload {
      result = .reload
    }
    // Either way, the journal undoes every edit.
    var undone = mirror
    undone.undo(journal)
    #expect(undone.sections == original.sections && undone.items == original.items)
    return Outcome(result: result, sections: mirror.sections, items: mirror.items)
  }

  /// A random mirror of a list with sections 1–3 (section 9 is another list's), one item
  /// entry, plausible or not, and the store's items table holding some of the mirror's
  /// rows.
  static func randomCase(_ random: inout SeededGenerator, connection: Connection) throws -> (
    mirror: PositionMirror, entry: ChangeLogEntry
  ) {
    var mirror = PositionMirror()
    var items: [(section: Int64, id: Int64, key: String)] = []
    for section in Int64(1)...3 {
      mirror.sections.append(.init(key: "a\(section)", hash: Int(section)), id: section)
      var list = ItemList<PositionMirror.Slot>()
      let keys = (0..<Int(random.next() % 5)).map { _ in 10 + Int(random.next() % 80) }
      for key in Set(keys).sorted() {
        let id = section * 100 + Int64(key)
        list.append(.init(key: "k\(key)", hash: PositionMirror.hash("\"v\(key)\"")), id: id)
        items.append((section, id, "k\(key)"))
      }
      mirror.items[section] = list
    }
    let sections: [Int64] = [1, 2, 3, 9]
    func section() -> Int64 { sections[Int(random.next() % 4)] }
    func key() -> String { "k\(10 + random.next() % 80)" }
    func json() -> String { random.next() % 2 == 0 ? "\"v\(random.next() % 3)\"" : "\"new\"" }
    let known = items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))]
    var entry = ChangeLogEntry(
      seq: 1, listID: nil, oldListID: nil, kind: .item, operation: .update,
      rowID: known?.id ?? 7, parent: nil, oldParent: nil, oldPosition: nil, current: nil)
    switch random.next() % 4 {
    case 0:
      entry.operation = .insert
      entry.rowID = 1_000
      entry.parent = section()
    case 1:
      entry.operation = .delete
      entry.oldParent = known?.section ?? section()
    default:
      entry.oldParent = known?.section ?? section()
      entry.parent = random.next() % 3 == 0 ? section() : entry.oldParent
    }
    if entry.oldParent != nil {
      // Mostly where the item is; now and then a key the mirror does not have.
      entry.oldPosition = random.next() % 6 == 0 ? key() : known?.key ?? key()
    }
    if let parent = entry.parent, random.next() % 8 != 0 {
      // Mostly the row as the entry left it; now and then gone, or elsewhere since.
      let stays = entry.operation == .update && random.next() % 3 == 0
      entry.current = CurrentRow(
        parent: random.next() % 10 == 0 ? section() : parent,
        key: stays ? entry.oldPosition ?? key() : key(), json: json())
    }
    // Of the mirror's rows, the store still has some.
    try connection.execute("DELETE FROM items")
    for item in items where random.next() % 2 == 0 {
      try connection.execute("INSERT INTO items(id) VALUES (\(item.id))")
    }
    return (mirror, entry)
  }

  /// The store the paths read: rows come with item entries, and the store is asked only
  /// whether a row another one displaced is gone (a REPLACE removed it) or still there
  /// (the mirror is wrong).
  static func store() throws -> (Connection, SQLiteDatabase) {
    let connection = try Connection(path: ":memory:")
    try connection.execute("CREATE TABLE items(id INTEGER PRIMARY KEY)")
    return (connection, SQLiteDatabase(connection))
  }

  /// Every kind of outcome was met, each more than `count` times.
  static func expectEveryOutcome(in kinds: [String: Int], moreThan count: Int) {
    for kind in ["deleted", "inserted", "moved", "updated", "nothing", "reload"] {
      #expect(kinds[kind, default: 0] > count, "\(kind): \(kinds)")
    }
  }

  @Test func oneItemEntryGivesWhatTheGeneralPathGives() throws {
    var random = SeededGenerator(seed: 0x1E_27)
    var kinds: [String: Int] = [:]
    let (connection, db) = try Self.store()
    for iteration in 0..<3_000 {
      let (mirror, entry) = try Self.randomCase(&random, connection: connection)
      let general = try Self.run([entry], on: mirror, db: db, path: .general)
      let single = try Self.run([entry], on: mirror, db: db, path: .single)
      #expect(single == general, "iteration \(iteration): \(entry)")
      kinds[general.kind, default: 0] += 1
    }
    Self.expectEveryOutcome(in: kinds, moreThan: 50)
  }

  /// A write here after writes to other lists: the batch holds entries of other lists'
  /// sections around one item entry, and the observers' entry point, which leaves those
  /// out, gives what the general path gives for the whole batch.
  @Test func otherListsEntriesChangeNothingHere() throws {
    var random = SeededGenerator(seed: 0x0_7AE5)
    var kinds: [String: Int] = [:]
    let (connection, db) = try Self.store()
    for iteration in 0..<2_000 {
      let (mirror, entry) = try Self.randomCase(&random, connection: connection)
      var batch = [entry]
      for index in 0..<(1 + Int(random.next() % 3)) {
        // Inserted, updated, moved between or deleted from sections 8 and 9.
        let elsewhere: [Int64?] = [8, 9, nil]
        let oldParent = elsewhere[Int(random.next() % 3)]
        let parent =
          oldParent == nil ? Int64(8 + random.next() % 2) : elsewhere[Int(random.next() % 3)]
        let foreign = ChangeLogEntry(
          seq: 0, listID: nil, oldListID: nil, kind: .item,
          operation: oldParent == nil ? .insert : parent == nil ? .delete : .update,
          rowID: 5_000 + Int64(index), parent: parent, oldParent: oldParent,
          oldPosition: oldParent == nil ? nil : "k\(10 + random.next() % 80)",
          current: parent.map { CurrentRow(parent: $0, key: "k\(random.next() % 90)", json: "1") })
        batch.insert(foreign, at: Int(random.next() % UInt64(batch.count + 1)))
      }
      for index in batch.indices { batch[index].seq = Int64(index + 1) }
      let general = try Self.run(batch, on: mirror, db: db, path: .general)
      let chosen = try Self.run(batch, on: mirror, db: db, path: .chosen)
      #expect(chosen == general, "iteration \(iteration): \(batch)")
      kinds[general.kind, default: 0] += 1
    }
    Self.expectEveryOutcome(in: kinds, moreThan: 30)
  }
}
