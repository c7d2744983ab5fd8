import Foundation
import Synchronization
import Testing

/// A failure of the test's own making.
public struct TestFailure: Error, CustomStringConvertible {
  /// What went wrong.
  public var description: String

  /// Creates a failure.
  public init(_ description: String) { self.description = description }
}

/// Work running on a thread of its own (not the cooperative pool, which blocking
/// libpq calls must not starve), with its result collected by ``join()``.
public final class BackgroundThread<Value: Sendable>: Sendable {
  private let result = Mutex<Result<Value, any Error>?>(nil)
  private let finished = DispatchSemaphore(value: 0)

  /// Starts `body` on a new thread.
  public init(_ body: @escaping @Sendable () throws -> Value) {
    let thread = Thread { [self] in
      let outcome = Result { try body() }
      result.withLock { $0 = outcome }
      finished.signal()
    }
    thread.start()
  }

  /// Whether the work has finished.
  public var isFinished: Bool { result.withLock { $0 != nil } }

  /// Waits for the work to finish (``TestLimits/threadSeconds`` at most, so that a bug fails rather than
  /// hangs the run) and returns its value or rethrows its error.
  public func join() throws -> Value {
    guard finished.wait(timeout: .now() + TestLimits.threadSeconds) == .success else {
      throw TestFailure("the background thread did not finish in time")
    }
    finished.signal()  // Later joins return at once.
    guard let outcome = result.withLock({ $0 }) else {
      throw TestFailure("the background thread finished without a result")
    }
    return try outcome.get()
  }
}

/// A one-way signal between threads, with a bounded wait.
public final class Signal: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)

  /// Creates an unsignalled signal.
  public init() {}

  /// Lets one ``wait()`` return.
  public func signal() { semaphore.signal() }

  /// Waits for ``signal()`` (``TestLimits/threadSeconds`` at most, so that a bug fails rather
  /// than hangs).
  public func wait() throws {
    guard semaphore.wait(timeout: .now() + TestLimits.threadSeconds) == .success else {
      throw TestFailure("no signal in time")
    }
  }
}

/// Polls `condition` until it holds, for external state no event announces (a
/// server's `pg_stat_activity`, a process's output file): every few milliseconds, for
/// `timeout` seconds at most — a bound, never the way a test synchronizes with its own
/// work.
/// - Returns: Whether it held.
@discardableResult
public func pollUntil(
  timeout: TimeInterval = TestLimits.eventSeconds, every interval: TimeInterval = 0.005,
  until condition: () throws -> Bool
) rethrows -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while true {
    if try condition() { return true }
    if Date() >= deadline { return false }
    Thread.sleep(forTimeInterval: interval)
  }
}
