extension Observable {
  /// Creates an observable from a subscribe closure (RxSwift spelling of ``init(_:)``).
  ///
  /// - Parameter subscribe: Called for every subscription with the subscriber's observer; it
  ///   returns the disposable that cancels its work.
  /// - Returns: The observable.
  public static func create(
    _ subscribe: @escaping (Observer<Element>) -> any Disposable
  ) -> Observable<Element> {
    Observable(subscribe)
  }

  /// Returns an observable that emits `element` and completes.
  ///
  /// - Parameter element: The only element.
  /// - Returns: The observable.
  @inlinable
  public static func just(_ element: Element) -> Observable<Element> {
    Observable(trusted: { observer in
      observer.on(.next(element))
      observer.on(.completed)
      return BooleanDisposable()
    })
  }

  /// Returns an observable that emits `elements` in order and completes.
  ///
  /// - Parameter elements: The elements.
  /// - Returns: The observable.
  @inlinable
  public static func of(_ elements: Element...) -> Observable<Element> {
    from(elements)
  }

  /// Returns an observable that emits the elements of `sequence` in order and completes.
  ///
  /// The elements are emitted synchronously while subscribing, so `sequence` must be finite;
  /// a downstream `take` stops delivery but not the iteration.
  ///
  /// - Parameter sequence: The elements.
  /// - Returns: The observable.
  @inlinable
  public static func from<Elements: Sequence>(_ sequence: Elements) -> Observable<Element>
  where Elements.Element == Element {
    Observable(trusted: { observer in
      for element in sequence { observer.on(.next(element)) }
      observer.on(.completed)
      return BooleanDisposable()
    })
  }

  /// Returns an observable that completes at once without elements.
  ///
  /// - Returns: The observable.
  @inlinable
  public static func empty() -> Observable<Element> {
    Observable(trusted: { observer in
      observer.on(.completed)
      return BooleanDisposable()
    })
  }

  /// Returns an observable that never emits anything.
  ///
  /// - Returns: The observable.
  @inlinable
  public static func never() -> Observable<Element> {
    Observable(trusted: { _ in BooleanDisposable() })
  }

  /// Returns an observable that fails at once with `error`.
  ///
  /// - Parameter error: The failure.
  /// - Returns: The observable.
  @inlinable
  public static func error(_ error: any Error) -> Observable<Element> {
    Observable(trusted: { observer in
      observer.on(.failed(error))
      return BooleanDisposable()
    })
  }
}
