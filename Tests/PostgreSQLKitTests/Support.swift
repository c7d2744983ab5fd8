import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Synchronization
import Testing

extension Trait where Self == ConditionTrait {
  /// Runs the tests only where a PostgreSQL server can be started, or where
  /// `LISTSTORE_REQUIRE_POSTGRES=1` makes its absence a failure; else skips them with
  /// the install command.
  static var postgres: Self {
    .enabled(
      if: TestPostgresServer.testsEnabled, Comment(rawValue: TestPostgresServer.skipComment))
  }
}

/// A fresh database on the shared server, and a connection to it.
func freshDatabase() throws -> (connection: PGConnection, connectionString: String) {
  let connectionString = try TestPostgresServer.shared().makeDatabase()
  return (try PGConnection(connectionString), connectionString)
}

/// A failure of the test's own making.
struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Work running on a thread of its own (not the cooperative pool, which blocking
/// libpq calls must not starve), with its result collected by ``join()``.
final class BackgroundThread<Value: Sendable>: Sendable {
  private let result = Mutex<Result<Value, any Error>?>(nil)
  private let finished = DispatchSemaphore(value: 0)

  init(_ body: @escaping @Sendable () throws -> Value) {
    let thread = Thread { [self] in
      let outcome = Result { try body() }
      result.withLock { $0 = outcome }
      finished.signal()
    }
    thread.start()
  }

  /// Waits for the work to finish (a minute at most, so that a bug fails rather than
  /// hangs the run) and returns its value or rethrows its error.
  func join() throws -> Value {
    guard finished.wait(timeout: .now() + 60) == .success else {
      throw TestFailure("the background thread did not finish within a minute")
    }
    guard let outcome = result.withLock({ $0 }) else {
      throw TestFailure("the background thread finished without a result")
    }
    return try outcome.get()
  }
}

/// A one-way signal between threads, with a bounded wait.
final class Signal: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)

  func signal() { semaphore.signal() }

  /// Waits for ``signal()`` (a minute at most, so that a bug fails rather than hangs).
  func wait() throws {
    guard semaphore.wait(timeout: .now() + 60) == .success else {
      throw TestFailure("no signal within a minute")
    }
  }
}
