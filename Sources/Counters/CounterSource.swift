import Dispatch
public import ReactiveCore
import Synchronization

/// The counters as stored, as an observable: the one place the counters screen gets its data.
///
/// For now it re-reads the list: when asked (``refresh()``, which the screen calls after each
/// local action) and on a timer (``start(every:)``), and emits only when the counters changed.
/// A re-read is one indexed query over the list's rows, cheap for a list of counters. Writes by
/// other processes therefore show up within one timer interval.
///
/// ```swift
/// let source = CounterSource(store: store)
/// let subscription = source.snapshots.subscribe(onNext: { print($0.map(\.value)) })
/// source.refresh()  // prints the stored values
/// source.start()  // and again whenever they change, checked every 200 ms
/// ```
///
/// Once the repository's change feed exists, ``snapshots`` can come from it instead (the list's
/// first section, mapped to `(id, value)` pairs); nothing else in the screen changes.
///
/// ## Threading
///
/// Reads run on a private serial queue; ``snapshots`` and ``failures`` deliver there, or on the
/// thread that called ``refresh()``. Observers must not call ``refresh()`` (it would wait for
/// itself).
public final class CounterSource: Sendable {
  /// The store read.
  public let store: CounterStore

  private let queue = DispatchQueue(label: "liststore.counters.source")
  private let latest = ReplaySubject<[(id: Int64, value: Int)]>(bufferSize: 1)
  private let failure = ReplaySubject<CounterError?>(bufferSize: 1)
  /// What was last emitted; touched only on `queue`, which makes the source `Sendable`.
  private nonisolated(unsafe) var last:
    (counters: [(id: Int64, value: Int)]?, failure: CounterError?)
  private let timer = Mutex<TimerBox>(TimerBox())

  /// Creates a source; it reads nothing until ``refresh()`` or ``start(every:)``.
  ///
  /// - Parameter store: The counters to read.
  public init(store: CounterStore) {
    self.store = store
    last = (nil, nil)
  }

  deinit {
    stop()
  }

  /// The counters after each change: the latest read first, to each new subscriber, then every
  /// read that differs from the one before. It never ends; failed reads go to ``failures``.
  public var snapshots: Observable<[(id: Int64, value: Int)]> {
    latest.asObservable()
  }

  /// Why the latest read failed, or `nil` once a read succeeds again; emits on each change,
  /// the latest first to each new subscriber.
  public var failures: Observable<CounterError?> {
    failure.asObservable()
  }

  /// Re-reads the counters now, and emits them if they changed; returns when done.
  public func refresh() {
    dispatchPrecondition(condition: .notOnQueue(queue))
    queue.sync { reload() }
  }

  /// Re-reads the counters every `interval` from now on, until ``stop()``.
  ///
  /// - Parameter interval: The time between reads; 200 ms by default.
  public func start(every interval: Duration = .milliseconds(200)) {
    let source = DispatchSource.makeTimerSource(queue: queue)
    let (seconds, attoseconds) = interval.components
    let nanoseconds = max(1, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    source.schedule(
      deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
    source.setEventHandler { [weak self] in self?.reload() }
    source.resume()
    timer.withLock { box in
      box.source?.cancel()
      box.source = source
    }
  }

  /// Stops the timer; a read under way finishes.
  public func stop() {
    timer.withLock { box in
      box.source?.cancel()
      box.source = nil
    }
  }

  /// Reads and emits what changed; runs on `queue`.
  private func reload() {
    do {
      let counters = try store.counters()
      if last.failure != nil {
        last.failure = nil
        failure.onNext(nil)
      }
      if let previous = last.counters, previous.elementsEqual(counters, by: ==) { return }
      last.counters = counters
      latest.onNext(counters)
    } catch {
      guard last.failure != error else { return }
      last.failure = error
      failure.onNext(error)
    }
  }
}

/// The timer of a ``CounterSource``.
///
/// `@unchecked Sendable`: it lives inside the source's mutex, and a dispatch source may be
/// cancelled from any thread.
private struct TimerBox: @unchecked Sendable {
  var source: (any DispatchSourceTimer)?
}
