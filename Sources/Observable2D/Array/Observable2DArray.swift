import Dispatch
public import FoundationEssentials
public import ReactiveCore

/// A read-only, observable 2D array: sections of items that a table view can bind to.
///
/// Subscribers receive an ``Observable2DArrayEvent`` for every change: the ``Changeset`` and
/// the new state. ``MutableObservable2DArray`` adds the mutations.
///
/// ```swift
/// typealias SectionMetadata = (header: String, footer: String)
/// let array = MutableObservable2DArray([
///   Observable2DArraySection<SectionMetadata, String>(
///     metadata: (header: "Cities", footer: "That's it"), items: ["Paris", "Berlin"])
/// ])
/// array.observeNext { event in print(event.changeset) }.disposed(by: bag)
/// try array.appendItem("Copenhagen", toSection: 0)
/// ```
///
/// ## Threading
///
/// The array is thread-safe: its state sits behind a lock, and reads (``sections``,
/// subscripts) may happen on any thread at any time. Mutations are serialized, each one
/// atomic. Events are delivered one at a time, never concurrently, in the order of the
/// mutations that produced them, on the thread of a mutating call, or on the thread that is
/// already delivering when the mutation finishes.
///
/// **A mutating call returns after its event was delivered** to every subscriber — by the
/// calling thread, or by the thread that was delivering, which the call then waits for —
/// with one exception: a mutation made from inside an observer's callback (of any 2D array)
/// does not wait. Its event is queued and delivered right after the current callback returns,
/// by the delivering thread. No lock is held while an observer runs; do not hold a lock of your
/// own across a mutation that an observer's callback takes too. A subscription starts with the
/// state that includes every event delivered before it, and then receives every later event
/// (no gap, no duplicate).
public class Observable2DArray<Metadata, Item>: ObservableType {
  /// The section type.
  public typealias Section = Observable2DArraySection<Metadata, Item>
  /// The event type.
  public typealias Event = Observable2DArrayEvent<Metadata, Item>
  /// The element type of the observable: one event per change.
  public typealias Element = Observable2DArrayEvent<Metadata, Item>

  @usableFromInline let state: Locked<ArrayState<Metadata, Item>>
  @usableFromInline let subject = PublishSubject<Observable2DArrayEvent<Metadata, Item>>()

  /// Creates an array with `sections`; sections and items with id `0` get fresh ids.
  ///
  /// - Parameter sections: The initial sections.
  /// - Complexity: O(*n*) for *n* items.
  public init(_ sections: [Section] = []) {
    var editor = Observable2DArrayEditor<Metadata, Item>(sections: [], nextID: 1)
    editor.adopt(sections)
    state = Locked(ArrayState(sections: editor.sections, nextID: editor.nextID))
  }

  /// Creates an array holding `sections` exactly as given, ids included (a snapshot).
  @usableFromInline
  init(snapshot sections: [Section]) {
    state = Locked(ArrayState(sections: sections, nextID: 1))
  }

  /// The current sections, with their ids.
  ///
  /// This is the latest state, which may be ahead of the events delivered so far.
  ///
  /// - Complexity: O(1) (a copy-on-write snapshot).
  public var sections: [Section] {
    state.withLock { $0.sections }
  }

  /// The number of sections.
  public var numberOfSections: Int {
    state.withLock { $0.sections.count }
  }

  /// The number of items in a section.
  ///
  /// - Parameter section: A valid section index (it traps otherwise, like an array).
  /// - Returns: The number of items.
  public func numberOfItems(inSection section: Int) -> Int {
    state.withLock { state in
      precondition(
        section >= 0 && section < state.sections.count,
        "Observable2DArray: section \(section) is out of range 0..<\(state.sections.count)")
      return state.sections[section].items.count
    }
  }

  /// The item at an index path.
  ///
  /// It traps on an invalid index path, like an array subscript; use ``item(at:)`` to get an
  /// error instead.
  ///
  /// - Parameter indexPath: A valid `[section, item]` index path.
  /// - Complexity: O(log *c*) for an item list of *c* chunks.
  public subscript(indexPath: IndexPath) -> Item {
    do {
      return try item(at: indexPath)
    } catch {
      preconditionFailure("Observable2DArray: \(error)")
    }
  }

  /// The section at an index.
  ///
  /// It traps on an invalid index, like an array subscript; use ``section(at:)`` to get an
  /// error instead.
  ///
  /// - Parameter section: A valid section index.
  public subscript(section: Int) -> Section {
    do {
      return try self.section(at: section)
    } catch {
      preconditionFailure("Observable2DArray: \(error)")
    }
  }

  /// The item at an index path.
  ///
  /// - Parameter indexPath: A `[section, item]` index path.
  /// - Returns: The item.
  /// - Throws: ``Observable2DArrayError`` when the index path is malformed or out of range.
  /// - Complexity: O(log *c*) for an item list of *c* chunks.
  public func item(at indexPath: IndexPath) throws(Observable2DArrayError) -> Item {
    let sections = self.sections
    let (section, row) = try Observable2DArrayEditor.check(indexPath, in: sections)
    return sections[section].items[row]
  }

  /// The section at an index.
  ///
  /// - Parameter index: A section index.
  /// - Returns: The section.
  /// - Throws: ``Observable2DArrayError/sectionOutOfRange(section:validRange:)``.
  public func section(at index: Int) throws(Observable2DArrayError) -> Section {
    let sections = self.sections
    guard index >= 0 && index < sections.count else {
      throw .sectionOutOfRange(section: index, validRange: 0..<sections.count)
    }
    return sections[index]
  }

  // MARK: Observing

  /// Subscribes to the events of the changes made from now on.
  ///
  /// - Parameter observer: The observer.
  /// - Returns: The subscription; disposing it stops delivery.
  public func subscribe(_ observer: Observer<Event>) -> any Disposable {
    subscribe(initial: nil, observer: observer)
  }

  /// Returns the events as an ``Observable``.
  ///
  /// - Returns: An observable of the events of the changes made after subscribing.
  public func asObservable() -> Observable<Event> {
    Observable { observer in self.subscribe(observer) }
  }

  /// The events of the changes, as an observable.
  public var events: Observable<Event> { asObservable() }

  /// Whether any subscription (or binding) receives the events.
  @inlinable
  package var hasSubscribers: Bool {
    subject.hasObservers || hasQueuedSubscription
  }

  /// Whether a subscription waits to be started by the next delivery.
  @usableFromInline
  var hasQueuedSubscription: Bool {
    state.withLock { $0.pending.contains { if case .subscribe = $0 { true } else { false } } }
  }

  /// Subscribes with the current state first, then every later event, with neither gap nor
  /// duplicate: `initial` receives the state that includes every event delivered before the
  /// subscription, and `onNext` every event after it.
  ///
  /// Both closures are called on the delivering thread (see the type's threading notes), the
  /// initial one before any event; when no other thread is delivering, `initial` runs before
  /// this method returns.
  ///
  /// - Parameters:
  ///   - initial: Receives the starting state.
  ///   - onNext: Receives every later event.
  /// - Returns: The subscription; disposing it stops delivery.
  public func subscribe(
    initial: @escaping ([Section]) -> Void, onNext: @escaping (Event) -> Void
  ) -> any Disposable {
    subscribe(initial: initial, observer: Observer { if let event = $0.element { onNext(event) } })
  }

  func subscribe(initial: (([Section]) -> Void)?, observer: Observer<Event>)
    -> any Disposable
  {
    subscribe(
      initialWithVersion: initial.map { initial in { sections, _ in initial(sections) } },
      observer: observer)
  }

  /// ``subscribe(initial:onNext:)`` whose `initial` also receives the state's version (see
  /// ``Observable2DArrayEvent/version``): a stored list's position in the change log.
  package func subscribe(
    initialWithVersion initial: @escaping ([Section], Int64) -> Void,
    onNext: @escaping (Event) -> Void
  ) -> any Disposable {
    subscribe(
      initialWithVersion: initial,
      observer: Observer { if let event = $0.element { onNext(event) } })
  }

  @usableFromInline
  func subscribe(
    initialWithVersion initial: (([Section], Int64) -> Void)?, observer: Observer<Event>
  )
    -> any Disposable
  {
    let subscription = PendingSubscription()
    let request = SubscribeRequest(initial: initial, observer: observer, subscription: subscription)
    state.withLock { state in
      state.enqueue(.subscribe(request, snapshot: state.sections, version: state.version))
    }
    deliverPending()
    return subscription
  }

  /// Calls `body` with the state that includes every event delivered before this call, and
  /// none delivered after, on the delivering thread, in order with the events: before this
  /// method returns when no other thread delivers, or else (and when called from inside a
  /// delivery) by the delivering thread, after what is queued already.
  ///
  /// A derived array reads its source this way when its rule changes, so that the state it
  /// re-derives from is the one its next event starts from.
  /// - Parameter body: Receives the state and its version.
  @usableFromInline
  package func read(inOrder body: @escaping ([Section], Int64) -> Void) {
    state.withLock { state in
      state.enqueue(.read(body, snapshot: state.sections, version: state.version))
    }
    deliverPending()
  }

  // MARK: Delivery

  /// Queues the event of a change; call with the lock held, then `deliverPending()` after.
  @inlinable
  static func enqueue(
    _ changeset: Changeset<Metadata, Item>, in state: inout ArrayState<Metadata, Item>,
    silent: Bool = false
  ) {
    guard !changeset.isEmpty else { return }
    state.enqueue(
      .event(
        Event(
          changeset: changeset, sections: state.sections, version: state.version,
          previousVersion: state.previousVersion, isSilent: silent)))
  }

  /// Delivers the queued events and subscriptions in order. When another thread is already
  /// delivering, waits until it delivered everything queued before this call — unless this
  /// thread is itself inside a delivery (an observer's callback), which never waits.
  ///
  /// Inlinable, so that the delivery of a store's events runs compiled for the caller's
  /// `Metadata` and `Item`.
  @inlinable
  package final func deliverPending() {
    let (owner, target) = state.withLock { state -> (Bool, Int) in
      if state.delivering { return (false, state.queued) }
      state.delivering = true
      return (true, state.queued)
    }
    guard owner else {
      waitForDelivery(of: target)
      return
    }
    let depth = DeliveryContext.enter()
    while true {
      let batch = state.withLock { state -> [PendingOperation<Metadata, Item>] in
        let batch = state.takePending()
        if batch.isEmpty {
          state.delivering = false
          state.wakeWaiters()
        }
        return batch
      }
      if batch.isEmpty { break }
      for operation in batch {
        switch operation {
        case .event(let event):
          subject.onNext(event)
        case .finish(let error?):
          subject.onError(error)
        case .finish(nil):
          subject.onCompleted()
        case .subscribe(let request, let snapshot, let version):
          start(request, from: snapshot, version: version)
        case .read(let body, let snapshot, let version):
          body(snapshot, version)
        }
      }
      state.withLock { state in
        state.delivered += batch.count
        state.wakeWaiters()
      }
    }
    DeliveryContext.leave(depth)
    // Likewise when another thread delivered this thread's events before it got here.
    QueueIdentity.drainArraysWaitingForCurrentQueue()
  }

  /// Starts a subscription queued with the state it starts from.
  @usableFromInline
  final func start(
    _ request: SubscribeRequest<Metadata, Item>, from snapshot: [Section], version: Int64
  ) {
    guard !request.subscription.isDisposed else { return }
    request.initial?(snapshot, version)
    request.subscription.attach(subject.subscribe(request.observer))
  }

  /// Waits until another thread delivered the first `target` operations, unless this thread
  /// is itself inside a delivery.
  @usableFromInline
  final func waitForDelivery(of target: Int) {
    guard !DeliveryContext.isDelivering else { return }
    let semaphore = state.withLock { state -> DispatchSemaphore? in
      guard state.delivering, state.delivered < target else { return nil }
      let semaphore = DispatchSemaphore(value: 0)
      state.waiters.append((target, semaphore))
      return semaphore
    }
    semaphore?.wait()
    // Another thread delivered; what it handed to arrays that follow this one on the
    // current queue is applied here, before this thread's write returns.
    QueueIdentity.drainArraysWaitingForCurrentQueue()
  }
}

// Every stored property is either immutable, behind the `state` mutex, or a thread-safe
// subject, so instances may be shared across threads when their elements may.
extension Observable2DArray: @unchecked Sendable where Metadata: Sendable, Item: Sendable {}

/// The lock-protected state of an observable 2D array.
///
/// `@unchecked Sendable` because it is only read or written inside its mutex; the values that
/// leave the lock are copy-on-write snapshots.
@usableFromInline
struct ArrayState<Metadata, Item>: @unchecked Sendable {
  @usableFromInline var sections: [Observable2DArraySection<Metadata, Item>]
  /// The next fresh id for a section or item.
  @usableFromInline var nextID: Int64
  /// The position of `sections` in the source's order of commits (see
  /// ``Observable2DArrayEvent/version``).
  @usableFromInline var version: Int64 = 0
  /// The version before the last ``version`` set: where the state before the next change
  /// stood (``Observable2DArrayEvent/previousVersion``).
  @usableFromInline var previousVersion: Int64 = 0
  /// Events and subscriptions waiting to be delivered, in order.
  @usableFromInline private(set) var pending: [PendingOperation<Metadata, Item>] = []
  /// Whether some call is delivering `pending`.
  @usableFromInline var delivering = false
  /// How many operations were ever queued, and how many of them were delivered.
  @usableFromInline private(set) var queued = 0
  @usableFromInline var delivered = 0
  /// Threads waiting until `delivered` reaches their target.
  @usableFromInline var waiters: [(target: Int, semaphore: DispatchSemaphore)] = []

  @usableFromInline
  init(sections: [Observable2DArraySection<Metadata, Item>], nextID: Int64) {
    self.sections = sections
    self.nextID = nextID
  }

  /// Queues an operation for delivery.
  @inlinable
  mutating func enqueue(_ operation: PendingOperation<Metadata, Item>) {
    pending.append(operation)
    queued += 1
  }

  /// Takes every queued operation, to deliver them.
  @inlinable
  mutating func takePending() -> [PendingOperation<Metadata, Item>] {
    guard !pending.isEmpty else { return [] }
    defer { pending = [] }
    return pending
  }

  /// Signals the waiters whose operations were delivered (all of them once nobody delivers).
  @inlinable
  mutating func wakeWaiters() {
    guard !waiters.isEmpty else { return }
    wakeWaitersNow()
  }

  @usableFromInline
  mutating func wakeWaitersNow() {
    waiters.removeAll { waiter in
      guard waiter.target <= delivered || !delivering else { return false }
      waiter.semaphore.signal()
      return true
    }
  }
}

/// Something waiting to be delivered to the array's observers.
@usableFromInline
enum PendingOperation<Metadata, Item> {
  case event(Observable2DArrayEvent<Metadata, Item>)
  /// The end of the events: completion, or failure with an error.
  case finish((any Error)?)
  /// A subscription to start, with the state it starts from.
  case subscribe(
    SubscribeRequest<Metadata, Item>, snapshot: [Observable2DArraySection<Metadata, Item>],
    version: Int64)
  /// A reader of the state at this point of the events (``Observable2DArray/read(inOrder:)``).
  case read(
    ([Observable2DArraySection<Metadata, Item>], Int64) -> Void,
    snapshot: [Observable2DArraySection<Metadata, Item>], version: Int64)
}

@usableFromInline
struct SubscribeRequest<Metadata, Item> {
  let initial: (([Observable2DArraySection<Metadata, Item>], Int64) -> Void)?
  let observer: Observer<Observable2DArrayEvent<Metadata, Item>>
  let subscription: PendingSubscription
}

/// The disposable of a subscription that may start later, when its turn comes.
final class PendingSubscription: Disposable {
  private struct Slot {
    var disposed = false
    var inner: (any Disposable)?
  }

  private let slot = Locked(Slot())

  /// Hands over the started subscription, or disposes it when this one was disposed already.
  func attach(_ inner: any Disposable) {
    let disposed = slot.withLock { slot -> Bool in
      if !slot.disposed { slot.inner = inner }
      return slot.disposed
    }
    if disposed { inner.dispose() }
  }

  func dispose() {
    let inner = slot.withLock { slot -> (any Disposable)? in
      slot.disposed = true
      defer { slot.inner = nil }
      return slot.inner
    }
    inner?.dispose()
  }

  var isDisposed: Bool {
    slot.withLock { $0.disposed }
  }
}
