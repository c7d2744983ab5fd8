import Synchronization

/// A resource or subscription that can be released.
///
/// `dispose()` is idempotent and may be called from any thread; only the first call has an
/// effect. Dropping a disposable does not dispose it (a subscription lives until it is disposed
/// or its sequence ends); keep it in a ``DisposeBag`` to tie it to an owner's lifetime.
///
/// ```swift
/// let bag = DisposeBag()
/// subject.subscribe(onNext: { print($0) }).disposed(by: bag)
/// ```
public protocol Disposable: AnyObject, Sendable {
  /// Releases the resource; calling it again does nothing.
  func dispose()

  /// Whether `dispose()` was called (or the subscription ended on its own).
  var isDisposed: Bool { get }
}

extension Disposable {
  /// Adds this disposable to `bag`, so that it is disposed with the bag (RxSwift spelling).
  ///
  /// - Parameter bag: The bag that takes ownership.
  public func disposed(by bag: DisposeBag) {
    bag.insert(self)
  }

  /// Adds this disposable to `bag`, so that it is disposed with the bag (ReactiveKit spelling).
  ///
  /// - Parameter bag: The bag that takes ownership.
  public func dispose(in bag: DisposeBag) {
    bag.insert(self)
  }
}

/// A disposable that only records whether it was disposed.
public final class BooleanDisposable: Disposable {
  private let disposed = Atomic(false)

  /// Creates a disposable that is not yet disposed.
  public init() {}

  /// Marks the disposable as disposed.
  public func dispose() {
    disposed.store(true, ordering: .releasing)
  }

  /// Whether `dispose()` was called.
  public var isDisposed: Bool {
    disposed.load(ordering: .acquiring)
  }
}

/// A disposable that runs an action the first time it is disposed.
public final class AnonymousDisposable: Disposable {
  private let action: Locked<(@Sendable () -> Void)?>

  /// Creates a disposable that runs `action` once, on the thread that first disposes it.
  ///
  /// - Parameter action: The clean-up to run; it is released after it ran.
  public init(_ action: @escaping @Sendable () -> Void) {
    self.action = Locked(action)
  }

  /// Runs the action if it has not run yet.
  public func dispose() {
    let action = action.withLock { action in
      defer { action = nil }
      return action
    }
    action?()
  }

  /// Whether the action has run.
  public var isDisposed: Bool {
    action.withLock { $0 == nil }
  }
}

/// Factories for the common disposables (RxSwift spelling).
public enum Disposables {
  /// Returns a disposable that does nothing but record that it was disposed.
  ///
  /// - Returns: A new ``BooleanDisposable``.
  public static func create() -> any Disposable {
    BooleanDisposable()
  }

  /// Returns a disposable that runs `action` once when first disposed.
  ///
  /// - Parameter action: The clean-up to run.
  /// - Returns: A new ``AnonymousDisposable``.
  public static func create(with action: @escaping @Sendable () -> Void) -> any Disposable {
    AnonymousDisposable(action)
  }

  /// Returns a disposable that disposes all of `disposables` together.
  ///
  /// - Parameter disposables: The disposables to group.
  /// - Returns: A new ``CompositeDisposable``.
  public static func create(_ disposables: any Disposable...) -> any Disposable {
    CompositeDisposable(disposables)
  }
}
