/// Something that can be subscribed to: an ``Observable``, a subject or a property.
///
/// Every operator (`map`, `merge`, `scan`, ...) is defined on this protocol, so it applies to
/// subjects and properties directly.
///
/// ## The contract
///
/// A subscription receives zero or more elements, then at most one terminal event (`failed` or
/// `completed`), and nothing after it. Events of one subscription arrive one at a time, never
/// concurrently, each on the thread that produced it (the sender of a subject, the queue of
/// `observe(on:)`). Disposing a subscription stops delivery (an event already being delivered
/// on another thread at that moment may still arrive) and releases the upstream subscriptions
/// and the closures of the chain. Sources (subjects, `Observable.init(_:)`, the factories) and
/// the operators that join several sources enforce this; single-source operators rely on it and
/// take no lock.
public protocol ObservableType<Element> {
  /// The type of the elements delivered.
  associatedtype Element

  /// Subscribes `observer` and returns the subscription.
  ///
  /// - Parameter observer: The observer that receives the events.
  /// - Returns: The subscription; disposing it stops delivery and releases the resources.
  func subscribe(_ observer: Observer<Element>) -> any Disposable

  /// Returns this sequence as an ``Observable``.
  ///
  /// - Returns: An observable that delivers the same events.
  func asObservable() -> Observable<Element>
}

/// A cold, push-based sequence of events, built from a subscribe closure.
///
/// Each subscription runs the closure anew (nothing is shared unless `share()` is used). The
/// closure emits through the observer it is given and returns a disposable that stops the
/// emission:
///
/// ```swift
/// let numbers = Observable<Int> { observer in
///   observer.onNext(1)
///   observer.onNext(2)
///   observer.onCompleted()
///   return Disposables.create()
/// }
/// let subscription = numbers
///   .map { $0 * 10 }
///   .subscribe(onNext: { print($0) }, onCompleted: { print("done") })
/// // prints 10, 20, done
/// ```
///
/// `Observable` puts no constraint on `Element`: `Observable<Void>`, tuples, arrays and your
/// own structs all work. It is not `Sendable`: build and subscribe a chain in one place; to move
/// events to another thread use `observe(on:)`, and to feed events from several threads use a
/// subject, which is thread-safe.
public struct Observable<Element>: ObservableType {
  @usableFromInline let producer: (Observer<Element>) -> any Disposable

  /// Creates an observable from a subscribe closure (RxSwift `create`).
  ///
  /// The observable enforces the event grammar for the closure: events after a terminal event
  /// or after the subscription was disposed are dropped, and the returned disposable is
  /// disposed once the sequence ends. The closure must send events one at a time.
  ///
  /// - Parameter subscribe: Called for every subscription with the subscriber's observer; it
  ///   returns the disposable that cancels its work.
  public init(_ subscribe: @escaping (Observer<Element>) -> any Disposable) {
    self.producer = { downstream in
      let sink = CreateSink(downstream)
      let disposer = SinkDisposer(cancel: sink.stop)
      sink.disposer = disposer
      disposer.setUpstream(subscribe(Observer(next: sink.next, end: sink.end)))
      return disposer
    }
  }

  /// Creates an observable whose subscribe closure is trusted to keep the event grammar and
  /// to stop on disposal (used by the operators of this module).
  @inlinable
  init(trusted producer: @escaping (Observer<Element>) -> any Disposable) {
    self.producer = producer
  }

  /// Subscribes `observer` and returns the subscription.
  ///
  /// - Parameter observer: The observer that receives the events.
  /// - Returns: The subscription; disposing it stops delivery and releases the resources.
  @inlinable
  public func subscribe(_ observer: Observer<Element>) -> any Disposable {
    producer(observer)
  }

  /// Returns `self`.
  ///
  /// - Returns: This observable.
  @inlinable
  public func asObservable() -> Observable<Element> {
    self
  }
}

/// Guards the observer handed to a user's subscribe closure (see `Observable.init(_:)`).
///
/// `@unchecked Sendable` because `downstream` is only used by the producer's serialized event
/// calls (the Rx contract), and `stopped` is atomic; `disposer` is set once before the
/// producer runs.
final class CreateSink<Element>: @unchecked Sendable {
  private var downstream: Observer<Element>?
  private let stopped = AtomicFlag()
  var disposer: SinkDisposer?

  init(_ downstream: Observer<Element>) {
    self.downstream = downstream
  }

  func next(_ element: Element) {
    guard !stopped.isSet else { return }
    downstream?.next(element)
  }

  func end(_ error: (any Error)?) {
    guard stopped.set() else { return }
    let downstream = self.downstream
    self.downstream = nil
    downstream?.end(error)
    disposer?.dispose()
    disposer = nil
  }

  func stop() {
    _ = stopped.set()
  }
}
