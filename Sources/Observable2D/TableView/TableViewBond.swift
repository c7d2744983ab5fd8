public import FoundationEssentials
public import ReactiveCore

/// How an observable 2D array is shown in a ``TableView``: its cells and section titles, as in
/// Bond.
///
/// The associated types are inferred from `cellForRow` alone, so a bond for a custom item
/// model needs no `typealias`:
///
/// ```swift
/// struct City { let name: String }
/// typealias SectionMetadata = (header: String, footer: String)
///
/// struct CityBond: TableViewBond {
///   func cellForRow(
///     at indexPath: IndexPath, tableView: TableView,
///     dataSource: Observable2DArray<SectionMetadata, City>
///   ) -> TableViewCell {
///     let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
///     cell.textLabel?.text = dataSource[indexPath].name
///     return cell
///   }
///
///   func titleForHeader(in section: Int, dataSource: Observable2DArray<SectionMetadata, City>)
///     -> String?
///   {
///     dataSource[section].metadata.header
///   }
/// }
///
/// array.bind(to: tableView, using: CityBond())
/// ```
public protocol TableViewBond<Metadata, Item> {
  /// The metadata of the array's sections.
  associatedtype Metadata
  /// The array's items.
  associatedtype Item

  /// A configured cell for a row.
  ///
  /// - Parameters:
  ///   - indexPath: The row's index path.
  ///   - tableView: The table view, to dequeue cells from.
  ///   - dataSource: The array, in the state the table view is showing.
  /// - Returns: The cell.
  func cellForRow(
    at indexPath: IndexPath, tableView: TableView, dataSource: Observable2DArray<Metadata, Item>
  ) -> TableViewCell

  /// The title of a section's header; `nil` by default.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - dataSource: The array, in the state the table view is showing.
  /// - Returns: The title, or `nil`.
  func titleForHeader(in section: Int, dataSource: Observable2DArray<Metadata, Item>) -> String?

  /// The title of a section's footer; `nil` by default.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - dataSource: The array, in the state the table view is showing.
  /// - Returns: The title, or `nil`.
  func titleForFooter(in section: Int, dataSource: Observable2DArray<Metadata, Item>) -> String?
}

extension TableViewBond {
  /// No header title.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - dataSource: The array.
  /// - Returns: `nil`.
  public func titleForHeader(in section: Int, dataSource: Observable2DArray<Metadata, Item>)
    -> String?
  {
    nil
  }

  /// No footer title.
  ///
  /// - Parameters:
  ///   - section: The section's index.
  ///   - dataSource: The array.
  /// - Returns: `nil`.
  public func titleForFooter(in section: Int, dataSource: Observable2DArray<Metadata, Item>)
    -> String?
  {
    nil
  }
}

extension Observable2DArray {
  /// Shows the array in a table view through a bond, and keeps it up to date.
  ///
  /// The table view gets a data source that answers from the state of the last event it
  /// applied, is reloaded with the current state, and then applies every event's changeset as
  /// a batch update on the thread that delivers it — except a silent event's
  /// (``Observable2DArrayEvent/isSilent``), which only becomes its data source. Should the table view ever reject an
  /// update, the binding reloads it instead and counts the rejection in
  /// ``TableView/rejectedUpdateCount``. The binding holds the table view weakly.
  ///
  /// - Parameters:
  ///   - tableView: The table view.
  ///   - bond: Makes the cells and titles.
  /// - Returns: The binding; disposing it stops the updates.
  @discardableResult
  public func bind<Bond: TableViewBond>(to tableView: TableView, using bond: Bond)
    -> any Disposable
  where Bond.Metadata == Metadata, Bond.Item == Item {
    let source = BondDataSource(bond: bond)
    return subscribe(
      initial: { [weak tableView] sections in
        guard let tableView else { return }
        source.snapshot.replaceSnapshot(sections)
        tableView.dataSource = source
        tableView.reloadData()
      },
      onNext: { [weak tableView] event in
        guard let tableView else { return }
        source.snapshot.replaceSnapshot(event.sections)
        // The table view shows a silent change already.
        guard !event.isSilent else { return }
        do throws(Observable2DArrayError) {
          try tableView.performBatchUpdates(event.changeset)
        } catch {
          tableView.rejectedUpdateCount += 1
          tableView.lastRejectedUpdate = error
          tableView.reloadData()
        }
      })
  }
}

extension Observable2DArray {
  /// Replaces the state of a snapshot array, without an event.
  func replaceSnapshot(_ sections: [Section]) {
    state.withLock { $0.sections = sections }
  }
}

/// The data source a binding gives its table view: a bond over a snapshot of the array.
final class BondDataSource<Bond: TableViewBond>: TableViewDataSource {
  let bond: Bond
  let snapshot = Observable2DArray<Bond.Metadata, Bond.Item>(snapshot: [])

  init(bond: Bond) {
    self.bond = bond
  }

  func numberOfSections(in tableView: TableView) -> Int {
    snapshot.numberOfSections
  }

  func tableView(_ tableView: TableView, numberOfRowsInSection section: Int) -> Int {
    (try? snapshot.section(at: section).items.count) ?? 0
  }

  func tableView(_ tableView: TableView, cellForRowAt indexPath: IndexPath) -> TableViewCell {
    bond.cellForRow(at: indexPath, tableView: tableView, dataSource: snapshot)
  }

  func tableView(_ tableView: TableView, titleForHeaderInSection section: Int) -> String? {
    bond.titleForHeader(in: section, dataSource: snapshot)
  }

  func tableView(_ tableView: TableView, titleForFooterInSection section: Int) -> String? {
    bond.titleForFooter(in: section, dataSource: snapshot)
  }

  func tableView(_ tableView: TableView, identifierForRowAt indexPath: IndexPath) -> Int64? {
    guard indexPath.count == 2, let section = try? snapshot.section(at: indexPath[0]),
      section.items.indices.contains(indexPath[1])
    else { return nil }
    return section.items.id(at: indexPath[1])
  }
}
