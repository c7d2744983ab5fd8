import Foundation
import ListStore
import ListStoreTesting
import Testing

/// Fixtures in the `export` format, and the `show` dumps.
@Suite struct FixtureTests {
  static let groceries = ListFixture.json(
    """
    {"list": "groceries", "sections": [
      {"header": "Fruit", "footer": "fresh today", "items": ["apples", 3, {"name": "kiwi"}]},
      {"header": "Dairy", "items": [{"value": "milk"}]}
    ]}
    """)

  @Test(.temporaryRepository(lists: [groceries]))
  func theTraitImportsTheListsAndTheDumpsShowThem() throws {
    let repository = try TemporaryRepository.required().repository
    let groceries = try repository.list("groceries", metadata: RawJSON.self, item: RawJSON.self)
    #expect(
      try groceries.showText() == """
        groceries
          [0] Fruit
              0:0  apples
              0:1  3
              0:2  {"name":"kiwi"}
              -- fresh today
          [1] Dairy
              1:0  milk
        """)
    #expect(
      try groceries.showJSON()
        == #"{"list":"groceries","sections":[{"id":1,"header":"Fruit","footer":"fresh today","items":[{"id":1,"value":"apples"},{"id":2,"value":3},{"id":3,"value":{"name":"kiwi"}}]},{"id":2,"header":"Dairy","footer":null,"items":[{"id":4,"value":"milk"}]}]}"#
    )
  }

  @Test func anExportImportsBackAsTheSameListUnderAnotherName() throws {
    let temporary = try TemporaryRepository(lists: [Self.groceries])
    defer { temporary.remove() }
    let original = try temporary.repository.list(
      "groceries", metadata: RawJSON.self, item: RawJSON.self)
    let file = temporary.folder + "/groceries.json"
    try original.showJSON().write(toFile: file, atomically: true, encoding: .utf8)
    let copy = try temporary.repository.importList(.file(file, name: "copy"))
    #expect(
      try copy.showText()
        == (try original.showText()).replacingOccurrences(
          of: "groceries", with: "copy"))
    // Typed access to the imported rows.
    let typed = try temporary.repository.list(
      "copy", metadata: SectionMetadata.self, item: RawJSON.self)
    #expect(try typed.section(at: 1).metadata == SectionMetadata(header: "Dairy"))
  }

  @Test func aFixtureThatDoesNotFitSaysWhereAndCreatesNothing() throws {
    let temporary = try TemporaryRepository()
    defer { temporary.remove() }
    #expect(
      throws: ListStoreError.invalidImport(
        "the fixture: sections[0]: unknown key \"itmes\"; did you mean 'items'?")
    ) {
      try temporary.repository.importList(
        .json(#"{"list": "x", "sections": [{"header": "A", "itmes": []}]}"#))
    }
    #expect(
      throws: ListStoreError.invalidImport(
        "the fixture: the list has no name; give one with name: or a \"list\" member")
    ) {
      try temporary.repository.importList(.json(#"{"sections": []}"#))
    }
    #expect(throws: ListStoreError.self) {
      try TemporaryRepository(lists: [.json("{\"list\": \"y\", \"sections\": [,]}")])
    }
    #expect(try temporary.repository.lists().isEmpty)
  }
}
