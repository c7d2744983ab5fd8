public import FoundationEssentials
public import ReactiveCore

/// What a ``TableView`` asks for its content, as `UITableViewDataSource` does.
///
/// Only the row count and the cells are required; one section and no titles are the defaults.
public protocol TableViewDataSource: AnyObject {
  /// The number of sections.
  ///
  /// - Parameter tableView: The table view asking.
  /// - Returns: The number of sections.
  func numberOfSections(in tableView: TableView) -> Int

  /// The number of rows in a section.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - section: The section's index.
  /// - Returns: The number of rows.
  func tableView(_ tableView: TableView, numberOfRowsInSection section: Int) -> Int

  /// A configured cell for a row, usually from
  /// ``TableView/dequeueReusableCell(withIdentifier:for:)``.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - indexPath: The row's index path.
  /// - Returns: The cell.
  func tableView(_ tableView: TableView, cellForRowAt indexPath: IndexPath) -> TableViewCell

  /// The title of a section's header.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - section: The section's index.
  /// - Returns: The title, or `nil` for none.
  func tableView(_ tableView: TableView, titleForHeaderInSection section: Int) -> String?

  /// The title of a section's footer.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - section: The section's index.
  /// - Returns: The title, or `nil` for none.
  func tableView(_ tableView: TableView, titleForFooterInSection section: Int) -> String?

  /// The stable id of the item a row shows, used when the table is reloaded.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - indexPath: The row's index path.
  /// - Returns: The id, or `nil` when the data source has none.
  func tableView(_ tableView: TableView, identifierForRowAt indexPath: IndexPath) -> Int64?
}

extension TableViewDataSource {
  /// One section.
  ///
  /// - Parameter tableView: The table view asking.
  /// - Returns: `1`.
  public func numberOfSections(in tableView: TableView) -> Int { 1 }

  /// No header.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - section: The section's index.
  /// - Returns: `nil`.
  public func tableView(_ tableView: TableView, titleForHeaderInSection section: Int) -> String? {
    nil
  }

  /// No footer.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - section: The section's index.
  /// - Returns: `nil`.
  public func tableView(_ tableView: TableView, titleForFooterInSection section: Int) -> String? {
    nil
  }

  /// No id.
  ///
  /// - Parameters:
  ///   - tableView: The table view asking.
  ///   - indexPath: The row's index path.
  /// - Returns: `nil`.
  public func tableView(_ tableView: TableView, identifierForRowAt indexPath: IndexPath) -> Int64? {
    nil
  }
}

/// A table view without drawing: sections of rows made of reusable cells, with header and
/// footer titles, that applies batch updates the way UIKit's `performBatchUpdates` does.
///
/// It is what a 2D array binds to in tests and terminals, and it is strict: before applying a
/// changeset it checks the data source's new counts against its own old ones and the changeset,
/// and rejects an inconsistent update with an error worded like UIKit's exception, changing
/// nothing. Inserted, moved and updated rows get a new cell from the data source, so every
/// visible cell shows the current values. It materializes every row (there is no scrolling),
/// so it suits lists of thousands of rows, not millions.
///
/// Like UIKit's, it is not thread-safe: use it from one thread at a time. A binding updates it
/// on the thread that delivers the array's events, one event at a time.
public final class TableView {
  private struct Row {
    var cell: TableViewCell
    var id: Int64?
    var needsReload = false
  }

  /// Where a section of the new state comes from.
  private enum SectionSource {
    case inserted(ids: [Int64])
    case moved(from: Int)
  }

  private struct SectionContent {
    var rows: [Row]
    var header: String?
    var footer: String?
  }

  /// The object that provides the rows and titles; held weakly, as in UIKit.
  public weak var dataSource: (any TableViewDataSource)?

  private var content: [SectionContent] = []
  private var reusePool: [String: [TableViewCell]] = [:]
  private var registeredCells: [String: TableViewCell.Type] = [:]
  private let selection = PublishSubject<IndexPath>()

  /// The row last selected with ``selectRow(at:)``; cleared by every update.
  public private(set) var indexPathForSelectedRow: IndexPath?

  /// How many batch updates a binding had to replace with a reload because the table view
  /// rejected them (always `0` for consistent changesets).
  public internal(set) var rejectedUpdateCount = 0

  /// The last error of an update a binding had to replace with a reload.
  public internal(set) var lastRejectedUpdate: Observable2DArrayError?

  /// Creates an empty table view.
  public init() {}

  // MARK: Content

  /// The number of sections shown.
  public var numberOfSections: Int { content.count }

  /// The number of rows shown in a section.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The number of rows, or `0` when there is no such section.
  public func numberOfRows(inSection section: Int) -> Int {
    content.indices.contains(section) ? content[section].rows.count : 0
  }

  /// The cell shown for a row.
  ///
  /// - Parameter indexPath: The row's index path.
  /// - Returns: The cell, or `nil` when there is no such row.
  public func cellForRow(at indexPath: IndexPath) -> TableViewCell? {
    row(at: indexPath)?.cell
  }

  /// The stable id of the item a row shows, as the last update or reload gave it.
  ///
  /// - Parameter indexPath: The row's index path.
  /// - Returns: The id, or `nil` when there is no such row or no id.
  public func identifierForRow(at indexPath: IndexPath) -> Int64? {
    row(at: indexPath)?.id
  }

  /// The cells of a section, in order.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The cells, or none when there is no such section.
  public func cells(inSection section: Int) -> [TableViewCell] {
    content.indices.contains(section) ? content[section].rows.map(\.cell) : []
  }

  /// The title shown in a section's header.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The title, or `nil`.
  public func titleForHeader(inSection section: Int) -> String? {
    content.indices.contains(section) ? content[section].header : nil
  }

  /// The title shown in a section's footer.
  ///
  /// - Parameter section: The section's index.
  /// - Returns: The title, or `nil`.
  public func titleForFooter(inSection section: Int) -> String? {
    content.indices.contains(section) ? content[section].footer : nil
  }

  private func row(at indexPath: IndexPath) -> Row? {
    guard indexPath.count == 2, content.indices.contains(indexPath[0]),
      content[indexPath[0]].rows.indices.contains(indexPath[1])
    else { return nil }
    return content[indexPath[0]].rows[indexPath[1]]
  }

  // MARK: Cells

  /// Registers the cell class to create for a reuse identifier.
  ///
  /// Without a registration, ``dequeueReusableCell(withIdentifier:for:)`` creates plain
  /// ``TableViewCell``s.
  ///
  /// - Parameters:
  ///   - cellClass: The class to instantiate.
  ///   - identifier: The reuse identifier.
  public func register(_ cellClass: TableViewCell.Type, forCellReuseIdentifier identifier: String) {
    registeredCells[identifier] = cellClass
  }

  /// A cell to configure for a row: a recycled one (after its ``TableViewCell/prepareForReuse()``)
  /// or a new one of the registered class.
  ///
  /// - Parameters:
  ///   - identifier: The reuse identifier.
  ///   - indexPath: The row the cell is for.
  /// - Returns: The cell.
  public func dequeueReusableCell(withIdentifier identifier: String, for indexPath: IndexPath)
    -> TableViewCell
  {
    if let cell = reusePool[identifier]?.popLast() {
      cell.prepareForReuse()
      return cell
    }
    let cellClass = registeredCells[identifier] ?? TableViewCell.self
    return cellClass.init(reuseIdentifier: identifier)
  }

  private func recycle(_ cell: TableViewCell) {
    guard let identifier = cell.reuseIdentifier else { return }
    reusePool[identifier, default: []].append(cell)
  }

  private func makeRow(at indexPath: IndexPath, id: Int64?, dataSource: any TableViewDataSource)
    -> Row
  {
    Row(cell: dataSource.tableView(self, cellForRowAt: indexPath), id: id)
  }

  // MARK: Selection

  /// The index paths of the rows the user selects, as ``selectRow(at:)`` simulates.
  public var selectedRow: Observable<IndexPath> { selection.asObservable() }

  /// Simulates a tap on a row: it becomes ``indexPathForSelectedRow`` and ``selectedRow``
  /// emits it.
  ///
  /// - Parameter indexPath: The row's index path.
  /// - Throws: ``Observable2DArrayError`` when there is no such row.
  public func selectRow(at indexPath: IndexPath) throws(Observable2DArrayError) {
    guard indexPath.count == 2 else { throw .malformedIndexPath(indexPath) }
    guard content.indices.contains(indexPath[0]) else {
      throw .sectionOutOfRange(section: indexPath[0], validRange: content.indices)
    }
    guard content[indexPath[0]].rows.indices.contains(indexPath[1]) else {
      throw .itemOutOfRange(indexPath, validRange: content[indexPath[0]].rows.indices)
    }
    indexPathForSelectedRow = indexPath
    selection.onNext(indexPath)
  }

  // MARK: Updates

  /// Rebuilds every row and title from the data source.
  public func reloadData() {
    for section in content {
      for row in section.rows { recycle(row.cell) }
    }
    content = []
    indexPathForSelectedRow = nil
    guard let dataSource else { return }
    for section in 0..<max(0, dataSource.numberOfSections(in: self)) {
      var rows: [Row] = []
      for row in 0..<max(0, dataSource.tableView(self, numberOfRowsInSection: section)) {
        let indexPath = IndexPath(row: row, section: section)
        rows.append(
          makeRow(
            at: indexPath, id: dataSource.tableView(self, identifierForRowAt: indexPath),
            dataSource: dataSource))
      }
      content.append(SectionContent(rows: rows))
    }
    refreshTitles(dataSource)
  }

  private func refreshTitles(_ dataSource: any TableViewDataSource) {
    for section in content.indices {
      content[section].header = dataSource.tableView(self, titleForHeaderInSection: section)
      content[section].footer = dataSource.tableView(self, titleForFooterInSection: section)
    }
  }

  /// Applies a changeset as one batch update, after checking it as UIKit would.
  ///
  /// The data source must already describe the state after the update. The table view checks
  /// that every index is in bounds (old indexes against its own rows, new ones against the
  /// data source's counts), that nothing is deleted, moved or reloaded twice or inserted or
  /// moved to the same place twice, that no row moves out of a deleted section or into an
  /// inserted one, and that the data source's section count and the row count of every
  /// section that stays add up. Then it removes and inserts rows and sections, asks the data
  /// source for the cells of inserted, moved and updated rows and refreshes the titles.
  ///
  /// - Parameter changeset: The update.
  /// - Throws: ``Observable2DArrayError/invalidTableViewUpdate(message:)`` with UIKit's wording
  ///   when the update is inconsistent; the table view is then unchanged.
  /// - Complexity: O(*r* + *k* log *k*) for *r* rows shown and *k* entries.
  public func performBatchUpdates<Metadata, Item>(_ changeset: Changeset<Metadata, Item>)
    throws(Observable2DArrayError)
  {
    guard let dataSource else {
      throw .invalidTableViewUpdate(message: "Invalid update: the table view has no data source")
    }
    try TableViewUpdateCheck.check(
      changeset, oldRowCounts: content.map(\.rows.count),
      newSectionCount: dataSource.numberOfSections(in: self),
      newRowCount: { dataSource.tableView(self, numberOfRowsInSection: $0) })
    apply(changeset, dataSource: dataSource)
  }

  private func apply<Metadata, Item>(
    _ changeset: Changeset<Metadata, Item>, dataSource: any TableViewDataSource
  ) {
    indexPathForSelectedRow = nil
    for update in changeset.updatedItems {
      content[update.at[0]].rows[update.at[1]].needsReload = true
    }

    var movedRows: [IndexPath: Row] = [:]
    let rowRemovals = (changeset.deletedItems.map(\.at) + changeset.movedItems.map(\.from))
      .sorted(by: >)
    let movedFrom = Set(changeset.movedItems.map(\.from))
    for path in rowRemovals {
      let row = content[path[0]].rows.remove(at: path[1])
      if movedFrom.contains(path) { movedRows[path] = row } else { recycle(row.cell) }
    }

    var movedSections: [Int: SectionContent] = [:]
    let movedSectionSources = Set(changeset.movedSections.map(\.from))
    let sectionRemovals =
      (changeset.deletedSections.map(\.index) + changeset.movedSections.map(\.from))
      .sorted(by: >)
    for index in sectionRemovals {
      let section = content.remove(at: index)
      if movedSectionSources.contains(index) {
        movedSections[index] = section
      } else {
        for row in section.rows { recycle(row.cell) }
      }
    }

    var sectionInsertions: [(index: Int, source: SectionSource)] = []
    for insertion in changeset.insertedSections {
      sectionInsertions.append((insertion.index, .inserted(ids: Array(insertion.items.ids))))
    }
    for move in changeset.movedSections {
      sectionInsertions.append((move.to, .moved(from: move.from)))
    }
    for insertion in sectionInsertions.sorted(by: { $0.index < $1.index }) {
      switch insertion.source {
      case .inserted(let ids):
        content.insert(SectionContent(rows: []), at: insertion.index)
        for (row, id) in ids.enumerated() {
          content[insertion.index].rows.append(
            makeRow(
              at: IndexPath(row: row, section: insertion.index), id: id, dataSource: dataSource))
        }
      case .moved(let from):
        content.insert(movedSections[from] ?? SectionContent(rows: []), at: insertion.index)
      }
    }

    var rowInsertions: [(at: IndexPath, id: Int64, moved: Row?)] = []
    for insertion in changeset.insertedItems {
      rowInsertions.append((insertion.at, insertion.id, nil))
    }
    for move in changeset.movedItems {
      rowInsertions.append((move.to, move.id, movedRows[move.from]))
    }
    for insertion in rowInsertions.sorted(by: { $0.at < $1.at }) {
      var row =
        insertion.moved ?? makeRow(at: insertion.at, id: insertion.id, dataSource: dataSource)
      row.needsReload = insertion.moved != nil
      content[insertion.at[0]].rows.insert(row, at: insertion.at[1])
    }

    // Moved and updated rows show their new values: they get a fresh cell.
    for section in content.indices {
      for index in content[section].rows.indices where content[section].rows[index].needsReload {
        let old = content[section].rows[index].cell
        content[section].rows[index].cell = dataSource.tableView(
          self, cellForRowAt: IndexPath(row: index, section: section))
        content[section].rows[index].needsReload = false
        if old !== content[section].rows[index].cell { recycle(old) }
      }
    }
    refreshTitles(dataSource)
  }
}
