public import Observable2D
import SQLiteKit

extension StoredList {
  /// An observable 2D array that starts as the list's current state and then follows
  /// every committed change to its sections and items — by this process, by another
  /// process, or by any SQLite client — one changeset per batch of commits.
  ///
  /// **When it is up to date.** After a write through this process's repository,
  /// the array has applied it and emitted its event before the write call returns
  /// (except for a write made from inside an observer's callback, which is applied
  /// right after that callback returns). Commits by other processes and SQLite
  /// clients arrive within milliseconds, through a file watch of the database and
  /// SQLite's `PRAGMA data_version`; ``Repository/synchronizeObservers()`` applies
  /// them at once. A rolled-back transaction emits nothing.
  ///
  /// **Cost.** Each batch costs in proportion to the rows it touched: they are read
  /// by id and placed by binary search among the list's position keys; the list's
  /// size does not matter. An observer that fell behind the pruned change log, or
  /// finds the log inconsistent with its copy, reloads the list and emits the
  /// difference, still as one valid changeset.
  ///
  /// **Ending.** When the list is deleted the events complete; when a stored value
  /// cannot be decoded as `Item` (or `Metadata`) they fail with
  /// ``ListStoreError/decodingFailed(_:)``. Observation stops when the returned array
  /// is released, or when the repository is.
  ///
  /// Events are delivered on the thread of the write that caused them, or the
  /// change feed's own queue for other processes' writes; do not block in them
  /// waiting for another thread's write.
  ///
  /// ```swift
  /// let array = try cities.observe()
  /// array.observeNext { event in print(event.changeset) }.disposed(by: bag)
  /// try cities.appendItem(City(name: "Rome"), toSection: 0)  // prints the insertion
  /// ```
  /// - Returns: The array; keep a reference to it for as long as you observe.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, or a decoding or storage error.
  public func observe() throws(ListStoreError) -> Observable2DArray<Metadata, Item> {
    let feed = try repository.changeFeed()
    let listID = id
    let name = name
    do {
      let (array, seq) = try feed.withSnapshot {
        db throws -> (MutableObservable2DArray<Metadata, Item>, Int64) in
        guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
          throw ListStoreError.listNotFound(name: name)
        }
        let seq = try ChangeLog.lastSeq(db: db)
        let (sections, mirror) = try ListObserver<Metadata, Item>.load(listID: listID, db: db)
        let array = MutableObservable2DArray(sections)
        let observer = ListObserver(
          listID: listID, name: name, seq: seq, mirror: mirror, array: array)
        feed.add(observer)
        return (array, seq)
      }
      feed.noteReader(at: seq)
      return array
    } catch let error as ListStoreError {
      throw error
    } catch {
      throw .sqlite(SQLiteError(code: .error, message: "\(error)"))
    }
  }
}

extension StoredList where Metadata: Sendable, Item: Sendable {
  /// The list's changesets as an asynchronous sequence: one element per batch of
  /// commits after the call, ending when the list is deleted.
  ///
  /// ```swift
  /// for await changeset in try cities.changesets() {
  ///   print(changeset.insertedItems.map(\.value))
  /// }
  /// ```
  /// - Returns: The sequence; iterating it keeps the observation alive.
  /// - Throws: ``ListStoreError/listNotFound(name:)``.
  public func changesets() throws(ListStoreError) -> AsyncStream<Changeset<Metadata, Item>> {
    let array = try observe()
    return AsyncStream { continuation in
      let subscription = array.subscribe(
        onNext: { continuation.yield($0.changeset) },
        onError: { _ in continuation.finish() },
        onCompleted: { continuation.finish() })
      continuation.onTermination = { _ in
        // Holding the array here keeps the observation alive while iterating.
        withExtendedLifetime(array) { subscription.dispose() }
      }
    }
  }
}
