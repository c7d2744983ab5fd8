import ListStore
import ListStorePostgreSQL
public import ListStoreTesting
import PostgreSQLKit

extension TemporaryRepository.Engine {
  /// PostgreSQL: a fresh database for each test on the throwaway server this test process
  /// starts on first use (``TestPostgresServer/shared(_:)``), cloned from a template
  /// migrated once per process, and dropped by `TemporaryRepository.remove()`.
  ///
  /// ```swift
  /// @Suite(.requiresPostgreSQL, .temporaryRepository(engine: .postgresql))
  /// struct CityNamesOnPostgreSQLTests {
  ///   @Test func followsWrites() throws {
  ///     let repository = try TemporaryRepository.required().repository
  ///     …
  ///   }
  /// }
  /// ```
  ///
  /// The repository connects over the server's Unix socket as its superuser; its
  /// `path` is the connection string, so `Repository.open(temporary.path)` is another
  /// connection to the same database, as another process would open it. Ids start at 1
  /// in every database. Tests with databases of their own run in parallel safely.
  public static var postgresql: Self {
    Self(provider: PostgreSQLTemplateProvider(server: nil))
  }

  /// PostgreSQL on a server of your own (one started with other options, such as
  /// ``TestPostgresServer/Options/acceptsPasswordsOverTCP``): a fresh database for each
  /// test, cloned from a template migrated once per server.
  /// - Parameter server: The server.
  /// - Returns: The engine.
  public static func postgresql(on server: TestPostgresServer) -> Self {
    Self(provider: PostgreSQLTemplateProvider(server: server))
  }
}

/// PostgreSQL databases cloned from a template migrated once per server.
struct PostgreSQLTemplateProvider: TemporaryDatabaseProvider {
  /// The server, or `nil` for the process's shared one, started when first needed.
  let server: TestPostgresServer?

  func makeDatabase(in folder: String) throws(ListStoreError) -> (
    repository: Repository, cleanup: @Sendable () -> Void
  ) {
    let server: TestPostgresServer
    let database: (name: String, connectionString: String)
    do {
      server = try self.server ?? TestPostgresServer.shared()
      database = try server.makeListStoreDatabase()
    } catch let error as ListStoreError {
      throw error
    } catch {
      throw .cannotOpen(path: "a throwaway PostgreSQL server", reason: "\(error)")
    }
    do {
      let repository = try Repository(url: database.connectionString, createIfMissing: false)
      return (repository, { try? server.dropDatabase(database.name) })
    } catch {
      try? server.dropDatabase(database.name)
      throw error
    }
  }
}

extension TestPostgresServer {
  /// The template database of empty ListStore databases on this server: made and
  /// migrated by ListStore itself on first use (once per server and locale), then
  /// cloned by ``makeListStoreDatabase(icuLocale:)``.
  /// - Parameter icuLocale: An ICU locale (such as `en-US`) for the default collation
  ///   of the template and its clones, or `nil` for the server's default.
  /// - Returns: The template's name.
  /// - Throws: `ListStoreError` when ListStore cannot migrate it, `PGError` from the
  ///   server, or ``Failure`` when the server was stopped.
  public func listStoreTemplate(icuLocale: String? = nil) throws -> String {
    let name =
      "liststore_template"
      + (icuLocale.map { "_icu_" + $0 } ?? "").replacing("-", with: "_").lowercased()
    return try makeTemplate(name, icuLocale: icuLocale) { _ in
      // ListStore's own migrations; the repository's connections close when it goes.
      _ = try Repository(url: connectionString(database: name))
    }
  }

  /// A fresh, empty ListStore database, cloned from ``listStoreTemplate(icuLocale:)``:
  /// the cost of a `CREATE DATABASE … TEMPLATE`, not of running the migrations.
  /// - Parameter icuLocale: An ICU locale for its default collation, or `nil`.
  /// - Returns: The database's name (for ``dropDatabase(_:)``) and a connection string
  ///   for it (over the Unix socket, as the superuser).
  /// - Throws: As ``listStoreTemplate(icuLocale:)``.
  public func makeListStoreDatabase(icuLocale: String? = nil) throws -> (
    name: String, connectionString: String
  ) {
    try makeNamedDatabase(template: listStoreTemplate(icuLocale: icuLocale), icuLocale: icuLocale)
  }
}
