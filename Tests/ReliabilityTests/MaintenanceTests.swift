import Foundation
import ListStore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

/// `liststore check` and `liststore backup`.
@Suite struct MaintenanceTests {
  @Test func checkPassesAHealthyDatabaseAndNamesWhatOtherClientsBroke() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("check.sqlite")
    _ = try liststore(["demo"], database: db)
    let healthy = try liststore(["check"], database: db)
    #expect(healthy.status == 0 && healthy.stdout.hasPrefix("ok: "), "\(healthy)")

    // What a careless client could do, with foreign keys and our triggers bypassed.
    let other = try Connection(path: db)
    try other.execute(
      """
      PRAGMA foreign_keys = OFF;
      DROP TRIGGER items_need_section;
      DROP TRIGGER items_position_is_a_key;
      INSERT INTO items(section_id, position, value) VALUES (99, 'a0', '"orphan"');
      INSERT INTO items(section_id, position, value) VALUES (1, 'not a key', '"odd"');
      UPDATE change_log_horizon SET pruned_through = 1000000;
      """)
    other.close()
    let broken = try liststore(["check"], database: db)
    #expect(broken.status == 1)
    #expect(
      broken.stderr.hasPrefix("error: ") && broken.stderr.contains("failed 6 checks"), "\(broken)")
    #expect(
      broken.lines.sorted()
        == [
          "change log: entry 1 is at or below the pruning horizon 1000000",
          "change log: pruned through 1000000, beyond its last entry 7",
          "positions: item 5 has a malformed position \"not a key\"; 'liststore repair' rewrites it",
          "rows: item 4 is in section 99, which does not exist",
          "schema: the trigger items_need_section is missing",
          "schema: the trigger items_position_is_a_key is missing",
        ].sorted(), "\(broken)")
  }

  /// A backup taken while writers commit is one consistent state: a prefix of the
  /// writers' sequence, whole, that passes every check.
  @Test func backupIsConsistentWhileWritersRun() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("live.sqlite")
    let repository = try Repository(path: db)
    let list = try repository.createList("numbers", metadata: String.self, item: Int.self)
    try list.appendSection("odd")
    try list.appendSection("even")
    try list.appendItems(Array(0..<20_000).filter { $0 % 2 == 0 }, toSection: 1)

    let stop = Atomic<Bool>(false)
    let written = Atomic<Int>(0)
    let writer = Thread {
      do {
        let mine = try Repository(path: db).list("numbers", metadata: String.self, item: Int.self)
        var next = 0
        // Each transaction adds one number to each section, so a consistent copy has
        // as many odd numbers as it has even numbers beyond the first 10,000.
        while !stop.load(ordering: .relaxed) {
          try mine.appendItem(2 * next + 1, toSection: 0)
          next += 1
          written.store(next, ordering: .relaxed)
        }
      } catch {
        Issue.record("writer: \(error)")
      }
    }
    writer.start()
    while written.load(ordering: .relaxed) < 50 { pause(0.001) }
    var copies: [String] = []
    for index in 0..<3 {
      let copy = folder.file("backup-\(index).sqlite")
      let result = try liststore(["backup", copy], database: db)
      #expect(result.status == 0, "\(result)")
      copies.append(copy)
    }
    stop.store(true, ordering: .relaxed)
    while !writer.isFinished { pause(0.001) }

    #expect(try repository.check().isEmpty, "the source itself")
    for copy in copies {
      let raw = try Connection(path: copy, mode: .readOnly)
      #expect(try raw.scalarText("PRAGMA integrity_check") == "ok", "\(copy) as written")
      raw.close()
      let restored = try Repository(path: copy)
      let problems = try restored.check()
      #expect(problems.isEmpty, "\(copy): \(problems)")
      let sections = try restored.list("numbers", metadata: String.self, item: Int.self).observe()
        .sections
      let odd = Array(sections[0].items)
      #expect(odd == (0..<odd.count).map { 2 * $0 + 1 }, "not a prefix of the writer's sequence")
      #expect(sections[1].items.count == 10_000)
    }
    // An existing file is never overwritten.
    let again = try liststore(["backup", copies[0]], database: db)
    #expect(again.status == 1 && again.stderr.contains("exists already"))
  }
}
