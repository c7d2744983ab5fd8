public import Dispatch
import Foundation
public import ListStore
import ReactiveCore

/// A repository for one test: a real ListStore database of its own, made fresh for the
/// test and removed by ``remove()``.
///
/// With the default ``Engine/sqlite`` engine it is a SQLite file in a new temporary folder,
/// copied from a template database that is migrated once per test process, so that a test
/// pays for a file copy rather than for the migrations. It is the real store — WAL, the
/// change feed, other connections and other processes all behave as in production — so
/// what passes here passes there.
///
/// In Swift Testing, the ``Testing/Trait/temporaryRepository`` trait makes one for each
/// test and puts it in ``current``; in XCTest, `makeTemporaryRepository()` makes one that
/// the test case removes in its tear-down. Made directly, remove it yourself:
///
/// ```swift
/// let temporary = try TemporaryRepository()
/// defer { temporary.remove() }
/// let cities = try temporary.repository.createList(
///   "cities", metadata: SectionMetadata.self, item: String.self)
/// ```
///
/// Each temporary repository is independent of every other, so tests that each use their
/// own may run in parallel.
public final class TemporaryRepository: Sendable {
  /// Where a temporary repository's database comes from: ``sqlite`` here, and
  /// `.postgresql` in the product `ListStorePostgreSQLTesting` (a database of its own for
  /// each test on a throwaway PostgreSQL server, cloned from a migrated template with
  /// `CREATE DATABASE … TEMPLATE …` and dropped by ``TemporaryRepository/remove()``), which
  /// is separate so that tests of SQLite alone never link libpq.
  public struct Engine: Sendable {
    let provider: any TemporaryDatabaseProvider

    /// An engine whose databases `provider` makes.
    package init(provider: any TemporaryDatabaseProvider) {
      self.provider = provider
    }

    /// SQLite: a file in a new temporary folder, copied from a template database
    /// migrated once per process.
    public static var sqlite: Engine { Engine(provider: SQLiteTemplateProvider()) }
  }

  /// The repository.
  public let repository: Repository
  /// A folder of the test's own, removed with the repository; the SQLite engine keeps
  /// the database in it, and a test may put other files there.
  public let folder: String
  private let cleanup: @Sendable () -> Void

  /// The repository of the running test, set by the ``Testing/Trait/temporaryRepository``
  /// trait for the test's task and every task it starts; `nil` outside such a test.
  @TaskLocal public static var current: TemporaryRepository?

  /// Makes a fresh repository, with the lists of `lists` in it.
  ///
  /// With `engine` `.sqlite` (the default) it is a SQLite file in a new temporary folder;
  /// with `.postgresql` (from `ListStorePostgreSQLTesting`), a new database on a
  /// throwaway PostgreSQL server that the test process starts on first use.
  /// - Parameters:
  ///   - lists: Lists to create, from the JSON that `liststore export` writes.
  ///   - engine: Where the database comes from; SQLite by default.
  /// - Throws: `ListStoreError` when the folder or the database cannot be made, or a
  ///   fixture does not import (then nothing is left behind).
  public init(lists: [ListFixture] = [], engine: Engine = .sqlite) throws(ListStoreError) {
    let folder = try makeTemporaryFolder(prefix: "liststore-test")
    let made: (repository: Repository, cleanup: @Sendable () -> Void)
    do throws(ListStoreError) {
      made = try engine.provider.makeDatabase(in: folder)
    } catch {
      try? FileManager.default.removeItem(atPath: folder)
      throw error
    }
    do throws(ListStoreError) {
      for list in lists { try made.repository.importList(list) }
    } catch {
      made.cleanup()
      try? FileManager.default.removeItem(atPath: folder)
      throw error
    }
    repository = made.repository
    cleanup = made.cleanup
    self.folder = folder
  }

  /// Where the database is, for another connection or process: the SQLite file, or the
  /// PostgreSQL connection string; `Repository.open(path)` opens either.
  public var path: String { repository.path }

  /// Stops every observation of the repository and deletes its database and folder.
  /// Idempotent; handles made from the repository fail afterwards.
  public func remove() {
    repository.stopObserving()
    cleanup()
    try? FileManager.default.removeItem(atPath: folder)
  }

  /// Delivers every change committed so far, by any process, to every observer of the
  /// repository before returning (`Repository.synchronizeObservers()`). Writes through the
  /// repository are delivered before they return anyway; this brings in other
  /// connections' and processes' commits, with no waiting on timers.
  public func settle() {
    repository.synchronizeObservers()
  }

  /// ``settle()``, then waits until each of `queues` has run everything handed to it
  /// before, so that arrays made with `StoredList.observe(on:undecodable:)`
  /// for those queues are up to date too. Safe to call from any of them, the main actor
  /// included.
  /// - Parameter queues: The queues observers deliver on, such as `.main`.
  public func settle(deliveringOn queues: [DispatchQueue]) async {
    await repository.settle(deliveringOn: queues)
  }
}

extension Repository {
  /// Delivers every change committed so far to every observer (`synchronizeObservers()`),
  /// then waits until each of `queues` has run what was handed to it before, so that arrays
  /// observed on those queues (`StoredList.observe(on:undecodable:)`) are up to date.
  ///
  /// Safe from any context, the main actor included: it suspends rather than block a queue
  /// it waits for.
  /// - Parameter queues: The queues observers deliver on, such as `.main`.
  public func settle(deliveringOn queues: [DispatchQueue] = []) async {
    synchronizeObservers()
    for queue in queues {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        queue.async { continuation.resume() }
      }
    }
  }
}

/// Makes and removes the databases of an ``TemporaryRepository/Engine``: the seam where
/// each storage engine plugs in its fresh database per test.
package protocol TemporaryDatabaseProvider: Sendable {
  /// A fresh, migrated database for one test, opened; `folder` is the test's own.
  /// - Returns: The repository, and what removes the database besides the folder.
  func makeDatabase(in folder: String) throws(ListStoreError) -> (
    repository: Repository, cleanup: @Sendable () -> Void
  )
}

/// SQLite databases copied from a template migrated once per process.
struct SQLiteTemplateProvider: TemporaryDatabaseProvider {
  func makeDatabase(in folder: String) throws(ListStoreError) -> (
    repository: Repository, cleanup: @Sendable () -> Void
  ) {
    let path = folder + "/test.sqlite"
    try SQLiteTemplate.shared.get().copy(to: path)
    return (try Repository(path: path), {})
  }
}

/// The template database: made and migrated by the first test that needs it, copied by
/// every test, removed when the process exits.
struct SQLiteTemplate: Sendable {
  /// The template file.
  let path: String

  /// The process's template, or why it could not be made.
  static let shared: Result<SQLiteTemplate, ListStoreError> = Result {
    () throws(ListStoreError) -> SQLiteTemplate in
    let folder = try makeTemporaryFolder(prefix: "liststore-template")
    let path = folder + "/template.sqlite"
    do throws(ListStoreError) {
      // Migrate, then close: the last connection checkpoints the WAL into the file and
      // deletes it, so the file alone is the whole database.
      _ = try Repository(path: path)
    } catch {
      try? FileManager.default.removeItem(atPath: folder)
      throw error
    }
    templateFolder.withLock { $0 = folder }
    atexit {
      if let folder = templateFolder.withLock({ $0 }) {
        try? FileManager.default.removeItem(atPath: folder)
      }
    }
    return SQLiteTemplate(path: path)
  }

  /// Copies the template (and its WAL, should one be left) to `target`.
  func copy(to target: String) throws(ListStoreError) {
    do {
      try FileManager.default.copyItem(atPath: path, toPath: target)
      if FileManager.default.fileExists(atPath: path + "-wal") {
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: target + "-wal")
      }
    } catch {
      throw .cannotOpen(path: target, reason: "cannot copy the template database: \(error)")
    }
  }
}

/// The template's folder, for the exit handler, which cannot capture it.
private let templateFolder = Locked<String?>(nil)

/// A new, empty folder under the system's temporary folder (`$TMPDIR`).
/// Named after this process: what a killed test process leaves is removed by the next.
func makeTemporaryFolder(prefix: String) throws(ListStoreError) -> String {
  let base = NSTemporaryDirectory()
  let made = OwnedFolder.make(prefix: prefix, in: base)
  guard let made else {
    throw .cannotCreateFolder(path: base, reason: String(cString: strerror(errno)))
  }
  return made
}
