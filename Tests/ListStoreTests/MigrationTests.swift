import Foundation
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

@Suite struct MigrationTests {
  let folder = TemporaryDirectory()

  @Test func createsFoldersFileAndSchema() throws {
    defer { folder.remove() }
    let path = folder.file("a/b/c/lists.sqlite")
    _ = try Repository(path: path)
    let db = try Connection(path: path, mode: .readOnly)
    #expect(try db.scalarInt64("PRAGMA user_version") == Int64(SQLiteMigrator.latestVersion))
    #expect(try db.scalarInt64("PRAGMA application_id") == SQLiteMigrator.applicationID)
    #expect(try db.scalarText("PRAGMA journal_mode") == "wal")
    let tables = try Set(
      ["lists", "sections", "items"].filter { name in
        try db.scalarInt64("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", name)
          != nil
      })
    #expect(tables == ["lists", "sections", "items"])
  }

  @Test func embeddedMigrationsAreNumberedFromOneWithoutGaps() {
    #expect(SQLiteMigrator.migrations.map(\.version) == Array(1...SQLiteMigrator.latestVersion))
    #expect(Migration.embedded.allSatisfy { $0.fileName.hasSuffix(".sql") && !$0.sql.isEmpty })
  }

  @Test func reopeningIsIdempotentAndKeepsData() throws {
    defer { folder.remove() }
    let path = folder.file("lists.sqlite")
    try Repository(path: path).createList("kept")
    let again = try Repository(path: path)
    #expect(try again.lists().map(\.name) == ["kept"])
  }

  /// Openers racing to create one database all succeed: each reads the schema in one
  /// transaction, so none sees another's migration half way (tables, no application id).
  @Test func concurrentOpenersMigrateOnce() async throws {
    defer { folder.remove() }
    for round in 0..<20 {
      let path = folder.file("race\(round).sqlite")
      try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<8 { group.addTask { _ = try Repository(path: path) } }
        try await group.waitForAll()
      }
      #expect(try Repository(path: path).lists().isEmpty)
    }
  }

  @Test func refusesNewerSchemaAndLeavesItUntouched() throws {
    defer { folder.remove() }
    let path = folder.file("newer.sqlite")
    _ = try Repository(path: path)
    let db = try Connection(path: path)
    try db.execute("PRAGMA user_version = \(SQLiteMigrator.latestVersion + 1)")
    db.close()
    let before = try #require(fileBytes(path))
    #expect(
      throws: ListStoreError.schemaTooNew(
        path: path, version: SQLiteMigrator.latestVersion + 1,
        supported: SQLiteMigrator.latestVersion)
    ) { try Repository(path: path) }
    #expect(fileBytes(path) == before)
  }

  @Test(arguments: [
    Data("hello, I am a text file that is long enough to have a header".utf8),
    Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
    Data("SQLite format 3".utf8),
  ])
  func refusesFilesThatAreNotDatabases(_ content: Data) throws {
    defer { folder.remove() }
    let path = folder.file("not.sqlite")
    try content.write(to: URL(fileURLWithPath: path))
    #expect(throws: ListStoreError.notADatabase(path: path)) { try Repository(path: path) }
    #expect(fileBytes(path) == content)
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
  }

  @Test func refusesOtherSQLiteDatabasesAndLeavesThemUntouched() throws {
    defer { folder.remove() }
    let path = folder.file("other.sqlite")
    let db = try Connection(path: path)
    try db.execute("CREATE TABLE notes(text); INSERT INTO notes VALUES ('keep me')")
    db.close()
    let before = try #require(fileBytes(path))
    #expect(throws: ListStoreError.notAListStoreDatabase(path: path)) { try Repository(path: path) }
    #expect(fileBytes(path) == before)
  }

  @Test func acceptsAnEmptyFile() throws {
    defer { folder.remove() }
    let path = folder.file("empty.sqlite")
    _ = FileManager.default.createFile(atPath: path, contents: Data())
    try Repository(path: path).createList("fresh")
  }

  @Test func reportsFoldersThatCannotBeCreated() throws {
    defer { folder.remove() }
    let blocker = folder.file("file")
    _ = FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8))
    let error = try #require(throws: ListStoreError.self) {
      try Repository(path: blocker + "/sub/db.sqlite")
    }
    guard case .cannotCreateFolder = error else {
      Issue.record("unexpected \(error)")
      return
    }
  }

  @Test func opensReadOnlyFilesForReadingOnly() throws {
    defer { folder.remove() }
    let path = folder.file("ro.sqlite")
    let list = try Repository(path: path).createList("l", metadata: String.self, item: String.self)
    try list.appendSection("A")
    chmod(path, 0o444)
    let before = try #require(fileBytes(path))
    let repository = try Repository(path: path)
    #expect(repository.isReadOnly)
    let readOnly = try repository.list("l", metadata: String.self, item: String.self)
    #expect(try readOnly.numberOfSections() == 1)
    #expect(throws: ListStoreError.readOnly(path: path)) {
      try readOnly.appendItem("x", toSection: 0)
    }
    #expect(throws: ListStoreError.readOnly(path: path)) { try repository.createList("m") }
    #expect(fileBytes(path) == before)
  }
}

/// Upgrading a database of schema version 2, which let foreign clients store ids of 0
/// and below, reuse ids, and store malformed or non-text positions.
@Suite struct VersionThreeMigrationTests {
  let folder = TemporaryDirectory()

  /// A version-2 database as an older ListStore left it, with what older rules let in.
  func makeVersionTwo(_ path: String) throws {
    let db = try Connection(path: path)
    defer { db.close() }
    for migration in SQLiteMigrator.migrations where migration.version <= 2 {
      try db.execute(migration.sql)
    }
    try db.execute(
      """
      PRAGMA user_version = 2;
      PRAGMA application_id = \(SQLiteMigrator.applicationID);
      INSERT INTO lists(id, name) VALUES (0, 'zero'), (4, 'four');
      INSERT INTO sections(id, list_id, position, metadata) VALUES
        (0, 0, 'a0', '"S0"'), (-2, 0, 'a1', '"S-2"'), (7, 4, 'a0', '"S7"');
      INSERT INTO items(id, section_id, position, value) VALUES
        (0, 0, 'a0', '"zero"'), (-3, 0, CAST('a1' AS BLOB), '"blob"'),
        (8, 7, 'a0', '"eight"'), (9, 7, '~', '"tilde"'), (10, 7, 5, '"five"'),
        (11, 7, 'a5', '"a5"'), (12, -2, 'a0', '"in S-2"'), (20, 7, 'a7', '"deleted later"');
      DELETE FROM items WHERE id = 20;
      """)
  }

  @Test func keepsEveryRowAndIdAndTheLogAndRepairsWhatItNoLongerAccepts() throws {
    defer { folder.remove() }
    let path = folder.file("v2.sqlite")
    try makeVersionTwo(path)
    let log = try Connection(path: path).scalarInt64("SELECT count(*) FROM changes")
    // The order each list had, by value, before the upgrade (SQLite's ORDER BY position).
    let before = try ListContents.read(list: "four", path: path)

    let repository = try Repository(path: path)
    let db = try Connection(path: path, mode: .readOnly)
    #expect(try db.scalarInt64("PRAGMA user_version") == Int64(SQLiteMigrator.latestVersion))
    let problems = try repository.check()
    #expect(problems.isEmpty, "\(problems)")
    // Positive ids keep their rows; the log is kept (and grew by the repaired keys).
    #expect(try ListContents.read(list: "four", path: path)?.sections.map(\.id) == [7])
    let four = try #require(try ListContents.read(list: "four", path: path))
    #expect(four.sections[0].items.map(\.id) == before?.sections[0].items.map(\.id))
    #expect(four.sections[0].items.map(\.value) == before?.sections[0].items.map(\.value))
    let logNow = try db.scalarInt64("SELECT count(*) FROM changes") ?? 0
    #expect(logNow > log ?? 0)
    // Ids of 0 and below got fresh ones, above every id ever used (20 was deleted),
    // and their children followed them.
    let zero = try #require(try ListContents.read(list: "zero", path: path))
    #expect(zero.sections.map(\.metadata) == ["\"S0\"", "\"S-2\""])
    #expect(zero.sections.allSatisfy { $0.id > 7 })
    #expect(zero.sections[0].items.map(\.value) == ["\"zero\"", "\"blob\""])
    #expect(zero.sections[0].items.allSatisfy { $0.id > 20 })
    #expect(zero.sections[1].items.map(\.value) == ["\"in S-2\""])
    let lowestList = try db.scalarInt64("SELECT min(id) FROM lists") ?? 0
    #expect(lowestList > 0)
    // Every key is a key now, and new rows get ids never used before.
    var keys: [String] = []
    try db.prepare("SELECT position FROM items UNION ALL SELECT position FROM sections")
      .forEachRow { keys.append($0.string(at: 0)) }
    #expect(keys.allSatisfy(PositionKey.isValid), "\(keys)")
    let list = try repository.list("four", metadata: RawJSON.self, item: RawJSON.self)
    let id = try list.appendItem(RawJSON("\"new\""), toSection: 0)
    #expect(id > zero.sections.flatMap { $0.items.map(\.id) }.max() ?? 0)
  }
}
