import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Synchronization
import TestSupport
import Testing

@testable import ListStore
@testable import ListStorePostgreSQL

/// What another client or the server can do to an observation on PostgreSQL: a TRUNCATE,
/// a session terminated while an observer reloads, and listeners that must tell their
/// own thread from another's.
@Suite(.postgres) struct ObservationFaultTests {
  /// A list `l` of one section with `items` items.
  @discardableResult
  func makeList(_ repository: Repository, items: Int) throws -> RawList {
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"S"}"#))
    try list.appendItems((0..<items).map { RawJSON("\($0)") }, toSection: 0)
    return list
  }

  /// TRUNCATE removes rows without a trigger per row, so no observer would hear of it:
  /// the schema refuses it, saying what to do instead, and nothing changes; the DELETE it
  /// suggests is observed.
  @Test func truncateIsRefusedAndTheDeleteItSuggestsIsObserved() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository, items: 3)
    let recorder = try record(list)
    let shown = try liststore(["show", "l"], database: database.location)
    let foreign = try PGConnection(database.location)
    for table in ["items", "sections", "lists", "changes"] {
      let error = #expect(throws: PGError.self) { try foreign.execute("TRUNCATE \(table) CASCADE") }
      #expect(
        error?.message.contains("TRUNCATE \(table) is refused") == true
          && error?.message.contains("DELETE FROM \(table)") == true,
        "\(String(describing: error))")
    }
    repository.synchronizeObservers()
    #expect(try liststore(["show", "l"], database: database.location).stdout == shown.stdout)
    try expectExact(recorder, database, list: "l")
    #expect(recorder.changesets.isEmpty)
    try foreign.execute("DELETE FROM items")
    #expect(try waitUntilExact(recorder, database, list: "l"))
    try expectExact(recorder, database, list: "l")
    #expect(recorder.array.sections[0].items.isEmpty)
  }

  /// The feed's server session is terminated while an observer that fell behind the
  /// pruned log reloads a large list: the lost connection is a passing failure in the
  /// engine's words, retried until the observer is exact again (it was once read as a
  /// SQLite error and ended the observation).
  @Test func aSessionTerminatedWhileAnObserverReloadsIsRetried() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let engine = PostgreSQLEngine(
      connectionString: database.location(applicationName: "reloading"))
    let repository = try Repository(
      engine: engine, busyTimeout: .seconds(10), readOnly: false, watchesDatabase: false)
    let list = try makeList(repository, items: scaled(20_000))
    let recorder = try record(list)
    // Another client writes, and prunes the log past this observer.
    let other = try database.openRepository()
    let theirs = try other.list("l", metadata: RawJSON.self, item: RawJSON.self)
    for step in 0..<10 { try theirs.appendItem(RawJSON("\"new \(step)\""), toSection: 0) }
    try PGConnection(database.location).execute("DELETE FROM change_log_readers")
    try other.pruneChangeLog()
    let location = database.location
    let terminated = Atomic<Bool>(false)
    try repository.changeFeed().installHooks(
      FeedHooks(beforeObserversStage: {
        guard !terminated.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The feed's own session, in its read transaction.
        _ = try? PGConnection(location).query(
          """
          SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
          WHERE application_name = 'reloading' AND state = 'idle in transaction'
          """)
      }))
    repository.synchronizeObservers()
    let didTerminate = terminated.load(ordering: .acquiring)
    #expect(didTerminate)
    // (Compared without printing twenty thousand items when they differ.)
    #expect(try waitUntilExact(recorder, database, list: "l"))
    #expect(try ListContents(recorder.array.sections) == database.contents(list: "l"))
    #expect(
      recorder.problems.isEmpty && recorder.error == nil, "\(String(describing: recorder.error))")
    #expect(recorder.array.sections[0].items.count == scaled(20_000) + 10)
  }

  /// A write whose own read of the change log fails (here: the right to read the log was
  /// revoked while it ran) is not reported as committed: PostgreSQL aborts the whole
  /// transaction at the failed read and its `COMMIT` only rolls it back, which once
  /// returned as a success with nothing written. The write fails with the read's error,
  /// nothing of it is stored or shown, the observation ends with the error once it
  /// cannot read the log either, and once the right is back writing and observing work.
  /// (Whether or not the read goes with the COMMIT.)
  @Test(arguments: [PostgreSQLEngine.ReadsWithCommit.never, .always])
  func aWriteWhoseLogReadFailsIsNotReportedAsCommitted(
    readsWithCommit: PostgreSQLEngine.ReadsWithCommit
  ) throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let server = try #require(database.server)
    let name = try #require(database.name)
    let role = try server.createRole("writer")
    try grantListStoreRights(to: role, on: database)
    let repository = try Repository(
      engine: PostgreSQLEngine(
        connectionString: server.connectionString(database: name, user: role),
        readsWithCommit: readsWithCommit),
      busyTimeout: .seconds(10), readOnly: false, watchesDatabase: true)
    let list = try makeList(repository, items: 2)
    let recorder = try record(list)
    let location = database.location
    let quoted = PGConnection.quoteIdentifier(role)
    let revoked = Atomic<Bool>(false)
    try repository.changeFeed().installHooks(
      FeedHooks(whileStagingLocked: {
        guard !revoked.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = try? PGConnection(location).execute("REVOKE SELECT ON changes FROM \(quoted)")
      }))
    let error = #expect(throws: ListStoreError.self) {
      try list.appendItem(RawJSON(#""lost?""#), toSection: 0)
    }
    let didRevoke = revoked.load(ordering: .acquiring)
    #expect(didRevoke)
    #expect(
      "\(String(describing: error))".contains("permission denied"),
      "\(String(describing: error))")
    let stored = try database.contents(list: "l")
    #expect(stored?.description.contains("lost?") == false, "\(String(describing: stored))")
    #expect(recorder.array.sections[0].items.map(\.text) == ["0", "1"])
    // A failed commit is followed by a read of the log (its answer might have been lost
    // after it went through): that read is refused too, which ends the observation with
    // the error rather than leaving it silently behind.
    #expect(recorder.wait { $0.error != nil })
    let ended = recorder.error.map { "\($0)" } ?? ""
    #expect(ended.contains("permission denied for table changes"), "\(ended)")
    try PGConnection(location).execute("GRANT SELECT ON changes TO \(quoted)")
    let again = try record(list)
    try list.appendItem(RawJSON(#""kept""#), toSection: 0)
    try expectExact(again, database, list: "l")
    #expect(again.array.sections[0].items.map(\.text) == ["0", "1", #""kept""#])
  }

  /// A read-modify-write of one item whose connection the server dropped fails with the
  /// lost connection in users' words (a `PGError` once escaped it as it was), and the
  /// next one works.
  @Test func aReadModifyWriteReportsALostConnectionInUsersWords() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try Repository.open(database.location(applicationName: "rmw"))
    let list = try makeList(repository, items: 2)
    let id = try list.itemID(at: IndexPath(indexes: [0, 0]))
    try PGConnection(database.location).execute(
      """
      SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
      WHERE application_name = 'rmw'
      """)
    let error = #expect(throws: ListStoreError.self) {
      try list.updateItemJSON(id: id) { json in (json + " ", ()) }
    }
    #expect(error?.isTransient == true, "\(String(describing: error))")
    try list.updateItemJSON(id: id) { _ in ("\"changed\"", ()) }
    #expect(try list.item(at: IndexPath(indexes: [0, 0])).text == #""changed""#)
  }

  /// A listener tells its own thread from another listener's (they once compared the
  /// thread's name, which all of them share: a callback that cancelled another listener
  /// did not wait for that one's callback to end).
  @Test func aListenerKnowsItsOwnThreadFromAnothers() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let engine = PostgreSQLEngine(connectionString: database.location)
    let listeners = Mutex<(Listener?, Listener?)>((nil, nil))
    let seen = Mutex<(own: Bool, other: Bool)?>(nil)
    let ready = Signal()
    let second = try Listener(engine: engine, onChange: { _ in }, status: { _ in })
    let first = try Listener(
      engine: engine,
      onChange: { _ in
        let answers = listeners.withLock { pair -> (Bool, Bool)? in
          guard let first = pair.0, let second = pair.1 else { return nil }
          return (first.runsOnItsThread, second.runsOnItsThread)
        }
        guard let answers else { return }
        let first = seen.withLock { seen -> Bool in
          defer { seen = seen ?? answers }
          return seen == nil
        }
        if first { ready.signal() }
      }, status: { _ in })
    listeners.withLock { $0 = (first, second) }
    // The first listener calls back once connected, and after every notification.
    try PGConnection(database.location).execute("NOTIFY liststore")
    try ready.wait()
    #expect(seen.withLock { $0?.own } == true)
    #expect(seen.withLock { $0?.other } == false)
    #expect(!second.runsOnItsThread)
    first.cancel()
    second.cancel()
  }

  /// The listener leaves the repository's own commits to its writes, yet where the
  /// observer has read is still recorded for pruning: an observer that sees only its own
  /// repository's writes does not hold the change log back.
  @Test func ownWritesAloneAdvanceTheReaderRecord() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try makeList(repository, items: 1)
    let recorder = try record(list)
    let foreign = try PGConnection(database.location)
    let readers = "SELECT min(seq) FROM change_log_readers"
    let start = try #require(try foreign.scalarInt64(readers))
    // The record is rewritten at most once a second: write until it moves (each write's
    // event has arrived when the write returns), or give up after a generous deadline.
    let deadline = ContinuousClock.now + .seconds(60)
    var written = 0
    while try foreign.scalarInt64(readers) == start, ContinuousClock.now < deadline {
      try list.appendItem(RawJSON("\"own \(written)\""), toSection: 0)
      written += 1
    }
    let recorded = try #require(try foreign.scalarInt64(readers))
    #expect(recorded > start, "the record stayed at \(start) after \(written) writes")
    // It is a position this observer has processed.
    let last = try #require(try foreign.scalarInt64("SELECT max(seq) FROM changes"))
    #expect(recorded <= last)
    try expectExact(recorder, database, list: "l")
  }

  /// Notifications taken for the repository's own although another client's session sent
  /// them (one that reused the process id of the repository's session, which died since its
  /// last commit) are still read once the listener's check comes due, with no write by the
  /// repository to bring them, and although that session goes on committing.
  @Test func notificationsTakenForTheRepositorysOwnAreReadWhenTheCheckIsDue() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try Repository(
      engine: PostgreSQLEngine(
        connectionString: database.location, ownCommitCheck: .milliseconds(200)),
      busyTimeout: .seconds(10), readOnly: false, watchesDatabase: true)
    let list = try makeList(repository, items: 1)
    let recorder = try record(list)
    let foreign = try PGConnection(database.location)
    // The listener is up (it delivered another client's write) before the process id is
    // recorded: its connecting forgets whatever was recorded before.
    try foreign.execute(#"UPDATE items SET value = '"first"'"#)
    #expect(try waitUntilExact(recorder, database, list: "l"))
    let session = try #require(repository.connection as? PostgreSQLDatabase).session
    session.record(foreign.backendPID, generation: session.generation)
    #expect(session.processID == foreign.backendPID)
    // The other session commits without pause until the observer shows one of its writes.
    let deadline = ContinuousClock.now + .seconds(TestLimits.eventSeconds)
    var writes = 0
    var shown = false
    while !shown, ContinuousClock.now < deadline {
      writes += 1
      try foreign.execute(#"UPDATE items SET value = '"\#(writes)"'"#)
      shown = recorder.wait(timeout: 0) { $0.array.sections[0].items[0].text != #""first""# }
    }
    #expect(shown, "not shown after \(writes) writes")
    #expect(try waitUntilExact(recorder, database, list: "l"))
    try expectExact(recorder, database, list: "l")
  }
}
