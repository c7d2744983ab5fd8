import Foundation
import ListStore
import PostgreSQLKit
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

/// PostgreSQL hands out sequence values at insert, not at commit: a transaction holding
/// a lower `seq` can commit after one holding a higher `seq`, and a reader that moved
/// past the higher one would never see the lower. These tests force that interleaving
/// and check that the observer ends with both changes.
@Suite(.postgres) struct CommitOrderTests {
  /// Who holds the lower sequence value: a raw connection in a transaction, or a batch
  /// of ListStore's own writes.
  enum FirstWriter: String, CaseIterable, Sendable {
    case foreignTransaction, repositoryBatch
  }

  @Test(arguments: FirstWriter.allCases)
  func aLowerSeqCommittedLastIsNotLost(first: FirstWriter) throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("race", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"A"}"#))
    try list.appendItem(RawJSON(#""start""#), toSection: 0)
    let sectionID = try list.sectionID(at: 0)
    let recorder = try record(list)
    let observed = try database.contents(list: "race")

    // A: begins, writes a row — taking the lower seq — and does not commit yet.
    let admin = try PGConnection(database.location)
    let aWrote = Signal()
    let aCommit = Signal()
    let a = BackgroundThread { () throws -> Int32 in
      switch first {
      case .foreignTransaction:
        let db = try PGConnection(database.location)
        try db.transaction {
          try db.execute(
            "INSERT INTO items(section_id, position, value) VALUES (\(sectionID), 'a5', '\"A\"')")
          aWrote.signal()
          try aCommit.wait()
        }
        return db.backendPID
      case .repositoryBatch:
        let other = try database.openRepository()
        let mine = try other.list("race", metadata: RawJSON.self, item: RawJSON.self)
        try other.write {
          try mine.appendItem(RawJSON(#""A""#), toSection: 0)
          aWrote.signal()
          try aCommit.wait()
        }
        return 0
      }
    }
    try aWrote.wait()
    let aSeq = try #require(try admin.scalarInt64("SELECT last_value FROM changes_seq"))

    // B: writes and commits on a connection of its own, in a thread: it must wait for A.
    let bPIDBox = Mutex<Int32>(0)
    let bStarted = Signal()
    let bDone = BackgroundThread { () throws -> Void in
      let b = try PGConnection(database.location)
      bPIDBox.withLock { $0 = b.backendPID }
      bStarted.signal()
      try b.execute(
        "INSERT INTO items(section_id, position, value) VALUES (\(sectionID), 'a6', '\"B\"')")
    }
    try bStarted.wait()
    let bPID = bPIDBox.withLock { $0 }
    // B is blocked on the writers' lock (external state: polled, with a bound).
    let waiting = try pollUntil { () throws -> Bool in
      try admin.scalarInt64(
        "SELECT count(*) FROM pg_locks WHERE pid = \(bPID) AND NOT granted AND locktype = 'advisory'"
      ) == 1
    }
    #expect(waiting, "B never waited for A's lock")
    #expect(!bDone.isFinished)
    // The observer refreshes now: it has seen neither A nor B.
    repository.synchronizeObservers()
    #expect(ListContents(recorder.array.sections) == observed)
    #expect(recorder.changesets.isEmpty)

    // A commits last of the two writes it began first; B follows.
    aCommit.signal()
    _ = try a.join()
    try bDone.join()
    let entries = try admin.query("SELECT seq FROM changes WHERE seq > \(aSeq - 1) ORDER BY seq")
    #expect(entries.rowCount == 2, "A's and B's log entries")

    // Without another commit, the observer ends with both.
    #expect(try waitUntilExact(recorder, database, list: "race"))
    let values = recorder.array.sections[0].items.map(\.text)
    #expect(values == [#""start""#, #""A""#, #""B""#])
    try expectExact(recorder, database, list: "race")
  }

  /// A foreign statement must take the writers' lock before it locks any row: a
  /// ListStore write holds that lock from its start, and when it then touches the row
  /// the foreign statement wants, both succeed, one after the other — no deadlock.
  /// (The schema's BEFORE … FOR EACH STATEMENT triggers take the lock; AFTER ROW ones,
  /// as first written, took it after the row lock, and PostgreSQL aborted one of the
  /// two after `deadlock_timeout`.)
  @Test func aForeignRowLockAndARepositoryWriteDoNotDeadlock() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("race", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"A"}"#))
    let item = try list.appendItem(RawJSON(#""start""#), toSection: 0)
    let recorder = try record(list)
    let admin = try PGConnection(database.location)

    // W: a batch that holds the writers' lock, then changes the item.
    let holding = Signal()
    let proceed = Signal()
    let writer = BackgroundThread { () throws -> Void in
      let other = try database.openRepository()
      let mine = try other.list("race", metadata: RawJSON.self, item: RawJSON.self)
      try other.write {
        try mine.appendItem(RawJSON(#""W""#), toSection: 0)
        holding.signal()
        try proceed.wait()
        try mine.replaceItem(id: item, with: RawJSON(#""by W""#))
      }
    }
    try holding.wait()
    // F: a foreign update of the same item: it waits for W's lock before the row.
    let foreignPID = Mutex<Int32>(0)
    let foreign = BackgroundThread { () throws -> Void in
      let db = try PGConnection(database.location)
      foreignPID.withLock { $0 = db.backendPID }
      try db.execute("UPDATE items SET value = '\"by F\"' WHERE id = \(item)")
    }
    #expect(
      try pollUntil { () throws -> Bool in
        let pid = foreignPID.withLock { $0 }
        return try pid != 0
          && admin.scalarInt64(
            "SELECT count(*) FROM pg_locks WHERE pid = \(pid) AND NOT granted AND locktype = 'advisory'"
          ) == 1
      })
    proceed.signal()
    var failures: [String] = []
    do { try writer.join() } catch { failures.append("ListStore's write: \(error)") }
    do { try foreign.join() } catch { failures.append("the foreign write: \(error)") }
    #expect(failures.isEmpty, "\(failures)")
    // Whatever committed, the observer ends equal to the database.
    #expect(try waitUntilExact(recorder, database, list: "race"))
    try expectExact(recorder, database, list: "race")
  }

  /// Many raw writers race on one list, each committing in a random order relative to
  /// when it took its sequence value; every observer ends equal to the database.
  @Test func racingForeignWritersLoseNothing() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("race", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"A"}"#))
    let sectionID = try list.sectionID(at: 0)
    let recorder = try record(list)
    let writers = (0..<4).map { writer in
      BackgroundThread { () throws -> Void in
        let db = try PGConnection(database.location)
        for step in 0..<scaled(25) {
          // Keys of their own per writer, so that they never collide.
          let key = "a\(writer)" + String(repeating: "V", count: step) + "1"
          try db.transaction {
            try db.execute(
              "INSERT INTO items(section_id, position, value) VALUES (\(sectionID), '\(key)', '\"w\(writer)-\(step)\"')"
            )
            // Work after the log entry and before the commit widens the window.
            try db.execute("SELECT count(*) FROM generate_series(1, \(step % 5 * 20_000))")
          }
        }
      }
    }
    for writer in writers { try writer.join() }
    #expect(try waitUntilExact(recorder, database, list: "race"))
    try expectExact(recorder, database, list: "race")
    #expect(recorder.array.sections[0].items.count == 4 * scaled(25))
  }
}
