import Synchronization

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
  // `nil` once disposed.
  private let items = Mutex<[any Disposable]?>([])

  /// Creates an empty bag.
  public init() {}

  deinit {
    dispose()
  }

  /// Adds `disposable`, or disposes it at once if the bag was already disposed.
  ///
  /// - Parameter disposable: The disposable to keep until the bag is disposed.
  public func insert(_ disposable: any Disposable) {
    let added = items.withLock { items -> Bool in
      guard items != nil else { return false }
      items?.append(disposable)
      return true
    }
    if !added { disposable.dispose() }
  }

  /// Disposes everything in the bag; later insertions are disposed at once.
  public func dispose() {
    let members = items.withLock { items in
      defer { items = nil }
      return items ?? []
    }
    for member in members { member.dispose() }
  }

  /// Whether the bag was disposed.
  public var isDisposed: Bool {
    items.withLock { $0 == nil }
  }
}
