import Foundation
import ListStore
import ListStoreFormats

/// Checks the server's answers against docs/openapi.json: that each status is one the
/// description gives its operation, and that a JSON body fits the schema given for it.
/// The JSON Schema it understands is the part the description uses: `$ref`, `type` (a
/// name or a list), `properties`, `required`, `additionalProperties: false`, `items`,
/// `enum`, `const`, `oneOf`, `minimum`, `maximum`, `minItems`, `maxItems`, `minLength`.
public enum OpenAPIValidator {
  /// A JSON value.
  public indirect enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number, as written.
    case number(String)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// Parses `bytes`; `nil` when they are not JSON.
    public static func parse(_ bytes: [UInt8]) -> JSON? {
      guard let root = try? JSONSyntax.parse(bytes) else { return nil }
      return convert(root, bytes)
    }

    private static func convert(_ node: JSONSyntax.Node, _ bytes: [UInt8]) -> JSON {
      switch node.kind {
      case .null: return .null
      case .bool(let value): return .bool(value)
      case .number: return .number(node.text(in: bytes))
      case .string: return .string(node.string(in: bytes) ?? "")
      case .array(let elements): return .array(elements.map { convert($0, bytes) })
      case .object(let pairs):
        var object: [String: JSON] = [:]
        for (key, value) in pairs { object[key] = convert(value, bytes) }
        return .object(object)
      }
    }

    /// An object's member; `nil` for a missing one, or when this is not an object.
    public subscript(key: String) -> JSON? {
      if case .object(let object) = self { return object[key] }
      return nil
    }
  }

  /// The description, read once from the repository.
  public static let document: JSON? = {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
        "docs/openapi.json"
      ).path
    return FileManager.default.contents(atPath: path).flatMap { JSON.parse(Array($0)) }
  }()

  /// The operation of the description a request names: its path template's item and the
  /// method's operation, or `nil` for a path the description does not have.
  static func operation(method: String, path: String) -> JSON? {
    guard case .object(let paths)? = document?["paths"] else { return nil }
    let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    for (template, item) in paths {
      let parts = template.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
      guard parts.count == segments.count else { continue }
      let fits = zip(parts, segments).allSatisfy { part, segment in
        part.hasPrefix("{") ? !segment.isEmpty : part == segment
      }
      if fits { return item[method.lowercased()] }
    }
    return nil
  }

  /// What does not fit the description in an answer; empty when it fits, or when the
  /// description has no such operation (a path the server does not serve, a method it
  /// does not take).
  /// - Parameters:
  ///   - method: The request's method.
  ///   - path: The request's path, without its query.
  ///   - status: The answer's status.
  ///   - contentType: Its `Content-Type`.
  ///   - body: Its body.
  /// - Returns: One sentence per problem.
  public static func problems(
    method: String, path: String, status: Int, contentType: String?, body: [UInt8]
  ) -> [String] {
    guard let operation = operation(method: method == "HEAD" ? "GET" : method, path: path)
    else { return [] }
    guard var response = operation["responses"]?[String(status)] else {
      return ["\(method) \(path): status \(status) is not described"]
    }
    if let target = response["$ref"], case .string(let reference) = target,
      let resolved = resolve(reference)
    {
      response = resolved
    }
    guard method != "HEAD", !body.isEmpty, let contentType else { return [] }
    let media = contentType.split(separator: ";").first.map(String.init) ?? contentType
    guard let schema = response["content"]?[media]?["schema"] else {
      if case .object(let content)? = response["content"], !content.isEmpty {
        return ["\(method) \(path) \(status): content type \(media) is not described"]
      }
      return []
    }
    guard media.hasSuffix("json") else { return [] }
    guard let value = JSON.parse(body) else {
      return ["\(method) \(path) \(status): the body is not JSON"]
    }
    return check(value, against: schema, at: "\(method) \(path) \(status) body")
  }

  static func resolve(_ reference: String) -> JSON? {
    guard reference.hasPrefix("#/") else { return nil }
    var node = document
    for part in reference.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
    return node
  }

  /// What does not fit `schema` in `value`.
  static func check(_ value: JSON, against schema: JSON, at place: String) -> [String] {
    var schema = schema
    if case .string(let reference)? = schema["$ref"] {
      guard let resolved = resolve(reference) else { return ["\(place): no schema \(reference)"] }
      schema = resolved
    }
    var problems: [String] = []
    if case .array(let options)? = schema["oneOf"] {
      let fitting = options.filter { check(value, against: $0, at: place).isEmpty }.count
      if fitting != 1 { problems.append("\(place): fits \(fitting) of oneOf's schemas, not one") }
    }
    if let constant = schema["const"], constant != value {
      problems.append("\(place): is not the constant \(constant)")
    }
    if case .array(let options)? = schema["enum"], !options.contains(value) {
      problems.append("\(place): \(value) is not one of the enumeration")
    }
    var types: [String] = []
    switch schema["type"] {
    case .string(let type)?: types = [type]
    case .array(let list)?:
      types = list.compactMap { if case .string(let t) = $0 { t } else { nil } }
    default: break
    }
    if !types.isEmpty && !types.contains(where: { fits(value, type: $0) }) {
      problems.append("\(place): \(value) is not of type \(types.joined(separator: " or "))")
      return problems
    }
    switch value {
    case .object(let object):
      let properties: [String: JSON]
      if case .object(let declared)? = schema["properties"] {
        properties = declared
      } else {
        properties = [:]
      }
      if case .array(let required)? = schema["required"] {
        for case .string(let key) in required where object[key] == nil {
          problems.append("\(place): misses \(key)")
        }
      }
      for (key, member) in object {
        if let property = properties[key] {
          problems += check(member, against: property, at: place + "." + key)
        } else if schema["additionalProperties"] == .bool(false) {
          problems.append("\(place): has \(key), which is not described")
        }
      }
    case .array(let elements):
      if let items = schema["items"] {
        for (index, element) in elements.enumerated() {
          problems += check(element, against: items, at: place + "[\(index)]")
        }
      }
      if case .number(let text)? = schema["minItems"], let least = Int(text), elements.count < least
      {
        problems.append("\(place): fewer than \(least) items")
      }
      if case .number(let text)? = schema["maxItems"], let most = Int(text), elements.count > most {
        problems.append("\(place): more than \(most) items")
      }
    case .number(let text):
      let number = Double(text) ?? 0
      if case .number(let bound)? = schema["minimum"], let least = Double(bound), number < least {
        problems.append("\(place): \(text) is below \(bound)")
      }
      if case .number(let bound)? = schema["maximum"], let most = Double(bound), number > most {
        problems.append("\(place): \(text) is above \(bound)")
      }
    case .string(let text):
      if case .number(let bound)? = schema["minLength"], let least = Int(bound), text.count < least
      {
        problems.append("\(place): shorter than \(least)")
      }
    case .null, .bool:
      break
    }
    return problems
  }

  static func fits(_ value: JSON, type: String) -> Bool {
    switch (value, type) {
    case (.null, "null"), (.bool, "boolean"), (.string, "string"), (.array, "array"),
      (.object, "object"), (.number, "number"):
      return true
    case (.number(let text), "integer"):
      return !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
    default:
      return false
    }
  }
}
