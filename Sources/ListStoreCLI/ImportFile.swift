import FoundationEssentials
import ListStore

/// The file `import` reads: the object `export` writes.
struct ImportFile: Decodable {
  struct Section: Decodable {
    var id: Int64?
    var header: String?
    var footer: String?
    var metadata: RawJSON?
    var items: [Item]?
  }

  struct Item: Decodable {
    var id: Int64?
    var value: RawJSON
  }

  var list: String?
  var sections: [Section]

  /// The sections (metadata JSON, item values JSON) of an export file, or an error
  /// that says where the file is wrong.
  static func parse(_ data: Data, name: String) throws(ListStoreError) -> [(
    metadata: String, items: [String]
  )] {
    let file: ImportFile
    do {
      file = try JSONDecoder().decode(ImportFile.self, from: data)
    } catch let error as DecodingError {
      throw .invalidImport("\(name): \(describe(error))")
    } catch {
      throw .invalidImport("\(name): \(error)")
    }
    var sectionIDs = Set<Int64>()
    var itemIDs = Set<Int64>()
    var result: [(metadata: String, items: [String])] = []
    for (index, section) in file.sections.enumerated() {
      if let id = section.id, !sectionIDs.insert(id).inserted {
        throw .invalidImport("\(name): sections[\(index)] repeats section id \(id)")
      }
      let metadata: String
      if let raw = section.metadata {
        metadata = raw.text
      } else {
        metadata = try Commands.metadataJSON(header: section.header ?? "", footer: section.footer)
          .text
        if section.header == nil {
          throw .invalidImport(
            "\(name): sections[\(index)] has neither \"header\" nor \"metadata\"")
        }
      }
      var values: [String] = []
      for (row, item) in (section.items ?? []).enumerated() {
        if let id = item.id, !itemIDs.insert(id).inserted {
          throw .invalidImport("\(name): sections[\(index)].items[\(row)] repeats item id \(id)")
        }
        values.append(item.value.text)
      }
      result.append((metadata, values))
    }
    return result
  }

  private static func describe(_ error: DecodingError) -> String {
    func path(_ context: DecodingError.Context) -> String {
      let text = context.codingPath.map { key in
        key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)"
      }.joined()
      return text.isEmpty ? "the top level" : String(text.drop { $0 == "." })
    }
    switch error {
    case .dataCorrupted(let context):
      return context.codingPath.isEmpty
        ? "not valid JSON (\(context.debugDescription))" : "invalid value at \(path(context))"
    case .keyNotFound(let key, let context):
      return "missing \"\(key.stringValue)\" at \(path(context))"
    case .typeMismatch(let type, let context):
      return "wrong type at \(path(context)): expected \(typeName(type))"
    case .valueNotFound(let type, let context):
      return "null at \(path(context)): expected \(typeName(type))"
    @unknown default:
      return "\(error)"
    }
  }

  private static func typeName(_ type: Any.Type) -> String {
    switch type {
    case is String.Type: "a string"
    case is Int64.Type: "an integer"
    case is [Section].Type, is [Item].Type: "an array"
    default: "\(type)"
    }
  }
}
