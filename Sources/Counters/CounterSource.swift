import ListStore
import Observable2D
public import ReactiveCore

/// The counters as stored, as an observable: the one place the counters screen gets its data.
///
/// After ``start()`` it follows the list through the repository's change feed: every commit
/// — by this program, another `liststore` process or any SQLite client — arrives as the list's
/// new state within milliseconds (at once for writes through the same repository), and
/// ``snapshots`` emits the counters whenever they changed. Before ``start()``, ``refresh()``
/// reads them once.
///
/// ```swift
/// let source = CounterSource(store: store)
/// let subscription = source.snapshots.subscribe(onNext: { print($0.map(\.value)) })
/// try source.start()  // prints the stored values, then again on every change
/// ```
///
/// ## Threading
///
/// ``snapshots`` and ``failures`` deliver on the thread of the write that caused the change,
/// or the change feed's queue for other processes' writes.
public final class CounterSource: Sendable {
  /// The store read.
  public let store: CounterStore

  private let latest = ReplaySubject<[(id: Int64, value: Int)]>(bufferSize: 1)
  private let failure = ReplaySubject<CounterError?>(bufferSize: 1)
  /// What was last emitted.
  private let last = Locked<(counters: [(id: Int64, value: Int)]?, failure: CounterError?)>(
    (nil, nil))
  /// The observation of the list while started.
  private let observation = Locked<(any Disposable)?>(nil)

  /// Creates a source; it reads nothing until ``refresh()`` or ``start()``.
  ///
  /// - Parameter store: The counters to read.
  public init(store: CounterStore) {
    self.store = store
  }

  deinit {
    stop()
  }

  /// The counters after each change: the latest first, to each new subscriber, then every
  /// state that differs from the one before. It never ends; failed reads go to ``failures``.
  public var snapshots: Observable<[(id: Int64, value: Int)]> {
    latest.asObservable()
  }

  /// Why the latest read failed, or `nil` once a read succeeds again; emits on each change,
  /// the latest first to each new subscriber.
  public var failures: Observable<CounterError?> {
    failure.asObservable()
  }

  /// Follows the list's changes from now on, emitting its current counters first.
  ///
  /// - Throws: ``CounterError/store(_:)`` when the list cannot be observed.
  public func start() throws(CounterError) {
    let array = try store.observe()
    let subscription = array.subscribe(
      initial: { [weak self] sections in self?.emit(sections) },
      onNext: { [weak self] event in self?.emit(event.sections) })
    observation.withLock { current in
      current?.dispose()
      current = subscription
    }
  }

  /// Catches up now: while started, applies every commit made so far by other processes
  /// before returning; otherwise reads the counters once. Emits only what changed.
  public func refresh() {
    if observation.withLock({ $0 != nil }) {
      store.repository.synchronizeObservers()
      return
    }
    do {
      report(.success(try store.counters()))
    } catch {
      report(.failure(error))
    }
  }

  /// Stops following the list.
  public func stop() {
    observation.withLock { current in
      current?.dispose()
      current = nil
    }
  }

  private func emit(_ sections: [Observable2DArraySection<SectionMetadata, RawJSON>]) {
    do {
      report(.success(try store.counters(in: sections)))
    } catch {
      report(.failure(error))
    }
  }

  /// Emits a read's outcome when it differs from the last one.
  private func report(_ outcome: Result<[(id: Int64, value: Int)], CounterError>) {
    let (clearFailure, counters, newFailure) = last.withLock { last in
      switch outcome {
      case .success(let counters):
        let cleared = last.failure != nil
        last.failure = nil
        if let previous = last.counters, previous.elementsEqual(counters, by: ==) {
          return (cleared, nil as [(id: Int64, value: Int)]?, nil as CounterError?)
        }
        last.counters = counters
        return (cleared, counters, nil)
      case .failure(let error):
        guard last.failure != error else { return (false, nil, nil) }
        last.failure = error
        return (false, nil, error)
      }
    }
    if clearFailure { failure.onNext(nil) }
    if let counters { latest.onNext(counters) }
    if let newFailure { failure.onNext(newFailure) }
  }
}
