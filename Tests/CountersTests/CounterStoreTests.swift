import Counters
import Foundation
import ListStore
import TestSupport
import Testing

/// `(id, value)` pairs as comparable values.
func pairs(_ counters: [(id: Int64, value: Int)]) -> [[Int64]] {
  counters.map { [$0.id, Int64($0.value)] }
}

@Suite struct CounterStoreTests {
  let folder = TemporaryDirectory()
  var path: String { folder.file("counters.sqlite") }

  func open() throws -> Repository { try Repository(path: path) }

  @Test func createsTheListWithOneSectionOnFirstUse() throws {
    defer { folder.remove() }
    let repository = try open()
    #expect(try CounterStore.existing(repository: repository) == nil)
    #expect(try repository.lists().isEmpty)  // looking did not create anything

    let store = try CounterStore(repository: repository)
    #expect(store.listName == "counters")
    let list = try repository.list("counters", metadata: SectionMetadata.self, item: Int.self)
    #expect(try list.numberOfSections() == 1)
    #expect(try list.numberOfItems(inSection: 0) == 0)
    #expect(try store.counters().isEmpty)

    // Opening again neither fails nor adds a section.
    _ = try CounterStore(repository: repository)
    #expect(try list.numberOfSections() == 1)
    #expect(try CounterStore.existing(repository: repository)?.listName == "counters")
  }

  @Test func addsSetsIncrementsDecrementsAndDeletesByRowAndByID() throws {
    defer { folder.remove() }
    let store = try CounterStore(repository: try open(), listName: "tally")
    let a = try store.add()
    let b = try store.add(5)
    let c = try store.add(-2)
    #expect(pairs(try store.counters()) == [[a, 0], [b, 5], [c, -2]])

    #expect(try store.increment(id: a) == 1)
    #expect(try store.increment(row: 1, by: 10) == 15)
    #expect(try store.decrement(id: c) == -3)
    #expect(try store.decrement(row: 0, by: 4) == -3)
    try store.set(id: b, to: 100)
    try store.set(row: 2, to: 7)
    #expect(pairs(try store.counters()) == [[a, -3], [b, 100], [c, 7]])
    #expect(try store.id(atRow: 1) == b)
    #expect(try store.value(id: c) == 7)

    try store.delete(row: 1)
    #expect(pairs(try store.counters()) == [[a, -3], [c, 7]])
    try store.delete(id: a)
    #expect(pairs(try store.counters()) == [[c, 7]])
  }

  @Test func countersSurviveReopeningTheDatabase() throws {
    defer { folder.remove() }
    var ids: [Int64] = []
    do {
      let store = try CounterStore(repository: try open())
      ids.append(try store.add(3))
      ids.append(try store.add())
      try store.increment(id: ids[1])
    }
    let reopened = try CounterStore(repository: try open())
    #expect(pairs(try reopened.counters()) == [[ids[0], 3], [ids[1], 1]])
  }

  @Test func storesValuesAsJSONNumbersInASectionHeadedCounters() throws {
    defer { folder.remove() }
    let repository = try open()
    let store = try CounterStore(repository: repository)
    let id = try store.add(42)
    try store.decrement(id: id, by: 50)
    let raw = try repository.list("counters", metadata: RawJSON.self, item: RawJSON.self)
    let sections = try raw.storedSections()
    #expect(sections.count == 1)
    #expect(sections.first?.row.json == #"{"header":"Counters","footer":null}"#)
    #expect(sections.first?.items.map(\.json) == ["-8"])
    #expect(sections.first?.items.map(\.id) == [id])
  }

  @Test(arguments: [
    ("5", 5), ("-12", -12), ("5.0", 5), ("\"7\"", 7), ("\" 8 \"", 8),
    ("9223372036854775807", Int.max),
  ])
  func readsNumbersAndWholeNumberStrings(json: String, expected: Int) throws {
    defer { folder.remove() }
    let repository = try open()
    let store = try CounterStore(repository: repository)
    let raw = try repository.list("counters", metadata: RawJSON.self, item: RawJSON.self)
    let id = try raw.appendItem(RawJSON(json), toSection: 0)
    #expect(try store.value(id: id) == expected)
    #expect(pairs(try store.counters()) == [[id, Int64(expected)]])
  }

  @Test(arguments: ["\"abc\"", "5.5", "null", "[1]", "{\"value\":1}", "true", "1e30"])
  func refusesValuesThatAreNotWholeNumbers(json: String) throws {
    defer { folder.remove() }
    let repository = try open()
    let store = try CounterStore(repository: repository)
    try store.add()
    let raw = try repository.list("counters", metadata: RawJSON.self, item: RawJSON.self)
    let id = try raw.appendItem(RawJSON(json), toSection: 0)
    let stored = try raw.item(id: id).text
    #expect(throws: CounterError.notANumber(id: id, json: stored, list: "counters", row: 1)) {
      try store.counters()
    }
    #expect(throws: CounterError.notANumber(id: id, json: stored, list: "counters", row: nil)) {
      try store.increment(id: id)
    }
    let message = "\(CounterError.notANumber(id: id, json: stored, list: "counters", row: 1))"
    #expect(message.contains("counter 1 (id \(id))"))
    #expect(message.contains("liststore item set counters 0:1 0 --json"))
  }

  @Test func reportsMissingRowsAndIDsClearly() throws {
    defer { folder.remove() }
    let store = try CounterStore(repository: try open())
    #expect(throws: CounterError.rowOutOfRange(row: 0, count: 0, list: "counters")) {
      try store.increment(row: 0)
    }
    try store.add()
    try store.add()
    #expect(throws: CounterError.rowOutOfRange(row: 2, count: 2, list: "counters")) {
      try store.delete(row: 2)
    }
    #expect(throws: CounterError.counterNotFound(id: 99, list: "counters")) {
      try store.set(id: 99, to: 1)
    }
    #expect(throws: CounterError.counterNotFound(id: 99, list: "counters")) {
      try store.delete(id: 99)
    }
    #expect(
      "\(CounterError.rowOutOfRange(row: 2, count: 2, list: "counters"))"
        == "counter 2 does not exist: \"counters\" has 2 counters (rows 0…1)")
    #expect(
      "\(CounterError.rowOutOfRange(row: 0, count: 0, list: "counters"))"
        == "counter 0 does not exist: \"counters\" has no counters; "
        + "add one with 'liststore counters add'")
  }

  @Test func incrementsRefuseToOverflow() throws {
    defer { folder.remove() }
    let store = try CounterStore(repository: try open())
    let high = try store.add(Int.max)
    let low = try store.add(Int.min)
    #expect(throws: CounterError.overflow(id: high, row: nil)) { try store.increment(id: high) }
    #expect(throws: CounterError.overflow(id: low, row: nil)) { try store.decrement(id: low) }
    #expect(throws: CounterError.overflow(id: high, row: nil)) {
      try store.decrement(id: high, by: Int.min)
    }
    // Named by row, as the command line names counters: zero-based, with the id.
    #expect(throws: CounterError.overflow(id: low, row: 1)) { try store.decrement(row: 1) }
    #expect(
      "\(CounterError.overflow(id: low, row: 1))"
        == "counter 1 (id \(low)) cannot go beyond \(Int.min)…\(Int.max); it is left as it was")
    #expect(
      "\(CounterError.notANumber(id: 7, json: "\"x\"", list: "c", row: nil))"
        == "counter with id 7 of \"c\" holds \"x\", not a whole number; fix it with: "
        + "liststore item set c '#7' 0 --json")
    #expect(pairs(try store.counters()) == [[high, Int64(Int.max)], [low, Int64(Int.min)]])
  }

  @Test func addsTheSectionAgainWhenSomeoneRemovedIt() throws {
    defer { folder.remove() }
    let repository = try open()
    let store = try CounterStore(repository: repository)
    let list = try repository.list("counters", metadata: RawJSON.self, item: RawJSON.self)
    try list.removeSection(at: 0)
    #expect(try store.counters().isEmpty)
    let id = try store.add(1)
    #expect(pairs(try store.counters()) == [[id, 1]])
    #expect(try list.numberOfSections() == 1)
  }

  @Test func aListDeletedUnderneathIsReported() throws {
    defer { folder.remove() }
    let repository = try open()
    let store = try CounterStore(repository: repository)
    try repository.deleteList("counters")
    #expect(throws: CounterError.store(.listNotFound(name: "counters"))) { try store.add() }
  }
}
