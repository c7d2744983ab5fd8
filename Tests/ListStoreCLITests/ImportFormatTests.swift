import Foundation
import TestSupport
import Testing

/// `liststore import` reads what `export` writes and what people write by hand, and says
/// where a file is wrong, in plain words.
@Suite struct ImportFormatTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("import.sqlite") }

  @discardableResult
  func cli(_ arguments: String..., input: String? = nil) throws -> ProcessResult {
    try liststore(arguments, database: db, input: input)
  }

  @Test func acceptsPlainValuesWrappersAndEitherKindOfSection() throws {
    defer { folder.remove() }
    let file = """
      {"list": "ignored",
       "sections": [
         {"header": "Plain", "footer": "values as they are",
          "items": ["a", -5, true, null, [1, {"b": 2}], {"name": "kiwi", "count": 3}]},
         {"header": "Wrapped", "footer": null,
          "items": [{"value": "b"}, {"id": 40, "value": {"z": 1, "a": 2}}, {"value": {"value": 1}}]},
         {"metadata": {"title": "Custom", "order": [2, 1]}},
         {"id": 9, "header": "Header only"}
       ]}
      """
    let result = try cli("import", "hand", "-", input: file)
    #expect(result.status == 0, "\(result)")
    #expect(result.stdout == "imported \"hand\": 4 sections, 9 items\n")
    let shown = try cli("export", "hand").stdout
    #expect(
      shown
        .replacingOccurrences(of: #""id":[0-9]+,"#, with: "", options: .regularExpression) == """
          {"list":"hand","sections":[\
          {"header":"Plain","footer":"values as they are","items":[{"value":"a"},{"value":-5},\
          {"value":true},{"value":null},{"value":[1,{"b":2}]},{"value":{"name":"kiwi","count":3}}]},\
          {"header":"Wrapped","footer":null,"items":[{"value":"b"},{"value":{"z":1,"a":2}},\
          {"value":{"value":1}}]},\
          {"header":null,"footer":null,"metadata":{"title":"Custom","order":[2,1]},"items":[]},\
          {"header":"Header only","footer":null,"items":[]}]}

          """)
  }

  @Test(arguments: [
    // Syntax errors: the line and column.
    (
      "{\"sections\": [\n  {\"header\": \"A\",\n   \"items\": [1, 2,]}]}",
      "standard input:3:19: a ',' before ']'"
    ),
    ("{\"sections\": [\n  {\"header\": 'A'}]}", "standard input:2:14: unexpected '''"),
    (
      "{\"sections\": [{\"header\": \"A\", \"items\": [1e400]}]}", "1:41: the number 1e400 is valid"
    ),
    ("{\"sections\": []} []", "1:18: unexpected '[' after the JSON value"),
    // Shapes: the place and what was expected.
    (
      #"{"sections":[{"header":"A"},{"header":"B"},{"header":"C","items":[0,1,2,3,4,{"id":1.5,"value":0}]}]}"#,
      "sections[2].items[5].id: expected an integer id (1 or more); got the number 1.5"
    ),
    (#"{"sections":{"header":"A"}}"#, "sections: expected an array of sections; got an object"),
    (#"{"sections":["Fruit"]}"#, "sections[0]: expected a section: an object with \"header\""),
    (
      #"{"sections":[{"header":"A","items":"x"}]}"#, "sections[0].items: expected an array of items"
    ),
    (#"{"sections":[{"header":"A","footer":1}]}"#, "sections[0].footer: expected a string or null"),
    (
      #"{"sections":[{"header":"A","itmes":[]}]}"#,
      "sections[0]: unknown key \"itmes\"; did you mean"
    ),
    (
      #"{"sections":[{"header":"A","header":"B"}]}"#,
      "sections[0]: the key \"header\" appears twice"
    ),
    (#"{"sections":[],"name":"x"}"#, "the top level: unknown key \"name\"; the keys are"),
    (#"{"list":3,"sections":[]}"#, "list: expected a string; got the number 3"),
    (
      #"{"sections":[{"id":1,"header":"A","items":[{"id":7,"value":1}]},{"id":2,"header":"B","items":[{"id":7,"value":2}]}]}"#,
      "sections[1].items[0].id: repeats item id 7"
    ),
  ])
  func errorsNameThePlaceAndTheShape(content: String, message: String) throws {
    defer { folder.remove() }
    try cli("demo")
    let before = try #require(fileBytes(db))
    let result = try cli("import", "bad", "-", input: content)
    #expect(result.status == 1, "\(result)")
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.hasPrefix("error: cannot import: "), "\(result)")
    #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
    #expect(result.stderr.contains(message), "\(result)")
    // Plain words, never a Swift type name.
    for swift in ["Dictionary", "Array<", "String.Type", "Int64", "RawJSON", "DecodingError"] {
      #expect(!result.stderr.contains(swift), "\(result)")
    }
    #expect(fileBytes(db) == before)
    #expect(try cli("lists").lines.count == 2)
  }

  @Test func aFileIsNamedByItsPath() throws {
    defer { folder.remove() }
    let path = folder.file("broken.json")
    try Data("{\"sections\": [\n}".utf8).write(to: URL(fileURLWithPath: path))
    let result = try cli("import", "x", path)
    #expect(result.status == 1)
    #expect(result.stderr.hasPrefix("error: cannot import: \(path):2:1: "), "\(result)")
  }
}
