public import Testing

/// The Swift Testing trait that gives each test a ``TemporaryRepository`` of its own,
/// reachable as ``TemporaryRepository/current`` while the test runs, and removes it after.
///
/// Apply it to a test, or to a suite to give every test in it (and every case of a
/// parameterized test) its own repository:
///
/// ```swift
/// @Suite(.temporaryRepository) struct CityTests {
///   @Test func addsACity() throws {
///     let repository = try #require(TemporaryRepository.current).repository
///     let cities = try repository.createList("cities", metadata: SectionMetadata.self, item: String.self)
///     …
///   }
/// }
/// ```
///
/// Tests with the trait may run in parallel: each has its own database.
public struct TemporaryRepositoryTrait: TestTrait, SuiteTrait, TestScoping {
  let lists: [ListFixture]
  let engine: TemporaryRepository.Engine

  /// Always true: applied to a suite, it applies to every test in the suite.
  public var isRecursive: Bool { true }

  /// Scopes each test case, never a suite as a whole, so that no two tests share a
  /// repository.
  /// - Parameters:
  ///   - test: The test or suite.
  ///   - testCase: The test case; `nil` for a suite.
  /// - Returns: This trait for a test case, `nil` for a suite.
  public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
    testCase == nil ? nil : self
  }

  /// Runs the test case with a new ``TemporaryRepository`` as
  /// ``TemporaryRepository/current``, and removes it when the test case ends, however it
  /// ends.
  /// - Parameters:
  ///   - test: The test.
  ///   - testCase: The test case.
  ///   - function: The test case's body.
  /// - Throws: What the body throws, or `ListStoreError` when the repository cannot be
  ///   made (the test then does not run).
  public func provideScope(
    for test: Test, testCase: Test.Case?,
    performing function: @Sendable () async throws -> Void
  ) async throws {
    let temporary = try TemporaryRepository(lists: lists, engine: engine)
    defer { temporary.remove() }
    try await TemporaryRepository.$current.withValue(temporary) { try await function() }
  }
}

extension Trait where Self == TemporaryRepositoryTrait {
  /// A fresh ``TemporaryRepository`` for each test, as ``TemporaryRepository/current``.
  public static var temporaryRepository: Self {
    TemporaryRepositoryTrait(lists: [], engine: .sqlite)
  }

  /// A fresh ``TemporaryRepository`` for each test, as ``TemporaryRepository/current``,
  /// holding the lists of `lists`, on the engine `engine`.
  ///
  /// ```swift
  /// @Test(.temporaryRepository(lists: [.json(#"{"list": "cities", "sections": [{"header": "Cities", "items": ["Paris"]}]}"#)]))
  /// ```
  ///
  /// `ListStorePostgreSQLTesting` adds the engine `.postgresql`:
  /// `.temporaryRepository(engine: .postgresql)` gives each test a database of its own on a
  /// throwaway PostgreSQL server.
  /// - Parameters:
  ///   - lists: Lists to create in each repository, from `liststore export` JSON.
  ///   - engine: Where the databases come from; SQLite by default.
  /// - Returns: The trait.
  public static func temporaryRepository(
    lists: [ListFixture] = [], engine: TemporaryRepository.Engine = .sqlite
  ) -> Self {
    TemporaryRepositoryTrait(lists: lists, engine: engine)
  }
}

extension TemporaryRepository {
  /// The running test's repository (see ``current``), or an error that says how to get
  /// one, for a test that forgot the trait.
  /// - Returns: The repository.
  /// - Throws: ``MissingTemporaryRepository`` outside a test with the
  ///   ``Testing/Trait/temporaryRepository`` trait.
  public static func required() throws(MissingTemporaryRepository) -> TemporaryRepository {
    guard let current else { throw MissingTemporaryRepository() }
    return current
  }
}

/// The error of ``TemporaryRepository/required()`` outside a test with the
/// ``Testing/Trait/temporaryRepository`` trait.
public struct MissingTemporaryRepository: Error, CustomStringConvertible {
  /// What to do.
  public var description: String {
    "no temporary repository: add the .temporaryRepository trait to the test or its suite, "
      + "as in @Test(.temporaryRepository), or make one with TemporaryRepository()"
  }
}
