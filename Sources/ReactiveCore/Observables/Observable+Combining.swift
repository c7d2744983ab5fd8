extension Observable {
  /// Merges the elements of `sources` into one observable (RxSwift `merge`).
  ///
  /// It completes once every source has completed, and fails as soon as one source fails
  /// (disposing the others). Sources may emit on different threads: their events are
  /// serialized.
  ///
  /// ```swift
  /// let delta = Observable.merge(plus.map { 1 }, minus.map { -1 })
  /// ```
  ///
  /// - Parameter sources: The observables to merge.
  /// - Returns: The merged observable.
  public static func merge(_ sources: Observable<Element>...) -> Observable<Element> {
    merge(sources)
  }

  /// Merges the elements of `sources` into one observable.
  ///
  /// An empty array completes at once.
  ///
  /// - Parameter sources: The observables to merge.
  /// - Returns: The merged observable.
  public static func merge(_ sources: [Observable<Element>]) -> Observable<Element> {
    Observable(trusted: { observer in
      let sink = MergeSink(observer, sourceCount: sources.count)
      if sources.isEmpty { sink.receive(.completed) }
      for source in sources where !sink.isDisposed {
        sink.subscriptions.insert(source.subscribe(sink.sourceObserver { $0 }))
      }
      return sink
    })
  }

  /// Combines the latest elements of two sources (RxSwift `combineLatest`).
  ///
  /// It emits once each source has emitted, then whenever either emits. It completes when
  /// both have completed (or when one completes without ever emitting), and fails as soon as
  /// one fails.
  ///
  /// - Parameters:
  ///   - first: The first source.
  ///   - second: The second source.
  ///   - resultSelector: Combines the latest elements.
  /// - Returns: The combined observable.
  public static func combineLatest<First, Second>(
    _ first: some ObservableType<First>, _ second: some ObservableType<Second>,
    resultSelector: @escaping (First, Second) -> Element
  ) -> Observable<Element> {
    combineLatest(first, second, Observable<Void>.just(())) { a, b, _ in resultSelector(a, b) }
  }

  /// Combines the latest elements of two sources into tuples.
  ///
  /// - Parameters:
  ///   - first: The first source.
  ///   - second: The second source.
  /// - Returns: The combined observable.
  public static func combineLatest<First, Second>(
    _ first: some ObservableType<First>, _ second: some ObservableType<Second>
  ) -> Observable<(First, Second)> where Element == (First, Second) {
    combineLatest(first, second) { ($0, $1) }
  }

  /// Combines the latest elements of three sources.
  ///
  /// It emits once every source has emitted, then whenever any emits. It completes when all
  /// have completed (or when one completes without ever emitting), and fails as soon as one
  /// fails.
  ///
  /// - Parameters:
  ///   - first: The first source.
  ///   - second: The second source.
  ///   - third: The third source.
  ///   - resultSelector: Combines the latest elements.
  /// - Returns: The combined observable.
  public static func combineLatest<First, Second, Third>(
    _ first: some ObservableType<First>, _ second: some ObservableType<Second>,
    _ third: some ObservableType<Third>,
    resultSelector: @escaping (First, Second, Third) -> Element
  ) -> Observable<Element> {
    let (first, second, third) = (first.asObservable(), second.asObservable(), third.asObservable())
    return Observable(trusted: { observer in
      let sink = CombineLatestSink(observer, resultSelector: resultSelector)
      sink.subscriptions.insert(first.subscribe(sink.sourceObserver { .first($0) }))
      sink.subscriptions.insert(second.subscribe(sink.sourceObserver { .second($0) }))
      sink.subscriptions.insert(third.subscribe(sink.sourceObserver { .third($0) }))
      return sink
    })
  }

  /// Combines the latest elements of three sources into tuples.
  ///
  /// - Parameters:
  ///   - first: The first source.
  ///   - second: The second source.
  ///   - third: The third source.
  /// - Returns: The combined observable.
  public static func combineLatest<First, Second, Third>(
    _ first: some ObservableType<First>, _ second: some ObservableType<Second>,
    _ third: some ObservableType<Third>
  ) -> Observable<(First, Second, Third)> where Element == (First, Second, Third) {
    combineLatest(first, second, third) { ($0, $1, $2) }
  }
}

extension ObservableType {
  /// Merges the elements of this observable and `other` (ReactiveKit `merge(with:)`).
  ///
  /// - Parameter other: The observable to merge with.
  /// - Returns: The merged observable, which completes when both have completed.
  public func merge(with other: some ObservableType<Element>) -> Observable<Element> {
    Observable.merge([asObservable(), other.asObservable()])
  }

  /// Combines the latest elements of this observable and `other` into tuples (ReactiveKit
  /// `combineLatest(with:)`).
  ///
  /// - Parameter other: The other source.
  /// - Returns: The combined observable.
  public func combineLatest<Other>(
    with other: some ObservableType<Other>
  ) -> Observable<(Element, Other)> {
    Observable.combineLatest(self, other)
  }

  /// Combines each element with the latest element of `second`; elements that arrive before
  /// `second` has emitted are dropped.
  ///
  /// It completes when this observable completes and fails when either fails; the completion
  /// of `second` is ignored (its last element keeps being used).
  ///
  /// - Parameters:
  ///   - second: The source whose latest element is sampled.
  ///   - resultSelector: Combines an element with the latest element of `second`.
  /// - Returns: The combined observable.
  public func withLatestFrom<Second, Result>(
    _ second: some ObservableType<Second>,
    resultSelector: @escaping (Element, Second) -> Result
  ) -> Observable<Result> {
    let (first, second) = (asObservable(), second.asObservable())
    return Observable(trusted: { observer in
      let sink = WithLatestFromSink(observer, resultSelector: resultSelector)
      sink.subscriptions.insert(second.subscribe(sink.sourceObserver { .second($0) }))
      sink.subscriptions.insert(first.subscribe(sink.sourceObserver { .first($0) }))
      return sink
    })
  }

  /// Replaces each element with the latest element of `second`.
  ///
  /// - Parameter second: The source whose latest element is sampled.
  /// - Returns: The sampled observable; see ``withLatestFrom(_:resultSelector:)``.
  public func withLatestFrom<Second>(
    _ second: some ObservableType<Second>
  ) -> Observable<Second> {
    withLatestFrom(second) { $1 }
  }
}

final class MergeSink<Element>: SerialSink<Event<Element>, Element>, @unchecked Sendable {
  private var activeSources: Int

  init(_ downstream: Observer<Element>, sourceCount: Int) {
    activeSources = sourceCount
    super.init(downstream)
  }

  override func handle(_ event: Event<Element>) {
    switch event {
    case .next(let element):
      forward(element)
    case .failed:
      finish(event)
    case .completed:
      activeSources -= 1
      if activeSources <= 0 { finish(.completed) }
    }
  }
}

enum CombineLatestInput<First, Second, Third> {
  case first(Event<First>)
  case second(Event<Second>)
  case third(Event<Third>)
}

final class CombineLatestSink<First, Second, Third, Output>:
  SerialSink<CombineLatestInput<First, Second, Third>, Output>, @unchecked Sendable
{
  private var resultSelector: ((First, Second, Third) -> Output)?
  private var first: First?
  private var second: Second?
  private var third: Third?
  private var completedSources = 0

  init(
    _ downstream: Observer<Output>, resultSelector: @escaping (First, Second, Third) -> Output
  ) {
    self.resultSelector = resultSelector
    super.init(downstream)
  }

  override func handle(_ input: CombineLatestInput<First, Second, Third>) {
    switch input {
    case .first(.next(let element)): first = element
    case .second(.next(let element)): second = element
    case .third(.next(let element)): third = element
    case .first(.failed(let error)), .second(.failed(let error)), .third(.failed(let error)):
      finish(.failed(error))
      return
    case .first(.completed): return complete(hasEmitted: first != nil)
    case .second(.completed): return complete(hasEmitted: second != nil)
    case .third(.completed): return complete(hasEmitted: third != nil)
    }
    if let first, let second, let third, let resultSelector {
      forward(resultSelector(first, second, third))
    }
  }

  override func releaseState() {
    resultSelector = nil
    (first, second, third) = (nil, nil, nil)
  }

  private func complete(hasEmitted: Bool) {
    completedSources += 1
    // A source that completes without an element means no combination can ever be emitted.
    if completedSources == 3 || !hasEmitted { finish(.completed) }
  }
}

enum WithLatestFromInput<First, Second> {
  case first(Event<First>)
  case second(Event<Second>)
}

final class WithLatestFromSink<First, Second, Output>:
  SerialSink<WithLatestFromInput<First, Second>, Output>, @unchecked Sendable
{
  private var resultSelector: ((First, Second) -> Output)?
  private var latest: Second?

  init(_ downstream: Observer<Output>, resultSelector: @escaping (First, Second) -> Output) {
    self.resultSelector = resultSelector
    super.init(downstream)
  }

  override func releaseState() {
    resultSelector = nil
    latest = nil
  }

  override func handle(_ input: WithLatestFromInput<First, Second>) {
    switch input {
    case .first(.next(let element)):
      if let latest, let resultSelector { forward(resultSelector(element, latest)) }
    case .second(.next(let element)):
      latest = element
    case .first(.failed(let error)), .second(.failed(let error)):
      finish(.failed(error))
    case .first(.completed):
      finish(.completed)
    case .second(.completed):
      break
    }
  }
}
