// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "ListStore",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "ListStore", targets: ["ListStore"]),
    .library(name: "ListStoreTesting", targets: ["ListStoreTesting"]),
    .library(name: "Observable2D", targets: ["Observable2D"]),
    .library(name: "ReactiveCore", targets: ["ReactiveCore"]),
    .library(name: "SQLiteKit", targets: ["SQLiteKit"]),
    .library(name: "PostgreSQLKit", targets: ["PostgreSQLKit"]),
    .library(name: "ListStorePostgreSQL", targets: ["ListStorePostgreSQL"]),
    .library(name: "ListStorePostgreSQLTesting", targets: ["ListStorePostgreSQLTesting"]),
    .library(name: "ListStoreClient", targets: ["ListStoreClient"]),
    .library(name: "ListStoreClientTesting", targets: ["ListStoreClientTesting"]),
    .library(name: "CurlKit", targets: ["CurlKit"]),
    .executable(name: "liststore", targets: ["liststore"]),
  ],
  targets: [
    // The only C: Debian's libsqlite3-dev.
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    // SQLite wrapper: connections, statements, errors, transactions.
    .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
    // Debian's libpq-dev, for the PostgreSQL engine only: its headers, and no link to
    // libpq (no pkg-config, whose `-lpq` would add one). PostgreSQLKit loads libpq.so.5
    // when a PostgreSQL location is first used, so SQLite users need neither package.
    .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
    // libpq wrapper: connections, results, errors, transactions, COPY, LISTEN/NOTIFY.
    .target(name: "PostgreSQLKit", dependencies: ["CLibPQ"]),
    // Observables, subjects, disposables and operators.
    .target(name: "ReactiveCore"),
    // Sections of items, changesets, diff and the headless table view.
    .target(name: "Observable2D", dependencies: ["ReactiveCore"]),
    // Repository, migrations, ordering keys and the change feed.
    .target(
      name: "ListStore",
      dependencies: ["SQLiteKit", "Observable2D", "ReactiveCore"],
      plugins: ["EmbedMigrations"]
    ),
    // The `export` JSON reader and the `show` text and JSON writer, shared by the CLI and
    // ListStoreTesting's fixtures.
    .target(name: "ListStoreFormats", dependencies: ["ListStore"]),
    // Helpers for users' test targets (Swift Testing and XCTest): a temporary repository
    // per test, fixtures, and a changeset recorder with a deterministic `settle()`.
    .target(
      name: "ListStoreTesting", dependencies: ["ListStore", "ListStoreFormats", "ReactiveCore"]),
    // The PostgreSQL engine: `Repository(url:)`, its migrations, LISTEN-based wake-ups.
    .target(
      name: "ListStorePostgreSQL",
      dependencies: ["ListStore", "PostgreSQLKit", "ReactiveCore"],
      plugins: ["EmbedMigrations"]
    ),
    // ListStoreTesting for PostgreSQL (for test targets): a throwaway server the test
    // process starts itself, and a fresh database per test cloned from a migrated template.
    // Its own product, so that tests of SQLite alone never link libpq.
    .target(
      name: "ListStorePostgreSQLTesting",
      dependencies: [
        "ListStore", "ListStoreTesting", "ListStorePostgreSQL", "PostgreSQLKit", "ReactiveCore",
      ]),
    // libcurl's declarations, and no link to it: CurlKit loads libcurl.so.4 (which the
    // toolchain's FoundationNetworking needs anyway) when a program first speaks HTTP.
    .systemLibrary(name: "CLibCurl"),
    // An HTTP/1.1 client over libcurl: requests and streamed responses, blocking.
    .target(name: "CurlKit", dependencies: ["CLibCurl"]),
    // The Swift client of `liststore serve`: remote lists read, written and observed into
    // the same observable 2D array. Its own product, so that local users link no networking.
    .target(
      name: "ListStoreClient",
      dependencies: ["CurlKit", "ListStore", "ListStoreFormats", "Observable2D", "ReactiveCore"]),
    // ListStoreClient for test targets: a throwaway server the test starts in its process.
    // Its own product, so that SQLite-only tests link neither the server nor libcurl's.
    .target(name: "ListStoreClientTesting", dependencies: ["ListStore", "ListStoreServer"]),
    // The counters example: input/output view models over a stored list.
    .target(name: "Counters", dependencies: ["ReactiveCore", "ListStore"]),
    // libevent's declarations, and no link to it: ListStoreServer loads
    // libevent-2.1.so.7 when a server starts (no -dev package is needed to build).
    .systemLibrary(name: "CLibEvent"),
    // `liststore serve`: the HTTP API and change streams over libevent's evhttp.
    .target(
      name: "ListStoreServer",
      dependencies: ["CLibEvent", "ListStore", "ListStoreFormats", "Observable2D", "ReactiveCore"],
      plugins: ["EmbedOpenAPI"]),
    // The command table, argument parser, help and rendering of `liststore`.
    .target(
      name: "ListStoreCLI",
      dependencies: [
        "ListStore", "ListStoreFormats", "ListStorePostgreSQL", "ListStoreServer", "Counters",
        "ReactiveCore", "Observable2D", "ListStoreClient",
      ]),
    .executableTarget(name: "liststore", dependencies: ["ListStoreCLI"]),

    // Build-time: turns migrations/*.sql into Swift source compiled into ListStore.
    .executableTarget(name: "migration-embedder", path: "Plugins/MigrationEmbedder"),
    .plugin(
      name: "EmbedMigrations",
      capability: .buildTool(),
      dependencies: ["migration-embedder"]
    ),
    // Build-time: turns docs/openapi.json into Swift source compiled into ListStoreServer.
    .executableTarget(name: "document-embedder", path: "Plugins/DocumentEmbedder"),
    .plugin(
      name: "EmbedOpenAPI",
      capability: .buildTool(),
      dependencies: ["document-embedder"]
    ),

    // Workloads the reliability tests run in processes of their own, to kill or race them.
    .executableTarget(
      name: "liststore-stress", dependencies: ["ListStore", "ListStorePostgreSQL"],
      path: "Tests/Stress"),

    // The throwaway PostgreSQL server (from ListStorePostgreSQLTesting), the `.postgres`
    // trait, and threads and signals for the PostgreSQL tests.
    .target(
      name: "PostgresTestSupport",
      dependencies: ["PostgreSQLKit", "ListStorePostgreSQLTesting"],
      path: "Tests/PostgresTestSupport"
    ),
    // Shared helpers; `TestEngine` runs a contract test on SQLite and on PostgreSQL.
    .target(
      name: "TestSupport",
      dependencies: [
        "ListStore", "ListStorePostgreSQL", "SQLiteKit", "PostgreSQLKit", "PostgresTestSupport",
        "Observable2D", "ListStoreTesting", "ListStoreFormats",
      ],
      path: "Tests/TestSupport"
    ),
    .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "TestSupport"]),
    .testTarget(
      name: "PostgreSQLKitTests", dependencies: ["PostgreSQLKit", "PostgresTestSupport"]),
    .testTarget(name: "ReactiveCoreTests", dependencies: ["ReactiveCore"]),
    .testTarget(name: "Observable2DTests", dependencies: ["Observable2D", "ReactiveCore"]),
    .testTarget(
      name: "ListStoreTests",
      dependencies: [
        "ListStore", "ListStoreFormats", "SQLiteKit", "PostgreSQLKit", "PostgresTestSupport",
        "TestSupport",
      ]
    ),
    .testTarget(
      name: "ListStorePostgreSQLTests",
      dependencies: [
        "ListStore", "ListStorePostgreSQL", "PostgreSQLKit", "PostgresTestSupport", "TestSupport",
        "liststore",
      ]),
    .testTarget(
      name: "ReliabilityTests",
      dependencies: [
        "ListStore", "ListStorePostgreSQL", "SQLiteKit", "PostgreSQLKit", "PostgresTestSupport",
        "TestSupport", "liststore", "liststore-stress",
      ]),
    // ListStoreTesting used the way a user's test target uses it: only its public API.
    .testTarget(name: "ListStoreTestingTests", dependencies: ["ListStoreTesting", "ListStore"]),
    // ListStorePostgreSQLTesting used the same way: only its public API and ListStore's.
    .testTarget(
      name: "ListStorePostgreSQLTestingTests",
      dependencies: ["ListStorePostgreSQLTesting", "ListStoreTesting", "ListStore"]),
    // Every Swift block of README.md, compiled and run in a package of its own.
    .testTarget(name: "ReadmeTests"),
    .testTarget(name: "CountersTests", dependencies: ["Counters", "ReactiveCore", "TestSupport"]),
    // The Swift client against a server the tests start, and CurlKit.
    .testTarget(
      name: "ListStoreClientTests",
      dependencies: [
        "ListStoreClient", "ListStoreClientTesting", "CurlKit", "ListStore", "ListStoreServer",
        "TestSupport", "PostgresTestSupport",
      ]),
    // `liststore serve` as its clients use it.
    .testTarget(
      name: "ListStoreServerTests",
      dependencies: [
        "ListStore", "ListStoreServer", "PostgresTestSupport", "TestSupport", "liststore",
        "ListStoreClientTesting",
      ]),
    .testTarget(
      name: "ListStoreCLITests",
      dependencies: [
        "ListStoreCLI", "ListStoreFormats", "ListStore", "PostgreSQLKit", "PostgresTestSupport",
        "TestSupport", "liststore", "ListStoreClientTesting",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
