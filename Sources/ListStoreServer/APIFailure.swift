import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

extension ListServer {

  static func response(for error: ListStoreError, place: String? = nil) -> HTTPResponse {
    let message = (place.map { $0 + ": " } ?? "") + "\(error)"
    // The error's fields, so that a client rebuilds the very error (docs/http.md).
    let detail = WireFormat.detail(of: error)
    switch error {
    case .listNotFound, .sectionNotFound, .itemNotFound:
      return .error(404, "notFound", message, detail: detail)
    case .listExists:
      return .error(409, "conflict", message, detail: detail)
    case .busy:
      return .error(503, "busy", message, headers: [("Retry-After", "1")])
    case .serverUnreachable:
      return .error(503, "unavailable", message, headers: [("Retry-After", "1")])
    case .invalidJSON, .invalidImport, .emptyName, .invalidName, .duplicateID:
      return .error(400, "badRequest", message, detail: detail)
    case .sectionOutOfRange, .itemOutOfRange, .insertionOutOfRange, .sectionInsertionOutOfRange,
      .invalidIndexPath:
      return .error(422, "unprocessable", message, detail: detail)
    case .readOnly:
      return .error(503, "readOnly", message)
    default:
      return error.isTransient
        ? .error(503, "unavailable", message, headers: [("Retry-After", "1")])
        : .error(500, "internal", message, detail: detail)
    }
  }
}

/// A request that cannot be carried out, as the status and body to answer with.
struct APIFailure: Error {
  var response: HTTPResponse

  init(_ response: HTTPResponse) { self.response = response }

  init(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) {
    response = .error(status, code, message, headers: headers)
  }
}

extension String {
  func trimmingSpaces() -> String {
    let bytes = utf8
    guard let first = bytes.firstIndex(where: { $0 != 0x20 }),
      let last = bytes.lastIndex(where: { $0 != 0x20 })
    else { return "" }
    if first == bytes.startIndex && last == bytes.index(before: bytes.endIndex) { return self }
    return String(self[first...last])
  }
}
