import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Tests that need something a machine may lack — a program, a library, a server — and
/// what they do without it: skip with one line naming the package, or, with
/// `LISTSTORE_REQUIRE_ALL=1` in the environment (CI sets it after installing them), run
/// anyway and fail, so that no run goes green on a skipped suite.
///
/// Every skip is recorded, and the process lists them, one line per reason, when it exits:
/// the end of `swift test`'s output says what did not run and what to install.
package enum Prerequisites {
  /// Whether `LISTSTORE_REQUIRE_ALL=1` is set: nothing is skipped for want of a package.
  package static var requireAll: Bool {
    ProcessInfo.processInfo.environment["LISTSTORE_REQUIRE_ALL"] == "1"
  }

  /// Whether a test that needs something runs: where it is `available`, or where it is
  /// required (`required`, or `requireAll`); else the skip is recorded under `reason`,
  /// which the list at exit shows.
  ///
  /// - Parameters:
  ///   - available: Whether what the test needs is here.
  ///   - required: Whether a skip must be a failure anyway (an older variable of its own).
  ///   - requireAll: Whether every skip must be a failure (``requireAll`` by default).
  ///   - reason: One line naming what is missing and the package that has it.
  ///   - skips: Where the skip is recorded (``skips`` by default, listed at exit).
  /// - Returns: Whether to run the test.
  package static func check(
    _ available: Bool, required: Bool = false, requireAll: Bool = requireAll,
    reason: String, into skips: Skips = skips
  ) -> Bool {
    if available || required || requireAll { return true }
    skips.record(reason)
    return false
  }

  /// Records one skip under `reason` in ``skips``, listed when the process exits.
  package static func recordSkip(_ reason: String) { skips.record(reason) }

  /// The skips of this process, listed on standard output when it exits.
  package static let skips = Skips(listedAtExit: true)

  /// Skips by reason.
  package final class Skips: Sendable {
    private let reasons = Mutex<[String: Int]>([:])
    private let listedAtExit: Bool

    /// An empty record; with `listedAtExit`, its list is printed when the process exits.
    package init(listedAtExit: Bool = false) { self.listedAtExit = listedAtExit }

    /// Records one skip under `reason`.
    package func record(_ reason: String) {
      let first = reasons.withLock { reasons in
        defer { reasons[reason, default: 0] += 1 }
        return reasons.isEmpty
      }
      if first && listedAtExit { atexit { print(Prerequisites.skips.summary, terminator: "") } }
    }

    /// How often each reason was given.
    package var counts: [String: Int] { reasons.withLock { $0 } }

    /// The list shown at exit: one line per reason (a suite's skip and its tests' share a
    /// reason, so no count is given); empty without skips.
    package var summary: String {
      let reasons = counts.keys.sorted()
      guard !reasons.isEmpty else { return "" }
      let lines =
        ["Tests skipped for want of a package (LISTSTORE_REQUIRE_ALL=1 makes each a failure):"]
        + reasons.map { "  " + $0 }
      return lines.joined(separator: "\n") + "\n"
    }
  }

  /// Whether a shared library loads (`dlopen`, by file name through the usual search).
  /// - Parameter library: Its file name, such as `libevent_openssl-2.1.so.7`.
  /// - Returns: Whether it loaded.
  package static func loads(_ library: String) -> Bool {
    guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else { return false }
    dlclose(handle)
    return true
  }
}
