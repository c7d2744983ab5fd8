import Foundation
import ListStore
import ListStorePostgreSQL
import ListStoreTesting
import PostgreSQLKit
import PostgresTestSupport
import SQLiteKit
import Testing

/// The storage engines the contract tests run on: the same test, parameterized.
///
/// ```swift
/// @Test(arguments: TestEngine.tested)
/// func observersConverge(engine: TestEngine) throws {
///   let database = try engine.makeDatabase()
///   defer { database.remove() }
///   let repository = try database.openRepository()
///   try database.foreign().execute("UPDATE items SET value = '1'")
/// }
/// ```
public enum TestEngine: String, CaseIterable, Sendable, CustomTestStringConvertible {
  /// A SQLite file in a temporary folder.
  case sqlite
  /// A database on the throwaway PostgreSQL server, cloned from a migrated template.
  case postgresql

  /// The engines to test here: SQLite always; PostgreSQL where its server programs
  /// are installed, or where `LISTSTORE_REQUIRE_POSTGRES=1` makes their absence a
  /// failure. Where PostgreSQL is skipped, the skip is counted (the list at exit shows
  /// it with the install command).
  public static var tested: [TestEngine] {
    let runs = Prerequisites.check(
      TestPostgresServer.unavailableReason == nil, required: TestPostgresServer.isRequired,
      reason: "tests on both engines ran on SQLite alone: " + TestPostgresServer.skipComment)
    return runs ? [.sqlite, .postgresql] : [.sqlite]
  }

  /// The engine's name, in test reports.
  public var testDescription: String { rawValue }

  /// Where no ListStore database is yet: a path in a new folder (SQLite), or an empty
  /// database (PostgreSQL).
  /// - Returns: The location; ``TestDatabase/remove()`` removes what was made there.
  /// - Throws: When the server cannot be started or the database made.
  public func makeEmptyLocation() throws -> TestDatabase {
    switch self {
    case .sqlite:
      let folder = TemporaryDirectory()
      return TestDatabase(
        engine: self, location: folder.file("new/lists.sqlite"), folder: folder, name: nil,
        server: nil)
    case .postgresql:
      return try TestDatabase.makeEmpty(on: try TestPostgresServer.shared())
    }
  }

  /// A fresh, empty ListStore database (schema applied).
  /// - Parameter icuLocale: For PostgreSQL, an ICU locale (such as `en-US`) for the
  ///   database's default collation; ignored by SQLite.
  /// - Returns: The database; call ``TestDatabase/remove()`` when done.
  /// - Throws: When the server cannot be started or the database made.
  public func makeDatabase(icuLocale: String? = nil) throws -> TestDatabase {
    switch self {
    case .sqlite:
      let folder = TemporaryDirectory()
      let path = folder.file("db.sqlite")
      // Made and migrated now, as PostgreSQL's is.
      _ = try Repository(path: path)
      return TestDatabase(engine: self, location: path, folder: folder, name: nil, server: nil)
    case .postgresql:
      let server = try TestPostgresServer.shared()
      return try TestDatabase.make(on: server, icuLocale: icuLocale)
    }
  }
}

/// One fresh database of a ``TestEngine``: where it is, how to open it, and a foreign
/// client's raw connection to it.
public final class TestDatabase: Sendable {
  /// Its engine.
  public let engine: TestEngine
  /// What `--db` takes: the SQLite file, or the PostgreSQL connection string.
  public let location: String
  /// A folder for the test's other files (and the SQLite database).
  public let folder: TemporaryDirectory
  /// The PostgreSQL database's name.
  public let name: String?
  /// The PostgreSQL server.
  public let server: TestPostgresServer?

  init(
    engine: TestEngine, location: String, folder: TemporaryDirectory, name: String?,
    server: TestPostgresServer?
  ) {
    self.engine = engine
    self.location = location
    self.folder = folder
    self.name = name
    self.server = server
  }

  /// A fresh ListStore database on `server`, cloned from a template migrated once per
  /// server and locale (``TestPostgresServer/makeListStoreDatabase(icuLocale:)``).
  /// - Parameters:
  ///   - server: The server; the shared one, or one of the test's own.
  ///   - icuLocale: An ICU locale for the database's default collation.
  /// - Returns: The database.
  /// - Throws: ``PGError`` or ``TestPostgresServer/Failure`` when the database cannot be made.
  public static func make(on server: TestPostgresServer, icuLocale: String? = nil) throws
    -> TestDatabase
  {
    let database = try server.makeListStoreDatabase(icuLocale: icuLocale)
    return TestDatabase(
      engine: .postgresql, location: database.connectionString, folder: TemporaryDirectory(),
      name: database.name, server: server)
  }

  /// An empty PostgreSQL database on `server`, without ListStore's tables (dropped by
  /// ``remove()`` like the others).
  /// - Parameter server: The server.
  /// - Returns: The database.
  /// - Throws: ``PGError`` from the server.
  public static func makeEmpty(on server: TestPostgresServer) throws -> TestDatabase {
    let database = try server.makeNamedDatabase(template: nil, icuLocale: nil)
    return TestDatabase(
      engine: .postgresql, location: database.connectionString, folder: TemporaryDirectory(),
      name: database.name, server: server)
  }

  /// Opens a repository on it, as an application would.
  /// - Parameter busyTimeout: How long a write waits for another writer.
  /// - Returns: The repository.
  /// - Throws: ``ListStoreError`` when it cannot be opened.
  public func openRepository(busyTimeout: Duration = .seconds(10)) throws(ListStoreError)
    -> Repository
  {
    try Repository.open(location, busyTimeout: busyTimeout)
  }

  /// `location` with `application_name` set (PostgreSQL), so that the test can find
  /// the sessions of a process in `pg_stat_activity`; the plain location for SQLite.
  /// - Parameter applicationName: The name.
  /// - Returns: The connection string or path.
  public func location(applicationName: String) -> String {
    engine == .postgresql ? location + " application_name=\(applicationName)" : location
  }

  /// A foreign client's connection: SQLiteKit's `Connection` (foreign keys on), or a
  /// libpq connection — not ListStore's.
  /// - Returns: The connection.
  public func foreign() throws -> ForeignConnection {
    switch engine {
    case .sqlite:
      let db = try Connection(path: location)
      try db.execute("PRAGMA foreign_keys = ON")
      return .sqlite(db)
    case .postgresql:
      return .postgresql(try PGConnection(location))
    }
  }

  /// The list `name` as the test reads it itself, through a connection of its own;
  /// `nil` when there is no such list.
  /// - Parameter name: The list's name.
  /// - Returns: Its contents, ordered by the bytes of the position keys.
  /// - Throws: When the database cannot be read.
  public func contents(list name: String) throws -> ListContents? {
    try foreign().contents(list: name)
  }

  /// Runs a SQL script with the engine's shell, `sqlite3` or `psql`, as another program
  /// would: statements separated by semicolons, stopping at the first error.
  /// - Parameter script: The SQL.
  /// - Returns: How the shell ended.
  /// - Throws: When the shell cannot be started.
  public func shell(_ script: String) throws -> ProcessResult {
    switch engine {
    case .sqlite:
      return try run("/usr/bin/sqlite3", ["-bail", "-cmd", ".timeout 10000", location, script])
    case .postgresql:
      return try run(
        "/usr/bin/psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", location, "-c", script])
    }
  }

  /// Everything stored, in a form that changes with any change: the file's bytes for
  /// SQLite; every table's rows and every sequence's state for PostgreSQL.
  /// - Returns: The fingerprint.
  public func fingerprint() throws -> Data {
    switch engine {
    case .sqlite:
      return fileBytes(location) ?? Data()
    case .postgresql:
      let db = try PGConnection(location)
      var text = ""
      let tables = try db.query(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
      for row in 0..<tables.rowCount {
        let table = PGConnection.quoteIdentifier(tables.string(row: row, column: 0))
        let rows = try db.query(
          "SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '') FROM \(table) t")
        text += "\(table)\n\(rows.string(row: 0, column: 0))\n"
      }
      let sequences = try db.query(
        "SELECT sequencename, coalesce(last_value, 0) FROM pg_sequences ORDER BY sequencename")
      for row in 0..<sequences.rowCount {
        text +=
          "\(sequences.string(row: row, column: 0)) \(sequences.string(row: row, column: 1))\n"
      }
      return Data(text.utf8)
    }
  }

  /// Removes the database (dropping it, ending its sessions) and the test's folder.
  public func remove() {
    folder.remove()
    if let name, let server { try? server.dropDatabase(name) }
  }
}

/// A foreign client's raw connection to a ListStore database: how the tests write
/// what another program would, and read the database without ListStore.
public enum ForeignConnection {
  case sqlite(Connection)
  case postgresql(PGConnection)

  /// Runs a SQL script (one or more statements, no parameters).
  /// - Parameter sql: The script.
  /// - Throws: The engine's error for the first statement that fails.
  public func execute(_ sql: String) throws {
    switch self {
    case .sqlite(let db): try db.execute(sql)
    case .postgresql(let db): try db.execute(sql)
    }
  }

  /// The rows of one query, every column as text (`nil` for `NULL`).
  /// - Parameter sql: The query.
  /// - Returns: The rows.
  /// - Throws: The engine's error when the query fails.
  public func rows(_ sql: String) throws -> [[String?]] {
    switch self {
    case .sqlite(let db):
      let statement = try db.prepare(sql)
      var rows: [[String?]] = []
      try statement.forEachRow { row in
        rows.append((0..<Int32(row.columnCount)).map { row.optionalString(at: $0) })
      }
      return rows
    case .postgresql(let db):
      let result = try db.query(sql, parameters: [], prepared: false)
      return (0..<result.rowCount).map { row in
        (0..<result.columnCount).map { result.optionalString(row: row, column: $0) }
      }
    }
  }

  /// The first column of the first row as an integer.
  /// - Parameter sql: The query.
  /// - Returns: The integer, or `nil`.
  /// - Throws: The engine's error when the query fails.
  public func scalarInt64(_ sql: String) throws -> Int64? {
    guard let first = try rows(sql).first?.first, let text = first else { return nil }
    return Int64(text)
  }

  /// The list `name`, read with the test's own queries in one transaction; `nil` when
  /// there is no such list.
  /// - Parameter name: The list's name.
  /// - Returns: Its contents.
  /// - Throws: The engine's error when the database cannot be read.
  public func contents(list name: String) throws -> ListContents? {
    switch self {
    case .sqlite(let db): return try ListContents.read(list: name, db: db)
    case .postgresql(let db): return try ListContents.read(list: name, db: db)
    }
  }

  /// Closes the connection.
  public func close() {
    switch self {
    case .sqlite(let db): db.close()
    case .postgresql(let db): db.close()
    }
  }
}

extension ListContents {
  /// Reads list `name` through a libpq connection, in one repeatable-read transaction.
  /// Rows are ordered by the bytes of their position keys (`convert_to` gives `bytea`,
  /// which compares bytes), whatever collation the column or the database has.
  public static func read(list name: String, db: PGConnection) throws -> ListContents? {
    try db.transaction(.repeatableRead) {
      guard
        let listID = try db.scalarInt64("SELECT id FROM lists WHERE name = $1", name)
      else { return nil }
      var sections: [Section] = []
      let sectionRows = try db.query(
        "SELECT id, metadata::text FROM sections WHERE list_id = $1 "
          + "ORDER BY convert_to(position, 'UTF8')", listID)
      for row in 0..<sectionRows.rowCount {
        sections.append(
          Section(
            id: try sectionRows.int64(row: row, column: 0),
            metadata: sectionRows.string(row: row, column: 1), items: []))
      }
      for index in sections.indices {
        let itemRows = try db.query(
          "SELECT id, value::text FROM items WHERE section_id = $1 "
            + "ORDER BY convert_to(position, 'UTF8')", sections[index].id)
        for row in 0..<itemRows.rowCount {
          sections[index].items.append(
            Item(
              id: try itemRows.int64(row: row, column: 0),
              value: itemRows.string(row: row, column: 1)))
        }
      }
      return ListContents(sections: sections)
    }
  }
}
