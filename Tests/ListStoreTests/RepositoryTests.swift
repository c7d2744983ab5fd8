import Foundation
import ListStore
import SQLiteKit
import TestSupport
import Testing

struct City: Codable, Equatable, Sendable {
  var name: String
}

@Suite struct RepositoryTests {
  let folder = TemporaryDirectory()

  func open() throws -> Repository { try Repository(path: folder.file("lists.sqlite")) }

  @Test func createsRenamesAndDeletesLists() throws {
    defer { folder.remove() }
    let repository = try open()
    let id = try repository.createList("cities")
    #expect(try repository.listID(named: "cities") == id)
    #expect(throws: ListStoreError.listExists(name: "cities")) {
      try repository.createList("cities")
    }
    #expect(throws: ListStoreError.emptyName) { try repository.createList("") }
    #expect(throws: ListStoreError.emptyName) { try repository.createList("  \t") }
    try repository.renameList("cities", to: "towns")
    #expect(try repository.listID(named: "towns") == id)
    #expect(throws: ListStoreError.listNotFound(name: "cities")) {
      try repository.listID(named: "cities")
    }
    try repository.createList("other")
    #expect(throws: ListStoreError.listExists(name: "other")) {
      try repository.renameList("towns", to: "other")
    }
    #expect(try repository.lists().map(\.name) == ["other", "towns"])
    try repository.deleteList("towns")
    #expect(throws: ListStoreError.listNotFound(name: "towns")) {
      try repository.deleteList("towns")
    }
    #expect(try repository.lists().map(\.name) == ["other"])
  }

  @Test(arguments: [
    "it's \"quoted\"", "a; DROP TABLE lists; --", "Zürich – 東京 🚀", "tab\tnew\nline",
    String(repeating: "long ", count: 2000), String(repeating: "é", count: 128), " padded ",
  ])
  func storesNamesAndValuesVerbatim(_ text: String) throws {
    defer { folder.remove() }
    let repository = try open()
    // Values and metadata hold any text; a name is one line without control characters,
    // white space at its ends, or more than 128 characters.
    if text.contains(where: { $0.isNewline || $0 == "\t" }) || text.count > 128
      || text.last == " " || text.first == " "
    {
      #expect(throws: ListStoreError.invalidName(text)) { try repository.createList(text) }
      #expect(try repository.lists().isEmpty)
      let list = try repository.createList(
        "tabs", metadata: SectionMetadata.self, item: String.self)
      try list.appendSection(SectionMetadata(header: text, footer: text))
      try list.appendItem(text, toSection: 0)
      #expect(try list.item(at: IndexPath(indexes: [0, 0])) == text)
      #expect(try list.section(at: 0).metadata.header == text)
      return
    }
    let list = try repository.createList(text, metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: text, footer: text))
    try list.appendItem(text, toSection: 0)
    #expect(try repository.lists().map(\.name) == [text])
    #expect(try list.item(at: IndexPath(indexes: [0, 0])) == text)
    let again = try repository.list(text, metadata: SectionMetadata.self, item: String.self)
    #expect(try again.item(at: IndexPath(indexes: [0, 0])) == text)
    #expect(try repository.lists().first?.itemCount == 1)
  }

  @Test func customCodableModelsNeedNoCeremony() throws {
    defer { folder.remove() }
    let repository = try open()
    let cities = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    let paris = try cities.appendItem(City(name: "Paris"), toSection: 0)
    try cities.appendItem(City(name: "Berlin"), toSection: 0)
    try cities.insert(item: City(name: "Copenhagen"), at: IndexPath(indexes: [0, 1]))
    #expect(try cities.item(id: paris) == City(name: "Paris"))
    #expect(try cities.item(at: IndexPath(indexes: [0, 1])) == City(name: "Copenhagen"))
    #expect(try cities.numberOfItems(inSection: 0) == 3)
    // Other readers see plain JSON.
    let raw = try repository.list("cities", metadata: RawJSON.self, item: RawJSON.self)
    #expect(try raw.item(id: paris) == RawJSON(#"{"name":"Paris"}"#))
    #expect(
      try raw.storedSections().first?.row.json == #"{"header":"Cities","footer":"That's it"}"#)
    // A value of the wrong shape is reported, not trapped on.
    let strings = try repository.list("cities", metadata: SectionMetadata.self, item: Int.self)
    #expect(throws: ListStoreError.self) { try strings.item(id: paris) }
  }

  @Test func reportsOutOfRangeAddressesAndChangesNothing() throws {
    defer { folder.remove() }
    let repository = try open()
    let list = try repository.createList("l", metadata: String.self, item: String.self)
    try list.appendSection("A")
    try list.appendItems(["a", "b"], toSection: 0)
    let before = try list.storedSections()
    let changes = try repository.totalChanges()
    #expect(throws: ListStoreError.sectionOutOfRange(index: 1, count: 1)) {
      try list.appendItem("x", toSection: 1)
    }
    #expect(throws: ListStoreError.itemOutOfRange(section: 0, row: 2, count: 2)) {
      try list.removeItem(at: IndexPath(indexes: [0, 2]))
    }
    #expect(throws: ListStoreError.insertionOutOfRange(section: 0, row: 3, limit: 2)) {
      try list.insert(item: "x", at: IndexPath(indexes: [0, 3]))
    }
    // Moving within a section: after the move the section still has 2 items.
    #expect(throws: ListStoreError.insertionOutOfRange(section: 0, row: 2, limit: 1)) {
      try list.moveItem(from: IndexPath(indexes: [0, 0]), to: IndexPath(indexes: [0, 2]))
    }
    #expect(throws: ListStoreError.sectionInsertionOutOfRange(index: 2, limit: 1)) {
      try list.insert(section: "B", at: 2)
    }
    #expect(throws: ListStoreError.sectionInsertionOutOfRange(index: 1, limit: 0)) {
      try list.moveSection(from: 0, to: 1)
    }
    #expect(throws: ListStoreError.sectionOutOfRange(index: -1, count: 1)) {
      try list.removeSection(at: -1)
    }
    #expect(throws: ListStoreError.itemNotFound(id: 999)) { try list.removeItem(id: 999) }
    #expect(throws: ListStoreError.sectionNotFound(id: 999)) { try list.removeSection(id: 999) }
    #expect(throws: ListStoreError.invalidIndexPath("[0]")) {
      try list.item(at: IndexPath(index: 0))
    }
    #expect(try list.storedSections() == before)
    #expect(try repository.totalChanges() == changes)
  }

  @Test func idsOfAnotherListAreNotFound() throws {
    defer { folder.remove() }
    let repository = try open()
    let a = try repository.createList("a", metadata: String.self, item: String.self)
    let b = try repository.createList("b", metadata: String.self, item: String.self)
    try a.appendSection("A")
    try b.appendSection("B")
    let item = try a.appendItem("x", toSection: 0)
    #expect(throws: ListStoreError.itemNotFound(id: item)) { try b.removeItem(id: item) }
    #expect(throws: ListStoreError.itemNotFound(id: item)) {
      try b.moveItem(id: item, to: IndexPath(indexes: [0, 0]))
    }
    #expect(throws: ListStoreError.sectionNotFound(id: try a.sectionID(at: 0))) {
      try b.removeSection(id: try a.sectionID(at: 0))
    }
    try repository.deleteList("a")
    #expect(throws: ListStoreError.listNotFound(name: "a")) { try a.appendSection("again") }
  }

  /// Inserting or moving one item writes exactly one row, wherever it goes: no
  /// renumbering, at the head, in the middle or at the end of a growing section.
  @Test func insertingAndMovingWritesExactlyOneRow() throws {
    defer { folder.remove() }
    let repository = try open()
    let list = try repository.createList("l", metadata: String.self, item: Int.self)
    try list.appendSection("A")
    try list.appendSection("B")
    let observer = try Connection(path: repository.path, mode: .readOnly)
    // Log entries ever written (pruning removes old ones, never lowers this).
    func logRows() throws -> Int {
      Int(try observer.scalarInt64("SELECT seq FROM sqlite_sequence WHERE name = 'changes'") ?? 0)
    }
    // Pruning, every thousand writes, is separate work in its own transaction.
    func pruned() throws -> Int64 {
      try observer.scalarInt64("SELECT pruned_through FROM change_log_horizon") ?? 0
    }
    func rows() throws -> Set<String> {
      var result = Set<String>()
      try observer.prepare("SELECT id, section_id, position, value FROM items").forEachRow {
        result.insert(
          "\($0.int64(at: 0))|\($0.int64(at: 1))|\($0.string(at: 2))|\($0.string(at: 3))")
      }
      return result
    }
    var random = SeededGenerator(seed: testSeed(7))
    var count = 0
    for step in 0..<1000 {
      let before = try rows()
      let changes = try repository.totalChanges()
      let logged = try logRows()
      let horizon = try pruned()
      let row: Int
      switch step % 3 {
      case 0: row = 0  // the head
      case 1: row = count / 2  // the middle
      default: row = Int.random(in: 0...count, using: &random)
      }
      try list.insert(item: step, at: IndexPath(indexes: [0, row]))
      count += 1
      // One item row and the one change-log row its trigger writes.
      #expect(try logRows() - logged == 1, "step \(step)")
      if try pruned() == horizon {
        #expect(try repository.totalChanges() - changes == 2, "step \(step)")
      }
      let after = try rows()
      #expect(
        after.subtracting(before).count == 1 && before.subtracting(after).isEmpty, "step \(step)")
    }
    for step in 0..<300 {
      let before = try rows()
      let changes = try repository.totalChanges()
      let logged = try logRows()
      let horizon = try pruned()
      let fromSection = step % 2
      let sizes = [try list.numberOfItems(inSection: 0), try list.numberOfItems(inSection: 1)]
      guard sizes[fromSection] > 0 else { continue }
      let toSection = Int.random(in: 0...1, using: &random)
      let from = Int.random(in: 0..<sizes[fromSection], using: &random)
      let limit = sizes[toSection] - (toSection == fromSection ? 1 : 0)
      let to = [0, limit / 2, limit][step % 3]
      try list.moveItem(
        from: IndexPath(indexes: [fromSection, from]), to: IndexPath(indexes: [toSection, to]))
      let after = try rows()
      let written = after.subtracting(before).count
      #expect(written <= 1 && before.count == after.count, "move step \(step)")
      #expect(try logRows() - logged == written, "move step \(step)")
      if try pruned() == horizon {
        #expect(try repository.totalChanges() - changes == 2 * written, "move step \(step)")
      }
    }
  }

  @Test func readsWholeListsSectionsItemsAndCounts() throws {
    defer { folder.remove() }
    let repository = try open()
    let list = try repository.createList("l", metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "A"))
    try list.insert(section: SectionMetadata(header: "Z", footer: "end"), at: 0)
    try list.appendItems(["x", "y"], toSection: 1)
    try list.appendItem("z", toSection: 0)
    #expect(try list.numberOfSections() == 2)
    #expect(try list.numberOfItems(inSection: 0) == 1)
    #expect(try list.numberOfItems(inSection: 1) == 2)
    let sections = try list.storedSections()
    #expect(
      sections.map(\.row.json) == [
        #"{"header":"Z","footer":"end"}"#, #"{"header":"A","footer":null}"#,
      ])
    #expect(sections.map { $0.items.map(\.json) } == [[#""z""#], [#""x""#, #""y""#]])
    let summary = try #require(try repository.lists().first)
    #expect(summary.id == list.id && summary.name == "l")
    #expect(summary.sectionCount == 2 && summary.itemCount == 3)
  }
}

@Suite struct RepositoryReadTests {
  @Test func readsTheWholeListAndOneSectionDecoded() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("reads.sqlite"))
    let cities = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try cities.appendSection(SectionMetadata(header: "Empty"))
    let ids = try cities.appendItems([City(name: "Paris"), City(name: "Berlin")], toSection: 0)
    let sections = try cities.sections()
    #expect(sections.map(\.metadata.header) == ["Cities", "Empty"])
    #expect(Array(sections[0].items) == [City(name: "Paris"), City(name: "Berlin")])
    #expect(Array(sections[0].items.ids) == ids)
    #expect(sections[1].items.isEmpty)
    let first = try cities.section(at: 0)
    #expect(first.id == sections[0].id && Array(first.items) == Array(sections[0].items))
    #expect(throws: ListStoreError.sectionOutOfRange(index: 2, count: 2)) {
      try cities.section(at: 2)
    }
    try repository.deleteList("cities")
    #expect(throws: ListStoreError.listNotFound(name: "cities")) { try cities.sections() }
  }
}
