import Testing
import XCTest

/// Where a failed expectation is reported: the caller's file, line and column.
struct FailureLocation {
  var fileID: String
  var filePath: StaticString
  var line: UInt
  var column: UInt
}

/// Reports a failed expectation to the test framework that is running: Swift Testing
/// (`Issue.record`) when one of its tests is current, else XCTest (`XCTFail`).
/// - Parameters:
///   - message: What was expected and what happened.
///   - comment: The caller's comment, added on a line of its own.
///   - location: Where to report it.
func reportFailure(_ message: String, comment: String?, at location: FailureLocation) {
  let text = comment.map { message + "\n" + $0 } ?? message
  if Test.current != nil {
    Issue.record(
      Comment(rawValue: text),
      sourceLocation: SourceLocation(
        fileID: location.fileID, filePath: "\(location.filePath)", line: Int(location.line),
        column: Int(location.column)))
  } else {
    XCTFail(text, file: location.filePath, line: location.line)
  }
}
