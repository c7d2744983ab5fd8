import Synchronization

/// A box that lets a value whose type is not `Sendable` live inside a `Mutex` or cross into a
/// `@Sendable` closure.
///
/// Every use names the invariant that makes it safe: the value is only touched while a lock is
/// held, or it is handed from one owner to the next without being shared.
@usableFromInline
struct UncheckedSendable<Value>: @unchecked Sendable {
  @usableFromInline var value: Value

  @inlinable
  init(_ value: Value) {
    self.value = value
  }
}

/// The lock-protected part of a `Gate`.
///
/// `@unchecked Sendable` because `pending`, `spare` and `shared` are only read or written while
/// the gate's mutex is held; queued operations leave the queue only to be run by the single
/// owner of the gate.
@usableFromInline
struct GateQueue<Op, Shared>: @unchecked Sendable {
  @usableFromInline var pending: [Op] = []
  // An emptied batch kept for reuse, so that queueing allocates only while the queue grows.
  @usableFromInline var spare: [Op] = []
  @usableFromInline var shared: Shared

  @inlinable
  init(shared: Shared) {
    self.shared = shared
  }
}

/// A non-blocking serializer: runs operations one at a time, in the order they were queued,
/// without ever holding a lock while an operation runs.
///
/// The caller that finds the gate idle becomes its *owner* and runs its operation on its own
/// thread, then drains whatever other callers queued meanwhile. A caller that finds the gate
/// owned (by another thread, or by itself when an operation re-enters the gate) queues its
/// operation and returns at once; the owner runs it after the current one. Hence:
///
/// * operations never overlap, and each one happens-before the next (ownership passes through
///   acquire/release operations on `ownership`), so state touched only inside operations needs
///   no further synchronization, as on a serial queue;
/// * re-entrant calls never recurse and never deadlock: they are deferred, breadth first;
/// * the uncontended `perform(_:execute:)` costs two compare-and-swaps and no allocation; the
///   mutex is taken only to queue and to drain.
@usableFromInline
struct Gate<Op, Shared>: ~Copyable {
  @usableFromInline static var idle: Int { 0 }
  @usableFromInline static var running: Int { 1 }
  @usableFromInline static var runningWithQueue: Int { 2 }

  @usableFromInline let ownership = Atomic(0)
  @usableFromInline let queue: Locked<GateQueue<Op, Shared>>

  @inlinable
  init(shared: Shared) {
    queue = Locked(GateQueue(shared: shared))
  }

  /// Runs `op` now on this thread if the gate is idle, or queues it for the current owner.
  ///
  /// Operations performed this way are not ordered against operations admitted concurrently
  /// by `perform(_:admit:execute:)` on other threads; those of one thread stay in order.
  ///
  /// - Parameters:
  ///   - op: The operation.
  ///   - execute: Runs one operation; called without any lock held.
  @inlinable
  func perform(_ op: Op, execute: (Op) -> Void) {
    perform({ execute(op) }, orQueue: op, execute: execute)
  }

  /// Runs `body` now on this thread if the gate is idle, or queues `op` (which must do the
  /// same as `body`) for the current owner.
  ///
  /// The hot paths use it to skip building and switching over an operation when they run it
  /// at once.
  ///
  /// - Parameters:
  ///   - body: The operation, run at once.
  ///   - op: The operation, queued.
  ///   - execute: Runs one queued operation; called without any lock held.
  @inlinable
  func perform(_ body: () -> Void, orQueue op: @autoclosure () -> Op, execute: (Op) -> Void) {
    let claim = ownership.compareExchange(
      expected: Self.idle, desired: Self.running, ordering: .acquiring)
    guard claim.exchanged else {
      let op = op()
      queue.withLock { $0.pending.append(op) }
      signal(execute)
      return
    }
    body()
    let release = ownership.compareExchange(
      expected: Self.running, desired: Self.idle, ordering: .releasing)
    if !release.exchanged { drain(execute) }
  }

  /// Queues `op` if `admit` accepts it, in one critical section with `admit`, then runs the
  /// queue if the gate is idle; operations run in the order they were admitted.
  ///
  /// - Parameters:
  ///   - op: The operation.
  ///   - admit: Runs under the lock; it may update the shared state and returns `false` to
  ///     drop `op`.
  ///   - execute: Runs one operation; called without any lock held.
  @inlinable
  func perform(_ op: Op, admit: (inout Shared) -> Bool, execute: (Op) -> Void) {
    let admitted = queue.withLock { queue -> Bool in
      guard admit(&queue.shared) else { return false }
      queue.pending.append(op)
      return true
    }
    if admitted { signal(execute) }
  }

  /// Tells the gate that an operation was queued: becomes the owner and drains the queue if
  /// the gate is idle, or flags the queue for the current owner.
  @inlinable
  func signal(_ execute: (Op) -> Void) {
    var current = ownership.load(ordering: .relaxed)
    while current != Self.runningWithQueue {
      let desired = current == Self.idle ? Self.running : Self.runningWithQueue
      let result = ownership.compareExchange(
        expected: current, desired: desired, ordering: .acquiringAndReleasing)
      if result.exchanged {
        if current == Self.idle { drain(execute) }
        return
      }
      current = result.original
    }
  }

  /// Runs queued operations until the queue stays empty, then gives up ownership.
  ///
  /// Only the owner calls it.
  @inlinable
  func drain(_ execute: (Op) -> Void) {
    while true {
      // Clear the flag before taking the queue: whatever is queued after this point sets it
      // again, and the release below then fails.
      // The exchange reads any flag set by a queuer, so its queued operation is visible below.
      _ = ownership.exchange(Self.running, ordering: .acquiringAndReleasing)
      var batch = queue.withLock { queue -> UncheckedSendable<[Op]> in
        var batch = queue.spare
        queue.spare = []
        swap(&batch, &queue.pending)
        return UncheckedSendable(batch)
      }
      for op in batch.value { execute(op) }
      if !batch.value.isEmpty {
        batch.value.removeAll(keepingCapacity: true)
        queue.withLock { $0.spare = batch.value }
      }
      let release = ownership.compareExchange(
        expected: Self.running, desired: Self.idle, ordering: .releasing)
      if release.exchanged { return }
    }
  }

  /// Reads or updates the shared state under the lock.
  ///
  /// - Parameter body: The closure that receives the shared state.
  /// - Returns: What `body` returns.
  @inlinable
  func withShared<Result>(_ body: (inout Shared) -> Result) -> Result {
    queue.withLock { queue in
      UncheckedSendable(body(&queue.shared))
    }.value
  }
}

/// Mutable state of one subscription of an operator (an accumulator, a counter).
///
/// It has no lock and no dynamic exclusivity check: by the Rx contract the upstream delivers
/// one event at a time, so only one event handler touches the state at any moment, and the
/// handlers never hold an access across a call that could re-enter them.
@usableFromInline
final class OperatorState<Value> {
  @usableFromInline @exclusivity(unchecked) var value: Value

  @inlinable
  init(_ value: Value) {
    self.value = value
  }
}
