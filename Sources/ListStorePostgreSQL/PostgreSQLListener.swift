import Dispatch
import ListStore
import PostgreSQLKit
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Listens for `NOTIFY liststore` on a connection of its own, on a thread of its own:
/// `LISTEN` first, then a catch-up read (the feed reads the log from where it is),
/// then every notification. A broken connection is reported, then connected again
/// with a growing delay, and caught up again.
final class Listener: ChangeWatch, @unchecked Sendable {
  // `@unchecked Sendable`: `stopped` and `interrupter` are thread-safe; everything
  // else is touched only by the listening thread.
  private let engine: PostgreSQLEngine
  /// The session of the repository's own connection: its commits are delivered by its
  /// writes (and one that may have failed by a refresh), so its notifications alone wake
  /// nothing here.
  private let ownSession: ServerSession?
  private let onChange: @Sendable ((any DatabaseConnection)?) -> Void
  private let status: @Sendable (FeedConnectionStatus) -> Void
  private let interrupter: PGWaitInterrupter
  private let stopped = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)
  /// The listening thread's `pthread_self()`, once it runs: a callback that cancels this
  /// listener must not wait for itself (every listener's thread has the same name).
  private let thread = Atomic<UInt>(0)
  /// The longest wait for a notification before the connection is checked.
  static let idleCheck: Duration = .seconds(5)
  static let reconnectDelays: (first: Duration, longest: Duration) = (
    .milliseconds(50), .seconds(2)
  )

  init(
    engine: PostgreSQLEngine, ownSession: ServerSession? = nil,
    onChange: @escaping @Sendable ((any DatabaseConnection)?) -> Void,
    status: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) throws {
    self.engine = engine
    self.ownSession = ownSession
    self.onChange = onChange
    self.status = status
    interrupter = try PGWaitInterrupter()
    // A thread of its own (it blocks in poll for as long as it listens): a serial queue's
    // one work item, so that no Foundation Thread is needed (the CLI links no Foundation).
    DispatchQueue(label: "liststore.listener").async { [self] in run() }
  }

  func cancel() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    interrupter.interrupt()
    finishedEarly.signal()
    if !runsOnItsThread { finished.wait() }
  }

  /// Whether the caller runs on this listener's thread (in one of its callbacks).
  var runsOnItsThread: Bool { thread.load(ordering: .acquiring) == Self.currentThread }

  /// An id of the calling thread.
  private static var currentThread: UInt { UInt(pthread_self()) }

  private func run() {
    thread.store(Self.currentThread, ordering: .releasing)
    defer { finished.signal() }
    var delay = Self.reconnectDelays.first
    var lost = false
    while !stopped.load(ordering: .acquiring) {
      do {
        let connection = try PGConnection(engine.connectionString)
        // Named, so that an administrator can tell it among the sessions.
        try connection.execute("SET application_name = 'liststore listener'")
        try connection.listen("liststore")
        // (A restarted server may have given the repository's old process id to another
        // client: notifications are its own again only after it committed once more.)
        ownSession?.forget()
        let probe = PostgreSQLDatabase(connection)
        if lost {
          lost = false
          status(.connected)
        }
        delay = Self.reconnectDelays.first
        // Whatever was committed before LISTEN took effect is in the log.
        onChange(probe)
        // When the log is checked after notifications taken for the repository's own: one
        // of them may have come from another client's session that reused the process id
        // of the repository's, which died since its last commit (the repository's next
        // transaction, in a new session, would bring what it missed, but it may be idle).
        // A deadline, not a quiet spell: that other session may go on committing.
        var checkAfterSkips: ContinuousClock.Instant?
        while !stopped.load(ordering: .acquiring) {
          let wait = checkAfterSkips.map { min(Self.idleCheck, $0 - .now) } ?? Self.idleCheck
          let notifications = try connection.waitForNotifications(
            timeout: max(wait, .zero), interrupter: interrupter)
          let due = checkAfterSkips.map { $0 <= .now } ?? false
          if due || (!notifications.isEmpty && !isOwn(notifications)) {
            checkAfterSkips = nil
            onChange(probe)
          } else if !notifications.isEmpty {
            // The repository's own commits alone: nothing to read (its writes delivered
            // them), only its progress to note for others' pruning.
            if checkAfterSkips == nil { checkAfterSkips = .now + engine.ownCommitCheck }
            onChange(nil)
          }
          if notifications.isEmpty { try connection.ping() }
        }
        connection.close()
      } catch {
        guard !stopped.load(ordering: .acquiring) else { return }
        if !lost {
          lost = true
          status(.disconnected("lost the connection to the server for \(engine.location)"))
        }
        // Wait before trying again; `cancel` cuts the wait short.
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        _ = finishedEarly.wait(timeout: .now() + .nanoseconds(nanoseconds))
        delay = min(delay * 2, Self.reconnectDelays.longest)
      }
    }
  }

  /// Whether every one of `notifications` comes from the repository's own session.
  private func isOwn(_ notifications: [PGNotification]) -> Bool {
    guard let own = ownSession?.processID, own != 0 else {
      return false
    }
    return notifications.allSatisfy { $0.processID == own }
  }

  /// Signalled only by `cancel`: waiting on it is a sleep that cancelling cuts short.
  private let finishedEarly = DispatchSemaphore(value: 0)
}
