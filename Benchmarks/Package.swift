// swift-tools-version: 6.0
import PackageDescription

// The benchmark harness of issues 7 and 11: `swift run -c release --package-path Benchmarks
// liststore-bench [--quick] [--json FILE] [--only B1,B3]`. See BENCHMARKS.md.
let package = Package(
  name: "ListStoreBenchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    // Named explicitly: a path dependency is otherwise named after its folder.
    .package(name: "ListStore", path: "..")
  ],
  targets: [
    // Raw SQLite for the baselines; not named CSQLite, which is the root's module.
    .systemLibrary(
      name: "CSQLiteBench",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    // Raw libpq for the PostgreSQL baselines (B9, B10); not named CLibPQ, the root's module.
    .systemLibrary(
      name: "CLibPQBench",
      pkgConfig: "libpq",
      providers: [.apt(["libpq-dev"])]
    ),
    // Linux's epoll (B17's client reads its streams on one thread).
    .systemLibrary(name: "CEpollBench"),
    .executableTarget(
      name: "liststore-bench",
      dependencies: [
        "CEpollBench",
        "CSQLiteBench",
        "CLibPQBench",
        .product(name: "ListStore", package: "ListStore"),
        .product(name: "ListStorePostgreSQL", package: "ListStore"),
        // The throwaway server B8–B10 start themselves.
        .product(name: "ListStorePostgreSQLTesting", package: "ListStore"),
        .product(name: "PostgreSQLKit", package: "ListStore"),
        .product(name: "Observable2D", package: "ListStore"),
        .product(name: "ReactiveCore", package: "ListStore"),
        // B20 and B21: the clients of `liststore serve`.
        .product(name: "ListStoreClient", package: "ListStore"),
        .product(name: "ListStoreClientTesting", package: "ListStore"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
