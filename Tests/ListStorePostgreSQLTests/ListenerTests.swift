import Foundation
import ListStore
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

/// The listener's life: a server restart, a terminated listener session, and writes
/// made while an observer is disconnected all end with nothing lost.
@Suite(.postgres) struct ListenerTests {
  /// A list `l` with one section and two items, made through the command line.
  func makeList(_ database: TestDatabase) throws {
    for arguments in [
      ["list", "create", "l"], ["section", "add", "l", "S"], ["item", "add", "l", "0", "one"],
      ["item", "add", "l", "0", "two"],
    ] {
      expectSuccess(try liststore(arguments, database: database.location))
    }
  }

  /// The sessions `role` has on `database`, with what each ran last.
  static func sessions(_ admin: PGConnection, database: String, role: String) throws -> [(
    pid: Int32, query: String
  )] {
    let rows = try admin.query(
      "SELECT pid, query FROM pg_stat_activity WHERE datname = $1 AND usename = $2",
      database, role)
    return try (0..<rows.rowCount).map { row in
      (Int32(try rows.int64(row: row, column: 0)), rows.string(row: row, column: 1))
    }
  }

  /// The listener's session: the one named `liststore listener`. (Telling it by what it
  /// ran last would take a session that has just connected, whose query is empty, for it.)
  static func listenerPID(_ admin: PGConnection, database: String, role: String) throws -> Int32? {
    let rows = try admin.query(
      """
      SELECT pid FROM pg_stat_activity
      WHERE datname = $1 AND usename = $2 AND application_name = 'liststore listener'
      """, database, role)
    return rows.rowCount == 1 ? Int32(try rows.int64(row: 0, column: 0)) : nil
  }

  @Test func watchResumesAfterAServerRestartWithNothingLostAndOneLineOnStandardError() throws {
    // A server of its own: restarting the shared one would disturb other tests.
    let server = try TestPostgresServer.start()
    defer { server.stop() }
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    try makeList(database)
    let watch = try WatchProcess(list: "l", location: database.location)
    defer { watch.stop() }
    #expect(watch.wait { lines, _ in lines.count == 1 })
    expectSuccess(try liststore(["item", "add", "l", "0", "before"], database: database.location))
    #expect(watch.wait { lines, _ in lines.count == 2 })

    // The watch notices, says so once, and goes on; it says so again once connected.
    try server.restart {
      #expect(watch.wait { _, errors in !errors.isEmpty }, "nothing on standard error")
    }
    for step in 0..<3 {
      expectSuccess(
        try liststore(["item", "add", "l", "0", "after \(step)"], database: database.location))
    }
    expectSuccess(try liststore(["item", "rm", "l", "0:0"], database: database.location))
    let expected = try showJSON("l", location: database.location)
    #expect(
      watch.waitForReplay(equal: expected),
      "replay differs from show --json:\n\(watch.output)\nerrors: \(watch.errors)")
    #expect(watch.process.isRunning)
    #expect(watch.wait { _, errors in errors.count == 2 }, "\(watch.errors)")
    #expect(watch.errors.count == 2, "\(watch.errors)")
    #expect(
      watch.errors.first?.hasPrefix("liststore: lost the connection to the server") == true
        && watch.errors.first?.hasSuffix("; reconnecting, changes will follow") == true,
      "\(watch.errors)")
    #expect(
      watch.errors.last == "liststore: connected again; changes made meanwhile follow",
      "\(watch.errors)")
  }

  @Test func aRepositoryWritesAgainAfterARestartWithItsSessionSettings() throws {
    let server = try TestPostgresServer.start()
    defer { server.stop() }
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    try makeList(database)
    let repository = try database.openRepository(busyTimeout: .milliseconds(300))
    let list = try repository.list("l", metadata: RawJSON.self, item: RawJSON.self)
    let recorder = try record(list)
    try server.restart()
    // The write that finds the connection gone fails, saying so; the next ones work.
    var lost = 0
    for step in 0..<3 {
      do {
        try list.appendItem(RawJSON("\(step)"), toSection: 0)
      } catch .connectionLost {
        lost += 1
      }
    }
    #expect(lost <= 1)
    #expect(try list.sections()[0].items.count == 2 + 3 - lost)
    #expect(try waitUntilExact(recorder, database, list: "l"))
    // The reopened session waits for another writer only as long as it was told to.
    let holder = try PGConnection(database.location)
    try holder.execute("BEGIN; SELECT pg_advisory_xact_lock(4992855103141254223)")
    let started = ContinuousClock.now
    #expect(throws: ListStoreError.self) { try list.appendItem(RawJSON("9"), toSection: 0) }
    #expect(ContinuousClock.now - started < .seconds(5))
    try holder.execute("ROLLBACK")
    try list.appendItem(RawJSON("10"), toSection: 0)
    try expectExact(recorder, database, list: "l")
  }

  @Test func aTerminatedListenerReconnectsAndAWriteMadeMeanwhileArrives() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let server = try #require(database.server)
    let name = try #require(database.name)
    try makeList(database)
    // The watch connects as a role of its own, so that its sessions can be found and
    // kept from reconnecting.
    let role = try server.createRole("watcher")
    try grantListStoreRights(to: role, on: database)
    let admin = try PGConnection(database.location)
    let location = server.connectionString(database: name, user: role)
    let watch = try WatchProcess(list: "l", location: location)
    defer { watch.stop() }
    #expect(watch.wait { lines, _ in lines.count == 1 })
    let listener = try pollUntil { try Self.listenerPID(admin, database: name, role: role) != nil }
    let sessions = try Self.sessions(admin, database: name, role: role)
    #expect(listener, "\(sessions)")
    let pid = try #require(try Self.listenerPID(admin, database: name, role: role))

    // 1. Terminated: it reconnects (a new session listens) and changes keep arriving.
    try admin.execute("SELECT pg_terminate_backend(\(pid))")
    #expect(
      try pollUntil {
        let now = try Self.listenerPID(admin, database: name, role: role)
        return now != nil && now != pid
      }, "no new listener session")
    expectSuccess(
      try liststore(["item", "add", "l", "0", "after kill"], database: database.location))
    #expect(watch.waitForReplay(equal: try showJSON("l", location: database.location)))

    // 2. Disconnected for as long as the test says: the role may not connect, and the
    // listener is terminated again. A write made meanwhile arrives after reconnecting.
    let errorsBefore = watch.errors.count
    try admin.execute("REVOKE CONNECT ON DATABASE \(name) FROM PUBLIC")
    let second = try #require(try Self.listenerPID(admin, database: name, role: role))
    try admin.execute("SELECT pg_terminate_backend(\(second))")
    #expect(watch.wait { _, errors in errors.count > errorsBefore }, "no line while disconnected")
    let linesBefore = watch.lines.count
    expectSuccess(
      try liststore(["item", "add", "l", "0", "meanwhile"], database: database.location))
    expectSuccess(
      try liststore(["item", "set", "l", "0:0", "changed"], database: database.location))
    try admin.execute("GRANT CONNECT ON DATABASE \(name) TO PUBLIC")
    let expected = try showJSON("l", location: database.location)
    #expect(
      watch.waitForReplay(equal: expected),
      "replay differs from show --json:\n\(watch.output)\nerrors: \(watch.errors)")
    #expect(watch.lines.count > linesBefore)
    // One line per disconnection, however many attempts to reconnect failed, and one
    // when connected again (before the changes made meanwhile; standard error is read
    // apart from standard output, so it is waited for).
    let connectedAgain = "liststore: connected again; changes made meanwhile follow"
    #expect(watch.wait { _, errors in errors.last == connectedAgain }, "\(watch.errors)")
    #expect(watch.errors.count == errorsBefore + 2, "\(watch.errors)")
    #expect(watch.errors.last == connectedAgain, "\(watch.errors)")
    #expect(watch.process.isRunning)
  }

  @Test func anObserverInThisProcessCatchesUpAfterItsListenerIsTerminated() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let server = try #require(database.server)
    let name = try #require(database.name)
    try makeList(database)
    let role = try server.createRole("observer")
    try grantListStoreRights(to: role, on: database)
    let admin = try PGConnection(database.location)
    let repository = try Repository(url: server.connectionString(database: name, user: role))
    let statuses = StatusLog()
    try repository.onConnectionStatusChange { statuses.append($0) }
    let list = try repository.list("l", metadata: RawJSON.self, item: RawJSON.self)
    let recorder = try record(list)
    #expect(try pollUntil { try Self.listenerPID(admin, database: name, role: role) != nil })
    let pid = try #require(try Self.listenerPID(admin, database: name, role: role))
    try admin.execute("REVOKE CONNECT ON DATABASE \(name) FROM PUBLIC")
    try admin.execute("SELECT pg_terminate_backend(\(pid))")
    #expect(statuses.wait { $0.contains { $0 != .connected } })
    // A foreign write while disconnected: not seen yet, then seen once reconnected.
    try admin.execute(
      """
      BEGIN;
      INSERT INTO items(section_id, position, value) SELECT id, 'a5', '"foreign"' FROM sections;
      UPDATE items SET value = '"ONE"' WHERE value::text = '"one"';
      COMMIT;
      """)
    try admin.execute("GRANT CONNECT ON DATABASE \(name) TO PUBLIC")
    #expect(statuses.wait { $0.last == .connected })
    #expect(try waitUntilExact(recorder, database, list: "l"))
    try expectExact(recorder, database, list: "l")
    #expect(recorder.array.sections[0].items.map(\.text) == [#""ONE""#, #""two""#, #""foreign""#])
  }
}

/// The connection statuses a repository reported, in order.
final class StatusLog: @unchecked Sendable {
  // `@unchecked Sendable`: `statuses` is touched only under `condition`.
  private let condition = NSCondition()
  private var statuses: [FeedConnectionStatus] = []

  func append(_ status: FeedConnectionStatus) {
    condition.lock()
    statuses.append(status)
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until `predicate` holds for the statuses (20 seconds at most).
  func wait(until predicate: ([FeedConnectionStatus]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(20)
    condition.lock()
    defer { condition.unlock() }
    while !predicate(statuses) {
      if !condition.wait(until: deadline) { return predicate(statuses) }
    }
    return true
  }
}
