public import Dispatch
public import Observable2D

extension StoredList where Metadata: Sendable, Item: Sendable {
  /// An observable 2D array of the list, like ``observe(undecodable:)``'s, whose state
  /// and events change on `queue`: for UI code, `.main`, the main actor's queue.
  ///
  /// By default (``observe(undecodable:)``) events are delivered synchronously, on the
  /// thread of the write that caused them, before that write returns. The array returned
  /// here applies each of those events on `queue` instead, in commit order, and delivers
  /// it to its subscribers there, so code on `queue` always reads a state that matches the
  /// events it has seen. A write made on `queue` itself — on the main actor, with `.main` —
  /// is applied and delivered before it returns, as by default; other events reach
  /// `queue` asynchronously, a moment after their commit.
  ///
  /// ```swift
  /// let array = try cities.observe(on: .main)
  /// array.observeNext { event in
  ///   MainActor.assumeIsolated { tableView.apply(event.changeset) }
  /// }.disposed(by: bag)
  /// ```
  ///
  /// In tests, ``Repository/synchronizeObservers()`` hands every commit to the array;
  /// code on `queue` sees it once `queue` ran what was handed to it before (ListStoreTesting's
  /// `settle` does both).
  /// - Parameters:
  ///   - queue: A serial queue, such as `.main`.
  ///   - undecodable: What to do with a row that does not decode.
  /// - Returns: The array; keep a reference to it for as long as you observe.
  /// - Throws: What ``observe(undecodable:)`` throws.
  public func observe(
    on queue: DispatchQueue, undecodable: UndecodableRowPolicy<Metadata, Item> = .fail
  ) throws(ListStoreError) -> Observable2DArray<Metadata, Item> {
    try observe(undecodable: undecodable).delivered(on: queue)
  }
}
