/// A thread-safe bag of disposables that disposes them all when it is deinitialized.
///
/// Tie subscriptions to an owner by keeping a bag in it; replace the bag to drop every binding
/// at once, as a reused table cell does:
///
/// ```swift
/// final class Cell {
///   var bag = DisposeBag()
///
///   func prepareForReuse() {
///     bag = DisposeBag()  // the old bag disposes the old bindings
///   }
///
///   func configure(with viewModel: CellViewModel) {
///     viewModel.label.bind(to: label).disposed(by: bag)
///   }
/// }
/// ```
public final class DisposeBag: Disposable {
  private let members = CompositeDisposable()

  /// Creates an empty bag.
  public init() {}

  deinit {
    members.dispose()
  }

  /// Adds `disposable`, or disposes it at once if the bag was already disposed.
  ///
  /// - Parameter disposable: The disposable to keep until the bag is disposed.
  public func insert(_ disposable: any Disposable) {
    members.insert(disposable)
  }

  /// Disposes everything in the bag; later insertions are disposed at once.
  public func dispose() {
    members.dispose()
  }

  /// Whether the bag was disposed.
  public var isDisposed: Bool {
    members.isDisposed
  }
}
