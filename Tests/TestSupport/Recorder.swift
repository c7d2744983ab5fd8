import Foundation
import Observable2D
import ReactiveCore

/// Records every event of an observable 2D array and checks each one as a table view
/// would: the changeset validates against the state before it, applying it gives the
/// event's state, and a bound headless table view accepts it and then shows the same
/// ids, order, values and titles as the array.
public final class ArrayRecorder<Metadata: Equatable, Item: Equatable>: @unchecked Sendable {
  // Everything below is touched only under `lock`; events arrive on any thread.
  private let lock = NSLock()
  private var state: [Observable2DArraySection<Metadata, Item>]
  private var _changesets: [Changeset<Metadata, Item>] = []
  private var _problems: [String] = []
  private var _completed = false
  private var _error: (any Error)?
  private let tableView = TableView()
  private let bag = DisposeBag()
  /// The recorded array, kept alive for as long as the recorder.
  public let array: Observable2DArray<Metadata, Item>
  private let describeValue: (Item) -> String
  private let header: (Metadata) -> String?

  /// Starts recording `array`, whose current state is the starting point.
  public init(
    _ array: Observable2DArray<Metadata, Item>, describe: @escaping (Item) -> String = { "\($0)" },
    header: @escaping (Metadata) -> String? = { "\($0)" }
  ) {
    state = []
    self.array = array
    describeValue = describe
    self.header = header
    array.bind(to: tableView, using: RecorderBond(describe: describe, header: header)).disposed(
      by: bag)
    // The starting state, then every event, with neither gap nor duplicate.
    array.subscribe(
      initial: { [weak self] sections in self?.locked { self?.state = sections } },
      onNext: { [weak self] event in self?.record(event) }
    ).disposed(by: bag)
    array.subscribe(
      onError: { [weak self] error in self?.locked { self?._error = error } },
      onCompleted: { [weak self] in self?.locked { self?._completed = true } }
    ).disposed(by: bag)
  }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  private func record(_ event: Observable2DArrayEvent<Metadata, Item>) {
    locked {
      let changeset = event.changeset
      _changesets.append(changeset)
      if changeset.isEmpty { _problems.append("an empty changeset was emitted") }
      do {
        try changeset.validate(against: state)
        let applied = try changeset.applied(to: state)
        if applied != event.sections {
          _problems.append("applying \(changeset) did not give the event's state")
        }
      } catch {
        _problems.append("changeset \(changeset) rejected: \(error)")
      }
      state = event.sections
      if tableView.rejectedUpdateCount > 0 {
        _problems.append(
          "the table view rejected an update: \(String(describing: tableView.lastRejectedUpdate))")
      }
      let problem = tableMismatch(event.sections)
      if let problem { _problems.append(problem) }
    }
  }

  private func tableMismatch(_ sections: [Observable2DArraySection<Metadata, Item>]) -> String? {
    guard tableView.numberOfSections == sections.count else {
      return "table has \(tableView.numberOfSections) sections"
    }
    for (index, section) in sections.enumerated() {
      if tableView.titleForHeader(inSection: index) != header(section.metadata) {
        return "header \(index) differs"
      }
      guard tableView.numberOfRows(inSection: index) == section.items.count else {
        return "row count \(index) differs"
      }
      for (row, entry) in section.items.entries.enumerated() {
        let path = IndexPath(indexes: [index, row])
        if tableView.identifierForRow(at: path) != entry.id {
          return "row id at \(index):\(row) differs"
        }
        if tableView.cellForRow(at: path)?.text != describeValue(entry.value) {
          return "cell at \(index):\(row) differs"
        }
      }
    }
    return nil
  }

  /// Every changeset received, in order.
  public var changesets: [Changeset<Metadata, Item>] { locked { _changesets } }
  /// What went wrong with any of them (empty when all was well).
  public var problems: [String] { locked { _problems } }
  /// The state after the last event.
  public var sections: [Observable2DArraySection<Metadata, Item>] { locked { state } }
  /// Whether the events completed.
  public var isCompleted: Bool { locked { _completed } }
  /// The error the events failed with, if any.
  public var error: (any Error)? { locked { _error } }

  /// Waits (polling) until `condition` holds or `timeout` passes.
  /// - Returns: Whether the condition held.
  @discardableResult
  public func wait(timeout: TimeInterval = 10, until condition: (ArrayRecorder) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if condition(self) { return true }
      usleep(2000)
    }
    return condition(self)
  }
}

private struct RecorderBond<Metadata, Item>: TableViewBond {
  let describe: (Item) -> String
  let header: (Metadata) -> String?

  func cellForRow(
    at indexPath: IndexPath, tableView: TableView, dataSource: Observable2DArray<Metadata, Item>
  )
    -> TableViewCell
  {
    let cell = tableView.dequeueReusableCell(withIdentifier: "cell", for: indexPath)
    cell.textLabel?.text = describe(dataSource[indexPath])
    return cell
  }

  func titleForHeader(in section: Int, dataSource: Observable2DArray<Metadata, Item>) -> String? {
    header(dataSource[section].metadata)
  }
}
