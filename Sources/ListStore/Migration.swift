/// One numbered schema migration, as found in the top-level `migrations/` folder.
struct Migration: Sendable {
  /// The file name, `NNNN_name.sql`; its number is the schema version it produces.
  var fileName: String
  /// The SQL the migration runs, inside one transaction.
  var sql: String
}
