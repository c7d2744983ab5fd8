extension ObservableType {
  /// Subscribes closures to the elements, the failure, the completion and the disposal.
  ///
  /// After `onError` or `onCompleted`, `onDisposed` is called and every closure is released.
  ///
  /// - Parameters:
  ///   - onNext: Called with each element.
  ///   - onError: Called once if the sequence fails.
  ///   - onCompleted: Called once if the sequence completes.
  ///   - onDisposed: Called once when the subscription ends, by disposal or by a terminal event.
  /// - Returns: The subscription; disposing it stops delivery and releases the upstream.
  @inlinable
  public func subscribe(
    onNext: ((Element) -> Void)? = nil,
    onError: ((any Error) -> Void)? = nil,
    onCompleted: (() -> Void)? = nil,
    onDisposed: (() -> Void)? = nil
  ) -> any Disposable {
    let disposer = SinkDisposer(cancel: onDisposed)
    // Elements go straight to `onNext`: the sink adds no stage to the per-element path.
    let upstream = subscribe(
      Observer(
        next: onNext ?? { _ in },
        end: { error in
          if let error {
            onError?(error)
          } else {
            onCompleted?()
          }
          disposer.dispose()
        }))
    disposer.setUpstream(upstream)
    return disposer
  }

  /// Subscribes a closure that receives every event.
  ///
  /// - Parameter on: Called with each event.
  /// - Returns: The subscription.
  @inlinable
  public func subscribe(_ on: @escaping (Event<Element>) -> Void) -> any Disposable {
    subscribe(Observer(on))
  }

  /// Subscribes any observer, such as a subject, forwarding every event to it.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription.
  @inlinable
  public func subscribe<Target: ObserverType>(_ observer: Target) -> any Disposable
  where Target.Element == Element {
    subscribe(Observer(observer))
  }

  /// Observes every event (ReactiveKit spelling of `subscribe(_:)`).
  ///
  /// - Parameter observer: Called with each event.
  /// - Returns: The subscription.
  @inlinable
  public func observe(with observer: @escaping (Event<Element>) -> Void) -> any Disposable {
    subscribe(Observer(observer))
  }

  /// Observes the elements only (ReactiveKit spelling of `subscribe(onNext:)`).
  ///
  /// - Parameter observer: Called with each element.
  /// - Returns: The subscription.
  @inlinable
  public func observeNext(with observer: @escaping (Element) -> Void) -> any Disposable {
    subscribe(onNext: observer)
  }

  /// Observes the completion only.
  ///
  /// - Parameter observer: Called once when the sequence completes.
  /// - Returns: The subscription.
  @inlinable
  public func observeCompleted(with observer: @escaping () -> Void) -> any Disposable {
    subscribe(onCompleted: observer)
  }

  /// Observes the failure only.
  ///
  /// - Parameter observer: Called once if the sequence fails.
  /// - Returns: The subscription.
  @inlinable
  public func observeFailed(with observer: @escaping (any Error) -> Void) -> any Disposable {
    subscribe(onError: observer)
  }

  /// Binds the elements to `target`, such as a subject, a property or an observer.
  ///
  /// Only elements are forwarded: when this sequence completes or fails the binding ends and
  /// `target` stays open, so many bindings can feed one shared subject.
  ///
  /// - Parameter target: The observer that receives the elements.
  /// - Returns: The binding; disposing it stops forwarding.
  @inlinable
  public func bind<Target: ObserverType>(to target: Target) -> any Disposable
  where Target.Element == Element {
    subscribe(onNext: { target.on(.next($0)) })
  }

  /// Binds the elements to a closure, such as a setter of a view.
  ///
  /// - Parameter target: Called with each element.
  /// - Returns: The binding; disposing it stops forwarding.
  @inlinable
  public func bind(onNext target: @escaping (Element) -> Void) -> any Disposable {
    subscribe(onNext: target)
  }
}
