import Foundation
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStore
@testable import ListStorePostgreSQL

/// A write's reads of the change log may travel with its `COMMIT`, in one round trip
/// (what a repository does when its server is reached over a network): its observers,
/// and another repository's, must see exactly what the database holds either way, also
/// when a read was not sent along (a section entering the list, a gap in the log left by
/// a rolled-back write) or the write fails.
@Suite(.postgres) struct ReadsWithCommitTests {
  static let rules: [PostgreSQLEngine.ReadsWithCommit] = [.always, .never]

  @Test(arguments: rules, [701, 702])
  func observersMatchTheDatabaseAfterEveryWrite(
    rule: PostgreSQLEngine.ReadsWithCommit, seed: UInt64
  ) throws {
    let seed = testSeed(seed)
    var random = SeededGenerator(seed: seed)
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try Repository(
      engine: PostgreSQLEngine(connectionString: database.location, readsWithCommit: rule),
      busyTimeout: .seconds(10), readOnly: false, watchesDatabase: true)
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    for section in 0..<3 {
      try list.appendSection(RawJSON(#"{"header":"\#(section)"}"#))
      try list.appendItems((0..<5).map { RawJSON("\"\(section)-\($0)\"") }, toSection: section)
    }
    let recorder = try record(list)
    let other = try database.openRepository()
    let otherRecorder = try record(other.list("l", metadata: RawJSON.self, item: RawJSON.self))
    let foreign = try PGConnection(database.location)
    var log: [String] = []
    for step in 0..<scaled(150) {
      let sections = try list.numberOfSections()
      let section = Int.random(in: 0..<max(1, sections), using: &random)
      let rows = sections == 0 ? 0 : try list.numberOfItems(inSection: section)
      let row = Int.random(in: 0..<max(1, rows), using: &random)
      let value = RawJSON("\"s\(step)\"")
      let choice = Int.random(in: 0..<10, using: &random)
      log.append("\(step): \(choice) at \(section):\(row) of \(sections) sections, \(rows) rows")
      do {
        switch choice {
        case 0, 1:
          if sections == 0 { _ = try list.appendSection(RawJSON(#"{"header":"new"}"#)) }
          try list.insert(item: value, at: IndexPath(indexes: [section, min(row, rows)]))
        case 2 where rows > 0:
          try list.replaceItem(at: IndexPath(indexes: [section, row]), with: value)
        case 3 where rows > 0:
          try list.removeItem(at: IndexPath(indexes: [section, row]))
        case 4 where rows > 0 && sections > 1:
          let to = (section + 1) % sections
          try list.moveItem(
            from: IndexPath(indexes: [section, row]),
            to: IndexPath(indexes: [to, try list.numberOfItems(inSection: to)]))
        case 5:
          // A section entering the list with items: its rows are read apart.
          try repository.write {
            _ = try list.insert(section: RawJSON(#"{"header":"s\#(step)"}"#), at: 0)
            _ = try list.appendItems([value, value], toSection: 0)
          }
        case 6 where sections > 1:
          try list.removeSection(at: section)
        case 7:
          // A write that fails and is rolled back: its sequence numbers are gone, so the
          // log has a gap after it.
          _ = try? repository.write {
            try list.appendItem(value, toSection: section)
            throw CancellationError()
          }
          try list.appendItem(value, toSection: section)
        case 8:
          // Another client writes; then this repository does.
          try foreign.execute(
            """
            UPDATE items SET value = '"foreign \(step)"'
            WHERE id = (SELECT min(id) FROM items)
            """)
          try list.appendItem(value, toSection: section)
        default:
          // A write that fails in the database (an item that does not exist).
          _ = try? list.replaceItem(id: Int64.max, with: value)
          try list.appendItem(value, toSection: section)
        }
      } catch {
        Issue.record(
          "step \(step) (seed \(seed)): \(error)\n\(log.suffix(5).joined(separator: "\n"))")
        return
      }
      // This repository's own writes have been delivered when they return; another
      // client's change arrives through the listener.
      if choice == 8 { repository.synchronizeObservers() }
      let truth = try database.contents(list: "l")
      guard ListContents(recorder.array.sections) == truth else {
        let shown = ListContents(recorder.array.sections).description
        let stored = truth?.description ?? "none"
        let recent = log.suffix(5).joined(separator: "\n")
        Issue.record(
          "step \(step) (seed \(seed)): the observer differs\n\(shown)\ndatabase:\n\(stored)\n\(recent)"
        )
        return
      }
    }
    try expectExact(recorder, database, list: "l")
    // The reads did go with the COMMIT (or not) as the rule says.
    let sentAlong = try #require(repository.connection as? PostgreSQLDatabase).commitsWithReads
    #expect(rule == .always ? sentAlong > scaled(150) / 2 : sentAlong == 0, "\(sentAlong)")
    #expect(try waitUntilExact(otherRecorder, database, list: "l"))
    #expect(otherRecorder.problems.isEmpty && otherRecorder.error == nil)
  }

  /// The network drops between a write's `COMMIT` and its answer, three times: the write
  /// reports the lost connection although the server committed it, and the observers, this
  /// repository's and another's, still show exactly what the database holds, with the
  /// reads sent along and without; the next write reconnects. (This repository's listener
  /// takes the commit's notification for its own, and checks the log after that only
  /// after an hour here: the refresh that follows a failed commit reads the write.)
  @Test(arguments: rules)
  func aCommitWhoseAnswerIsLostStillReachesTheObservers(
    rule: PostgreSQLEngine.ReadsWithCommit
  ) throws {
    let server = try TestPostgresServer.shared(.init(acceptsPasswordsOverTCP: true))
    let database = try TestDatabase.make(on: server)
    defer { database.remove() }
    let role = try server.createRole("app", password: "lost answers")
    try grantListStoreRights(to: role, on: database)
    let proxy = try CommitDroppingProxy(targetPort: server.port)
    defer { proxy.stop() }
    let location =
      server.tcpConnectionString(
        database: try #require(database.name), user: role, password: "lost answers"
      ).replacing("port=\(server.port) ", with: "port=\(proxy.port) ")
      + " sslmode=disable gssencmode=disable"
    let repository = try Repository(
      engine: PostgreSQLEngine(
        connectionString: location, readsWithCommit: rule, ownCommitCheck: .seconds(3600)),
      busyTimeout: .seconds(10), readOnly: false, watchesDatabase: true)
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"S"}"#))
    try list.appendItems((0..<3).map { RawJSON("\"\($0)\"") }, toSection: 0)
    let recorder = try record(list)
    let other = try database.openRepository()
    let otherRecorder = try record(other.list("l", metadata: RawJSON.self, item: RawJSON.self))
    let foreign = try PGConnection(database.location)
    for round in 1...3 {
      // The repository's session (a new one after each round).
      let session = try #require(repository.connection as? PostgreSQLDatabase).connection
      proxy.dropNextCommitAnswer(of: session.backendPID)
      let value = "\"lost answer \(round)\""
      let error = #expect(throws: ListStoreError.self) {
        try list.appendItem(RawJSON(value), toSection: 0)
      }
      #expect(error?.isTransient == true, "\(String(describing: error))")
      #expect(proxy.dropped == round)
      #expect(try foreign.scalarInt64("SELECT count(*) FROM items WHERE value = $1", value) == 1)
      #expect(try waitUntilExact(recorder, database, list: "l"))
      #expect(try waitUntilExact(otherRecorder, database, list: "l"))
      try list.appendItem(RawJSON("\"after \(round)\""), toSection: 0)
      try expectExact(recorder, database, list: "l")
    }
    #expect(try waitUntilExact(otherRecorder, database, list: "l"))
    #expect(recorder.problems.isEmpty && recorder.error == nil)
    #expect(otherRecorder.problems.isEmpty && otherRecorder.error == nil)
  }

  /// The rule for a repository's own link: local links (a Unix socket here) send reads
  /// on their own unless told to always send them along.
  @Test func aUnixSocketIsALocalLink() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let connection = try PGConnection(database.location)
    #expect(connection.isLocal)
    connection.close()
    #expect(!connection.isLocal)
  }
}
