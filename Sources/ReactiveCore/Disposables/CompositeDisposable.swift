/// A thread-safe group of disposables that are disposed together.
///
/// Adding a disposable to a composite that is already disposed disposes it at once.
public final class CompositeDisposable: Disposable {
  // `nil` once disposed.
  private let items: Locked<[any Disposable]?>

  /// Creates a composite holding `disposables`.
  ///
  /// - Parameter disposables: The initial members.
  public init(_ disposables: [any Disposable] = []) {
    items = Locked(disposables)
  }

  /// Adds `disposable`, or disposes it at once if the composite is already disposed.
  ///
  /// - Parameter disposable: The disposable to add.
  public func insert(_ disposable: any Disposable) {
    let added = items.withLock { items -> Bool in
      guard items != nil else { return false }
      items?.append(disposable)
      return true
    }
    if !added { disposable.dispose() }
  }

  /// Disposes every member, in insertion order, and releases them.
  public func dispose() {
    let members = items.withLock { items in
      defer { items = nil }
      return items ?? []
    }
    for member in members { member.dispose() }
  }

  /// Whether the composite was disposed.
  public var isDisposed: Bool {
    items.withLock { $0 == nil }
  }
}

/// A thread-safe slot holding one disposable; replacing it disposes the previous one.
///
/// After the slot itself is disposed, whatever is put in it is disposed at once. Operators use
/// it where the upstream subscription is only known after subscribing (which may already have
/// finished the sequence) and where an inner subscription is swapped for a newer one.
public final class SerialDisposable: Disposable {
  private struct State {
    var current: (any Disposable)?
    var isDisposed = false
  }

  private let state = Locked(State())

  /// Creates an empty slot.
  public init() {}

  /// Puts `disposable` in the slot and disposes the previous occupant; disposes `disposable`
  /// instead if the slot is already disposed.
  ///
  /// - Parameter disposable: The new occupant.
  public func replace(with disposable: any Disposable) {
    let (previous, rejected) = state.withLock {
      state -> ((any Disposable)?, (any Disposable)?) in
      if state.isDisposed { return (nil, disposable) }
      defer { state.current = disposable }
      return (state.current, nil)
    }
    previous?.dispose()
    rejected?.dispose()
  }

  /// Disposes the current occupant and every later one.
  public func dispose() {
    let current = state.withLock { state -> (any Disposable)? in
      state.isDisposed = true
      defer { state.current = nil }
      return state.current
    }
    current?.dispose()
  }

  /// Whether the slot was disposed.
  public var isDisposed: Bool {
    state.withLock { $0.isDisposed }
  }
}
