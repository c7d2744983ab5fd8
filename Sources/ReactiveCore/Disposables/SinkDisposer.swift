import Synchronization

/// An atomic one-way flag.
@usableFromInline
final class AtomicFlag: Sendable {
  @usableFromInline let value = Atomic(false)

  @inlinable
  init() {}

  /// Sets the flag; returns `true` if this call set it.
  @inlinable
  func set() -> Bool {
    !value.exchange(true, ordering: .acquiringAndReleasing)
  }

  @inlinable
  var isSet: Bool {
    value.load(ordering: .acquiring)
  }
}

/// The disposable a subscription hands to its subscriber.
///
/// It holds only what it must dispose (the upstream subscription and a cancel action), and
/// drops both once disposed, so a disposed subscription keeps no closures alive even while the
/// subscriber still holds the disposable.
///
/// `@unchecked Sendable`: its state is only touched under its mutex; `cancel` runs once, on the
/// thread that disposes.
@usableFromInline
final class SinkDisposer: Disposable, @unchecked Sendable {
  private struct State {
    var isDisposed = false
    var upstream: (any Disposable)?
    var cancel: (() -> Void)?
  }

  private let state: Locked<UncheckedSendable<State>>

  @usableFromInline
  init(cancel: (() -> Void)?) {
    state = Locked(UncheckedSendable(State(cancel: cancel)))
  }

  /// Stores the upstream subscription, or disposes it at once if already disposed.
  @usableFromInline
  func setUpstream(_ upstream: any Disposable) {
    let stored = state.withLock { state -> Bool in
      guard !state.value.isDisposed else { return false }
      state.value.upstream = upstream
      return true
    }
    if !stored { upstream.dispose() }
  }

  @usableFromInline
  func dispose() {
    let taken = state.withLock { state -> UncheckedSendable<State>? in
      guard !state.value.isDisposed else { return nil }
      defer { state.value = State(isDisposed: true) }
      return state
    }
    guard let taken else { return }
    taken.value.cancel?()
    taken.value.upstream?.dispose()
  }

  @usableFromInline
  var isDisposed: Bool {
    state.withLock { $0.value.isDisposed }
  }
}
