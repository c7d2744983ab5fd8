public import ReactiveCore

/// The inputs of one counter cell: its three buttons.
///
/// A cell builds it from its buttons' taps (see ``CounterCell/configure(with:)``) and hands it
/// to the factory that makes the cell's ``CellViewModel``.
public struct CellInput {
  /// Taps on the plus button.
  public let plus: Observable<Void>
  /// Taps on the minus button.
  public let minus: Observable<Void>
  /// Taps on the delete button.
  public let delete: Observable<Void>

  /// Creates the inputs from the buttons' taps.
  ///
  /// - Parameters:
  ///   - plus: Taps on the plus button.
  ///   - minus: Taps on the minus button.
  ///   - delete: Taps on the delete button.
  public init(plus: Observable<Void>, minus: Observable<Void>, delete: Observable<Void>) {
    self.plus = plus
    self.minus = minus
    self.delete = delete
  }
}

/// The outputs of one counter cell: the text it shows, and what its parent needs to know.
///
/// All the logic lives in ``init(_:initialValue:)``: plus adds one, minus subtracts one, and the
/// label describes the value.
///
/// ```swift
/// let plus = PublishSubject<Void>()
/// let viewModel = CellViewModel(
///   CellInput(plus: plus.asObservable(), minus: .never(), delete: .never()), initialValue: 5)
/// let subscription = viewModel.label.subscribe(onNext: { print($0) })  // number is 5
/// plus.onNext()  // number is 6
/// ```
///
/// The outputs are cold, like every ``Observable``: each subscription counts the taps it sees
/// from `initialValue` on.
public struct CellViewModel {
  /// The text of the cell's label: `number is 5`, starting with the initial value.
  public let label: Observable<String>
  /// The counter's value after each tap on plus or minus (not the initial value).
  public let value: Observable<Int>
  /// Taps on delete, passed through for the parent to remove the counter.
  public let delete: Observable<Void>
}

extension CellViewModel {
  /// Builds the outputs from the inputs.
  ///
  /// - Parameters:
  ///   - input: The cell's buttons.
  ///   - initialValue: The counter's value when the cell was configured.
  public init(_ input: CellInput, initialValue: Int) {
    let add = input.plus.map { 1 }  // plus adds one to the value
    let subtract = input.minus.map { -1 }  // minus subtracts one
    value = Observable.merge(add, subtract)
      // The logic is here. The article's `+` would trap at Int.max, a value any SQLite client
      // can store, so the sum saturates instead.
      .scan(initialValue, accumulator: saturatingSum)
    label =
      value
      .startWith(initialValue)
      .map { "number is \($0)" }  // create the string from the value
    delete = input.delete  // delete is just a passthrough in this case
  }
}

/// `a + b`, clamped to `Int.min...Int.max` instead of trapping.
func saturatingSum(_ a: Int, _ b: Int) -> Int {
  let (sum, overflow) = a.addingReportingOverflow(b)
  guard overflow else { return sum }
  return b > 0 ? Int.max : Int.min
}
