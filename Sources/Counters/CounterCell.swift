public import ReactiveCore

/// A headless counter cell: a label, three buttons, and a dispose bag that reuse resets.
///
/// It plays the part of the article's `UICollectionViewCell`. The buttons are subjects, so a
/// terminal or a test taps them with `cell.plus.onNext()`; the label is a ``Property`` holding
/// the text on screen.
///
/// ```swift
/// let cell = CounterCell()
/// cell.configure { input in CellViewModel(input, initialValue: 1) }
/// cell.plus.onNext()
/// cell.label.value  // "number is 2"
/// cell.prepareForReuse()  // the old view model no longer reaches the label
/// ```
///
/// A cell is used from one thread, like a view.
public final class CounterCell {
  /// Everything bound while configured; replaced by ``prepareForReuse()``.
  ///
  /// Whoever configures the cell adds its own bindings of the view model here too, so that
  /// they end with the cell's configuration.
  public var bag = DisposeBag()
  /// The label's text: `number is 5` once configured, empty before.
  public let label = Property("")
  /// The plus button: send `()` to tap it.
  public let plus = PublishSubject<Void>()
  /// The minus button: send `()` to tap it.
  public let minus = PublishSubject<Void>()
  /// The delete button: send `()` to tap it.
  public let delete = PublishSubject<Void>()

  /// Creates an unconfigured cell.
  public init() {}

  /// Drops every binding of the current configuration: taps no longer reach the old view
  /// model, and the old view model no longer reaches the label.
  public func prepareForReuse() {
    bag = DisposeBag()  // this resets the cell's bindings
  }

  /// Builds the cell's view model from its buttons and binds its label.
  ///
  /// Call ``prepareForReuse()`` before configuring a cell again.
  ///
  /// - Parameter factory: Makes the view model from the cell's inputs; the caller binds the
  ///   view model's other outputs there, disposed by ``bag``.
  public func configure(with factory: (CellInput) -> CellViewModel) {
    // create the input object
    let input = CellInput(
      plus: plus.asObservable(), minus: minus.asObservable(), delete: delete.asObservable())
    // create the view model from the factory
    let viewModel = factory(input)
    // bind the view model's label property to the label
    viewModel.label
      .bind(to: label)
      .disposed(by: bag)
  }
}
