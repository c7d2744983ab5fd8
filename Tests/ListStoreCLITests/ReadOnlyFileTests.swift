import Foundation
import SQLiteKit
import TestSupport
import Testing

/// Databases installed for everyone: a file the user cannot write in a folder the user
/// cannot write. Reading works; watching works where SQLite lets a reader follow changes
/// without writing beside the file, and says in one line why not otherwise; writing says
/// the file is read-only. The commands run as an unprivileged user (`nobody` when the
/// tests run as root).
@Suite struct ReadOnlyFileTests {
  let folder = TemporaryDirectory()
  var shared: String { folder.file("shared") }
  var db: String { shared + "/lists.sqlite" }

  /// `demo` in `shared/lists.sqlite`, its folder then closed to writing; the file is
  /// left with `mode` and, unless `owned`, its owner's.
  func install(mode: mode_t, ownedByTheUser owned: Bool = false, journal: String? = nil) throws {
    try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
    expectSuccess(try liststore(["demo"], database: db))
    if let journal {
      let connection = try Connection(path: db)
      _ = try connection.scalarText("PRAGMA journal_mode = \(journal)")
      connection.close()
    }
    let user = unprivilegedUser
    if owned { chown(db, user.uid, user.gid) }
    chmod(db, mode)
    chmod(folder.path, 0o755)
    chmod(shared, 0o555)
  }

  func cli(_ arguments: String...) throws -> ProcessResult {
    try liststoreUnprivileged(arguments, database: db)
  }

  func besideTheFile() -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: shared).sorted()) ?? []
  }

  @Test func aWALFileInAFolderNobodyWritesIsShownListedAndExportedButNotWatched() throws {
    defer {
      chmod(shared, 0o755)
      folder.remove()
    }
    try install(mode: 0o444)
    let before = try #require(fileBytes(db))
    #expect(besideTheFile() == ["lists.sqlite"])

    let shown = try cli("show", "demo")
    expectSuccess(shown)
    #expect(shown.lines.first == "demo" && shown.lines.contains("      0:0  Paris"))
    let listed = try cli("lists")
    expectSuccess(listed)
    #expect(listed.lines.last?.hasPrefix("demo") == true)
    let exported = try cli("export", "demo")
    expectSuccess(exported)
    #expect(exported.stdout.contains(#"{"id":1,"value":"Paris"}"#))
    expectSuccess(try cli("check"))

    let watched = try cli("watch", "demo", "--json")
    expectFailure(
      watched, containing: "cannot watch \(db) for changes", "PRAGMA journal_mode=DELETE")
    #expect(watched.stderr.split(separator: "\n").count == 1, "\(watched.stderr)")
    expectFailure(try cli("item", "add", "demo", "0", "x"), containing: "\(db) is read-only")

    #expect(fileBytes(db) == before)
    #expect(besideTheFile() == ["lists.sqlite"])
  }

  @Test func aWritableFileInAFolderNobodyWritesIsReadAndRefusesWrites() throws {
    defer {
      chmod(shared, 0o755)
      folder.remove()
    }
    try install(mode: 0o644, ownedByTheUser: true)
    let before = try #require(fileBytes(db))
    let shown = try cli("show", "demo")
    expectSuccess(shown)
    #expect(!shown.stderr.contains("read-only"))
    #expect(shown.lines.contains("      0:1  Berlin"))
    expectFailure(
      try cli("item", "add", "demo", "0", "x"),
      containing: "\(db) is read-only; nothing was changed")
    #expect(fileBytes(db) == before)
    #expect(besideTheFile() == ["lists.sqlite"])
  }

  /// A file in rollback-journal mode needs nothing beside it to be read: a watcher that
  /// cannot write anything follows the changes its owner makes.
  @Test func aRollbackJournalFileInAFolderNobodyWritesIsWatched() throws {
    defer {
      chmod(shared, 0o755)
      folder.remove()
    }
    try install(mode: 0o444, journal: "DELETE")
    let watch = try TestSupport.WatchProcess(
      try asUnprivileged([liststoreBinary, "--db", db, "watch", "demo", "--json"]))
    defer { watch.stop() }
    #expect(watch.wait { lines, _ in lines.count == 1 })
    // The owner writes as a client that keeps the rollback journal (ListStore itself
    // would put the file in WAL mode), with the folder open to the journal meanwhile.
    chmod(shared, 0o755)
    chmod(db, 0o644)
    let owner = try Connection(path: db)
    try owner.execute(#"UPDATE items SET value = '"Roma"' WHERE id = 1"#)
    owner.close()
    chmod(db, 0o444)
    chmod(shared, 0o555)
    #expect(watch.wait { lines, _ in lines.count == 2 }, "\(watch.lines) \(watch.errors)")
    #expect(
      watch.lines.last == #"{"changes":{"updatedItems":[{"at":[0,0],"id":1,"value":"Roma"}]}}"#)
    #expect(watch.errors.isEmpty, "\(watch.errors)")
  }
}
