import Foundation
import ListStoreTesting
public import PostgreSQLKit
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension TestPostgresServer {
  // MARK: - Connections, databases and roles

  /// A keyword/value connection string for a database over the Unix socket.
  /// - Parameters:
  ///   - database: The database's name.
  ///   - user: The role to connect as (trusted: no password).
  /// - Returns: `host=FOLDER port=PORT dbname=DATABASE user=USER`.
  public func connectionString(database: String = "postgres", user: String = superuser)
    -> String
  {
    "host=\(Self.quoted(folder)) port=\(port) dbname=\(Self.quoted(database)) "
      + "user=\(Self.quoted(user))"
  }

  /// A keyword/value connection string over TCP on 127.0.0.1, where the password is
  /// checked (needs ``Options/acceptsPasswordsOverTCP``).
  /// - Parameters:
  ///   - database: The database's name.
  ///   - user: The role to connect as.
  ///   - password: The password to offer.
  ///   - host: The server's address, as its clients reach it.
  /// - Returns: `host=127.0.0.1 port=PORT dbname=DATABASE user=USER password=PASSWORD`.
  public func tcpConnectionString(
    database: String, user: String, password: String, host: String = "127.0.0.1"
  ) -> String {
    precondition(
      options.acceptsPasswordsOverTCP, "the server was started without acceptsPasswordsOverTCP")
    return "host=\(host) port=\(port) dbname=\(Self.quoted(database)) "
      + "user=\(Self.quoted(user)) password=\(Self.quoted(password))"
  }

  /// `value` quoted for a keyword/value connection string when it needs to be.
  static func quoted(_ value: String) -> String {
    let plain = !value.isEmpty && !value.contains { $0.isWhitespace || $0 == "'" || $0 == "\\" }
    guard !plain else { return value }
    return "'" + value.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
  }

  /// Runs a statement as the superuser on the `postgres` database, such as
  /// `SELECT pg_terminate_backend($1)`, on a connection of its own.
  /// - Parameters:
  ///   - sql: A single SQL statement with `$n` parameters.
  ///   - values: One value per parameter.
  /// - Returns: Its rows.
  /// - Throws: ``PGError`` from the server, or ``Failure`` when the server was stopped.
  @discardableResult
  public func superuserQuery(_ sql: String, _ values: any PGBindable...) throws -> PGResult {
    try adminConnection().query(sql, parameters: values)
  }

  /// A new connection to the `postgres` database as the superuser. Each call has its
  /// own, so that databases are created in parallel (several `CREATE DATABASE …
  /// TEMPLATE t` may run at once; only a session connected to `t` stops them).
  private func adminConnection() throws -> PGConnection {
    guard !state.withLock({ $0.isStopped }) else { throw Failure("the server was stopped") }
    return try PGConnection(connectionString())
  }

  /// A name not used before in this process, such as `db_12`.
  /// - Parameter prefix: The name's start.
  /// - Returns: The name.
  public func uniqueName(_ prefix: String) -> String {
    "\(prefix)_\(counter.add(1, ordering: .relaxed).newValue)"
  }

  /// Creates a template database once per process and name: an empty database that
  /// `prepare` fills (such as by migrating it), then marked as a template that accepts
  /// no connections, so that cloning it never fails for a session left on it.
  /// - Parameters:
  ///   - name: The template's name; a later call with the same name only returns it.
  ///   - icuLocale: An ICU locale (such as `en-US`) for its default collation, or `nil`
  ///     for the server's default (`C.UTF-8`, byte order).
  ///   - prepare: Fills the template through a connection to it.
  /// - Returns: `name`.
  /// - Throws: What `prepare` throws (the template is then dropped, so a later call
  ///   tries again), or ``PGError`` from the server.
  @discardableResult
  public func makeTemplate(
    _ name: String, icuLocale: String? = nil, prepare: (PGConnection) throws -> Void
  ) throws -> String {
    try state.withLock { state in
      if state.templates.contains(name) { return name }
      guard !state.isStopped else { throw Failure("the server was stopped") }
      let admin = try PGConnection(connectionString())
      try admin.execute(Self.createDatabase(name, template: nil, icuLocale: icuLocale))
      do {
        let connection = try PGConnection(connectionString(database: name))
        try prepare(connection)
        connection.close()
        try admin.execute(
          "ALTER DATABASE \(PGConnection.quoteIdentifier(name)) "
            + "WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
      } catch {
        try? admin.execute("DROP DATABASE IF EXISTS \(PGConnection.quoteIdentifier(name))")
        throw error
      }
      state.templates.insert(name)
      return name
    }
  }

  /// Creates a fresh database, cloned from a template, and returns a connection string
  /// for it (keyword form, over the Unix socket, as the superuser).
  /// - Parameters:
  ///   - template: The database to clone, such as one from ``makeTemplate(_:icuLocale:prepare:)``;
  ///     `nil` for an empty database (from `template1`, or `template0` with an ICU locale).
  ///   - icuLocale: An ICU locale, such as `en-US`, for the database's default collation
  ///     (`LOCALE_PROVIDER icu … LOCALE 'C.UTF-8'`); the template must then be `template0`
  ///     (`nil`) or have the same locale.
  /// - Returns: `host=… port=… dbname=… user=postgres`.
  /// - Throws: ``PGError`` from the server.
  public func makeDatabase(template: String? = nil, icuLocale: String? = nil) throws -> String {
    try makeNamedDatabase(template: template, icuLocale: icuLocale).connectionString
  }

  /// ``makeDatabase(template:icuLocale:)``, with the new database's name.
  package func makeNamedDatabase(template: String?, icuLocale: String?) throws -> (
    name: String, connectionString: String
  ) {
    let name = uniqueName("db")
    let sql = Self.createDatabase(name, template: template, icuLocale: icuLocale)
    let admin = try adminConnection()
    // CREATE DATABASE … TEMPLATE fails (55006) while a session is connected to the
    // template; templates made here accept none, and the server itself waits up to five
    // seconds for stray ones, so only a few attempts are worth making.
    var attempt = 1
    while true {
      do {
        try admin.execute(sql)
        break
      } catch let error as PGError where error.sqlState == "55006" && attempt < 3 {
        attempt += 1
      }
    }
    return (name, connectionString(database: name))
  }

  private static func createDatabase(_ name: String, template: String?, icuLocale: String?)
    -> String
  {
    var sql = "CREATE DATABASE \(PGConnection.quoteIdentifier(name))"
    if let icuLocale {
      sql +=
        " LOCALE_PROVIDER icu ICU_LOCALE \(PGConnection.quoteLiteral(icuLocale))"
        + " LOCALE 'C.UTF-8'"
      sql += " TEMPLATE \(PGConnection.quoteIdentifier(template ?? "template0"))"
    } else if let template {
      sql += " TEMPLATE \(PGConnection.quoteIdentifier(template))"
    }
    return sql
  }

  /// Drops a database, ending its sessions first.
  /// - Parameter name: The database's name.
  /// - Throws: ``PGError`` from the server.
  public func dropDatabase(_ name: String) throws {
    let admin = try adminConnection()
    // `WITH (FORCE)` alone ends the sessions too, but then checks for them every 100 ms,
    // which made it most of what a test's database cost (109 ms of 129 here): end them
    // here and watch them go, then drop (forcing out any session that came meanwhile).
    let sessions = "FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()"
    try admin.query("SELECT pg_terminate_backend(pid) " + sessions, name)
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(5)
    while try admin.scalarInt64("SELECT count(*) " + sessions, name) ?? 0 > 0,
      clock.now < deadline
    {
      usleep(500)
    }
    try admin.execute("DROP DATABASE IF EXISTS \(PGConnection.quoteIdentifier(name)) WITH (FORCE)")
  }

  /// Creates a role with a name not used before in this process.
  /// - Parameters:
  ///   - prefix: The start of the role's name.
  ///   - password: Its password (checked over TCP), or `nil` for none.
  ///   - attributes: More of `CREATE ROLE`'s options, such as `CONNECTION LIMIT 1`.
  /// - Returns: The role's name.
  /// - Throws: ``PGError`` from the server.
  public func createRole(
    _ prefix: String = "role", password: String? = nil, attributes: String = ""
  )
    throws -> String
  {
    let name = uniqueName(prefix)
    var sql = "CREATE ROLE \(PGConnection.quoteIdentifier(name)) LOGIN"
    if let password { sql += " PASSWORD \(PGConnection.quoteLiteral(password))" }
    if !attributes.isEmpty { sql += " " + attributes }
    do {
      try superuserQuery(sql)
    } catch var error as PGError {
      // The statement holds the password: keep it out of the error.
      error.sql = password == nil ? sql : "CREATE ROLE \(name) … PASSWORD ***"
      throw error
    }
    return name
  }
}
