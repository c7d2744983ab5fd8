import Counters
import Foundation
import ListStore
import ReactiveCore
import Synchronization
import TestSupport
import Testing

/// Elements recorded from any thread; `wait` wakes on each one.
final class LockedRecorder<Element: Sendable>: @unchecked Sendable {
  // `storage` is touched only with `condition` locked.
  private let condition = NSCondition()
  private var storage: [Element] = []

  var elements: [Element] {
    condition.lock()
    defer { condition.unlock() }
    return storage
  }

  func append(_ element: Element) {
    condition.lock()
    storage.append(element)
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until `holds` is true of the elements, re-checking on every new one; gives up
  /// after `seconds` (a bound for a test that would otherwise hang).
  func wait(seconds: Double = 20, until holds: ([Element]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    condition.lock()
    defer { condition.unlock() }
    while !holds(storage) {
      if !condition.wait(until: deadline) { return holds(storage) }
    }
    return true
  }
}

/// A headless table of counter cells over a controller, reloaded the way the terminal screen
/// does it: the rows the controller emits are applied between user actions, never while an
/// action is being delivered.
final class CounterTable {
  let controller: CountersController
  private(set) var rows: [(id: Int64, value: Int)] = []
  private(set) var cells: [CounterCell] = []
  private(set) var reloads = 0
  private var pending: [(id: Int64, value: Int)]?
  private let bag = DisposeBag()

  init(_ controller: CountersController) {
    self.controller = controller
    controller.counters.subscribe(onNext: { [unowned self] in self.pending = $0 }).disposed(by: bag)
  }

  /// Applies the latest rows: every cell is reused for the row at its index.
  func settle() {
    guard let rows = pending else { return }
    pending = nil
    self.rows = rows
    reloads += 1
    while cells.count < rows.count { cells.append(CounterCell()) }
    for (cell, row) in zip(cells, rows) {
      cell.prepareForReuse()
      controller.configure(cell, for: row)
    }
    for cell in cells.dropFirst(rows.count) { cell.prepareForReuse() }
  }

  var labels: [String] { cells.prefix(rows.count).map(\.label.value) }
  var values: [Int] { rows.map(\.value) }
}

@Suite struct CounterSourceTests {
  let folder = TemporaryDirectory()
  var path: String { folder.file("source.sqlite") }

  @Test func refreshEmitsOnlyWhatChanged() throws {
    defer { folder.remove() }
    let store = try CounterStore(repository: try Repository(path: path))
    let source = CounterSource(store: store)
    let snapshots = LockedRecorder<[[Int64]]>()
    let subscription = source.snapshots.subscribe(onNext: { snapshots.append(pairs($0)) })
    defer { subscription.dispose() }

    source.refresh()
    source.refresh()
    let id = try store.add(4)
    source.refresh()
    source.refresh()
    try store.increment(id: id)
    source.refresh()
    #expect(snapshots.elements == [[], [[id, 4]], [[id, 5]]])

    // A late subscriber gets the latest snapshot first.
    let late = LockedRecorder<[[Int64]]>()
    let lateSubscription = source.snapshots.subscribe(onNext: { late.append(pairs($0)) })
    lateSubscription.dispose()
    #expect(late.elements == [[[id, 5]]])
  }

  @Test func followsWritesFromAnotherConnectionThroughTheChangeFeed() throws {
    defer { folder.remove() }
    let store = try CounterStore(repository: try Repository(path: path))
    let source = CounterSource(store: store)
    let snapshots = LockedRecorder<[[Int64]]>()
    let subscription = source.snapshots.subscribe(onNext: { snapshots.append(pairs($0)) })
    defer { subscription.dispose() }
    try source.start()
    defer { source.stop() }
    #expect(snapshots.wait { $0 == [[]] })

    // Another repository on the same file stands for another process.
    let other = try CounterStore(repository: try Repository(path: path))
    let id = try other.add(7)
    #expect(snapshots.wait { $0.last == [[id, 7]] }, "\(snapshots.elements)")
    try other.set(id: id, to: 8)
    #expect(snapshots.wait { $0.last == [[id, 8]] }, "\(snapshots.elements)")
  }

  @Test func failedReadsAreReportedOnceAndClearedWhenFixed() throws {
    defer { folder.remove() }
    let repository = try Repository(path: path)
    let store = try CounterStore(repository: repository)
    let source = CounterSource(store: store)
    let failures = LockedRecorder<CounterError?>()
    let snapshots = LockedRecorder<[[Int64]]>()
    let bag = DisposeBag()
    source.failures.subscribe(onNext: { failures.append($0) }).disposed(by: bag)
    source.snapshots.subscribe(onNext: { snapshots.append(pairs($0)) }).disposed(by: bag)

    let raw = try repository.list("counters", metadata: RawJSON.self, item: RawJSON.self)
    let id = try raw.appendItem(RawJSON("\"many\""), toSection: 0)
    source.refresh()
    source.refresh()
    try raw.replaceItem(id: id, with: RawJSON("3"))
    source.refresh()
    source.refresh()
    #expect(
      failures.elements == [
        .notANumber(id: id, json: "\"many\"", list: "counters", row: 0), nil,
      ])
    #expect(snapshots.elements == [[[id, 3]]])
  }
}

@Suite struct CountersControllerTests {
  let folder = TemporaryDirectory()
  var path: String { folder.file("controller.sqlite") }

  /// A store, a source, a controller and a table over them.
  func make() throws -> (CounterStore, CounterSource, CounterTable) {
    let store = try CounterStore(repository: try Repository(path: path))
    let source = CounterSource(store: store)
    let table = CounterTable(CountersController(store: store, snapshots: source.snapshots))
    source.refresh()
    table.settle()
    return (store, source, table)
  }

  @Test func actionsShowAtOnceAndAreStored() throws {
    defer { folder.remove() }
    let (store, source, table) = try make()
    #expect(table.rows.isEmpty)

    table.controller.adds.onNext()
    table.controller.adds.onNext()
    table.settle()
    let ids = try store.counters().map(\.id)
    #expect(pairs(table.rows) == [[ids[0], 0], [ids[1], 0]])

    table.cells[0].plus.onNext()
    table.cells[0].plus.onNext()
    table.cells[1].minus.onNext()
    table.settle()
    #expect(table.values == [2, -1])
    #expect(table.labels == ["number is 2", "number is -1"])
    #expect(pairs(try store.counters()) == [[ids[0], 2], [ids[1], -1]])

    source.refresh()  // the stored state is what is shown
    table.settle()
    #expect(pairs(table.rows) == [[ids[0], 2], [ids[1], -1]])

    table.cells[0].delete.onNext()
    table.settle()
    #expect(pairs(table.rows) == [[ids[1], -1]])
    #expect(table.labels == ["number is -1"])
    #expect(pairs(try store.counters()) == [[ids[1], -1]])
  }

  @Test func snapshotsFromElsewhereReplaceTheListAndTheCells() throws {
    defer { folder.remove() }
    let (store, source, table) = try make()
    table.controller.adds.onNext()
    table.settle()
    let id = table.rows[0].id

    let other = try CounterStore(repository: try Repository(path: path))
    try other.set(id: id, to: 40)
    let added = try other.add(9)
    source.refresh()
    table.settle()
    #expect(pairs(table.rows) == [[id, 40], [added, 9]])
    #expect(table.labels == ["number is 40", "number is 9"])

    // The reconfigured cell counts from the new value.
    table.cells[0].plus.onNext()
    table.settle()
    #expect(try store.value(id: id) == 41)
    #expect(table.labels == ["number is 41", "number is 9"])
  }

  @Test func writesThatFailAreReported() throws {
    defer { folder.remove() }
    let (store, _, table) = try make()
    let failures = LockedRecorder<CounterError>()
    let subscription = table.controller.failures.subscribe(onNext: { failures.append($0) })
    defer { subscription.dispose() }
    table.controller.adds.onNext()
    table.settle()
    let id = table.rows[0].id
    try store.delete(id: id)  // as if another process deleted it
    table.cells[0].plus.onNext()
    table.cells[0].delete.onNext()
    #expect(
      failures.elements == [
        .counterNotFound(id: id, list: "counters"), .counterNotFound(id: id, list: "counters"),
      ])
  }

  @Test func addsThatCannotBeStoredShowProvisionallyAndAreReported() throws {
    defer { folder.remove() }
    let (_, source, table) = try make()
    let failures = LockedRecorder<CounterError>()
    let subscription = table.controller.failures.subscribe(onNext: { failures.append($0) })
    defer { subscription.dispose() }
    try Repository(path: path).deleteList("counters")
    table.controller.adds.onNext()
    table.settle()
    #expect(pairs(table.rows) == [[-1, 0]])
    table.cells[0].plus.onNext()  // not stored, not reported
    #expect(failures.elements == [.store(.listNotFound(name: "counters"))])
    source.refresh()
    table.settle()
    #expect(pairs(table.rows) == [[-1, 1]])  // no successful read: the optimistic list stays
  }

  /// Random taps, adds, deletes and writes from elsewhere: after each refresh the table shows
  /// exactly what is stored. Prints the seed when it fails.
  @Test func showsWhatIsStoredAfterRandomActions() throws {
    defer { folder.remove() }
    let seed = testSeed(0xC0_0172)
    var random = SeededGenerator(seed: seed)
    let (store, source, table) = try make()
    let other = try CounterStore(repository: try Repository(path: path))
    var largest = 0
    for step in 0..<scaled(120) {
      let rows = table.rows.count
      largest = max(largest, rows)
      let row = rows > 0 ? Int.random(in: 0..<rows, using: &random) : nil
      switch (Int.random(in: 0..<10, using: &random), row) {
      case (0...1, _), (_, nil):
        table.controller.adds.onNext()
      case (2...4, let row?):
        table.cells[row].plus.onNext()
      case (5...6, let row?):
        table.cells[row].minus.onNext()
      case (7, let row?):
        table.cells[row].delete.onNext()
      case (8, let row?):
        try other.set(row: row, to: Int.random(in: -9...9, using: &random))
      default:
        try other.add(Int.random(in: -9...9, using: &random))
      }
      table.settle()
      source.refresh()
      table.settle()
      let stored = pairs(try store.counters())
      #expect(pairs(table.rows) == stored, "step \(step) (LISTSTORE_SEED=\(seed))")
      #expect(table.labels == table.values.map { "number is \($0)" }, "step \(step), seed \(seed)")
      if pairs(table.rows) != stored { return }
    }
    #expect(largest >= 5, "the sequence should grow the table (seed \(seed))")
  }
}
