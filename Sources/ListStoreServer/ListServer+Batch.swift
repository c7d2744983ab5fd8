import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

// Batches and `import --replace` over HTTP.
extension ListServer {
  /// `POST …/batch`: `liststore batch`'s operations, a JSON array or JSON lines, in one
  /// transaction; answers the id each one created or touched.
  ///
  /// With `?report=message`, it also answers the line the CLI prints for each operation
  /// (`"messages"`), which the CLI over HTTP prints. A failing operation's error body names
  /// it (`"operation"`, from 1) and says what failed without the place (`"reason"`).
  func batch(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    let operations = try Self.operations(request)
    let messages = request.query["report"] == "message"
    let list = try list(name)
    let (outcomes, seq) = try written(request, list) { () throws -> [ListOperation.Outcome] in
      var outcomes: [ListOperation.Outcome] = []
      outcomes.reserveCapacity(operations.count)
      for (number, operation) in operations.enumerated() {
        let place = "operation \(number + 1) (nothing was applied)"
        let fields = ",\"operation\":\(number + 1),\"reason\":"
        do {
          outcomes.append(try operation.perform(on: list, reporting: messages ? .message : .id))
        } catch let error as ListStoreError {
          var response = Self.response(for: error, place: place)
          response.insertFields(fields + JSONText.quote("\(error)"))
          throw APIFailure(response)
        } catch let error as OperationError {
          var response = HTTPResponse.error(422, "unprocessable", "\(place): \(error.message)")
          response.insertFields(fields + JSONText.quote(error.message))
          throw APIFailure(response)
        }
      }
      return outcomes
    }
    let ids = outcomes.map { String($0.id) }.joined(separator: ",")
    let report =
      messages
      ? ",\"messages\":[" + outcomes.map { JSONText.quote($0.message) }.joined(separator: ",") + "]"
      : ""
    return .json(200, "{\"seq\":\(seq),\"ids\":[" + ids + "]" + report + "}")
  }

  /// A batch's operations: the elements of a JSON array, or the lines of
  /// `application/x-ndjson` (blank lines skipped).
  static func operations(_ request: HTTPRequest) throws -> [ListOperation] {
    let bytes = request.body
    let media = mediaType(request)
    if ["application/x-ndjson", "application/jsonl", "application/jsonlines"].contains(media) {
      try requireLength(request)
      var operations: [ListOperation] = []
      var number = 0
      var start = 0
      while start < bytes.count {
        let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
        number += 1
        let line = bytes[start..<end]
        start = end + 1
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
        do {
          operations.append(try ListOperation(line: line))
        } catch {
          throw APIFailure(
            400, "badRequest",
            "line \(number)" + (error.column.map { ", column \($0)" } ?? "")
              + " (nothing was applied): \(error.message)")
        }
      }
      return operations
    }
    try requireJSON(request, alsoAccepting: "application/x-ndjson")
    let root: JSONSyntax.Node
    do {
      root = try JSONSyntax.parse(bytes)
    } catch {
      throw APIFailure(
        400, "badRequest",
        "the body is not valid JSON: \(error.message) at \(error.place(in: bytes))")
    }
    guard case .array(let elements) = root.kind else {
      throw APIFailure(
        400, "badRequest",
        "the body must be a JSON array of operations (or JSON lines sent as "
          + "application/x-ndjson), not \(root.kindDescription(in: bytes))")
    }
    var operations: [ListOperation] = []
    operations.reserveCapacity(elements.count)
    for (number, node) in elements.enumerated() {
      do {
        operations.append(try ListOperation(line: bytes[node.range]))
      } catch {
        throw APIFailure(
          400, "badRequest", "operation \(number + 1) (nothing was applied): \(error.message)")
      }
    }
    return operations
  }

  /// `PUT …/contents`: `import --replace` of the body, writing only what differs.
  func replaceContents(_ name: String, _ request: HTTPRequest) throws -> HTTPResponse {
    try requireJSON(request)
    var sink = CollectingSink()
    var reader = ImportReader(stream: JSONStream(bytes: request.body), name: "the body")
    try reader.read(into: &sink)
    let existing: StoredList<RawJSON, RawJSON>?
    do {
      existing = try list(name)
    } catch ListStoreError.listNotFound {
      // A name no list could have is refused as such, whatever the request's condition.
      try checkListName(name)
      if try Self.ifMatch(request) != nil {
        throw APIFailure(412, "preconditionFailed", "there is no list named \(quoted(name))")
      }
      existing = nil
    }
    let (changeset, seq) = try written(request, existing) {
      try repository.replaceContents(ofList: name, with: sink.sections)
    }
    let sections = changeset.insertedSections
    let counts = [
      (
        "added",
        changeset.insertedItems.count + sections.count
          + sections.reduce(0) { $0 + $1.items.count }
      ),
      ("removed", changeset.deletedItems.count + changeset.deletedSections.count),
      ("changed", changeset.updatedItems.count + changeset.updatedSections.count),
      ("moved", changeset.movedItems.count + changeset.movedSections.count),
    ]
    // The same counts by kind of row, for the CLI's summary line.
    let byKind = [
      (
        "sections",
        [
          ("added", sections.count), ("removed", changeset.deletedSections.count),
          ("moved", changeset.movedSections.count), ("changed", changeset.updatedSections.count),
        ]
      ),
      (
        "items",
        [
          ("added", changeset.insertedItems.count + sections.reduce(0) { $0 + $1.items.count }),
          ("removed", changeset.deletedItems.count), ("moved", changeset.movedItems.count),
          ("changed", changeset.updatedItems.count),
        ]
      ),
    ]
    func object(_ pairs: [(String, Int)]) -> String {
      "{" + pairs.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
    return .json(
      200,
      "{\"seq\":\(seq)," + counts.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + ","
        + byKind.map { "\"\($0.0)\":" + object($0.1) }.joined(separator: ",") + "}")
  }
}
