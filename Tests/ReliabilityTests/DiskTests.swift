import Foundation
import ListStore
import SQLiteKit
import TestSupport
import Testing

/// A full disk fails the write that does not fit, with a clear error, and leaves the
/// database readable and consistent; a read-only database can still be shown and
/// watched.
@Suite(.serialized) struct DiskTests {
  /// An export file of `count` items of about 200 bytes each.
  static func exportFile(_ path: String, items count: Int) throws {
    let value = String(repeating: "ü", count: 100)
    let items = (0..<count).map { "{\"value\":\"\($0) \(value)\"}" }.joined(separator: ",")
    try Data("{\"sections\":[{\"header\":\"Big\",\"items\":[\(items)]}]}".utf8).write(
      to: URL(fileURLWithPath: path))
  }

  /// Imports until the database is full: the import that does not fit fails cleanly.
  func fillUntilFull(
    database path: String, folder: TemporaryDirectory, environment: [String: String],
    makeRoom: () -> Void = {}
  ) throws {
    let file = folder.file("big.json")
    try Self.exportFile(file, items: 1000)
    var imported: [String] = []
    var failure: ProcessResult?
    for round in 0..<200 {
      let result = try liststore(
        ["import", "big \(round)", file], database: path, environment: environment)
      if result.status == 0 {
        imported.append("big \(round)")
      } else {
        failure = result
        break
      }
    }
    let result = try #require(failure, "the database never filled up")
    #expect(result.status == 1)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains("is full"), "\(result)")
    #expect(result.stderr.split(separator: "\n").count == 1)
    #expect(!imported.isEmpty)

    // Readable, consistent, and holding exactly the imports that succeeded, whole.
    let check = try liststore(["check"], database: path, environment: environment)
    #expect(check.status == 0, "\(check)")
    let lists = try liststore(["lists", "--json"], database: path, environment: environment)
    let summaries =
      try JSONSerialization.jsonObject(with: Data(lists.stdout.utf8)) as? [[String: Any]] ?? []
    #expect(Set(summaries.compactMap { $0["name"] as? String }) == Set(imported))
    #expect(summaries.allSatisfy { $0["items"] as? Int == 1000 })
    // Once there is room again, writing works again.
    makeRoom()
    #expect(
      try liststore(
        ["list", "create", "after the disk filled"], database: path, environment: environment
      ).status == 0)
    #expect(
      try liststore(["list", "rm", imported[0]], database: path, environment: environment).status
        == 0)
    #expect(try liststore(["check"], database: path, environment: environment).status == 0)
  }

  @Test func aDatabaseAtItsSizeLimitFailsTheWriteThatDoesNotFit() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try fillUntilFull(
      database: folder.file("limited.sqlite"), folder: folder,
      environment: ["LISTSTORE_MAX_PAGE_COUNT": "400"])
  }

  @Test(.enabled(if: canMount, "needs permission to mount a small tmpfs"))
  func aFullFileSystemFailsTheWriteThatDoesNotFit() throws {
    let folder = TemporaryDirectory()
    let disk = folder.file("disk")
    try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
    #expect(try run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", disk]).status == 0)
    defer {
      _ = try? run("/bin/umount", [disk])
      folder.remove()
    }
    // Ballast to throw overboard once the disk is full: on a full disk even a delete
    // needs room for its journal.
    let ballast = disk + "/ballast"
    try Data(count: 1_000_000).write(to: URL(fileURLWithPath: ballast))
    try fillUntilFull(database: disk + "/full.sqlite", folder: folder, environment: [:]) {
      try? FileManager.default.removeItem(atPath: ballast)
    }
  }

  @Test func aReadOnlyFileCanBeShownAndWatched() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let path = folder.file("ro.sqlite")
    _ = try liststore(["demo"], database: path)
    chmod(path, 0o444)
    let before = try #require(fileBytes(path))
    try expectReadableButNotWritable(path)
    #expect(fileBytes(path) == before)
  }

  @Test(.enabled(if: canMount, "needs permission to mount a tmpfs read-only"))
  func aDatabaseOnReadOnlyMediaCanBeShownAndWatched() throws {
    let folder = TemporaryDirectory()
    let disk = folder.file("media")
    try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
    #expect(try run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", disk]).status == 0)
    defer {
      _ = try? run("/bin/umount", [disk])
      folder.remove()
    }
    _ = try liststore(["demo"], database: disk + "/media.sqlite")
    #expect(try run("/bin/mount", ["-o", "remount,ro", disk]).status == 0)
    try expectReadableButNotWritable(disk + "/media.sqlite")
  }

  func expectReadableButNotWritable(_ path: String) throws {
    let shown = try liststore(["show", "demo"], database: path)
    #expect(shown.status == 0 && shown.stdout.contains("Copenhagen"), "\(shown)")
    let watched = try liststore(["watch", "demo", "--json", "--timeout", "0.3"], database: path)
    #expect(watched.status == 0, "\(watched)")
    #expect(watched.stdout.hasPrefix("{\"snapshot\":{\"list\":\"demo\""))
    let write = try liststore(["item", "add", "demo", "0", "x"], database: path)
    #expect(write.status == 1 && write.stderr.contains("is read-only"), "\(write)")
    #expect(try Repository(path: path).check().isEmpty)
  }
}
