public import Dispatch
import ReactiveCore
import Synchronization

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
  Observable2DArray<Metadata, Item>, QueueDrainable, @unchecked Sendable
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

  /// Takes an event of the source: applies it now when already on `queue`, else on `queue`
  /// — or sooner, when a thread on `queue` waited for the event's delivery (a write made on
  /// `queue` whose event another thread delivered): that thread applies it before going on.
  private func receive(_ received: Received) {
    inbox.withLock { $0.append(received) }
    if QueueIdentity.isCurrent(queue) {
      drain()
    } else {
      QueueIdentity.noteWaiting(self, for: queue)
      queue.async { [weak self] in self?.drain() }
    }
  }

  /// Applies and delivers everything received so far. Runs on `queue` only.
  func drain() {
    let received = inbox.withLock { inbox in
      defer { inbox = [] }
      return inbox
    }
    guard !received.isEmpty else { return }
    QueueIdentity.forget(self)
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

/// An array that applies events on a queue (``QueueBoundObservable2DArray``), as
/// ``QueueIdentity`` keeps it while it has events waiting for that queue.
protocol QueueDrainable: AnyObject, Sendable {
  /// Applies and delivers what is waiting; called on the array's queue only.
  func drain()
}

/// Tells whether the current code runs on a given dispatch queue, through a token set
/// on the queue as its specific value, and keeps the arrays with events waiting for a
/// queue, so that a thread on that queue can apply them at once.
@usableFromInline
enum QueueIdentity {
  /// An object whose identity stands for one queue.
  final class Token: Sendable {}

  private static let key = DispatchSpecificKey<Token>()
  private static let marking = Locked<Void>(())

  /// An array with events waiting for its queue, held weakly.
  private struct Waiting {
    weak var array: (any QueueDrainable)?
    let queue: DispatchQueue
  }

  private static let waiting = Locked<[Waiting]>([])
  /// How many entries `waiting` has, read without the lock on every delivery.
  private static let waitingCount = Atomic<Int>(0)

  /// Notes that `array` has events waiting for `queue`.
  static func noteWaiting(_ array: any QueueDrainable, for queue: DispatchQueue) {
    waiting.withLock { waiting in
      guard !waiting.contains(where: { $0.array === array }) else { return }
      waiting.append(Waiting(array: array, queue: queue))
      waitingCount.store(waiting.count, ordering: .releasing)
    }
  }

  /// Applies, on this thread, the events waiting for the queue it runs on, if any. Called
  /// by a thread that waited while another delivered an array's events.
  /// Forgets `array`, whose waiting events were applied.
  static func forget(_ array: any QueueDrainable) {
    guard waitingCount.load(ordering: .acquiring) > 0 else { return }
    waiting.withLock { waiting in
      waiting.removeAll { $0.array == nil || $0.array === array }
      waitingCount.store(waiting.count, ordering: .releasing)
    }
  }

  @usableFromInline
  static func drainArraysWaitingForCurrentQueue() {
    guard waitingCount.load(ordering: .acquiring) > 0 else { return }
    let due = waiting.withLock { waiting -> [any QueueDrainable] in
      var due: [any QueueDrainable] = []
      waiting.removeAll { entry in
        guard let array = entry.array else { return true }
        guard isCurrent(entry.queue) else { return false }
        due.append(array)
        return true
      }
      waitingCount.store(waiting.count, ordering: .releasing)
      return due
    }
    for array in due { array.drain() }
  }

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
