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

/// An observer made from a closure that receives every event.
///
/// This is what ``Observable/init(_:)`` hands to its subscribe closure.
public struct Observer<Element>: ObserverType {
  @usableFromInline let handler: (Event<Element>) -> Void

  /// Creates an observer that passes every event to `handler`.
  ///
  /// - Parameter handler: The closure called for each event.
  @inlinable
  public init(_ handler: @escaping (Event<Element>) -> Void) {
    self.handler = handler
  }

  /// Creates an observer that forwards every event to `observer`.
  ///
  /// - Parameter observer: The observer to forward to.
  @inlinable
  public init<Other: ObserverType>(_ observer: Other) where Other.Element == Element {
    self.handler = observer.on
  }

  /// Receives one event.
  ///
  /// - Parameter event: The event.
  @inlinable
  public func on(_ event: Event<Element>) {
    handler(event)
  }
}

/// The RxSwift name of ``Observer``.
public typealias AnyObserver<Element> = Observer<Element>
