import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

/// What a staging of log entries works with besides the entries: where they end, whether
/// the observer missed some, the connection to read rows through, and how errors read in
/// users' words on this engine.
@usableFromInline
struct StagingContext {
  /// The seq of the last log entry the staging covers.
  @usableFromInline var lastSeq: Int64
  /// Whether the log was pruned past the observer's position, or holds more of its
  /// entries than a reload costs: the observer reloads its list.
  @usableFromInline var fellBehind: Bool
  /// Sees the state the entries lead to.
  @usableFromInline var db: any DatabaseConnection
  /// Whether `db` is a writer's, in its transaction: an observer that must reload its
  /// list leaves that to a refresh after the commit instead of reading it there.
  @usableFromInline var inWrite: Bool
  /// The engine's errors in users' words.
  @usableFromInline var userError: (any Error) -> ListStoreError
}

/// One observed list, as the feed drives it: its typed observer's operations, as closures
/// made where the list's `Metadata` and `Item` are concrete (``StoredListObserver/feedObserver()``),
/// so that this feed, which is not generic, runs them compiled for those types.
///
/// `@unchecked Sendable`, for the reason ``StoredListObserver`` is: every operation but
/// ``deliver()`` is used only with the feed's state lock held, which orders all of them;
/// ``deliver()`` runs after the lock is released and only asks the observer's array, which
/// is thread-safe, to deliver what was queued. The closures are set once, in `init`.
@usableFromInline
final class FeedObserver: @unchecked Sendable {
  /// The observed list.
  let listID: Int64
  private let seqBody: () -> Int64
  private let isAliveBody: () -> Bool
  private let needsReadBody: () -> Bool
  private let rowCountBody: () -> Int
  private let concernsBody: (ChangeLogEntry) -> Bool
  private let stageBody: (ArraySlice<ChangeLogEntry>, StagingContext) -> () -> Void
  private let discardBody: () -> Void
  private let finishBody: (ListStoreError?) -> Void
  private let deliverBody: () -> Void

  @usableFromInline
  init(
    listID: Int64, seq: @escaping () -> Int64, isAlive: @escaping () -> Bool,
    needsRead: @escaping () -> Bool, rowCount: @escaping () -> Int,
    concerns: @escaping (ChangeLogEntry) -> Bool,
    stage: @escaping (ArraySlice<ChangeLogEntry>, StagingContext) -> () -> Void,
    discard: @escaping () -> Void, finish: @escaping (ListStoreError?) -> Void,
    deliver: @escaping () -> Void
  ) {
    self.listID = listID
    seqBody = seq
    isAliveBody = isAlive
    needsReadBody = needsRead
    rowCountBody = rowCount
    concernsBody = concerns
    stageBody = stage
    discardBody = discard
    finishBody = finish
    deliverBody = deliver
  }

  /// The last log entry this observer applied.
  var seq: Int64 { seqBody() }
  /// Whether anyone still listens; the feed forgets observers that do not.
  var isAlive: Bool { isAliveBody() }
  /// Whether it must read even when the log has nothing new: to reload after its
  /// array disagreed with the store, or to retry after a transient failure.
  var needsRead: Bool { needsReadBody() }
  /// How many sections and items its copy of the list holds: what a reload reads.
  var rowCount: Int { rowCountBody() }
  /// Whether `entry` may concern its list (the list, one of its sections, or a row in
  /// one of them, before or after the change).
  func concerns(_ entry: ChangeLogEntry) -> Bool { concernsBody(entry) }

  /// Works out what the entries after ``seq`` did (up to the context's `lastSeq`),
  /// reading rows through the context's connection, which sees the state the entries
  /// lead to. Changes nothing yet: the returned closure, called once that state is
  /// committed, applies it to the observer's array (queuing its event).
  func stage(entries: ArraySlice<ChangeLogEntry>, context: StagingContext) -> () -> Void {
    stageBody(entries, context)
  }

  /// Undoes what the last ``stage(entries:context:)`` prepared, whose state was not
  /// committed; nothing when there is nothing staged.
  func discard() { discardBody() }

  /// Queues the end of the observation, failing with `error`, or completing when it is
  /// `nil`; nothing is staged any more.
  func finish(failing error: ListStoreError?) { finishBody(error) }

  /// Delivers the queued events to the observer's subscribers.
  func deliver() { deliverBody() }
}
