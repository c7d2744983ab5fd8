import Foundation
import ListStore
import ListStorePostgreSQLTesting
import ListStoreTesting
import Synchronization
import Testing

/// Temporary repositories on PostgreSQL, as a user's test target uses them: only the public
/// API of ListStorePostgreSQLTesting, ListStoreTesting and ListStore.
@Suite(.requiresPostgreSQL) struct PostgreSQLTemporaryRepositoryTests {
  @Test func isAFreshMigratedDatabaseThatRemoveDrops() throws {
    let temporary = try TemporaryRepository(engine: .postgresql)
    #expect(Repository.isPostgreSQLLocation(temporary.path))
    #expect(try temporary.repository.lists().isEmpty)
    // A real, current ListStore database: another connection opens it without migrating.
    let other = try Repository.open(temporary.path, createIfMissing: false)
    let list = try other.createList("groceries", metadata: SectionMetadata.self, item: String.self)
    #expect(list.id == 1)
    #expect(try list.appendSection(SectionMetadata(header: "Fruit")) == 1)
    #expect(try list.appendItem("apples", toSection: 0) == 1)
    #expect(try temporary.repository.lists().map(\.name) == ["groceries"])
    other.stopObserving()
    temporary.remove()
    #expect(!FileManager.default.fileExists(atPath: temporary.folder))
    // The database is gone: opening it again fails, naming it.
    #expect {
      try Repository.open(temporary.path, createIfMissing: false)
    } throws: { error in
      "\(error)".contains("does not exist")
    }
    temporary.remove()  // Idempotent.
  }

  @Test func everyDatabaseStartsEmptyWithIdsFromOne() throws {
    for _ in 0..<3 {
      let temporary = try TemporaryRepository(engine: .postgresql)
      defer { temporary.remove() }
      let list = try temporary.repository.createList(
        "cities", metadata: SectionMetadata.self, item: String.self)
      #expect(list.id == 1)
      #expect(try list.appendSection(SectionMetadata(header: "Cities")) == 1)
      #expect(try list.appendItem("Paris", toSection: 0) == 1)
    }
  }

  @Test(
    .temporaryRepository(
      lists: [
        .json(#"{"list": "cities", "sections": [{"header": "Cities", "items": ["Paris"]}]}"#)
      ],
      engine: .postgresql))
  func theTraitGivesEachTestADatabaseWithItsFixtures() throws {
    let temporary = try TemporaryRepository.required()
    #expect(Repository.isPostgreSQLLocation(temporary.path))
    let cities = try temporary.repository.list(
      "cities", metadata: SectionMetadata.self, item: String.self)
    let recorder = try ChangesetRecorder(cities)
    try cities.appendItem("Berlin", toSection: 0)
    recorder.expect(
      nextJSON: #"{"changes":{"insertedItems":[{"at":[0,1],"id":2,"value":"Berlin"}]}}"#)
    recorder.expectNoMoreChangesets()
    #expect(try cities.showText() == "cities\n  [0] Cities\n      0:0  Paris\n      0:1  Berlin")
  }

  @Test func aServerOfYourOwnOverTCPWithPasswords() throws {
    let server = try TestPostgresServer.shared(.init(acceptsPasswordsOverTCP: true))
    let temporary = try TemporaryRepository(engine: .postgresql(on: server))
    defer { temporary.remove() }
    #expect(temporary.path.contains("port=\(server.port)"))
    // A role with a password reaches the same database over TCP.
    let role = try server.createRole("reader", password: "secret words")
    let name = try #require(
      temporary.path.split(separator: " ").first { $0.hasPrefix("dbname=") }?.dropFirst(7))
    try server.superuserQuery("GRANT pg_read_all_data TO \(role)")
    let reader = try Repository(
      url: server.tcpConnectionString(database: String(name), user: role, password: "secret words"),
      readOnly: true)
    defer { reader.stopObserving() }
    try temporary.repository.createList("seen over TCP")
    #expect(try reader.lists().map(\.name) == ["seen over TCP"])
  }
}

/// The databases the parallel tests got, to prove that none was shared.
private let parallelDatabases = Mutex<Set<String>>([])

/// Many tests at once, each with its own database on the one server, each seeing only its
/// own changes.
@Suite(.requiresPostgreSQL, .temporaryRepository(engine: .postgresql))
struct PostgreSQLParallelIsolationTests {
  @Test(arguments: 0..<24)
  func parallelTestsNeverSeeEachOthersChanges(number: Int) throws {
    let temporary = try TemporaryRepository.required()
    #expect(parallelDatabases.withLock { $0.insert(temporary.path).inserted })
    // Every test uses the same list name and writes its own number.
    let list = try temporary.repository.createList(
      "shared name", metadata: SectionMetadata.self, item: Int.self)
    #expect(list.id == 1)
    let recorder = try ChangesetRecorder(list)
    try list.appendSection(SectionMetadata(header: "numbers"))
    for step in 0..<5 { try list.appendItem(number * 100 + step, toSection: 0) }
    try list.removeItem(at: IndexPath(indexes: [0, 0]))
    // Another connection to the same test's database, as another process would write,
    // and settle() instead of waiting.
    let other = try Repository.open(temporary.path, createIfMissing: false)
    defer { other.stopObserving() }
    try other.list("shared name", metadata: SectionMetadata.self, item: Int.self)
      .appendItem(number, toSection: 0)
    recorder.settle()
    let values = recorder.sections.flatMap { $0.items.map { $0 } }
    #expect(values == [1, 2, 3, 4].map { number * 100 + $0 } + [number])
    #expect(recorder.changesets.count == 8)
    #expect(recorder.problems.isEmpty)
    #expect(try temporary.repository.lists().map(\.name) == ["shared name"])
  }
}

/// What a temporary PostgreSQL repository costs a test, cloned from the template and
/// migrated from scratch, side by side. A measurement, not a check: it runs with
/// `LISTSTORE_MEASURE=1`.
@Suite(.requiresPostgreSQL) struct PostgreSQLPerTestCostTests {
  @Test(.enabled(if: ProcessInfo.processInfo.environment["LISTSTORE_MEASURE"] != nil))
  func measureTemplateCloneAgainstMigrating() throws {
    let rounds = 50
    // The server and the template are made by the first repository; not counted.
    try TemporaryRepository(engine: .postgresql).remove()
    let server = try TestPostgresServer.shared()
    let clock = ContinuousClock()
    var cloned = Duration.zero
    var migrated = Duration.zero
    for _ in 0..<rounds {
      cloned += try clock.measure {
        let temporary = try TemporaryRepository(engine: .postgresql)
        _ = try temporary.repository.createList("cities")
        temporary.remove()
      }
      migrated += try clock.measure {
        let empty = try server.makeDatabase()
        let repository = try Repository(url: empty)
        _ = try repository.createList("cities")
        repository.stopObserving()
        let name = empty.split(separator: " ").first { $0.hasPrefix("dbname=") }?.dropFirst(7)
        try server.dropDatabase(String(name ?? ""))
      }
    }
    print(
      "per-test PostgreSQL repository, mean of \(rounds): template clone \(cloned / rounds), "
        + "empty database migrated \(migrated / rounds)")
  }
}
