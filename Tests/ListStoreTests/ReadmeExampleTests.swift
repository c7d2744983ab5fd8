import Foundation
import ListStore
import TestSupport
import Testing

/// The README's Swift examples, compiled and run, so the tour stays true.
@Suite struct ReadmeExampleTests {
  struct City: Codable { var name: String }

  struct CityBond: TableViewBond {
    func cellForRow(
      at indexPath: IndexPath, tableView: TableView,
      dataSource: Observable2DArray<SectionMetadata, City>
    )
      -> TableViewCell
    {
      let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
      cell.textLabel?.text = dataSource[indexPath].name
      return cell
    }
  }

  @Test func theTourWorksAsWritten() async throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("cities.sqlite"))
    let cities = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try cities.appendItems([City(name: "Paris"), City(name: "Berlin")], toSection: 0)
    let copenhagen = try cities.appendItem(City(name: "Copenhagen"), toSection: 0)
    try cities.moveItem(id: copenhagen, to: IndexPath(item: 0, section: 0))
    try cities.replaceItem(at: IndexPath(item: 1, section: 0), with: City(name: "Paris, France"))
    #expect(try cities.item(at: IndexPath(item: 0, section: 0)).name == "Copenhagen")

    let bag = DisposeBag()
    let array = try cities.observe()
    let printed = LockedLines()
    array.observeNext { event in
      printed.append("\(event.changeset.insertedItems.map(\.value.name)) \(event.sections.count)")
    }.disposed(by: bag)
    let tableView = TableView()
    array.bind(to: tableView, using: CityBond()).disposed(by: bag)
    try cities.appendItem(City(name: "Rome"), toSection: 0)
    #expect(printed.lines == ["[\"Rome\"] 1"])
    #expect(tableView.cellForRow(at: IndexPath(item: 3, section: 0))?.textLabel?.text == "Rome")
    #expect(tableView.titleForFooter(inSection: 0) == nil)
  }
}

extension ReadmeExampleTests {
  @Test func batchesAndSyncWorkAsWritten() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("cities.sqlite"))
    let cities = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try cities.appendItems([City(name: "Paris"), City(name: "Berlin")], toSection: 0)
    let array = try cities.observe()
    var changesets: [Int] = []
    let bag = DisposeBag()
    array.observeNext { changesets.append($0.changeset.entryCount) }.disposed(by: bag)

    try repository.write {
      let rome = try cities.appendItem(City(name: "Rome"), toSection: 0)
      try cities.moveItem(id: rome, to: IndexPath(item: 0, section: 0))
      try cities.removeItem(at: IndexPath(item: 1, section: 0))
    }  // one changeset: Rome in, one out

    var state = try cities.sections()  // the list, with its ids
    state[0].items.append(City(name: "Oslo"), id: 0)  // a new row
    state[0].items.remove(at: 0)
    let changeset = try cities.replace(with: state)  // two row writes; observers get this

    #expect(changesets == [2, 2])
    #expect(changeset.insertedItems.map(\.value.name) == ["Oslo"])
    #expect(changeset.deletedItems.count == 1)
    #expect(try cities.sections()[0].items.map(\.name) == ["Berlin", "Oslo"])
  }
}

final class LockedLines: @unchecked Sendable {
  // Only touched under `lock`.
  private let lock = NSLock()
  private var stored: [String] = []
  func append(_ line: String) { lock.withLock { stored.append(line) } }
  var lines: [String] { lock.withLock { stored } }
}
