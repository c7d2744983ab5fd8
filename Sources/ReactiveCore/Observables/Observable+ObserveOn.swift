import Dispatch
import Synchronization

extension ObservableType where Element: Sendable {
  /// Delivers every event on `queue`, in order and one at a time, even if `queue` is
  /// concurrent.
  ///
  /// Events are buffered and handed to `queue` in batches, one block in flight at a time.
  /// Disposing stops delivery of the events still buffered.
  ///
  /// - Parameter queue: The queue on which downstream observers run.
  /// - Returns: An observable that delivers on `queue`.
  public func observe(on queue: DispatchQueue) -> Observable<Element> {
    let source = asObservable()
    return Observable(trusted: { observer in
      let sink = ObserveOnSink(observer, queue: queue)
      sink.upstream.replace(with: source.subscribe(Observer(sink.enqueue)))
      return sink
    })
  }
}

/// The buffer between a source and a queue for `observe(on:)`.
///
/// `@unchecked Sendable` because `downstream` is only touched by `drain()`, and at most one
/// `drain()` runs at a time (`isScheduled`, under the mutex, admits one block in flight); the
/// rest is immutable, atomic or under the mutex.
final class ObserveOnSink<Element: Sendable>: Disposable, @unchecked Sendable {
  private enum Item {
    case event(Event<Element>)
    case release
  }

  private struct Buffer {
    var items: [Item] = []
    var isScheduled = false
  }

  private let queue: DispatchQueue
  private let buffer = Locked(Buffer())
  private var downstream: Observer<Element>?
  private let isStopped = AtomicFlag()
  /// The subscription to the source.
  let upstream = SerialDisposable()

  init(_ downstream: Observer<Element>, queue: DispatchQueue) {
    self.downstream = downstream
    self.queue = queue
  }

  func enqueue(_ event: Event<Element>) {
    append(.event(event))
  }

  private func append(_ item: Item) {
    let schedules = buffer.withLock { buffer -> Bool in
      buffer.items.append(item)
      guard !buffer.isScheduled else { return false }
      buffer.isScheduled = true
      return true
    }
    if schedules { queue.async { self.drain() } }
  }

  private func drain() {
    while true {
      let items = buffer.withLock { buffer -> [Item] in
        if buffer.items.isEmpty { buffer.isScheduled = false }
        defer { buffer.items = [] }
        return buffer.items
      }
      if items.isEmpty { return }
      for item in items { deliver(item) }
    }
  }

  private func deliver(_ item: Item) {
    switch item {
    case .event(let event):
      guard !isStopped.isSet, let downstream else { return }
      if event.isTerminal {
        _ = isStopped.set()
        self.downstream = nil
        downstream.on(event)
        upstream.dispose()
      } else {
        downstream.on(event)
      }
    case .release:
      downstream = nil
    }
  }

  func dispose() {
    guard isStopped.set() else { return }
    upstream.dispose()
    append(.release)
  }

  var isDisposed: Bool {
    isStopped.isSet
  }
}
