/// One numbered schema migration, as found in the top-level `migrations/` folder.
struct Migration: Sendable {
  /// The file name, `NNNN_name.sql`; its number is the schema version it produces.
  var fileName: String
  /// The SQL the migration runs, inside one transaction.
  var sql: String
}

/// Numbered migrations in the order they are applied, whatever the engine.
package enum MigrationOrder {
  /// The migrations given as file names and SQL, numbered by the digits that begin each
  /// file name (files without them are left out) and sorted by number.
  /// - Parameter files: The embedded migration files.
  /// - Returns: Each migration's version and SQL, in order.
  package static func ordered(_ files: [(fileName: String, sql: String)]) -> [(
    version: Int, sql: String
  )] {
    files.compactMap { file in
      guard let number = Int(file.fileName.prefix { $0.isNumber }) else { return nil }
      return (number, file.sql)
    }.sorted { $0.version < $1.version }
  }
}
