import Synchronization

/// The last `capacity` elements of a subject, oldest first.
@usableFromInline
struct ReplayBuffer<Element> {
  @usableFromInline let capacity: Int
  @usableFromInline var storage: [Element] = []
  // Index of the oldest element once `storage` is full.
  @usableFromInline var head = 0

  @inlinable
  init(capacity: Int) {
    self.capacity = capacity
  }

  @inlinable
  mutating func append(_ element: Element) {
    if storage.count < capacity {
      storage.append(element)
    } else if capacity > 0 {
      storage[head] = element
      head = (head + 1) % capacity
    }
  }

  @inlinable
  var elements: [Element] {
    Array(storage[head...] + storage[..<head])
  }
}

/// One observer registered with a subject.
///
/// Only the subject's list refers to it, so removing it from the list releases the observer
/// (and the operator chain behind it) even while the subscriber still holds its disposable.
@usableFromInline
final class SubjectObserver<Element> {
  @usableFromInline let observer: Observer<Element>
  // Shared with the subscriber's `SubjectSubscription`; set when it is disposed.
  @usableFromInline let disposed: AtomicFlag

  @inlinable
  init(_ observer: Observer<Element>, disposed: AtomicFlag) {
    self.observer = observer
    self.disposed = disposed
  }

  /// Delivers `element` unless the subscription was disposed.
  @inlinable
  func deliver(_ element: Element) {
    guard !disposed.isSet else { return }
    observer.next(element)
  }

  /// Delivers the end of the sequence unless the subscription was disposed, and marks it
  /// disposed.
  @inlinable
  func deliverEnd(_ error: (any Error)?) {
    guard disposed.set() else { return }
    observer.end(error)
  }
}

/// The engine shared by every subject and property: a list of observers, an optional replay
/// buffer, and the terminal event, all driven through a ``Gate``.
///
/// `@unchecked Sendable` because of its owner-only state: `observers`, `replay` and
/// `terminalEvent` are read and written only inside `execute(_:)`, which the gate runs on one
/// thread at a time, each run ordered after the previous one by the gate. The rest is immutable
/// or inside the gate's mutex. For the same reason the owner-only fields skip the dynamic
/// exclusivity check, which would otherwise dominate the cost of an event.
@usableFromInline
final class SubjectCore<Element>: @unchecked Sendable {
  @usableFromInline
  enum Op {
    case event(Event<Element>)
    case subscribe(SubjectObserver<Element>)
    case unsubscribe(AtomicFlag)
  }

  /// State read by senders and by `value` getters, under the gate's mutex.
  @usableFromInline
  struct Shared {
    // Set when a terminal event is admitted; later events are dropped before being queued.
    @usableFromInline var isStopped = false
    // The most recently admitted element, for subjects that expose a current value.
    @usableFromInline var latest: Element?

    @inlinable
    init(latest: Element?) {
      self.latest = latest
    }
  }

  @usableFromInline let gate: Gate<Op, Shared>
  // Whether events are admitted under the lock, so that `latest` follows the delivery order.
  @usableFromInline let keepsLatest: Bool
  @usableFromInline let acceptsTerminalEvents: Bool
  @usableFromInline @exclusivity(unchecked) var observers: ContiguousArray<SubjectObserver<Element>>
  {
    didSet { rebuildDeliveryList() }
  }
  // Unretained mirror of `observers`, the list events are delivered from: reading it costs no
  // reference counting, while `observers` keeps its nodes alive. Rebuilt by the owner whenever
  // `observers` changes, never while a delivery walks it (changes requested from inside an
  // observer are queued by the gate).
  @usableFromInline @exclusivity(unchecked) var deliveryList:
    UnsafeMutableBufferPointer<Unmanaged<SubjectObserver<Element>>>
  @usableFromInline @exclusivity(unchecked) var replay: ReplayBuffer<Element>
  @usableFromInline @exclusivity(unchecked) var terminalEvent: Event<Element>?

  /// - Parameters:
  ///   - replayCount: How many of the latest elements a new subscriber receives first.
  ///   - initial: The initial element; when given, the core also tracks the latest element.
  ///   - acceptsTerminalEvents: `false` for properties, which never end.
  @usableFromInline
  init(replayCount: Int, initial: Element? = nil, acceptsTerminalEvents: Bool = true) {
    precondition(replayCount >= 0, "A replay buffer size cannot be negative")
    gate = Gate(shared: Shared(latest: initial))
    keepsLatest = initial != nil
    self.acceptsTerminalEvents = acceptsTerminalEvents
    observers = []
    deliveryList = UnsafeMutableBufferPointer(start: nil, count: 0)
    replay = ReplayBuffer(capacity: replayCount)
    if let initial { replay.append(initial) }
  }

  deinit {
    deliveryList.deallocate()
  }

  /// How many observers are registered, readable from any thread.
  @usableFromInline let observerCount = Atomic<Int>(0)

  @usableFromInline
  func rebuildDeliveryList() {
    observerCount.store(observers.count, ordering: .relaxed)
    deliveryList.deallocate()
    deliveryList = .allocate(capacity: observers.count)
    _ = deliveryList.initialize(from: observers.lazy.map { Unmanaged.passUnretained($0) })
  }

  @inlinable
  func on(_ event: Event<Element>) {
    if keepsLatest || !acceptsTerminalEvents {
      gate.perform(
        .event(event),
        admit: { shared in
          guard !shared.isStopped else { return false }
          switch event {
          case .next(let element):
            shared.latest = element
          case .failed, .completed:
            guard acceptsTerminalEvents else { return false }
            shared.isStopped = true
          }
          return true
        },
        execute: { self.execute($0) })
    } else if case .next(let element) = event {
      gate.perform(
        { self.deliver(element) }, orQueue: .event(event), execute: { self.execute($0) })
    } else {
      gate.perform(.event(event)) { self.execute($0) }
    }
  }

  /// Delivers an element to every observer; only ever called by the gate's owner.
  @inlinable
  func deliver(_ element: Element) {
    guard terminalEvent == nil else { return }
    if replay.capacity > 0 { replay.append(element) }
    for observer in deliveryList {
      observer._withUnsafeGuaranteedRef { $0.deliver(element) }
    }
  }

  @inlinable
  func subscribe(_ observer: Observer<Element>) -> any Disposable {
    let disposed = AtomicFlag()
    gate.perform(.subscribe(SubjectObserver(observer, disposed: disposed))) {
      self.execute($0)
    }
    return SubjectSubscription(core: self, disposed: disposed)
  }

  @usableFromInline
  func unsubscribe(_ disposed: AtomicFlag) {
    gate.perform(.unsubscribe(disposed)) { self.execute($0) }
  }

  @usableFromInline
  var latest: Element? {
    gate.withShared { $0.latest }
  }

  /// Runs one operation; only ever called by the gate's owner.
  @inlinable
  func execute(_ op: Op) {
    switch op {
    case .event(let event):
      if case .next(let element) = event {
        deliver(element)
      } else if terminalEvent == nil {
        terminalEvent = event
        let ended = observers
        observers = []
        for observer in ended { observer.deliverEnd(event.error) }
      }
    case .subscribe(let observer):
      if replay.capacity > 0 {
        for element in replay.elements { observer.deliver(element) }
      }
      if let terminalEvent {
        observer.deliverEnd(terminalEvent.error)
      } else if !observer.disposed.isSet {
        observers.append(observer)
      }
    case .unsubscribe(let disposed):
      if let index = observers.firstIndex(where: { $0.disposed === disposed }) {
        observers.remove(at: index)
      }
    }
  }
}

/// The disposable a subject hands to a subscriber.
///
/// It refers to the subject weakly and to its observer not at all, so holding it keeps
/// neither alive.
@usableFromInline
final class SubjectSubscription<Element>: Disposable {
  @usableFromInline weak let core: SubjectCore<Element>?
  @usableFromInline let disposed: AtomicFlag

  @inlinable
  init(core: SubjectCore<Element>, disposed: AtomicFlag) {
    self.core = core
    self.disposed = disposed
  }

  @usableFromInline
  func dispose() {
    guard disposed.set() else { return }
    core?.unsubscribe(disposed)
  }

  @usableFromInline
  var isDisposed: Bool {
    disposed.isSet
  }
}
