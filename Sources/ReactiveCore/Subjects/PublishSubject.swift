import Synchronization

/// A hot observable you push elements into; every current subscriber receives them.
///
/// Subscribers receive only the events sent after they subscribed. After a terminal event the
/// subject ignores further events, and a late subscriber receives just the terminal event.
///
/// ```swift
/// let taps = PublishSubject<Void>()
/// let count = taps.scan(0) { count, _ in count + 1 }
/// let subscription = count.subscribe(onNext: { print("tapped \($0) times") })
/// taps.onNext(())  // tapped 1 times
/// ```
///
/// ## Threading and re-entrancy
///
/// A subject is thread-safe: send and subscribe from any thread. Observers run on the sending
/// thread, one event at a time and never concurrently: if another thread is delivering when you
/// send, or an observer sends to the same subject from inside its callback (re-entrancy), the
/// event is queued and delivered by the delivering thread right after the current event has
/// reached every observer. `onNext` therefore never blocks on another thread's observers and
/// never recurses, but it may return before its event was delivered when it raced with another
/// sender. Subscribing and disposing from inside an observer are queued the same way; a disposed
/// subscription receives nothing more once `dispose()` has returned on the delivering thread.
/// No lock is held while an observer runs.
public final class PublishSubject<Element>: ObservableType, ObserverType {
  @usableFromInline let core: SubjectCore<Element>

  /// Creates a subject with no subscribers.
  public init() {
    core = SubjectCore(replayCount: 0)
  }

  /// Sends `event` to every subscriber; ignored once a terminal event was sent.
  ///
  /// - Parameter event: The event to send.
  @inlinable
  public func on(_ event: Event<Element>) {
    core.on(event)
  }

  /// Subscribes `observer` to the events sent from now on.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription; disposing it removes the observer.
  @inlinable
  public func subscribe(_ observer: Observer<Element>) -> any Disposable {
    core.subscribe(observer)
  }

  /// Returns an observable that subscribes to this subject.
  ///
  /// - Returns: An observable of this subject's events.
  @inlinable
  public func asObservable() -> Observable<Element> {
    Observable(trusted: { [core] in core.subscribe($0) })
  }

  /// Whether any subscriber is registered (a snapshot: subscriptions made or disposed
  /// on other threads at this moment may not be counted yet).
  @inlinable
  public var hasObservers: Bool {
    core.observerCount.load(ordering: .relaxed) > 0
  }
}

extension PublishSubject: Sendable where Element: Sendable {}

/// A subject that remembers its latest element and replays it to each new subscriber.
///
/// Created with an initial element. After a terminal event, a late subscriber receives the
/// latest element and then the terminal event. Threading and re-entrancy are as for
/// ``PublishSubject``.
///
/// ```swift
/// let selection = BehaviorSubject(value: 0)
/// selection.subscribe(onNext: { print($0) })  // prints 0 at once
/// selection.onNext(3)  // prints 3
/// ```
public final class BehaviorSubject<Element>: ObservableType, ObserverType {
  @usableFromInline let core: SubjectCore<Element>

  /// Creates a subject whose current element is `value`.
  ///
  /// - Parameter value: The initial element.
  public init(value: Element) {
    core = SubjectCore(replayCount: 1, initial: value)
  }

  /// The latest element sent (or the initial one); it no longer changes after a terminal event.
  public var value: Element {
    guard let value = core.latest else {
      preconditionFailure("A BehaviorSubject always holds a value")
    }
    return value
  }

  /// Sends `event` to every subscriber; ignored once a terminal event was sent.
  ///
  /// - Parameter event: The event to send.
  @inlinable
  public func on(_ event: Event<Element>) {
    core.on(event)
  }

  /// Subscribes `observer`, which first receives the latest element.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription; disposing it removes the observer.
  @inlinable
  public func subscribe(_ observer: Observer<Element>) -> any Disposable {
    core.subscribe(observer)
  }

  /// Returns an observable that subscribes to this subject.
  ///
  /// - Returns: An observable of this subject's events.
  @inlinable
  public func asObservable() -> Observable<Element> {
    Observable(trusted: { [core] in core.subscribe($0) })
  }
}

extension BehaviorSubject: Sendable where Element: Sendable {}

/// A subject that replays up to `bufferSize` of its latest elements to each new subscriber.
///
/// After a terminal event, a late subscriber receives the buffered elements and then the
/// terminal event. Threading and re-entrancy are as for ``PublishSubject``.
public final class ReplaySubject<Element>: ObservableType, ObserverType {
  @usableFromInline let core: SubjectCore<Element>

  /// Creates a subject that replays up to `bufferSize` elements.
  ///
  /// - Parameter bufferSize: How many of the latest elements to replay; `0` replays none.
  public init(bufferSize: Int) {
    core = SubjectCore(replayCount: bufferSize)
  }

  /// Creates a subject that replays up to `bufferSize` elements (RxSwift spelling).
  ///
  /// - Parameter bufferSize: How many of the latest elements to replay.
  /// - Returns: A new subject.
  public static func create(bufferSize: Int) -> ReplaySubject<Element> {
    ReplaySubject(bufferSize: bufferSize)
  }

  /// Creates a subject that replays every element it ever received.
  ///
  /// - Returns: A new subject with an unbounded buffer.
  public static func createUnbounded() -> ReplaySubject<Element> {
    ReplaySubject(bufferSize: Int.max)
  }

  /// Sends `event` to every subscriber; ignored once a terminal event was sent.
  ///
  /// - Parameter event: The event to send.
  @inlinable
  public func on(_ event: Event<Element>) {
    core.on(event)
  }

  /// Subscribes `observer`, which first receives the buffered elements.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription; disposing it removes the observer.
  @inlinable
  public func subscribe(_ observer: Observer<Element>) -> any Disposable {
    core.subscribe(observer)
  }

  /// Returns an observable that subscribes to this subject.
  ///
  /// - Returns: An observable of this subject's events.
  @inlinable
  public func asObservable() -> Observable<Element> {
    Observable(trusted: { [core] in core.subscribe($0) })
  }
}

extension ReplaySubject: Sendable where Element: Sendable {}
