public import Observable2D
import SQLiteKit

extension StoredList {
  /// An observable 2D array that starts as the list's current state and then follows
  /// every committed change to its sections and items — by this process, by another
  /// process, or by any SQLite client — one changeset per batch of commits.
  ///
  /// **When it is up to date.** A write through this repository returns only after
  /// every observer of the lists it changed has applied it and delivered its event to
  /// every subscriber — except a write made from inside an observer's callback, whose
  /// event is delivered right after that callback returns. When several threads write,
  /// each write's event is delivered before that write returns, and events are
  /// delivered one at a time, in commit order. Commits by other processes and SQLite
  /// clients arrive within milliseconds, through a file watch of the database;
  /// ``Repository/synchronizeObservers()`` applies them at once. A rolled-back
  /// transaction emits nothing.
  ///
  /// **Where events run.** On the thread of the write that caused them, or on the
  /// thread that was already delivering to the array when the write committed (the
  /// write waits for it); other processes' commits are delivered on the change feed's
  /// own queue. Do not block in a callback waiting for another thread's write. So a
  /// callback must not assume an actor: Swift 6 traps a closure written in main-actor
  /// code (a view, top-level code) when another thread calls it. For such code,
  /// ``observe(on:undecodable:)`` delivers on a queue of your choice, such as `.main`.
  ///
  /// **Cost.** Each batch costs in proportion to the rows it touched: they are read
  /// by id and placed by binary search among the list's position keys; the list's
  /// size does not matter. An observer that fell behind the pruned change log, or
  /// finds the log inconsistent with its copy, reloads the list and emits the
  /// difference, still as one valid changeset.
  ///
  /// **Ending.** When the list is deleted the events complete. A stored row that does
  /// not decode as `Item` (or `Metadata`) is handled by `undecodable`: by default the
  /// events fail with ``ListStoreError/undecodable(_:)``, which names the row and says
  /// why. A failure that cannot pass by itself (the schema removed, say) fails the
  /// events with that error; a passing one (the database busy, a read error) is retried
  /// with a growing delay, and nothing is lost. Observation stops when the returned
  /// array is released, or when the repository is.
  ///
  /// ```swift
  /// let array = try cities.observe()
  /// array.observeNext { event in print(event.changeset) }.disposed(by: bag)
  /// try cities.appendItem(City(name: "Rome"), toSection: 0)  // prints the insertion
  /// ```
  /// - Parameter undecodable: What to do with a row that does not decode.
  /// - Returns: The array; keep a reference to it for as long as you observe.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, ``ListStoreError/undecodable(_:)``
  ///   (with the default policy), or a storage error.
  @inlinable
  public func observe(undecodable: UndecodableRowPolicy<Metadata, Item> = .fail)
    throws(ListStoreError) -> Observable2DArray<Metadata, Item>
  {
    // Inlinable, so that the observer is made, and runs, compiled for the caller's types.
    try repository.register(observer(undecodable: undecodable))
  }
}

extension StoredList {
  /// Makes this list's observer and its array from the state `db` reads, for
  /// ``ChangeFeed/register(_:)``.
  ///
  /// Inlinable: the observer's ``StoredListObserver/feedObserver()`` is made here, in the caller's
  /// code, where `Metadata` and `Item` are concrete.
  @inlinable
  func observer(undecodable: UndecodableRowPolicy<Metadata, Item>) -> (any DatabaseConnection)
    throws -> (
      observer: FeedObserver, seq: Int64, result: Observable2DArray<Metadata, Item>
    )
  {
    let listID = id
    let name = name
    return { db in
      let (seq, sections, mirror) = try StoredListObserver<Metadata, Item>.start(
        listID: listID, name: name, db: db, policy: undecodable)
      let array = MutableObservable2DArray(sections)
      array.setVersion(seq)
      let observer = StoredListObserver(
        listID: listID, name: name, seq: seq, mirror: mirror, array: array, policy: undecodable)
      return (observer.feedObserver(), seq, array)
    }
  }
}

extension Repository {
  /// Registers the observer `make` makes with the change feed; the caller's errors in
  /// users' words.
  @usableFromInline
  func register<Result>(
    _ make: (any DatabaseConnection) throws -> (
      observer: FeedObserver, seq: Int64, result: Result
    )
  ) throws(ListStoreError) -> Result {
    do {
      let inBatch = isInBatchOnThisThread
      return try changeFeed().register(inBatch: inBatch, make)
    } catch {
      throw ListStoreError(reading: error, path: path, busyTimeout: busyTimeout)
    }
  }
}

extension StoredListObserver {
  /// The position in the log and the state an observer of list `listID` starts from, read
  /// through `db` in one transaction.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, or what reading throws.
  @usableFromInline
  static func start(
    listID: Int64, name: String, db: any DatabaseConnection,
    policy: UndecodableRowPolicy<Metadata, Item>
  ) throws -> (seq: Int64, sections: [Section], mirror: PositionMirror) {
    guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
      throw ListStoreError.listNotFound(name: name)
    }
    let seq = try ChangeLog.lastSeq(db: db)
    let (sections, mirror) = try load(listID: listID, db: db, policy: policy)
    return (seq, sections, mirror)
  }
}

extension StoredList where Metadata: Sendable, Item: Sendable {
  /// The list's changesets as an asynchronous sequence: one element per batch of
  /// commits after the call. It ends when the list is deleted, and throws when the
  /// observation fails (see ``observe(undecodable:)``), for example with
  /// ``ListStoreError/undecodable(_:)`` for a row another client wrote in a shape
  /// `Item` does not decode.
  ///
  /// A loop slower than the writers never makes memory grow without bound, nor misses a
  /// change: past `bufferingLimit` waiting changesets (or 65,536 changed rows) it
  /// receives what waits coalesced into one changeset with the same effect (see
  /// `Observable2DArray.changesets(bufferingLimit:entryLimit:)`).
  ///
  /// ```swift
  /// for try await changeset in try cities.changesets() {
  ///   print(changeset.insertedItems.map(\.value))
  /// }
  /// ```
  /// - Parameters:
  ///   - undecodable: What to do with a row that does not decode.
  ///   - bufferingLimit: How many changesets may wait before they are coalesced.
  /// - Returns: The sequence; iterating it keeps the observation alive.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, or what ``observe(undecodable:)``
  ///   throws.
  public func changesets(
    undecodable: UndecodableRowPolicy<Metadata, Item> = .fail, bufferingLimit: Int = 64
  ) throws(ListStoreError) -> AsyncThrowingStream<Changeset<Metadata, Item>, any Error> {
    try observe(undecodable: undecodable).changesets(bufferingLimit: bufferingLimit)
  }
}
