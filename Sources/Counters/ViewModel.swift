public import ReactiveCore

/// The inputs of the counters screen: what its cells report, and the add button.
///
/// `ID` identifies a counter: a `UUID` in memory, or a row id (`Int64`) when the counters are
/// stored (see ``CountersController``).
public struct Input<ID: Hashable> {
  /// A counter's new value, reported by its cell.
  public let value: Observable<(id: ID, value: Int)>
  /// Taps on the add button.
  public let add: Observable<Void>
  /// The counter to delete, reported by its cell.
  public let delete: Observable<ID>

  /// Creates the inputs.
  ///
  /// - Parameters:
  ///   - value: New values reported by the cells.
  ///   - add: Taps on the add button.
  ///   - delete: Counters to delete, reported by the cells.
  public init(
    value: Observable<(id: ID, value: Int)>, add: Observable<Void>, delete: Observable<ID>
  ) {
    self.value = value
    self.add = add
    self.delete = delete
  }
}

/// The output of the counters screen: the counters, in order, after every action.
///
/// Its logic is one reducer: the three inputs become actions, are merged, and are folded into
/// the list with `scan(into:)`.
///
/// ```swift
/// let add = PublishSubject<Void>()
/// let screen = ViewModel(
///   Input(value: .never(), add: add.asObservable(), delete: .never()),
///   initialValues: [(id: UUID(), value: 3)], makeID: UUID.init)
/// let subscription = screen.counters.subscribe(onNext: { print($0.map(\.value)) })
/// add.onNext()  // [3, 0]
/// ```
///
/// `counters` is cold: each subscription folds the actions it sees from `initialValues` on, and
/// calls `makeID` once per add.
public struct ViewModel<ID: Hashable> {
  /// The counters after each action (not the initial values).
  public let counters: Observable<[(id: ID, value: Int)]>
}

extension ViewModel {
  private enum Action {
    case add
    case value(id: ID, value: Int)
    case delete(id: ID)
  }

  /// Builds the output from the inputs.
  ///
  /// An add appends a counter at 0 with a new id; a value replaces the value of the counter
  /// with that id; a delete removes it. Values and deletes for unknown ids change nothing.
  ///
  /// - Parameters:
  ///   - input: The screen's inputs.
  ///   - initialValues: The counters before any action.
  ///   - makeID: Returns the id of an added counter; called once per add, per subscription.
  public init(
    _ input: Input<ID>, initialValues: [(id: ID, value: Int)], makeID: @escaping () -> ID
  ) {
    let addAction = input.add.map { Action.add }
    let valueAction = input.value.map(Action.value)
    let deleteAction = input.delete.map(Action.delete)
    counters = Observable.merge(addAction, valueAction, deleteAction)
      .scan(into: initialValues) { model, new in
        switch new {
        case .add:
          model.append((id: makeID(), value: 0))
        case .value(let id, let value):
          if let index = model.firstIndex(where: { $0.id == id }) {
            model[index].value = value
          }
        case .delete(let id):
          if let index = model.firstIndex(where: { $0.id == id }) {
            model.remove(at: index)
          }
        }
      }
  }
}
