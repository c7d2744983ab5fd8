import ListStoreTesting
public import Testing
public import XCTest

extension Trait where Self == ConditionTrait {
  /// Runs the tests where a throwaway PostgreSQL server can be started (its programs are
  /// installed: Debian's `postgresql` package), and skips them elsewhere with a comment
  /// naming the install command.
  ///
  /// With `LISTSTORE_REQUIRE_POSTGRES=1` in the environment (set it in CI) they run
  /// anyway, and fail with that message when the programs are missing, so that a machine
  /// without PostgreSQL cannot pass by skipping them. Skips are counted, and listed with
  /// their reason when the test process exits.
  ///
  /// ```swift
  /// @Suite(.requiresPostgreSQL, .temporaryRepository(engine: .postgresql))
  /// struct OnPostgreSQLTests { … }
  /// ```
  public static var requiresPostgreSQL: Self {
    .enabled(
      if: Prerequisites.check(
        TestPostgresServer.unavailableReason == nil, required: TestPostgresServer.isRequired,
        reason: TestPostgresServer.skipComment),
      Comment(rawValue: TestPostgresServer.skipComment))
  }
}

extension XCTestCase {
  /// Skips the test where no throwaway PostgreSQL server can be started, naming the
  /// install command; does nothing where one can, or where `LISTSTORE_REQUIRE_POSTGRES=1`
  /// makes their absence a failure (the test then fails when it starts the server).
  ///
  /// ```swift
  /// override func setUpWithError() throws {
  ///   try skipUnlessPostgreSQLIsInstalled()
  ///   temporary = try makeTemporaryRepository(engine: .postgresql)
  /// }
  /// ```
  /// - Throws: `XCTSkip` where the server programs are missing.
  public func skipUnlessPostgreSQLIsInstalled() throws {
    if !TestPostgresServer.testsEnabled {
      Prerequisites.recordSkip(TestPostgresServer.skipComment)
      throw XCTSkip(TestPostgresServer.skipComment)
    }
  }
}
