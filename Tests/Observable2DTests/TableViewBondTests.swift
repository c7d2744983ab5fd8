import FoundationEssentials
import Observable2D
import ReactiveCore
import Testing

// The seed article's code, as it reads in Swift on Linux.

typealias SectionMetadata = (header: String, footer: String)

struct MyBond: TableViewBond {
  func cellForRow(
    at indexPath: IndexPath, tableView: TableView,
    dataSource: Observable2DArray<SectionMetadata, String>
  ) -> TableViewCell {
    let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
    cell.textLabel?.text = dataSource[indexPath]
    return cell
  }

  func titleForHeader(in section: Int, dataSource: Observable2DArray<SectionMetadata, String>)
    -> String?
  {
    return dataSource[section].metadata.header
  }

  func titleForFooter(in section: Int, dataSource: Observable2DArray<SectionMetadata, String>)
    -> String?
  {
    return dataSource[section].metadata.footer
  }
}

struct City {
  let name: String
}

// The seed's trap: with a custom item model Bond needed `typealias DataSource = ...`. Here the
// associated types are inferred from `cellForRow` alone; there is no typealias in this class.
final class CityBond: TableViewBond {
  func cellForRow(
    at indexPath: IndexPath, tableView: TableView,
    dataSource: Observable2DArray<SectionMetadata, City>
  ) -> TableViewCell {
    let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
    cell.textLabel?.text = dataSource[indexPath].name
    return cell
  }

  func titleForHeader(in section: Int, dataSource: Observable2DArray<SectionMetadata, City>)
    -> String?
  {
    return dataSource[section].metadata.header
  }

  func titleForFooter(in section: Int, dataSource: Observable2DArray<SectionMetadata, City>)
    -> String?
  {
    return dataSource[section].metadata.footer
  }
}

/// A bond that only makes cells: the titles default to `nil`.
struct CellsOnlyBond: TableViewBond {
  func cellForRow(
    at indexPath: IndexPath, tableView: TableView, dataSource: Observable2DArray<String, City>
  ) -> TableViewCell {
    let cell = tableView.dequeueReusableCell(withIdentifier: "City", for: indexPath)
    cell.text = dataSource[indexPath].name
    return cell
  }
}

/// The view model of the article's last section, shared by reference.
struct ViewModel {
  let array = MutableObservable2DArray(
    [
      Observable2DArraySection<SectionMetadata, City>(
        metadata: (header: "Cities", footer: "That's it"),
        items: [
          City(name: "Paris"),
          City(name: "Berlin"),
        ]
      )
    ]
  )
}

@Suite struct TableViewBondTests {
  @Test func seedExampleBindsAndFollowsAppends() throws {
    let cities = Observable2DArraySection<SectionMetadata, String>(
      metadata: (header: "Cities", footer: "That's it"),
      items: ["Paris", "Berlin"]
    )
    let array = MutableObservable2DArray([cities])
    let tableView = TableView()
    let bag = DisposeBag()

    array.bind(to: tableView, using: MyBond()).disposed(by: bag)
    #expect(tableView.cells(inSection: 0).map(\.text) == ["Paris", "Berlin"])
    #expect(tableView.titleForHeader(inSection: 0) == "Cities")
    #expect(tableView.titleForFooter(inSection: 0) == "That's it")

    try array.appendItem("Copenhagen", toSection: 0)
    #expect(tableView.cells(inSection: 0).map(\.text) == ["Paris", "Berlin", "Copenhagen"])
    #expect(
      tableView.identifierForRow(at: IndexPath(row: 2, section: 0))
        == array.sections[0].items.id(at: 2))
    #expect(tableView.rejectedUpdateCount == 0)
  }

  @Test func stringMetadataWorksToo() throws {
    let cities = Observable2DArraySection<String, String>(
      metadata: "Cities",
      items: ["Paris", "Berlin"]
    )
    let array = MutableObservable2DArray([cities])
    #expect(array[0].metadata == "Cities")
  }

  @Test func customItemModelNeedsNoTypealias() throws {
    let viewModel = ViewModel()
    let tableView = TableView()
    let binding = viewModel.array.bind(to: tableView, using: CityBond())
    #expect(tableView.cells(inSection: 0).map(\.text) == ["Paris", "Berlin"])
    try viewModel.array.insert(item: City(name: "Copenhagen"), at: IndexPath(row: 0, section: 0))
    try viewModel.array.replaceItem(at: IndexPath(row: 2, section: 0), with: City(name: "Bonn"))
    #expect(tableView.cells(inSection: 0).map(\.text) == ["Copenhagen", "Paris", "Bonn"])
    #expect(tableView.titleForFooter(inSection: 0) == "That's it")
    #expect(tableView.rejectedUpdateCount == 0)
    binding.dispose()
    try viewModel.array.removeItem(at: IndexPath(row: 0, section: 0))
    #expect(tableView.numberOfRows(inSection: 0) == 3)
  }

  @Test func titlesDefaultToNil() throws {
    let array = MutableObservable2DArray([
      Observable2DArraySection<String, City>(metadata: "Europe", items: [City(name: "Oslo")])
    ])
    let tableView = TableView()
    array.bind(to: tableView, using: CellsOnlyBond())
    #expect(tableView.cells(inSection: 0).map(\.text) == ["Oslo"])
    #expect(tableView.titleForHeader(inSection: 0) == nil)
    #expect(tableView.titleForFooter(inSection: 0) == nil)
  }

  @Test func selectedRowReportsTaps() throws {
    let array = MutableObservable2DArray([
      Observable2DArraySection<SectionMetadata, String>(
        metadata: (header: "Cities", footer: "That's it"), items: ["Paris", "Berlin"])
    ])
    let tableView = TableView()
    let bag = DisposeBag()
    array.bind(to: tableView, using: MyBond()).disposed(by: bag)
    var tapped: [String] = []
    tableView.selectedRow.observeNext { row in
      tapped.append("Tapped row at index \(row).")
    }.dispose(in: bag)
    try tableView.selectRow(at: IndexPath(row: 1, section: 0))
    #expect(tapped == ["Tapped row at index [0, 1]."])
  }

  @Test func bindingDoesNotKeepTheTableViewAlive() throws {
    let array = MutableObservable2DArray([
      Observable2DArraySection<SectionMetadata, String>(
        metadata: (header: "H", footer: "F"), items: ["a"])
    ])
    weak var weakTable: TableView?
    do {
      let tableView = TableView()
      weakTable = tableView
      array.bind(to: tableView, using: MyBond())
    }
    #expect(weakTable == nil)
    try array.appendItem("b", toSection: 0)
  }
}
