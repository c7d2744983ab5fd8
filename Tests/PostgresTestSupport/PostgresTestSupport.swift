// The throwaway server lives in the ListStorePostgreSQLTesting product, which users'
// test targets import too; this package's tests reach it through this module, so that
// every test file (and those of branches still being written) keeps one import.
@_exported import ListStorePostgreSQLTesting
import Testing

extension Trait where Self == ConditionTrait {
  /// This package's name for ``requiresPostgreSQL``: runs the tests only where a
  /// PostgreSQL server can be started, or where `LISTSTORE_REQUIRE_POSTGRES=1` makes its
  /// absence a failure; else skips them with the install command.
  public static var postgres: Self { .requiresPostgreSQL }
}
