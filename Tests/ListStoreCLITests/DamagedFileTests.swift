import Foundation
import SQLiteKit
import TestSupport
import Testing

/// A database file damaged on disk: `check` reads it without changing it, says what
/// SQLite found and what the user can do, and exits 1; other commands say it is damaged
/// and point to `check`.
@Suite struct DamagedFileTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("damaged.sqlite") }

  /// The demo list with 300 more items, checkpointed into the file; returns the leaves of
  /// the schema and of the items table.
  func makeDatabase() throws -> (schema: [Int64], itemLeaves: [Int64]) {
    expectSuccess(try liststore(["demo"], database: db))
    let lines = (0..<300).map {
      #"{"op":"item add","section":0,"value":"item \#($0) of the list"}"#
    }
    expectSuccess(
      try liststore(["batch", "demo"], database: db, input: lines.joined(separator: "\n")))
    let connection = try Connection(path: db)
    defer { connection.close() }
    _ = try connection.scalarText("PRAGMA wal_checkpoint(TRUNCATE)")
    func pages(_ sql: String) throws -> [Int64] {
      var pages: [Int64] = []
      try connection.prepare(sql).forEachRow { pages.append($0.int64(at: 0)) }
      return pages
    }
    return (
      try pages(
        "SELECT pageno FROM dbstat WHERE name = 'sqlite_schema' AND pagetype = 'leaf' ORDER BY pageno"
      ),
      try pages(
        "SELECT pageno FROM dbstat WHERE name = 'items' AND pagetype = 'leaf' ORDER BY pageno")
    )
  }

  /// Overwrites 800 bytes of page `page` (numbered from 1), as a failing disk might: by
  /// default in its last quarter, where a b-tree page keeps its cells however full it is;
  /// from `offset` 0, its header and cell pointers (the b-tree's structure itself, which
  /// SQLite reports the same way whatever text the cells hold).
  func damage(page: Int64, offset: UInt64 = 3200) throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: db))
    try handle.seek(toOffset: UInt64(page - 1) * 4096 + offset)
    try handle.write(contentsOf: Data(repeating: 0x55, count: 800))
    try handle.close()
  }

  @Test(arguments: ["schema", "items"])
  func checkReportsTheDamageWithoutChangingTheFile(damaged: String) throws {
    defer { folder.remove() }
    let pages = try makeDatabase()
    let page = try #require(damaged == "schema" ? pages.schema.last : pages.itemLeaves.first)
    // The schema's cells are the tables' and triggers' SQL: damage in their text reads as
    // a syntax error of whichever trigger it hit, so the schema's leaf is hit in its
    // structure.
    try damage(page: page, offset: damaged == "schema" ? 0 : 3200)
    let before = try #require(fileBytes(db))

    let checked = try liststore(["check"], database: db)
    #expect(checked.status == 1)
    #expect(!checked.lines.isEmpty && checked.lines.allSatisfy { $0.hasPrefix("sqlite: ") })
    let errors = checked.stderr.split(separator: "\n").map(String.init)
    let count = checked.lines.count == 1 ? "the problem" : "the \(checked.lines.count) problems"
    #expect(
      errors == [
        "error: \(db) is damaged (\(count) listed above): restore a backup (such as one "
          + "'liststore backup' made), or recover what SQLite can still read, as SQL: "
          + "sqlite3 \(db) .recover > recovered.sql"
      ])
    if damaged == "schema" {
      #expect(
        checked.lines == [
          "sqlite: the schema cannot be read (database disk image is malformed), so no list can be read either"
        ])
    }
    // Reading the damaged pages fails (SQLite finds damage where it reads: an item
    // appended elsewhere in the file may still be written).
    let commands =
      [["show", "demo"], ["export", "demo"]]
      + (damaged == "schema" ? [["item", "add", "demo", "0", "x"]] : [])
    for command in commands {
      let result = try liststore(command, database: db)
      expectFailure(
        result, containing: "\(db) is damaged (database disk image is malformed)",
        "'liststore check' says where")
    }
    #expect(fileBytes(db) == before)
  }
}
