/// Something that receives events: an ``Observer``, a subject or a property.
///
/// Implementations may assume the Rx contract: events arrive one at a time (never
/// concurrently), and nothing arrives after a terminal event.
public protocol ObserverType<Element> {
  /// The type of the elements received.
  associatedtype Element

  /// Receives one event.
  ///
  /// - Parameter event: The event.
  func on(_ event: Event<Element>)
}

extension ObserverType {
  /// Sends an element (RxSwift spelling).
  ///
  /// - Parameter element: The element.
  @inlinable
  public func onNext(_ element: Element) {
    on(.next(element))
  }

  /// Ends the sequence with `error`.
  ///
  /// - Parameter error: The failure.
  @inlinable
  public func onError(_ error: any Error) {
    on(.failed(error))
  }

  /// Ends the sequence normally.
  @inlinable
  public func onCompleted() {
    on(.completed)
  }

  /// Sends an element (ReactiveKit spelling).
  ///
  /// - Parameter element: The element.
  @inlinable
  public func send(_ element: Element) {
    on(.next(element))
  }
}

extension ObserverType where Element == Void {
  /// Sends `()`, as a button tap would.
  @inlinable
  public func send() {
    on(.next(()))
  }

  /// Sends `()`, as a button tap would.
  @inlinable
  public func onNext() {
    on(.next(()))
  }
}

/// An observer made from closures.
///
/// This is what ``Observable/init(_:)`` hands to its subscribe closure. When `Element` is
/// `Sendable` the observer is too, so a producer may emit from a queue or a task, provided it
/// sends one event at a time.
///
/// Internally an observer is a pair of closures, one for elements and one for the end of the
/// sequence, so that an element travels down an operator chain without being wrapped in an
/// ``Event`` at every stage.
public struct Observer<Element>: ObserverType {
  /// Receives each element.
  @usableFromInline let next: (Element) -> Void
  /// Receives the end of the sequence: the failure, or `nil` for completion.
  @usableFromInline let end: ((any Error)?) -> Void

  /// Creates an observer that passes every event to `handler`.
  ///
  /// - Parameter handler: The closure called for each event.
  @inlinable
  public init(_ handler: @escaping (Event<Element>) -> Void) {
    self.next = { handler(.next($0)) }
    self.end = { handler(Event(ending: $0)) }
  }

  /// Creates an observer that forwards every event to `observer`.
  ///
  /// - Parameter observer: The observer to forward to.
  @inlinable
  public init<Other: ObserverType>(_ observer: Other) where Other.Element == Element {
    if let observer = observer as? Observer<Element> {
      self = observer
    } else {
      self.init(observer.on)
    }
  }

  /// Creates an observer from a closure for elements and one for the end of the sequence.
  @inlinable
  init(next: @escaping (Element) -> Void, end: @escaping ((any Error)?) -> Void) {
    self.next = next
    self.end = end
  }

  /// Receives one event.
  ///
  /// - Parameter event: The event.
  @inlinable
  public func on(_ event: Event<Element>) {
    switch event {
    case .next(let element): next(element)
    case .failed(let error): end(error)
    case .completed: end(nil)
    }
  }
}

extension Event {
  /// The terminal event for an end of sequence: `failed(error)`, or `completed` for `nil`.
  @inlinable
  init(ending error: (any Error)?) {
    if let error {
      self = .failed(error)
    } else {
      self = .completed
    }
  }
}

// An observer can be handed to another thread (a producer in `Observable.init(_:)` that
// emits from a queue or a task, or a subject fed from several threads), so that events may
// reach its closures on any thread. That is safe under the Rx contract the whole module relies
// on and enforces: the events of one subscription are delivered one at a time, each
// happening-before the next (subjects and multi-source operators serialize them through a
// `Gate`), so the operator state and downstream observers captured by the closures are never
// touched concurrently. The elements themselves do cross threads, hence `Element: Sendable`.
extension Observer: @unchecked Sendable where Element: Sendable {}

/// The RxSwift name of ``Observer``.
public typealias AnyObserver<Element> = Observer<Element>
