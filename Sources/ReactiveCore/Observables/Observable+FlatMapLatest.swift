extension ObservableType {
  /// Maps each element to an observable and mirrors only the most recent one (RxSwift
  /// `flatMapLatest`, ReactiveKit `flatMapLatest`).
  ///
  /// When a new element arrives, the subscription to the previous inner observable is disposed
  /// before the new one is subscribed. It completes when this observable and the current inner
  /// one have both completed, and fails as soon as either fails.
  ///
  /// - Parameter transform: Returns the inner observable for an element.
  /// - Returns: The observable of the current inner observable's elements.
  public func flatMapLatest<Inner: ObservableType>(
    _ transform: @escaping (Element) -> Inner
  ) -> Observable<Inner.Element> {
    let source = asObservable()
    return Observable(trusted: { observer in
      let sink = FlatMapLatestSink(observer) { transform($0).asObservable() }
      sink.subscriptions.insert(sink.inner)
      sink.subscriptions.insert(source.subscribe(sink.sourceObserver { .outer($0) }))
      return sink
    })
  }
}

enum FlatMapLatestInput<Outer, Inner> {
  case outer(Event<Outer>)
  case inner(id: Int, Event<Inner>)
}

final class FlatMapLatestSink<Outer, Inner>:
  SerialSink<FlatMapLatestInput<Outer, Inner>, Inner>, @unchecked Sendable
{
  private var transform: ((Outer) -> Observable<Inner>)?
  /// The subscription to the current inner observable.
  let inner = SerialDisposable()
  private var currentID = 0
  private var isInnerActive = false
  private var isOuterCompleted = false

  init(_ downstream: Observer<Inner>, transform: @escaping (Outer) -> Observable<Inner>) {
    self.transform = transform
    super.init(downstream)
  }

  override func releaseState() {
    transform = nil
  }

  override func handle(_ input: FlatMapLatestInput<Outer, Inner>) {
    switch input {
    case .outer(.next(let element)):
      currentID += 1
      isInnerActive = true
      // Dispose the previous inner subscription before subscribing the next one.
      inner.replace(with: BooleanDisposable())
      let id = currentID
      guard let innerObservable = transform?(element) else { return }
      // Events the inner observable sends while subscribing are queued by the gate and
      // handled after this input.
      inner.replace(with: innerObservable.subscribe(sourceObserver { .inner(id: id, $0) }))
    case .outer(.failed(let error)):
      finish(.failed(error))
    case .outer(.completed):
      isOuterCompleted = true
      if !isInnerActive { finish(.completed) }
    case .inner(let id, let event):
      guard id == currentID else { return }
      switch event {
      case .next(let element):
        forward(element)
      case .failed(let error):
        finish(.failed(error))
      case .completed:
        isInnerActive = false
        if isOuterCompleted { finish(.completed) }
      }
    }
  }
}
