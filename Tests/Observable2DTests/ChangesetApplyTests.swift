import FoundationEssentials
import Observable2D
import Testing

@Suite struct ChangesetApplyTests {
  /// The state of the design notes' example (`spec/cli.md`) before its changeset.
  let old: [TestSection] = [
    makeSection(1, "A", [10, 11, 12]),
    makeSection(5, "B", [20, 21]),
    makeSection(7, "C", [30]),
    makeSection(4, "H", [40, 41]),
  ]

  @Test func appliesEveryKindOfEntry() throws {
    let changeset = TestChangeset(
      deletedSections: [.init(index: 2, id: 7)],
      insertedSections: [.init(index: 0, id: 9, metadata: "New", items: [(id: 90, value: "x")])],
      movedSections: [.init(from: 3, to: 1, id: 4, metadata: "H2")],
      updatedSections: [.init(index: 1, id: 5, metadata: "B2")],
      deletedItems: [.init(at: path(0, 1), id: 11)],
      insertedItems: [.init(at: path(2, 0), id: 13, value: "Paris")],
      movedItems: [.init(from: path(3, 1), to: path(3, 0), id: 41, value: "Rome")],
      updatedItems: [.init(at: path(0, 2), id: 12, value: "Oslo")])
    let expected: [TestSection] = [
      makeSection(9, "New", entries: [(90, "x")]),
      makeSection(4, "H2", entries: [(40, "v40")]),
      makeSection(1, "A", entries: [(13, "Paris"), (10, "v10"), (12, "Oslo")]),
      makeSection(5, "B2", entries: [(41, "Rome"), (20, "v20"), (21, "v21")]),
    ]
    try changeset.validate(against: old)
    #expect(try changeset.applied(to: old) == expected)
    #expect(ruleViolations(of: changeset, from: old, to: expected).isEmpty)
  }

  @Test func emptyChangesetChangesNothing() throws {
    let changeset = TestChangeset()
    #expect(changeset.isEmpty)
    #expect(try changeset.applied(to: old) == old)
  }

  @Test func movesAcrossSectionsAndWithinOne() throws {
    let changeset = TestChangeset(
      movedItems: [
        .init(from: path(0, 0), to: path(1, 1), id: 10, value: "v10"),
        .init(from: path(1, 1), to: path(0, 0), id: 21, value: "v21"),
        .init(from: path(0, 2), to: path(0, 1), id: 12, value: "v12"),
      ])
    let expected: [TestSection] = [
      makeSection(1, "A", [21, 12, 11]),
      makeSection(5, "B", [20, 10]),
      makeSection(7, "C", [30]),
      makeSection(4, "H", [40, 41]),
    ]
    #expect(try changeset.applied(to: old) == expected)
  }

  struct Rejection: CustomTestStringConvertible, Sendable {
    var name: String
    var changeset: TestChangeset
    var rule: Int
    var message: String
    var testDescription: String { name }
  }

  static let rejections: [Rejection] = [
    Rejection(
      name: "deleted section out of bounds",
      changeset: TestChangeset(deletedSections: [.init(index: 4, id: 1)]), rule: 1,
      message: "deletedSections[0] names section 4, but there are only 4 sections before the update"
    ),
    Rejection(
      name: "section deleted twice",
      changeset: TestChangeset(deletedSections: [.init(index: 0, id: 1), .init(index: 0, id: 1)]),
      rule: 2,
      message: "deletedSections[1] names old section 0, which deletedSections[0] already names"),
    Rejection(
      name: "section moved and updated",
      changeset: TestChangeset(
        movedSections: [.init(from: 0, to: 1, id: 1, metadata: "x")],
        updatedSections: [.init(index: 0, id: 1, metadata: "y")]), rule: 2,
      message: "updatedSections[0] names old section 0, which movedSections[0] already names"),
    Rejection(
      name: "inserted section beyond the new count",
      changeset: TestChangeset(insertedSections: [.init(index: 5, id: 8, metadata: "x", items: [])]
      ),
      rule: 1,
      message: "insertedSections[0] names section 5, but there are only 5 sections after the "
        + "update (4 before, 1 inserted, 0 deleted)"),
    Rejection(
      name: "insert and move to the same section index",
      changeset: TestChangeset(
        insertedSections: [.init(index: 0, id: 8, metadata: "x", items: [])],
        movedSections: [.init(from: 2, to: 0, id: 7, metadata: "C")]), rule: 2,
      message: "movedSections[0] names new section 0, which insertedSections[0] already names"),
    Rejection(
      name: "section id mismatch",
      changeset: TestChangeset(deletedSections: [.init(index: 0, id: 99)]), rule: 6,
      message: "deletedSections[0] names section 0 with id 99, but that section has id 1 before "
        + "the update"),
    Rejection(
      name: "deleted row out of bounds",
      changeset: TestChangeset(deletedItems: [.init(at: path(0, 5), id: 1)]), rule: 1,
      message: "deletedItems[0] names row 5 of section 0, which only contains 3 rows before the "
        + "update"),
    Rejection(
      name: "malformed index path",
      changeset: TestChangeset(deletedItems: [.init(at: IndexPath(index: 0), id: 1)]), rule: 1,
      message: "deletedItems[0] names [0], which is not [section, row]"),
    Rejection(
      name: "row deleted and updated",
      changeset: TestChangeset(
        deletedItems: [.init(at: path(0, 1), id: 11)],
        updatedItems: [.init(at: path(0, 1), id: 11, value: "x")]), rule: 2,
      message: "updatedItems[0] names old row 1 of section 0, which deletedItems[0] already names"),
    Rejection(
      name: "item of a deleted section listed",
      changeset: TestChangeset(
        deletedSections: [.init(index: 1, id: 5)], deletedItems: [.init(at: path(1, 0), id: 20)]),
      rule: 3,
      message: "deletedItems[0] names row 0 of section 1, which is deleted; items of a deleted "
        + "section are not listed"),
    Rejection(
      name: "move out of a deleted section",
      changeset: TestChangeset(
        deletedSections: [.init(index: 1, id: 5)],
        movedItems: [.init(from: path(1, 0), to: path(0, 0), id: 20, value: "v20")]), rule: 3,
      message: "movedItems[0] names row 0 of section 1, which is deleted; items of a deleted "
        + "section are not listed"),
    Rejection(
      name: "move into an inserted section",
      changeset: TestChangeset(
        insertedSections: [.init(index: 0, id: 8, metadata: "x", items: [])],
        movedItems: [.init(from: path(0, 0), to: path(0, 0), id: 10, value: "v10")]), rule: 3,
      message: "movedItems[0] names row 0 of section 0, which is inserted; its items come inside "
        + "insertedSections and are not listed again"),
    Rejection(
      name: "inserted row beyond the new count",
      changeset: TestChangeset(insertedItems: [.init(at: path(2, 2), id: 31, value: "x")]),
      rule: 4,
      message: "insertedItems[0] names row 2 of section 2, which only contains 2 rows after the "
        + "update (1 before, 0 deleted or moved out, 1 inserted or moved in)"),
    Rejection(
      name: "two insertions at one index path",
      changeset: TestChangeset(insertedItems: [
        .init(at: path(2, 0), id: 31, value: "x"), .init(at: path(2, 0), id: 32, value: "y"),
      ]), rule: 2,
      message: "insertedItems[1] names new row 0 of section 2, which insertedItems[0] already "
        + "names"),
    Rejection(
      name: "item id mismatch",
      changeset: TestChangeset(updatedItems: [.init(at: path(1, 1), id: 20, value: "x")]),
      rule: 6,
      message: "updatedItems[0] names row 1 of section 1 with id 20, but that row has id 21 "
        + "before the update"),
  ]

  @Test(arguments: rejections)
  func rejectsInvalidChangesets(_ rejection: Rejection) {
    let expected = Observable2DArrayError.invalidChangeset(
      rule: rejection.rule, message: rejection.message)
    #expect(throws: expected) { try rejection.changeset.validate(against: old) }
    #expect(throws: expected) { try rejection.changeset.applied(to: old) }
  }

  @Test func appliesSingleRowChangesToAMillionItemsWithoutCopyingThem() throws {
    let items = ItemList(entries: (1...1_000_000).lazy.map { (id: Int64($0), value: "v\($0)") })
    let big = [TestSection(id: 1, metadata: "All", items: items)]
    let changeset = TestChangeset(
      insertedItems: [.init(at: path(0, 500_000), id: 2_000_001, value: "new")],
      movedItems: [.init(from: path(0, 10), to: path(0, 999_999), id: 11, value: "moved")],
      updatedItems: [.init(at: path(0, 700_000), id: 700_001, value: "changed")])
    let clock = ContinuousClock()
    var result: [TestSection] = []
    let elapsed = try clock.measure { result = try changeset.applied(to: big) }
    #expect(result[0].items.count == 1_000_000 + 1)
    #expect(result[0].items[500_000] == "new")
    #expect(result[0].items.id(at: 999_999) == 11)
    #expect(result[0].items[700_000] == "changed")
    #expect(big[0].items[700_000] == "v700001")
    // Generous even for debug builds: a walk over the million items would take far longer.
    #expect(elapsed < .milliseconds(50))
  }
}
