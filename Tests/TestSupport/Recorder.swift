import Foundation
import Observable2D
import PostgresTestSupport
import ReactiveCore

/// Records every event of an observable 2D array and checks each one as a table view
/// would: the changeset validates against the state before it, applying it gives the
/// event's state, and a bound headless table view accepts it and then shows the same
/// ids, order, values and titles as the array.
public final class ArrayRecorder<Metadata: Equatable, Item: Equatable>: @unchecked Sendable {
  // Everything below is touched only under `lock`; events arrive on any thread, and each
  // one wakes the threads waiting in `wait(timeout:until:)`.
  private let lock = NSCondition()
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
      initial: { [weak self] sections in self?.changing { self?.state = sections } },
      onNext: { [weak self] event in self?.record(event) }
    ).disposed(by: bag)
    array.subscribe(
      onError: { [weak self] error in self?.changing { self?._error = error } },
      onCompleted: { [weak self] in self?.changing { self?._completed = true } }
    ).disposed(by: bag)
  }

  /// Counts the events, completions and failures recorded, for `wait`.
  private var generation = 0

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  /// Records something under the lock and wakes the waiting threads.
  private func changing(_ body: () -> Void) {
    lock.lock()
    body()
    generation += 1
    lock.broadcast()
    lock.unlock()
  }

  private func record(_ event: Observable2DArrayEvent<Metadata, Item>) {
    changing {
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

  /// Waits until `condition` holds, checking it again after every event (and after the
  /// completion or failure), for at most `timeout` seconds — a bound for a test that
  /// would otherwise hang, never the way it synchronizes.
  /// - Returns: Whether the condition held.
  @discardableResult
  public func wait(
    timeout: TimeInterval = TestLimits.eventSeconds, until condition: (ArrayRecorder) -> Bool
  ) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      // The condition reads the recorder through its locking accessors, so it runs
      // unlocked; an event that arrives meanwhile changes `generation`, and the wait
      // below then returns at once.
      let before = locked { generation }
      if condition(self) { return true }
      lock.lock()
      var timedOut = false
      while generation == before && !timedOut { timedOut = !lock.wait(until: deadline) }
      lock.unlock()
      if timedOut { return condition(self) }
    }
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
