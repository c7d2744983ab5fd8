import Foundation
import ListStore
import ListStorePostgreSQL
import ListStorePostgreSQLTesting
import PostgreSQLKit
import TestSupport
import Testing

/// PostgreSQL stores `metadata` and `value` as SQLite does: text holding canonical JSON
/// (no white space between tokens; keys, numbers and strings as written), whoever
/// writes it, and compared as text by any client.
@Suite(.postgres) struct CanonicalJSONTests {
  /// JSON as a client may write it, and the text SQLite's `json()` stores for it.
  static let spellings: [(written: String, stored: String)] = [
    (#"{"name": "kiwi", "count": 3}"#, #"{"name":"kiwi","count":3}"#),
    (" [ 1 , 2.50e+3 , -0.0 ]\n", "[1,2.50e+3,-0.0]"),
    (#"{ "a b" : "c \" d" , "e\\" : "\u0041 " }"#, #"{"a b":"c \" d","e\\":"\u0041 "}"#),
    ("\t\"  spaced  \"\r\n", #""  spaced  ""#),
    (#"{"z":1,"a":{"y":[],"b":{}}}"#, #"{"z":1,"a":{"y":[],"b":{}}}"#),
  ]

  /// The migrations of `migrations/postgresql/` up to `version`, as files.
  static func migrationSQL(through version: Int) throws -> [String] {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("migrations/postgresql")
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
      .filter { (Int($0.prefix(4)) ?? .max) <= version }
    #expect(names.count == version)
    return try names.map {
      try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
    }
  }

  @Test func aDatabaseOfSchemaTwoBecomesCanonicalTextWithNothingLost() throws {
    let server = try TestPostgresServer.shared()
    let location = try server.makeDatabase()
    defer {
      if let name = location.split(separator: " ").first(where: { $0.hasPrefix("dbname=") }) {
        try? server.dropDatabase(String(name.dropFirst("dbname=".count)))
      }
    }
    // A database as version 2 left it, written by another client with white space.
    let client = try PGConnection(location)
    for sql in try Self.migrationSQL(through: 2) { try client.execute(sql) }
    try client.execute(
      "INSERT INTO liststore_schema(id, application, version) VALUES (1, 'LSTO', 2)")
    try client.execute(
      """
      INSERT INTO lists(name) VALUES ('old');
      INSERT INTO sections(list_id, position, metadata)
        VALUES (1, 'a0', '{ "header" : "Old" , "footer" : null }');
      """)
    for (index, spelling) in Self.spellings.enumerated() {
      _ = try client.run(
        "INSERT INTO items(section_id, position, value) VALUES (1, $1, $2::json)",
        "a\(index + 1)", spelling.written)
    }
    let seqBefore = try client.query("SELECT max(seq) FROM changes").int64(row: 0, column: 0)

    let repository = try Repository.open(location)
    let list = try repository.list("old", metadata: RawJSON.self, item: RawJSON.self)
    let sections = try list.sections()
    #expect(sections.map(\.id) == [1])
    #expect(sections.first?.metadata.text == #"{"header":"Old","footer":null}"#)
    #expect(sections.first.map { Array($0.items.ids) } == Array(1...Int64(Self.spellings.count)))
    #expect(sections.first.map { $0.items.map(\.text) } == Self.spellings.map(\.stored))
    let types = try client.query(
      """
      SELECT table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns
      WHERE (table_name, column_name) IN (('items', 'value'), ('sections', 'metadata'))
      ORDER BY 1
      """)
    #expect(
      (0..<types.rowCount).map { types.string(row: $0, column: 0) } == [
        "items.value text", "sections.metadata text",
      ])
    // Only the rows whose text changed were rewritten, and logged as updates.
    let logged = try client.query(
      "SELECT kind, op, row_id FROM changes WHERE seq > $1 ORDER BY seq", seqBefore)
    let rewritten = Self.spellings.indices.filter {
      Self.spellings[$0].written != Self.spellings[$0].stored
    }
    #expect(
      (0..<logged.rowCount).map { try? logged.int64(row: $0, column: 2) }
        == [1] + rewritten.map { Int64($0 + 1) })
  }

  @Test func everyClientsWritesAreStoredCanonicalAndBadJSONIsRefused() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    expectSuccess(try liststore(["list", "create", "l"], database: database.location))
    expectSuccess(try liststore(["section", "add", "l", "S"], database: database.location))
    let client = try PGConnection(database.location)
    for spelling in Self.spellings {
      expectSuccess(
        try liststore(
          ["item", "add", "l", "0", spelling.written, "--json"], database: database.location))
    }
    for (index, spelling) in Self.spellings.enumerated() {
      _ = try client.run(
        "INSERT INTO items(section_id, position, value) VALUES (1, $1, $2)",
        "a\(["V", "W", "X", "Y", "Z"][index])", spelling.written)
    }
    let values = try client.query("SELECT value FROM items ORDER BY id")
    #expect(
      (0..<values.rowCount).map { values.string(row: $0, column: 0) }
        == Self.spellings.map(\.stored) + Self.spellings.map(\.stored))
    _ = try client.run("UPDATE sections SET metadata = $1", #"{ "header" : "T" }"#)
    #expect(
      try client.query("SELECT metadata FROM sections").string(row: 0, column: 0)
        == #"{"header":"T"}"#)
    // A refused write changes no row (a failed insert may use up an id, as in any
    // PostgreSQL table).
    let before = try database.contents(list: "l")
    for sql in [
      "INSERT INTO items(section_id, position, value) VALUES (1, 'c1', 'not json')",
      "UPDATE items SET value = '{\"a\": }' WHERE id = 1",
      "UPDATE sections SET metadata = '[1,' WHERE id = 1",
      "INSERT INTO items(section_id, position, value) VALUES (1, 'c0', '1')",
    ] {
      #expect(throws: PGError.self, "\(sql)") { try client.execute(sql) }
    }
    #expect(try database.contents(list: "l") == before)
  }

  /// The README's psql line, run as written by a shell on a list the README's commands
  /// made.
  @Test func theReadmesPsqlExampleWorksAsWritten() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let readme = try String(
      contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
          "README.md"), encoding: .utf8)
    let line = try #require(
      readme.split(separator: "\n").first { $0.hasPrefix(#"psql "$LISTSTORE_DB" -c"#) })
    expectSuccess(try liststore(["demo"], database: database.location))
    expectSuccess(try liststore(["item", "add", "demo", "0", "Rome"], database: database.location))
    let result = try run(
      "/bin/sh", ["-c", String(line)], environment: ["LISTSTORE_DB": database.location])
    expectSuccess(result)
    #expect(result.stdout == "UPDATE 1\n")
    #expect(
      try liststore(["show", "demo"], database: database.location).lines.contains {
        $0.hasSuffix("  Roma")
      })
  }
}
