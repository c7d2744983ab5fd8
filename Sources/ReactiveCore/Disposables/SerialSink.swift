/// The common machinery of the operators that listen to several sources (`merge`,
/// `combineLatest`, `withLatestFrom`, `flatMapLatest`).
///
/// Their sources may emit on different threads, and an observer downstream may re-enter one of
/// them, so every input goes through a ``Gate``: inputs are handled one at a time and never
/// recursively, and the subclass state needs no lock. The sink is the disposable its subscriber
/// holds: disposing it stops delivery at once and disposes every source subscription.
///
/// `@unchecked Sendable` because `downstream` and every subclass field are owner-only state of
/// `gate`: they are touched only inside `handle(_:)` (and `finish(_:)`, called from it), which
/// the gate runs one at a time; `isStopped` is atomic.
class SerialSink<Input, Output>: Disposable, @unchecked Sendable {
  private enum Command {
    case input(Input)
    case release
  }

  private let gate = Gate<Command, Void>(shared: ())
  private let isStopped = AtomicFlag()
  private var downstream: Observer<Output>?
  /// The subscriptions to the sources; disposed when the sink stops.
  let subscriptions = CompositeDisposable()

  init(_ downstream: Observer<Output>) {
    self.downstream = downstream
  }

  /// Passes one input from a source to `handle(_:)`, serialized with every other input.
  final func receive(_ input: Input) {
    gate.perform(.input(input)) { self.run($0) }
  }

  /// Returns an observer that passes each event of a source to `handle(_:)` after wrapping it.
  final func sourceObserver<Element>(
    _ wrap: @escaping (Event<Element>) -> Input
  ) -> Observer<Element> {
    Observer(
      next: { self.receive(wrap(.next($0))) },
      end: { self.receive(wrap(Event(ending: $0))) })
  }

  private func run(_ command: Command) {
    switch command {
    case .input(let input):
      guard !isStopped.isSet, downstream != nil else { return }
      handle(input)
    case .release:
      downstream = nil
      releaseState()
    }
  }

  /// Handles one input; overridden by each operator. Runs only on the gate's owner.
  func handle(_ input: Input) {
    preconditionFailure("SerialSink.handle(_:) must be overridden")
  }

  /// Drops the operator's closures and buffered elements once the sink stopped, so that a
  /// subscriber who keeps the disposable keeps nothing else alive. Runs only on the gate's
  /// owner; overridden by operators that hold such state.
  func releaseState() {}

  /// Sends an element downstream. Call only from `handle(_:)`.
  final func forward(_ element: Output) {
    downstream?.next(element)
  }

  /// Sends a terminal event downstream, releases the observer and disposes the sources. Call
  /// only from `handle(_:)`.
  final func finish(_ event: Event<Output>) {
    guard isStopped.set() else { return }
    let downstream = self.downstream
    self.downstream = nil
    downstream?.on(event)
    releaseState()
    subscriptions.dispose()
  }

  func dispose() {
    guard isStopped.set() else { return }
    subscriptions.dispose()
    // Release the observer chain on the gate's owner, after any input in progress.
    gate.perform(.release) { self.run($0) }
  }

  var isDisposed: Bool {
    isStopped.isSet
  }
}
