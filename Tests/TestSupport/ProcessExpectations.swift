import Foundation
import ListStoreTesting
import Testing

/// A command that succeeded: status 0 and nothing on standard error.
public func expectSuccess(
  _ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(result.status == 0, "\(result)", sourceLocation: sourceLocation)
  #expect(result.stderr.isEmpty, "\(result)", sourceLocation: sourceLocation)
}

/// A runtime failure: status 1, one `error:` line holding each of `texts`, nothing on
/// standard output.
public func expectFailure(
  _ result: ProcessResult, containing texts: String...,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(result.status == 1, "\(result)", sourceLocation: sourceLocation)
  #expect(result.stdout.isEmpty, "\(result)", sourceLocation: sourceLocation)
  let lines = result.stderr.split(separator: "\n")
  #expect(
    lines.count == 1 && lines[0].hasPrefix("error: "), "\(result)", sourceLocation: sourceLocation)
  for text in texts {
    #expect(result.stderr.contains(text), "\(result)", sourceLocation: sourceLocation)
  }
}

extension Trait where Self == ConditionTrait {
  /// Runs the test where `program` is installed, and skips it elsewhere, naming Debian's
  /// package; with `LISTSTORE_REQUIRE_ALL=1` (set in CI, which installs them) it runs
  /// anyway, and fails when the program is missing.
  public static func installed(_ program: String, package: String? = nil) -> Self {
    let reason =
      "\(program) is not installed: this test needs it (apt-get install \(package ?? program))"
    return .enabled(
      if: Prerequisites.check(
        ["/usr/bin/", "/bin/"].contains {
          FileManager.default.isExecutableFile(atPath: $0 + program)
        }, reason: reason), Comment(rawValue: reason))
  }

  /// Runs the test where the shared library `library` loads, and skips it elsewhere,
  /// naming Debian's package; with `LISTSTORE_REQUIRE_ALL=1` it runs anyway, and fails
  /// where the library is missing.
  public static func loadable(_ library: String, package: String) -> Self {
    let reason = "\(library) is missing: this test needs it (apt-get install \(package))"
    return .enabled(
      if: Prerequisites.check(Prerequisites.loads(library), reason: reason),
      Comment(rawValue: reason))
  }
}
