import FoundationEssentials
import ReactiveCore
import SQLiteKit
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// MARK: - Batches

extension Repository {
  /// Runs several writes — to any lists of this repository — as one transaction: all
  /// of them happen, or, when `body` throws, none does.
  ///
  /// Every mutation, read and observation call made from inside `body`, on the thread
  /// running it, joins the transaction: reads see the batch's own writes, and a write
  /// that fails is undone alone (a savepoint), so `body` may catch its error and go on.
  /// A batch inside a batch is a savepoint too. Observers see the batch as one
  /// changeset per list, delivered once it is committed, before this returns; a batch
  /// that is rolled back emits nothing.
  ///
  /// ```swift
  /// try repository.write {
  ///   try cities.appendItem(City(name: "Rome"), toSection: 0)
  ///   try cities.removeItem(at: IndexPath(item: 0, section: 0))
  ///   try towns.appendSection(SectionMetadata(header: "Villages"))
  /// }
  /// ```
  ///
  /// Other threads' writes wait until the batch ends. Do not hand the batch's work to
  /// another thread and wait for it: that thread's writes would wait for the batch.
  /// - Parameter body: The writes.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws (the batch is then rolled back), or
  ///   ``ListStoreError`` when the transaction cannot begin or commit.
  @discardableResult
  public func write<Result: Sendable>(_ body: () throws -> Result) throws -> Result {
    do {
      return try transaction { _ in try body() }
    } catch  where engine.isEngineError(error) {
      throw mapped(error)
    }
  }
}
