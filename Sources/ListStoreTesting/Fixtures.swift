import Foundation
public import ListStore
import ListStoreFormats

/// A list to create in a test's repository, written in the JSON that `liststore export`
/// writes and `liststore import` reads (see docs/cli.md), or in its shorter hand-written
/// form:
///
/// ```swift
/// let cities = ListFixture.json("""
///   {"list": "cities", "sections": [
///     {"header": "Cities", "footer": "That's it", "items": [{"name": "Paris"}, {"name": "Berlin"}]}
///   ]}
///   """)
/// ```
///
/// Values are stored as the text gives them. The list's name is `name`, else the text's
/// `"list"` member.
public struct ListFixture: Sendable {
  enum Source: Sendable {
    case json(String)
    case file(String)
  }

  let source: Source
  let name: String?

  /// A list from JSON text.
  /// - Parameters:
  ///   - text: The list, as `liststore export` writes it.
  ///   - name: The list's name; the text's `"list"` member when `nil`.
  /// - Returns: The fixture.
  public static func json(_ text: String, name: String? = nil) -> ListFixture {
    ListFixture(source: .json(text), name: name)
  }

  /// A list from a JSON file.
  /// - Parameters:
  ///   - path: The file, as `liststore export` writes it.
  ///   - name: The list's name; the file's `"list"` member when `nil`.
  /// - Returns: The fixture.
  public static func file(_ path: String, name: String? = nil) -> ListFixture {
    ListFixture(source: .file(path), name: name)
  }
}

extension Repository {
  /// Creates a list from a fixture, in one transaction, as `liststore import` does.
  ///
  /// ```swift
  /// try repository.importList(.json(#"{"list": "groceries", "sections": [{"header": "Fruit", "items": ["apples"]}]}"#))
  /// ```
  /// - Parameter fixture: The list.
  /// - Returns: The new list, with its stored JSON as `RawJSON`; open it with your own
  ///   types through `Repository.list(_:metadata:item:)`.
  /// - Throws: `ListStoreError.invalidImport(_:)` naming the place of a problem in the
  ///   JSON (a line and column, or a path such as `sections[2].items[5]`), or when the
  ///   fixture names no list; `ListStoreError.listExists(name:)`; nothing is created then.
  @discardableResult
  public func importList(_ fixture: ListFixture) throws(ListStoreError)
    -> StoredList<RawJSON, RawJSON>
  {
    let bytes: [UInt8]
    let displayName: String
    switch fixture.source {
    case .json(let text):
      bytes = Array(text.utf8)
      displayName = "the fixture"
    case .file(let path):
      do {
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
      } catch {
        throw .invalidImport("cannot read \(path): \(error.localizedDescription)")
      }
      displayName = path
    }
    let file = try ImportFile.parse(bytes, name: displayName)
    guard let name = fixture.name ?? file.list else {
      throw .invalidImport(
        "\(displayName): the list has no name; give one with name: or a \"list\" member")
    }
    _ = try createList(name, contents: file.sections)
    return try list(name, metadata: RawJSON.self, item: RawJSON.self)
  }
}

extension StoredList {
  /// The list as `liststore show` prints it, lines joined by newlines (no final one):
  /// headers, `SECTION:ROW` items and footers, for comparing in a test.
  ///
  /// ```swift
  /// #expect(try cities.showText() == """
  ///   cities
  ///     [0] Cities
  ///         0:0  Paris
  ///         -- That's it
  ///   """)
  /// ```
  /// - Returns: The text.
  /// - Throws: `ListStoreError` when the list is gone or cannot be read.
  public func showText() throws(ListStoreError) -> String {
    Rendering.text(list: name, sections: try storedSections()).joined(separator: "\n")
  }

  /// The list as `liststore show --json` and `liststore export` print it: one line of
  /// JSON with ids, headers, footers and the stored values, for comparing in a test — and,
  /// given to ``ListFixture/json(_:name:)``, a fixture for another.
  /// - Returns: The JSON text.
  /// - Throws: `ListStoreError` when the list is gone or cannot be read.
  public func showJSON() throws(ListStoreError) -> String {
    Rendering.json(list: name, sections: try storedSections())
  }
}
