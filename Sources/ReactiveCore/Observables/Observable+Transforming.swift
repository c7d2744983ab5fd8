// Single-source operators. They hold no lock: by the Rx contract their upstream delivers one
// event at a time and nothing after a terminal event, so their per-subscription state (a
// captured `var`) is only ever touched by one event at a time.

extension ObservableType {
  /// Transforms each element.
  ///
  /// - Parameter transform: The function applied to each element.
  /// - Returns: An observable of the transformed elements, ending when this one ends.
  @inlinable
  public func map<Result>(_ transform: @escaping (Element) -> Result) -> Observable<Result> {
    let source = self
    return Observable(trusted: { observer in
      source.subscribe(Observer(next: { observer.next(transform($0)) }, end: observer.end))
    })
  }

  /// Keeps the elements that satisfy `isIncluded`.
  ///
  /// - Parameter isIncluded: Returns whether an element is kept.
  /// - Returns: An observable of the kept elements, ending when this one ends.
  @inlinable
  public func filter(_ isIncluded: @escaping (Element) -> Bool) -> Observable<Element> {
    let source = self
    return Observable(trusted: { observer in
      source.subscribe(
        Observer(next: { if isIncluded($0) { observer.next($0) } }, end: observer.end))
    })
  }

  /// Transforms each element and drops the `nil` results.
  ///
  /// - Parameter transform: The function applied to each element.
  /// - Returns: An observable of the non-`nil` results, ending when this one ends.
  @inlinable
  public func compactMap<Result>(
    _ transform: @escaping (Element) -> Result?
  ) -> Observable<Result> {
    let source = self
    return Observable(trusted: { observer in
      source.subscribe(
        Observer(
          next: { element in
            if let result = transform(element) { observer.next(result) }
          },
          end: observer.end))
    })
  }

  /// Emits the running accumulation of the elements, starting from `seed` (RxSwift `scan`).
  ///
  /// `seed` itself is not emitted; each subscription accumulates from `seed` anew.
  ///
  /// ```swift
  /// Observable.merge(plus.map { 1 }, minus.map { -1 }).scan(0, accumulator: +)
  /// ```
  ///
  /// - Parameters:
  ///   - seed: The initial accumulated value.
  ///   - accumulator: Combines the accumulated value with the next element.
  /// - Returns: An observable of the accumulated values.
  @inlinable
  public func scan<Accumulated>(
    _ seed: Accumulated, accumulator: @escaping (Accumulated, Element) -> Accumulated
  ) -> Observable<Accumulated> {
    let source = self
    return Observable(trusted: { observer in
      let accumulated = OperatorState(seed)
      return source.subscribe(
        Observer(
          next: { element in
            accumulated.value = accumulator(accumulated.value, element)
            observer.next(accumulated.value)
          },
          end: observer.end))
    })
  }

  /// Emits the running accumulation of the elements, updating it in place.
  ///
  /// Use it for collections, to avoid a copy per element:
  ///
  /// ```swift
  /// actions.scan(into: [Int]()) { list, action in list.append(action) }
  /// ```
  ///
  /// - Parameters:
  ///   - seed: The initial accumulated value.
  ///   - accumulator: Updates the accumulated value with the next element.
  /// - Returns: An observable of the accumulated values.
  @inlinable
  public func scan<Accumulated>(
    into seed: Accumulated, _ accumulator: @escaping (inout Accumulated, Element) -> Void
  ) -> Observable<Accumulated> {
    let source = self
    return Observable(trusted: { observer in
      let accumulated = OperatorState(seed)
      return source.subscribe(
        Observer(
          next: { element in
            accumulator(&accumulated.value, element)
            observer.next(accumulated.value)
          },
          end: observer.end))
    })
  }

  /// Emits `elements` first, then the elements of this observable.
  ///
  /// - Parameter elements: The elements to emit on subscription.
  /// - Returns: The prefixed observable.
  @inlinable
  public func startWith(_ elements: Element...) -> Observable<Element> {
    let source = self
    return Observable(trusted: { observer in
      for element in elements { observer.next(element) }
      return source.subscribe(observer)
    })
  }

  /// Drops each element that is equivalent to the one emitted before it.
  ///
  /// - Parameter areEquivalent: Returns whether two consecutive elements are equivalent.
  /// - Returns: An observable without consecutive duplicates.
  @inlinable
  public func distinctUntilChanged(
    _ areEquivalent: @escaping (Element, Element) -> Bool
  ) -> Observable<Element> {
    let source = self
    return Observable(trusted: { observer in
      let previous = OperatorState<Element?>(nil)
      return source.subscribe(
        Observer(
          next: { element in
            if let last = previous.value, areEquivalent(last, element) { return }
            previous.value = element
            observer.next(element)
          },
          end: observer.end))
    })
  }

  /// Drops each element whose key equals the key of the element emitted before it.
  ///
  /// - Parameter key: Returns the key compared between consecutive elements.
  /// - Returns: An observable without consecutive duplicates.
  @inlinable
  public func distinctUntilChanged<Key: Equatable>(
    by key: @escaping (Element) -> Key
  ) -> Observable<Element> {
    distinctUntilChanged { key($0) == key($1) }
  }

  /// Emits the first `count` elements, then completes and disposes the upstream.
  ///
  /// - Parameter count: How many elements to take; `0` completes at once without subscribing.
  /// - Returns: The shortened observable.
  @inlinable
  public func take(_ count: Int) -> Observable<Element> {
    precondition(count >= 0, "take(_:) needs a count of zero or more")
    let source = self
    return Observable(trusted: { observer in
      guard count > 0 else {
        observer.on(.completed)
        return BooleanDisposable()
      }
      let remaining = OperatorState(count)
      let upstream = SerialDisposable()
      upstream.replace(
        with: source.subscribe(
          Observer(
            next: { element in
              guard remaining.value > 0 else { return }
              remaining.value -= 1
              observer.next(element)
              guard remaining.value == 0 else { return }
              observer.end(nil)
              upstream.dispose()
            },
            end: { error in
              guard remaining.value > 0 else { return }
              remaining.value = 0
              observer.end(error)
            })))
      return upstream
    })
  }

  /// Drops the first `count` elements.
  ///
  /// - Parameter count: How many elements to drop.
  /// - Returns: The observable without its first elements.
  @inlinable
  public func skip(_ count: Int) -> Observable<Element> {
    precondition(count >= 0, "skip(_:) needs a count of zero or more")
    let source = self
    return Observable(trusted: { observer in
      let remaining = OperatorState(count)
      return source.subscribe(
        Observer(
          next: { element in
            guard remaining.value == 0 else {
              remaining.value -= 1
              return
            }
            observer.next(element)
          },
          end: observer.end))
    })
  }
}

extension ObservableType where Element: Equatable {
  /// Drops each element equal to the one emitted before it.
  ///
  /// - Returns: An observable without consecutive duplicates.
  @inlinable
  public func distinctUntilChanged() -> Observable<Element> {
    distinctUntilChanged(==)
  }
}
