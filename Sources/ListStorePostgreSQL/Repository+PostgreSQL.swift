public import ListStore
import PostgreSQLKit

extension Repository {
  /// Opens a ListStore database on a PostgreSQL server, creating ListStore's tables in
  /// an empty database and migrating an older schema.
  ///
  /// ```swift
  /// let repository = try Repository(url: "postgresql://app@db.internal/lists")
  /// let cities = try repository.list("cities", metadata: SectionMetadata.self, item: City.self)
  /// ```
  ///
  /// Everything else is as on SQLite: the same lists, the same API, the same
  /// changesets, delivered to observers in every process on every host. The password
  /// never appears in ``path``, in errors or in logs.
  /// - Parameters:
  ///   - url: A libpq connection string: `postgresql://user:password@host:port/db`,
  ///     `postgres://…`, or keywords (`host=… dbname=… user=…`).
  ///   - busyTimeout: How long a write waits for another writer before failing.
  ///   - readOnly: Never write (every transaction is read-only).
  ///   - createIfMissing: Whether ListStore's tables may be created in an empty
  ///     database (a missing database is never created).
  /// - Throws: ``ListStoreError`` in users' words: ``ListStoreError/serverUnreachable(location:reason:)``,
  ///   ``ListStoreError/authenticationFailed(location:)``,
  ///   ``ListStoreError/databaseNotFound(path:)``, ``ListStoreError/permissionDenied(location:detail:)``,
  ///   ``ListStoreError/schemaTooNew(path:version:supported:)``,
  ///   ``ListStoreError/notAListStoreDatabase(path:)``. Nothing is changed then.
  public convenience init(
    url: String, busyTimeout: Duration = .seconds(10), readOnly: Bool = false,
    createIfMissing: Bool = true
  ) throws(ListStoreError) {
    try self.init(
      engine: PostgreSQLEngine(connectionString: url), busyTimeout: busyTimeout,
      readOnly: readOnly, createIfMissing: createIfMissing)
  }

  /// Whether `location` names a PostgreSQL database (a `postgresql://` or
  /// `postgres://` URL, or a libpq keyword string) rather than a SQLite file.
  /// - Parameter location: What the user gave, as `--db` or `$LISTSTORE_DB`.
  /// - Returns: `true` for PostgreSQL.
  public static func isPostgreSQLLocation(_ location: String) -> Bool {
    if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") { return true }
    let keywords = ["host=", "hostaddr=", "dbname=", "user=", "port=", "service="]
    return location.split(separator: " ").contains { part in
      keywords.contains { part.hasPrefix($0) }
    }
  }

  /// Opens the database `location` names: a PostgreSQL one (see
  /// ``isPostgreSQLLocation(_:)``) with ``init(url:busyTimeout:readOnly:createIfMissing:)``,
  /// else a SQLite file with ``init(path:busyTimeout:readOnly:createIfMissing:)``.
  /// - Parameters:
  ///   - location: A file path or a PostgreSQL connection string.
  ///   - busyTimeout: How long a write waits for another writer.
  ///   - readOnly: Never write.
  ///   - createIfMissing: Whether a missing file (or empty database) may be set up.
  /// - Returns: The repository.
  /// - Throws: ``ListStoreError``; ``ListStoreError/notSupported(_:)`` for a location that
  ///   looks like an address of a kind ListStore does not take (``locationProblem(_:)``).
  public static func open(
    _ location: String, busyTimeout: Duration = .seconds(10), readOnly: Bool = false,
    createIfMissing: Bool = true
  ) throws(ListStoreError) -> Repository {
    if let problem = locationProblem(location) { throw .notSupported(problem) }
    if isPostgreSQLLocation(location) {
      return try Repository(
        url: location, busyTimeout: busyTimeout, readOnly: readOnly,
        createIfMissing: createIfMissing)
    }
    return try Repository(
      path: location, busyTimeout: busyTimeout, readOnly: readOnly,
      createIfMissing: createIfMissing)
  }
}
