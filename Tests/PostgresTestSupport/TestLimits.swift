import Foundation

/// The sizes and timeouts of the slow tests, in one place.
///
/// `LISTSTORE_TEST_SCALE=N` runs N times as many random steps, writes and fuzz cases
/// (`scaled(_:)`); `LISTSTORE_TEST_TIMEOUT_SCALE=N` waits N times longer before a test gives
/// up on an event (for a very slow or very loaded machine). A timeout is a bound that makes
/// a bug fail rather than hang; no test synchronizes by it.
public enum TestLimits {
  /// How many times the default sizes the slow tests use.
  public static let scale: Double = factor("LISTSTORE_TEST_SCALE")

  /// How long a test waits for something it caused to be seen (a change at an observer, a
  /// line of a process, a state of a server) before it fails: 20 seconds by default.
  public static let eventSeconds: TimeInterval = 20 * factor("LISTSTORE_TEST_TIMEOUT_SCALE")

  /// How long a test waits for a thread or a signal of its own before it fails: 60 seconds by
  /// default.
  public static let threadSeconds: TimeInterval = 60 * factor("LISTSTORE_TEST_TIMEOUT_SCALE")

  /// How long a test waits for a process it stopped to end and its output to close: 10
  /// seconds by default.
  public static let exitSeconds: TimeInterval = 10 * factor("LISTSTORE_TEST_TIMEOUT_SCALE")

  private static func factor(_ variable: String) -> Double {
    guard let text = ProcessInfo.processInfo.environment[variable], let value = Double(text),
      value > 0
    else { return 1 }
    return value
  }
}
