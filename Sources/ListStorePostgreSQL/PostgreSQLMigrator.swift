import ListStore
import PostgreSQLKit

/// One numbered schema migration, as found in `migrations/postgresql/`.
struct Migration: Sendable {
  /// The file name, `NNNN_name.sql`; its number is the schema version it produces.
  var fileName: String
  /// The SQL the migration runs, inside one transaction.
  var sql: String
}

/// Brings a PostgreSQL database to the current ListStore schema with the embedded
/// migrations, or refuses it: a database with other tables and no ListStore schema, or
/// one whose schema is newer than this program, is left as it is.
enum PostgreSQLMigrator {
  /// The value of `liststore_schema.application`: "LSTO".
  static let application = "LSTO"
  /// The lock that makes concurrent openers migrate one at a time.
  static let migrationLock: Int64 = 4_992_855_103_141_254_224

  /// The migrations compiled into this program, sorted by number.
  static let migrations = MigrationOrder.ordered(Migration.embedded.map { ($0.fileName, $0.sql) })

  /// The schema version this program writes.
  static var latestVersion: Int { migrations.last?.version ?? 0 }

  /// Checks the schema of the database `connection` is on, and migrates it unless
  /// `readOnly`.
  static func migrate(
    _ connection: PGConnection, location: String, readOnly: Bool, createIfMissing: Bool,
    busyTimeout: Duration
  ) throws(ListStoreError) {
    do {
      let version = try schemaVersion(connection, location: location)
      guard version < latestVersion else { return }
      if readOnly { throw ListStoreError.readOnly(path: location) }
      if version == 0 && !createIfMissing {
        throw ListStoreError.server(
          location: location,
          message:
            "this database holds no ListStore lists yet; create one with 'liststore list create NAME'"
        )
      }
      for migration in migrations where migration.version > version {
        try connection.transaction {
          try connection.query("SELECT pg_advisory_xact_lock($1)", migrationLock)
          // Another opener may have migrated meanwhile.
          guard try schemaVersion(connection, location: location) < migration.version else {
            return
          }
          try connection.execute(migration.sql)
          try connection.run(
            """
            INSERT INTO liststore_schema(id, application, version) VALUES (1, $1, $2)
            ON CONFLICT (id) DO UPDATE SET version = excluded.version
            """, application, migration.version)
        }
      }
    } catch let error as ListStoreError {
      throw error
    } catch let error as PGError {
      throw PostgreSQLEngine.userError(error, location: location, busyTimeout: busyTimeout)
    } catch {
      throw .server(location: location, message: "\(error)")
    }
  }

  private static func otherProgramsDatabase(_ location: String) -> ListStoreError {
    .server(
      location: location,
      message:
        "this database holds another program's tables, not ListStore's; choose an empty database or a ListStore one with --db"
    )
  }

  /// The schema version of the database; 0 for a database without any table of its
  /// own. Throws for one that holds other tables, or a newer schema.
  private static func schemaVersion(_ connection: PGConnection, location: String) throws -> Int {
    // One statement, so one snapshot: two would let another opener's first migration
    // commit between them, and its tables look like another program's.
    let counts = try connection.query(
      """
      SELECT count(*) FILTER (WHERE tablename = 'liststore_schema'), count(*)
      FROM pg_tables WHERE schemaname = current_schema()
      """)
    guard try counts.int(row: 0, column: 0) > 0 else {
      if try counts.int(row: 0, column: 1) > 0 { throw otherProgramsDatabase(location) }
      return 0
    }
    let result = try connection.query(
      "SELECT application, version FROM liststore_schema WHERE id = 1")
    guard result.rowCount == 1, result.string(row: 0, column: 0) == application else {
      throw otherProgramsDatabase(location)
    }
    let version = try result.int(row: 0, column: 1)
    if version > latestVersion {
      throw ListStoreError.schemaTooNew(path: location, version: version, supported: latestVersion)
    }
    return version
  }
}
