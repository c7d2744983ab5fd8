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
    #expect(try db.scalarInt64("PRAGMA user_version") == Int64(Migrator.latestVersion))
    #expect(try db.scalarInt64("PRAGMA application_id") == Migrator.applicationID)
    #expect(try db.scalarText("PRAGMA journal_mode") == "wal")
    let tables = try Set(
      ["lists", "sections", "items"].filter { name in
        try db.scalarInt64("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", name)
          != nil
      })
    #expect(tables == ["lists", "sections", "items"])
  }

  @Test func embeddedMigrationsAreNumberedFromOneWithoutGaps() {
    #expect(Migrator.migrations.map(\.version) == Array(1...Migrator.latestVersion))
    #expect(Migration.embedded.allSatisfy { $0.fileName.hasSuffix(".sql") && !$0.sql.isEmpty })
  }

  @Test func reopeningIsIdempotentAndKeepsData() throws {
    defer { folder.remove() }
    let path = folder.file("lists.sqlite")
    try Repository(path: path).createList("kept")
    let again = try Repository(path: path)
    #expect(try again.lists().map(\.name) == ["kept"])
  }

  @Test func concurrentOpenersMigrateOnce() async throws {
    defer { folder.remove() }
    let path = folder.file("race.sqlite")
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<8 { group.addTask { _ = try Repository(path: path) } }
      try await group.waitForAll()
    }
    #expect(try Repository(path: path).lists().isEmpty)
  }

  @Test func refusesNewerSchemaAndLeavesItUntouched() throws {
    defer { folder.remove() }
    let path = folder.file("newer.sqlite")
    _ = try Repository(path: path)
    let db = try Connection(path: path)
    try db.execute("PRAGMA user_version = \(Migrator.latestVersion + 1)")
    db.close()
    let before = try #require(fileBytes(path))
    #expect(
      throws: ListStoreError.schemaTooNew(
        path: path, version: Migrator.latestVersion + 1, supported: Migrator.latestVersion)
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
