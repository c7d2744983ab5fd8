public import ReactiveCore

/// The counters screen over stored counters: the article's view controller, without a view.
///
/// It owns the subjects the cells report to (the article's `values` and `deletes`, and the add
/// button), builds the screen's ``ViewModel`` over them, and writes every action through a
/// ``CounterStore``:
///
/// * a value from a cell sets that counter's stored value;
/// * a delete removes the counter's row;
/// * an add inserts a row at 0, whose row id is the new counter's id (the view model's
///   `makeID`).
///
/// What the screen shows, ``counters``, is the view model's list, rebuilt from each snapshot
/// of the stored counters (`snapshots`, for example ``CounterSource/snapshots``): local actions
/// show at once, and each new snapshot, local or from another process, replaces the list.
///
/// ```swift
/// let source = CounterSource(store: store)
/// let controller = CountersController(store: store, snapshots: source.snapshots)
/// let subscription = controller.counters.subscribe(onNext: { rows in
///   for (cell, row) in zip(cells, rows) {
///     cell.prepareForReuse()
///     controller.configure(cell, for: row)
///   }
/// })
/// source.refresh()
/// controller.adds.onNext()  // a new counter at 0, stored
/// ```
///
/// Write failures go to ``failures``. An add that cannot be stored shows as a row with a
/// provisional negative id until the next snapshot; actions on it are not stored. Actions sent
/// before the first snapshot arrived, or while nothing subscribes to ``counters``, are stored
/// (values and deletes) or dropped (adds, which the view model performs).
///
/// Use a controller from one thread; `snapshots` may deliver on another.
public final class CountersController {
  /// The stored counters.
  public let store: CounterStore
  /// New values reported by the cells (the article's `values`).
  public let values = PublishSubject<(id: Int64, value: Int)>()
  /// Counters to delete, reported by the cells (the article's `deletes`).
  public let deletes = PublishSubject<Int64>()
  /// Taps on the add button.
  public let adds = PublishSubject<Void>()
  /// The counters to show, after each action and each snapshot; shared, replaying the latest.
  public let counters: Observable<[(id: Int64, value: Int)]>
  /// Writes that failed, as they fail.
  public var failures: Observable<CounterError> { failure.asObservable() }

  private let failure = PublishSubject<CounterError>()
  private let bag = DisposeBag()

  /// Connects a view model to `store`.
  ///
  /// - Parameters:
  ///   - store: Where actions are written.
  ///   - snapshots: The stored counters after each change, such as
  ///     ``CounterSource/snapshots``; each one resets the view model's list.
  public init(store: CounterStore, snapshots: Observable<[(id: Int64, value: Int)]>) {
    self.store = store
    let input = Input(
      value: values.asObservable(), add: adds.asObservable(), delete: deletes.asObservable())
    let failure = self.failure
    let provisional = ProvisionalIDs()
    let makeID = { () -> Int64 in
      do throws(CounterError) {
        return try store.add()
      } catch {
        failure.onNext(error)
        return provisional.next()
      }
    }
    counters =
      snapshots
      .flatMapLatest { snapshot in
        ViewModel(input, initialValues: snapshot, makeID: makeID).counters.startWith(snapshot)
      }
      .share(replay: 1)

    values.subscribe(onNext: { change in
      guard !provisional.contains(change.id) else { return }
      do throws(CounterError) {
        try store.set(id: change.id, to: change.value)
      } catch {
        failure.onNext(error)
      }
    })
    .disposed(by: bag)
    deletes.subscribe(onNext: { id in
      guard !provisional.contains(id) else { return }
      do throws(CounterError) {
        try store.delete(id: id)
      } catch {
        failure.onNext(error)
      }
    })
    .disposed(by: bag)
  }

  /// Configures `cell` for `counter` as the article's controller does: the cell's view model
  /// starts at the counter's value, and its value and delete outputs report to ``values`` and
  /// ``deletes`` until the cell is reused.
  ///
  /// - Parameters:
  ///   - cell: A new cell, or one after ``CounterCell/prepareForReuse()``.
  ///   - counter: The counter it shows.
  public func configure(_ cell: CounterCell, for counter: (id: Int64, value: Int)) {
    let (values, deletes) = (self.values, self.deletes)
    cell.configure { input in
      let viewModel = CellViewModel(input, initialValue: counter.value)
      // Remember the value property tracks the current value of the counter.
      viewModel.value
        .map { (id: counter.id, value: $0) }  // tell the screen which counter's value this is
        .bind(to: values)
        .disposed(by: cell.bag)
      viewModel.delete
        .map { counter.id }  // tell the screen which counter should be deleted
        .bind(to: deletes)
        .disposed(by: cell.bag)
      return viewModel  // hand the cell view model to the cell
    }
  }
}

/// Ids for rows that could not be stored: negative, counting down, remembered.
private final class ProvisionalIDs {
  private var issued: Set<Int64> = []

  func next() -> Int64 {
    let id = -Int64(issued.count + 1)
    issued.insert(id)
    return id
  }

  func contains(_ id: Int64) -> Bool { issued.contains(id) }
}
