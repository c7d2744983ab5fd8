/// A thread-safe current value that can be observed: setting `value` notifies subscribers, and
/// each new subscriber first receives the current value.
///
/// A property never ends: terminal events sent to it (for example through `bind(to:)` or
/// `on(_:)`) are ignored.
///
/// ```swift
/// let name = Property("Ann")
/// let greeting = name.map { "Hello, \($0)" }
/// greeting.subscribe(onNext: { print($0) })  // Hello, Ann
/// name.value = "Bob"  // Hello, Bob
/// ```
///
/// ## Threading and re-entrancy
///
/// `value` can be read and set from any thread. A read always returns the latest value set,
/// even from inside an observer that is still receiving an older one. Notifications follow the
/// rules of ``PublishSubject``: one at a time, in the order the values were set, on the setting
/// thread (or queued for the thread already notifying, including a set from inside an
/// observer), with no lock held while an observer runs.
public final class Property<Value>: ObservableType, ObserverType {
  @usableFromInline let core: SubjectCore<Value>

  /// Creates a property holding `value`.
  ///
  /// - Parameter value: The initial value.
  public init(_ value: Value) {
    core = SubjectCore(replayCount: 1, initial: value, acceptsTerminalEvents: false)
  }

  /// The current value; setting it notifies every subscriber.
  public var value: Value {
    get {
      guard let value = core.latest else {
        preconditionFailure("A Property always holds a value")
      }
      return value
    }
    set {
      core.on(.next(newValue))
    }
  }

  /// Sets `value` from a `next` event; terminal events are ignored.
  ///
  /// - Parameter event: The event.
  @inlinable
  public func on(_ event: Event<Value>) {
    core.on(event)
  }

  /// Subscribes `observer`, which first receives the current value.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription; disposing it removes the observer.
  @inlinable
  public func subscribe(_ observer: Observer<Value>) -> any Disposable {
    core.subscribe(observer)
  }

  /// Returns an observable that subscribes to this property.
  ///
  /// - Returns: An observable of the current value and its changes.
  @inlinable
  public func asObservable() -> Observable<Value> {
    Observable(trusted: { [core] in core.subscribe($0) })
  }
}

extension Property: Sendable where Value: Sendable {}
