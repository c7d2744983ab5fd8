import Foundation
import ListStore
import TestSupport
import Testing

/// Opening a database: what is created, and what is refused with which reason.
@Suite struct OpeningTests {
  let folder = TemporaryDirectory()

  func contents() -> [String] {
    (FileManager.default.subpaths(atPath: folder.path) ?? []).sorted()
  }

  @Test func withoutCreateIfMissingAMissingFileCreatesNothing() throws {
    defer { folder.remove() }
    for path in [folder.file("a/b/db.sqlite"), folder.file("db.sqlite")] {
      #expect(throws: ListStoreError.databaseNotFound(path: path)) {
        try Repository(path: path, createIfMissing: false)
      }
      #expect(throws: ListStoreError.databaseNotFound(path: path)) {
        try Repository(path: path, readOnly: true)
      }
    }
    #expect(contents().isEmpty)
    // The default creates the file and its folders; then it opens without creating.
    let path = folder.file("a/b/db.sqlite")
    try Repository(path: path).createList("x")
    #expect(try Repository(path: path, createIfMissing: false).lists().map(\.name) == ["x"])
  }

  @Test func pathsThatCannotHoldADatabaseAreRefusedWithTheirReason() throws {
    defer { folder.remove() }
    let directory = folder.file("folder")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for create in [true, false] {
      #expect(throws: ListStoreError.self) {
        try Repository(path: directory, createIfMissing: create)
      }
      do {
        _ = try Repository(path: directory, createIfMissing: create)
      } catch {
        #expect("\(error)".contains("it is a directory"), "\(error)")
      }
      if FileManager.default.fileExists(atPath: "/dev/null") {
        do {
          _ = try Repository(path: "/dev/null", createIfMissing: create)
          Issue.record("/dev/null opened")
        } catch {
          #expect("\(error)".contains("not a regular file"), "\(error)")
        }
      }
    }
    // An empty file that cannot be written never becomes a database.
    let empty = folder.file("empty.sqlite")
    _ = FileManager.default.createFile(atPath: empty, contents: Data())
    chmod(empty, 0o444)
    #expect(throws: ListStoreError.notADatabase(path: empty)) { try Repository(path: empty) }
    #expect(fileBytes(empty)?.isEmpty == true)
  }

  @Test func backupIntoAMissingFolderNamesTheFolder() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let target = folder.file("missing/copy.sqlite")
    do {
      try repository.backup(to: target)
      Issue.record("backup into a missing folder succeeded")
    } catch {
      #expect(
        "\(error)".contains("the folder \(folder.file("missing")) does not exist"), "\(error)")
    }
    #expect(!FileManager.default.fileExists(atPath: folder.file("missing")))
  }
}
