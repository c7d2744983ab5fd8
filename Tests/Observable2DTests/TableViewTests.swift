import FoundationEssentials
import Observable2D
import ReactiveCore
import Testing

/// A hand-written data source: sections of `(id, text)` rows with a header.
final class RowsSource: TableViewDataSource {
  var sections: [(header: String, rows: [(id: Int64, text: String)])]
  var configured = 0

  init(_ sections: [(header: String, rows: [(id: Int64, text: String)])]) {
    self.sections = sections
  }

  func numberOfSections(in tableView: TableView) -> Int { sections.count }

  func tableView(_ tableView: TableView, numberOfRowsInSection section: Int) -> Int {
    sections[section].rows.count
  }

  func tableView(_ tableView: TableView, cellForRowAt indexPath: IndexPath) -> TableViewCell {
    configured += 1
    let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
    cell.textLabel?.text = sections[indexPath.section].rows[indexPath.row].text
    return cell
  }

  func tableView(_ tableView: TableView, titleForHeaderInSection section: Int) -> String? {
    sections[section].header
  }

  func tableView(_ tableView: TableView, identifierForRowAt indexPath: IndexPath) -> Int64? {
    sections[indexPath.section].rows[indexPath.row].id
  }
}

/// What a table view shows: per section, the header and the `(id, text)` of every row.
func shown(_ tableView: TableView) -> [String] {
  (0..<tableView.numberOfSections).map { section in
    let rows = (0..<tableView.numberOfRows(inSection: section)).map { row in
      let indexPath = IndexPath(row: row, section: section)
      return "\(tableView.identifierForRow(at: indexPath) ?? -1):"
        + (tableView.cellForRow(at: indexPath)?.text ?? "nil")
    }
    return (tableView.titleForHeader(inSection: section) ?? "nil") + " "
      + rows.joined(separator: ",")
  }
}

@Suite struct TableViewTests {
  /// Three sections of 3, 1 and 2 rows.
  func makeTable() -> (TableView, RowsSource) {
    let source = RowsSource([
      ("A", [(1, "a1"), (2, "a2"), (3, "a3")]),
      ("B", [(4, "b4")]),
      ("C", [(5, "c5"), (6, "c6")]),
    ])
    let tableView = TableView()
    tableView.dataSource = source
    tableView.reloadData()
    return (tableView, source)
  }

  @Test func reloadsFromTheDataSource() {
    let (tableView, source) = makeTable()
    #expect(shown(tableView) == ["A 1:a1,2:a2,3:a3", "B 4:b4", "C 5:c5,6:c6"])
    #expect(source.configured == 6)
    #expect(tableView.cellForRow(at: IndexPath(row: 9, section: 0)) == nil)
    #expect(tableView.numberOfRows(inSection: 7) == 0)
  }

  @Test func appliesAConsistentUpdateAndReconfiguresMovedAndUpdatedRows() throws {
    let (tableView, source) = makeTable()
    source.sections = [
      ("A", [(3, "a3"), (1, "A1!")]),
      ("N", [(9, "n9")]),
      ("B", [(4, "b4"), (7, "b7")]),
    ]
    try tableView.performBatchUpdates(
      TestChangeset(
        deletedSections: [.init(index: 2, id: 0)],
        insertedSections: [.init(index: 1, id: 0, metadata: "N", items: [(id: 9, value: "n9")])],
        deletedItems: [.init(at: path(0, 1), id: 2)],
        insertedItems: [.init(at: path(2, 1), id: 7, value: "b7")],
        movedItems: [.init(from: path(0, 2), to: path(0, 0), id: 3, value: "a3")],
        updatedItems: [.init(at: path(0, 0), id: 1, value: "A1!")]))
    #expect(shown(tableView) == ["A 3:a3,1:A1!", "N 9:n9", "B 4:b4,7:b7"])
  }

  struct Rejection: CustomTestStringConvertible, Sendable {
    var name: String
    var newSections: [Int]
    var changeset: TestChangeset
    var message: String
    var testDescription: String { name }
  }

  static let rejections: [Rejection] = [
    Rejection(
      name: "rows that do not add up", newSections: [3, 4, 2],
      changeset: TestChangeset(
        deletedItems: [.init(at: path(1, 0), id: 4)],
        insertedItems: [
          .init(at: path(1, 0), id: 10, value: "x"), .init(at: path(1, 1), id: 11, value: "y"),
          .init(at: path(1, 2), id: 12, value: "z"),
        ]),
      message: "Invalid update: invalid number of rows in section 1. The number of rows "
        + "contained in an existing section after the update (4) must be equal to the number of "
        + "rows contained in that section before the update (1), plus or minus the number of "
        + "rows inserted or deleted from that section (3 inserted, 1 deleted) and plus or minus "
        + "the number of rows moved into or out of that section (0 moved in, 0 moved out)."),
    Rejection(
      name: "rows moved without the counts following", newSections: [3, 1, 2],
      changeset: TestChangeset(movedItems: [
        .init(from: path(0, 0), to: path(2, 0), id: 1, value: "a1")
      ]),
      message: "Invalid update: invalid number of rows in section 0. The number of rows "
        + "contained in an existing section after the update (3) must be equal to the number of "
        + "rows contained in that section before the update (3), plus or minus the number of "
        + "rows inserted or deleted from that section (0 inserted, 0 deleted) and plus or minus "
        + "the number of rows moved into or out of that section (0 moved in, 1 moved out)."),
    Rejection(
      name: "sections that do not add up", newSections: [3, 1, 2, 0],
      changeset: TestChangeset(),
      message: "Invalid update: invalid number of sections. The number of sections contained in "
        + "the table view after the update (4) must be equal to the number of sections "
        + "contained in the table view before the update (3), plus or minus the number of "
        + "sections inserted or deleted (0 inserted, 0 deleted)."),
    Rejection(
      name: "delete a row out of bounds", newSections: [2, 1, 2],
      changeset: TestChangeset(deletedItems: [.init(at: path(0, 5), id: 1)]),
      message: "Invalid update: attempt to delete row 5 from section 0 which only contains 3 "
        + "rows before the update"),
    Rejection(
      name: "delete a row of a missing section", newSections: [3, 1, 2],
      changeset: TestChangeset(deletedItems: [.init(at: path(3, 0), id: 1)]),
      message: "Invalid update: attempt to delete row 0 from section 3, but there are only 3 "
        + "sections before the update"),
    Rejection(
      name: "insert a row out of bounds", newSections: [4, 1, 2],
      changeset: TestChangeset(insertedItems: [.init(at: path(0, 4), id: 9, value: "x")]),
      message: "Invalid update: attempt to insert row 4 into section 0, but there are only 4 "
        + "rows in section 0 after the update"),
    Rejection(
      name: "reload a row out of bounds", newSections: [3, 1, 2],
      changeset: TestChangeset(updatedItems: [.init(at: path(1, 1), id: 4, value: "x")]),
      message: "Invalid update: attempt to reload row 1 from section 1 which only contains 1 "
        + "rows before the update"),
    Rejection(
      name: "delete a row twice", newSections: [2, 1, 2],
      changeset: TestChangeset(deletedItems: [
        .init(at: path(0, 1), id: 2), .init(at: path(0, 1), id: 2),
      ]),
      message: "Invalid update: attempt to delete row 1 from section 0 twice"),
    Rejection(
      name: "delete and reload a row", newSections: [2, 1, 2],
      changeset: TestChangeset(
        deletedItems: [.init(at: path(0, 1), id: 2)],
        updatedItems: [.init(at: path(0, 1), id: 2, value: "x")]),
      message: "Invalid update: attempt to delete and reload the same index path ([0, 1])"),
    Rejection(
      name: "delete and move a row", newSections: [2, 2, 2],
      changeset: TestChangeset(
        deletedItems: [.init(at: path(0, 1), id: 2)],
        movedItems: [.init(from: path(0, 1), to: path(1, 0), id: 2, value: "a2")]),
      message: "Invalid update: attempt to perform a delete and a move from the same index path "
        + "([0, 1])"),
    Rejection(
      name: "insert and move to the same row", newSections: [3, 2, 1],
      changeset: TestChangeset(
        insertedItems: [.init(at: path(1, 0), id: 9, value: "x")],
        movedItems: [.init(from: path(2, 0), to: path(1, 0), id: 5, value: "c5")]),
      message: "Invalid update: attempt to perform an insert and a move to the same index path "
        + "([1, 0])"),
    Rejection(
      name: "two moves to the same row", newSections: [2, 3, 1],
      changeset: TestChangeset(movedItems: [
        .init(from: path(0, 0), to: path(1, 0), id: 1, value: "a1"),
        .init(from: path(2, 0), to: path(1, 0), id: 5, value: "c5"),
      ]),
      message: "Invalid update: attempt to move two rows to the same index path ([1, 0])"),
    Rejection(
      name: "move out of a deleted section", newSections: [4, 1],
      changeset: TestChangeset(
        deletedSections: [.init(index: 2, id: 0)],
        movedItems: [.init(from: path(2, 0), to: path(0, 0), id: 5, value: "c5")]),
      message: "Invalid update: attempt to move row 0 from section 2, which is being deleted"),
    Rejection(
      name: "move into an inserted section", newSections: [1, 2, 1, 2],
      changeset: TestChangeset(
        insertedSections: [.init(index: 1, id: 9, metadata: "N", items: [])],
        movedItems: [.init(from: path(0, 0), to: path(1, 0), id: 1, value: "a1")]),
      message: "Invalid update: attempt to move index path [0, 0] to index path [1, 0] in "
        + "section 1, which is being inserted"),
    Rejection(
      name: "delete a missing section", newSections: [3, 1, 2],
      changeset: TestChangeset(deletedSections: [.init(index: 3, id: 0)]),
      message: "Invalid update: attempt to delete section 3, but there are only 3 sections "
        + "before the update"),
    Rejection(
      name: "insert a section out of bounds", newSections: [3, 1, 2, 0],
      changeset: TestChangeset(insertedSections: [.init(index: 4, id: 9, metadata: "N", items: [])]
      ),
      message: "Invalid update: attempt to insert section 4 but there are only 4 sections after "
        + "the update"),
    Rejection(
      name: "move a section out of bounds", newSections: [1, 3, 2],
      changeset: TestChangeset(movedSections: [.init(from: 1, to: 3, id: 0, metadata: "B")]),
      message: "Invalid update: attempt to move section 1 to section 3, but there are only 3 "
        + "sections after the update"),
    Rejection(
      name: "delete and move a section", newSections: [1, 3],
      changeset: TestChangeset(
        deletedSections: [.init(index: 0, id: 0)],
        movedSections: [.init(from: 0, to: 1, id: 0, metadata: "A")]),
      message: "Invalid update: attempt to perform a delete and a move from the same section (0)"),
  ]

  @Test(arguments: rejections)
  func rejectsInconsistentUpdatesAsUIKitDoes(_ rejection: Rejection) {
    let (tableView, source) = makeTable()
    let before = shown(tableView)
    source.sections = rejection.newSections.map { count in
      ("new", (0..<count).map { (Int64(100 + $0), "n\($0)") })
    }
    #expect(throws: Observable2DArrayError.invalidTableViewUpdate(message: rejection.message)) {
      try tableView.performBatchUpdates(rejection.changeset)
    }
    #expect(shown(tableView) == before)
  }

  @Test func recyclesCellsAndResetsThemForReuse() throws {
    let (tableView, source) = makeTable()
    let removed = try #require(tableView.cellForRow(at: path(1, 0)))
    let binding = BooleanDisposable()
    removed.bag.insert(binding)
    source.sections[1].rows = []
    try tableView.performBatchUpdates(TestChangeset(deletedItems: [.init(at: path(1, 0), id: 4)]))
    source.sections[2].rows.append((7, "c7"))
    try tableView.performBatchUpdates(
      TestChangeset(insertedItems: [.init(at: path(2, 2), id: 7, value: "c7")]))
    #expect(tableView.cellForRow(at: path(2, 2)) === removed)
    #expect(removed.text == "c7")
    #expect(binding.isDisposed)
  }

  final class BadgeCell: TableViewCell {
    var badge: Int?

    override func prepareForReuse() {
      super.prepareForReuse()
      badge = nil
    }
  }

  @Test func createsRegisteredCellClasses() {
    let tableView = TableView()
    tableView.register(BadgeCell.self, forCellReuseIdentifier: "Badge")
    let cell = tableView.dequeueReusableCell(withIdentifier: "Badge", for: path(0, 0))
    #expect(cell is BadgeCell)
    #expect(cell.reuseIdentifier == "Badge")
  }

  @Test func selectingARowEmitsItsIndexPath() throws {
    let (tableView, _) = makeTable()
    var selected: [IndexPath] = []
    let subscription = tableView.selectedRow.observeNext { selected.append($0) }
    try tableView.selectRow(at: path(2, 1))
    #expect(selected == [path(2, 1)])
    #expect(tableView.indexPathForSelectedRow == path(2, 1))
    #expect(throws: Observable2DArrayError.itemOutOfRange(path(1, 3), validRange: 0..<1)) {
      try tableView.selectRow(at: path(1, 3))
    }
    #expect(selected == [path(2, 1)])
    subscription.dispose()
  }
}
