public import Dispatch
import ReactiveCore

extension Observable2DArray where Metadata: Sendable, Item: Sendable {
  /// An array that follows this one on `queue`: its state and its events change together
  /// there, so code running on `queue` — the main queue, which is the main actor's, for
  /// UI code — reads a state that matches the events it has received.
  ///
  /// It starts as this array's current state. Each event of this array is applied on
  /// `queue`, in order, and then delivered to the new array's subscribers on `queue`. An
  /// event that arrives while its sender already runs on `queue` (a write made on the
  /// main actor, with `queue` the main queue) is applied and delivered right there, before
  /// that write returns; others are handed to `queue` asynchronously. The completion or
  /// failure of this array's events is passed on the same way.
  ///
  /// ```swift
  /// let onMain = array.delivered(on: .main)
  /// onMain.observeNext { event in
  ///   MainActor.assumeIsolated { tableView.reloadData() }  // runs on the main queue
  /// }.disposed(by: bag)
  /// ```
  ///
  /// The new array keeps this one alive; this one stops feeding it when it is released.
  /// - Parameter queue: A serial queue, such as `.main`.
  /// - Returns: The array that changes on `queue`.
  public func delivered(on queue: DispatchQueue) -> Observable2DArray<Metadata, Item> {
    QueueBoundObservable2DArray(following: self, on: queue)
  }
}

/// An array that applies another array's events on a dispatch queue (see
/// ``Observable2DArray/delivered(on:)``).
///
/// `@unchecked Sendable` (through its superclass's conditional conformance, and for the
/// closures that capture it): `inbox` is behind its mutex, `source` and `queue` are
/// immutable, and the state it shares with its superclass is behind the superclass's lock.
package final class QueueBoundObservable2DArray<Metadata: Sendable, Item: Sendable>:
  Observable2DArray<Metadata, Item>, @unchecked Sendable
{
  /// What the source delivered and this array has not applied yet.
  private enum Received {
    case event(Observable2DArrayEvent<Metadata, Item>)
    case finish((any Error)?)
  }

  /// The queue whose code sees this array's state and events.
  package let queue: DispatchQueue
  /// The array this one follows; kept alive by this one.
  private let source: Observable2DArray<Metadata, Item>
  private let inbox = Locked<[Received]>([])
  /// The subscriptions to `source`; disposed when this array goes.
  private let subscriptions = CompositeDisposable()

  init(following source: Observable2DArray<Metadata, Item>, on queue: DispatchQueue) {
    self.queue = queue
    self.source = source
    super.init(snapshot: [])
    QueueIdentity.mark(queue)
    // The initial state arrives before any event, and before `subscribe` returns unless
    // this runs inside a delivery (then right after it).
    let started = source.subscribe(
      initial: { [weak self] sections in self?.state.withLock { $0.sections = sections } },
      onNext: { [weak self] event in self?.receive(.event(event)) })
    let ended = source.subscribe(
      onError: { [weak self] error in self?.receive(.finish(error)) },
      onCompleted: { [weak self] in self?.receive(.finish(nil)) })
    subscriptions.insert(started)
    subscriptions.insert(ended)
  }

  deinit {
    subscriptions.dispose()
  }

  /// Takes an event of the source: applies it now when already on `queue`, else on `queue`.
  private func receive(_ received: Received) {
    inbox.withLock { $0.append(received) }
    if QueueIdentity.isCurrent(queue) {
      drain()
    } else {
      queue.async { [weak self] in self?.drain() }
    }
  }

  /// Applies and delivers everything received so far. Runs on `queue` only.
  private func drain() {
    let received = inbox.withLock { inbox in
      defer { inbox = [] }
      return inbox
    }
    guard !received.isEmpty else { return }
    state.withLock { state in
      for item in received {
        switch item {
        case .event(let event):
          state.sections = event.sections
          state.enqueue(.event(event))
        case .finish(let error):
          state.enqueue(.finish(error))
        }
      }
    }
    deliverPending()
  }

  /// Applies and delivers every event the source has delivered so far: at once when
  /// called on `queue`, else by waiting for `queue` to run everything handed to it
  /// before. Do not call it from a thread `queue` waits for.
  package func flush() {
    if QueueIdentity.isCurrent(queue) {
      drain()
    } else {
      queue.sync { drain() }
    }
  }
}

/// Tells whether the current code runs on a given dispatch queue, through a token set
/// on the queue as its specific value.
enum QueueIdentity {
  /// An object whose identity stands for one queue.
  final class Token: Sendable {}

  private static let key = DispatchSpecificKey<Token>()
  private static let marking = Locked<Void>(())

  /// Gives `queue` a token, unless it has one.
  static func mark(_ queue: DispatchQueue) {
    marking.withLock { _ in
      if queue.getSpecific(key: key) == nil { queue.setSpecific(key: key, value: Token()) }
    }
  }

  /// Whether the current code runs on `queue` (marked before).
  static func isCurrent(_ queue: DispatchQueue) -> Bool {
    guard let current = DispatchQueue.getSpecific(key: key) else { return false }
    return current === queue.getSpecific(key: key)
  }
}
