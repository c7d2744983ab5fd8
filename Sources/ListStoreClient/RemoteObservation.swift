import CurlKit
import Dispatch
import FoundationEssentials
public import ListStore
import ListStoreFormats
public import Observable2D
public import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where an observation of a remote list stands with its server.
public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
  /// Connecting to the change stream (at the start, or again after ``offline(reason:retryIn:)``).
  case connecting
  /// The change stream is open: every commit reaches the array as it is made.
  case online
  /// The connection was lost (or refused for a while); the array keeps its state and the
  /// observation connects again after `retryIn`, resuming after the last change it applied.
  case offline(reason: String, retryIn: Duration)
  /// The server could not resume after the last change applied (it no longer keeps it, or
  /// the database was restored): the array is being brought to a fresh snapshot, with one
  /// changeset.
  case resynchronising
  /// The observation ended: the list was deleted (`nil`), or it failed for good (the
  /// reason), or ``RemoteObservation/stop()`` was called.
  case ended(String?)

  /// The state in a few words.
  public var description: String {
    switch self {
    case .connecting: "connecting"
    case .online: "online"
    case .offline(let reason, let retryIn): "offline (\(reason)); retrying in \(retryIn)"
    case .resynchronising: "resynchronising"
    case .ended(nil): "ended"
    case .ended(let reason?): "ended: \(reason)"
    }
  }
}

/// A remote list followed through the server's change stream into an observable 2D array
/// — the type a `TableViewBond`, a `ListModel(following:)` or `changesets()` takes, as for
/// a local list — that reconnects by itself and resumes after the last change it applied.
///
/// Made by ``RemoteList/observe()``, which starts it from the list's current state. The
/// array's events are delivered on the observation's own thread, one at a time, in commit
/// order, each carrying the `seq` of the commit it reflects as its
/// ``Observable2DArrayEvent/version``. A lost connection is not an end: the state goes
/// ``ConnectionState/offline(reason:retryIn:)``, with growing delays up to a second, and
/// back ``ConnectionState/online`` once the changes missed meanwhile are applied — none
/// lost, none twice. The array's events complete when the list is deleted, and fail when
/// the observation cannot go on (a token refused, a value that does not decode).
///
/// Keep a reference for as long as you observe: releasing it, or ``stop()``, ends the
/// stream.
public final class RemoteObservation<Metadata: Codable & Sendable, Item: Codable & Sendable>:
  Sendable
{
  /// The array that follows the list.
  public var array: Observable2DArray<Metadata, Item> { mutableArray }
  /// The connection's state, and each change of it (the current one first).
  public let states: Property<ConnectionState>
  /// The connection's state now.
  public var state: ConnectionState { states.value }

  private let mutableArray: MutableObservable2DArray<Metadata, Item>
  private let list: RemoteList<Metadata, Item>
  private let control: StreamControl

  init(list: RemoteList<Metadata, Item>, snapshot: WireFormat.Snapshot) throws(ListStoreError) {
    self.list = list
    mutableArray = MutableObservable2DArray(
      try RemoteList<Metadata, Item>.decoded(snapshot.sections))
    mutableArray.setVersion(snapshot.seq)
    states = Property(.connecting)
    control = StreamControl(seq: snapshot.seq)
    let follower = Follower(
      list: list, array: mutableArray, states: states, control: control)
    DispatchQueue(label: "liststore.client.stream").async { follower.run() }
  }

  deinit {
    control.stop()
  }

  /// The `seq` of the last change the array applied.
  public var seq: Int64 { control.seq }

  /// Ends the observation: the stream closes and the array's events complete, before this
  /// returns (unless called from one of the array's callbacks, which run on the
  /// observation's thread: then right after the callback).
  public func stop() {
    control.stop()
    guard !control.onObservationThread else { return }
    control.finished.wait()
    control.finished.signal()  // For a later stop().
  }
}

/// What the observation shares with its thread: the position reached, and the stop.
final class StreamControl: Sendable {
  private struct State {
    var seq: Int64
    /// Whether the next connection must start from a snapshot (a resynchronisation failed).
    var needsSnapshot = false
    var stopped = false
    var client: HTTPClient?
    /// The observation's thread, once it runs.
    var thread: pthread_t?
  }

  private let state: Mutex<State>
  /// Signalled by ``stop()``, to cut a wait short.
  let wakeUp = DispatchSemaphore(value: 0)
  /// Signalled when the observation's thread has ended (and delivered its last event).
  let finished = DispatchSemaphore(value: 0)

  init(seq: Int64) {
    state = Mutex(State(seq: seq))
  }

  var seq: Int64 {
    get { state.withLock { $0.seq } }
    set { state.withLock { $0.seq = newValue } }
  }

  var needsSnapshot: Bool {
    get { state.withLock { $0.needsSnapshot } }
    set { state.withLock { $0.needsSnapshot = newValue } }
  }

  var isStopped: Bool { state.withLock { $0.stopped } }

  /// Notes that the calling thread is the observation's.
  func running() {
    state.withLock { $0.thread = pthread_self() }
  }

  /// Whether the calling thread is the observation's (in one of its array's callbacks).
  var onObservationThread: Bool {
    state.withLock { $0.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
  }

  /// Notes the connection a stream runs on, to cancel it; `false` when stopped already.
  func use(_ client: HTTPClient?) -> Bool {
    state.withLock { state in
      state.client = client
      return !state.stopped
    }
  }

  func stop() {
    let client = state.withLock { state -> HTTPClient? in
      guard !state.stopped else { return nil }
      state.stopped = true
      return state.client
    }
    client?.cancel()
    wakeUp.signal()
  }
}

/// The loop on the observation's thread: connect, apply events, reconnect.
///
/// `@unchecked Sendable`: made on one thread and then used by the observation's thread
/// only; what it shares (the array, the states, the control) is thread-safe.
final class Follower<Metadata: Codable & Sendable, Item: Codable & Sendable>: @unchecked Sendable {
  /// How one connection to the change stream ended.
  enum Outcome {
    /// Lost (the reason): wait, then connect again.
    case lost(String)
    /// Connect again at once (after a resynchronisation).
    case again
    /// Do not connect again: ``ending`` says why.
    case over
  }

  let list: RemoteList<Metadata, Item>
  let array: MutableObservable2DArray<Metadata, Item>
  let states: Property<ConnectionState>
  let control: StreamControl
  private var parser = ServerSentEventParser()
  /// Why the loop ends, once it knows: `nil` inside means the list was deleted. Set once.
  private var ending: ListStoreError??

  init(
    list: RemoteList<Metadata, Item>, array: MutableObservable2DArray<Metadata, Item>,
    states: Property<ConnectionState>, control: StreamControl
  ) {
    self.list = list
    self.array = array
    self.states = states
    self.control = control
  }

  /// The first wait before connecting again, doubled after each failed attempt.
  static var shortestDelay: Duration { .milliseconds(100) }
  /// The longest wait between two attempts to connect: a server that comes back (a
  /// restart) is found within it. An attempt at a server that is down costs it nothing.
  static var longestDelay: Duration { .seconds(1) }
  /// How long the stream may stay silent before it counts as lost: the server sends a
  /// keep-alive comment every 15 seconds.
  static var silenceLimit: Duration { .seconds(45) }

  /// Ends the loop for `reason` (`nil`: the list was deleted), unless it ends already.
  private func end(_ reason: ListStoreError?) {
    if ending == nil { ending = .some(reason) }
  }

  func run() {
    control.running()
    defer { control.finished.signal() }
    var delay = Self.shortestDelay
    loop: while !control.isStopped && ending == nil {
      switch follow(resetDelay: { delay = Self.shortestDelay }) {
      case .over:
        break loop
      case .again:
        delay = Self.shortestDelay
      case .lost(let reason):
        guard ending == nil, !control.isStopped else { break loop }
        states.value = .offline(reason: reason, retryIn: delay)
        let nanoseconds =
          delay.components.seconds * 1_000_000_000
          + delay.components.attoseconds / 1_000_000_000
        _ = control.wakeUp.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        delay = min(delay * 2, Self.longestDelay)
      }
    }
    switch ending {
    case .some(.some(let error)):
      states.value = .ended(error.description)
      array.finish(failing: error)
    default:
      states.value = .ended(nil)
      array.finish()
    }
  }

  /// One connection to the change stream, until it ends.
  private func follow(resetDelay: () -> Void) -> Outcome {
    if states.value != .resynchronising { states.value = .connecting }
    let repository = list.repository
    let client: HTTPClient
    do {
      client = try repository.connection()
    } catch {
      end(error)
      return .over
    }
    guard control.use(client) else { return .over }
    defer { _ = control.use(nil) }
    parser = ServerSentEventParser()
    // From where the array is; or, after a failed resynchronisation, from a snapshot.
    let seq = control.seq
    let fresh = control.needsSnapshot
    var status = 0
    var outcome: Outcome?
    var body: [UInt8] = []
    var request = HTTPClient.Request(
      method: "GET",
      url: repository.location + list.path + "/changes" + (fresh ? "" : "?after=\(seq)"),
      headers: [("Accept", "text/event-stream")]
        + (fresh ? [] : [("Last-Event-ID", "\(seq)")]) + repository.authorization)
    request.silenceLimit = Self.silenceLimit
    do {
      try client.stream(
        request,
        onResponse: { code, _ in
          status = code
          guard code == 200 else { return true }  // Read the error body.
          resetDelay()
          if self.states.value != .resynchronising { self.states.value = .online }
          return true
        },
        onData: { bytes in
          guard status == 200 else {
            body.append(contentsOf: bytes)
            return true
          }
          for event in self.parser.feed(bytes) {
            // Nothing after what ends the stream, or the observation, is applied.
            if let result = self.handle(event) {
              outcome = result
              return false
            }
          }
          return !self.control.isStopped
        })
    } catch {
      return .lost(repository.transportError(error).description)
    }
    if ending != nil { return .over }
    if let outcome { return outcome }
    if status != 200 && status != 0 {
      let response = HTTPClient.Response(status: status, headers: [:], body: body)
      switch status {
      case 404:
        end(nil)  // The list was deleted while the stream was closed.
        return .over
      case 401, 403:
        end(repository.error(for: response))
        return .over
      default:
        return .lost(RemoteRepository.message(of: response))
      }
    }
    return .lost("the server closed the change stream")
  }

  /// Applies one event; returns how the stream ends when it must end here.
  private func handle(_ event: ServerSentEvent) -> Outcome? {
    switch event.name {
    case "changes":
      guard let id = event.id, let seq = Int64(id) else {
        return .lost("a change came without its seq")
      }
      let changeset: Changeset<Metadata, Item>
      do {
        changeset = try Self.typed(try WireFormat.changeset(Array(event.data.utf8)))
      } catch let error as ListStoreError {
        end(error)
        return .over
      } catch {
        return resynchronise()
      }
      // The position first, so that whoever sees the event sees it too; back if the
      // change does not fit the array, which then starts again from a snapshot.
      let previous = control.seq
      control.seq = seq
      array.setVersion(seq)
      do {
        try array.apply(changeset)
      } catch {
        control.seq = previous
        return resynchronise()
      }
      return nil
    case "snapshot", "reset":
      if event.name == "reset" { states.value = .resynchronising }
      do {
        try apply(try WireFormat.snapshot(Array(event.data.utf8)))
      } catch let error as ListStoreError {
        end(error)
        return .over
      } catch {
        return .lost("the server sent a snapshot that cannot be read: \(error)")
      }
      control.needsSnapshot = false
      states.value = .online
      return nil
    case "deleted":
      end(nil)
      return .over
    case "error":
      // A slow consumer: the server ends the stream; resume where the array is.
      return .lost("the server ended the stream: \(event.data)")
    default:
      return nil
    }
  }

  /// Brings the array to the list as it is now, in one changeset, and connects again from
  /// there; if that fails, the next connection starts from a snapshot.
  private func resynchronise() -> Outcome {
    states.value = .resynchronising
    do {
      try apply(try list.snapshotNow())
    } catch {
      if case .listNotFound = error {
        end(nil)
        return .over
      }
      control.needsSnapshot = true
      return .lost(error.description)
    }
    return .again
  }

  private func apply(_ snapshot: WireFormat.Snapshot) throws(ListStoreError) {
    let sections = try RemoteList<Metadata, Item>.decoded(snapshot.sections)
    control.seq = snapshot.seq
    array.setVersion(snapshot.seq)
    array.replace(with: sections, performDiff: true)
  }

  /// A changeset of JSON texts decoded as `Metadata` and `Item`.
  static func typed(_ raw: Changeset<RawJSON, RawJSON>) throws(ListStoreError)
    -> Changeset<Metadata, Item>
  {
    try raw.mapValues(
      metadata: { _, json throws(ListStoreError) in
        try RemoteList<Metadata, Item>.value(Metadata.self, from: json)
      },
      item: { _, json throws(ListStoreError) in
        try RemoteList<Metadata, Item>.value(Item.self, from: json)
      })
  }
}

extension RemoteList {
  /// Follows the list from its current state through the server's change stream (see
  /// ``RemoteObservation``).
  ///
  /// ```swift
  /// let observation = try await cities.observe()
  /// observation.array.bind(to: tableView, using: CityBond()).disposed(by: bag)
  /// observation.states.observeNext { print($0) }.disposed(by: bag)  // connecting, online…
  /// ```
  /// - Returns: The observation; keep it for as long as you observe.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, ``ListStoreError/decodingFailed(_:)``,
  ///   or a transport error, when the list's first state cannot be read.
  public func observe() async throws(ListStoreError) -> RemoteObservation<Metadata, Item> {
    try await repository.background { () throws(ListStoreError) in try self.observeNow() }
  }

  /// ``observe()`` on the calling thread.
  package func observeNow() throws(ListStoreError) -> RemoteObservation<Metadata, Item> {
    try RemoteObservation(list: self, snapshot: try snapshotNow())
  }

  /// The list's changesets as an asynchronous sequence: one element per commit (or run of
  /// commits caught up at once) after the call, as ``observe()``'s array emits them. It ends
  /// when the list is deleted, and throws when the observation fails; a lost connection
  /// neither ends nor fails it.
  ///
  /// - Returns: The sequence; iterating it keeps the observation alive.
  /// - Throws: What ``observe()`` throws.
  public func changesets() async throws(ListStoreError)
    -> AsyncThrowingStream<Changeset<Metadata, Item>, any Error>
  {
    let observation = try await observe()
    let inner = observation.array.changesets()
    return AsyncThrowingStream { continuation in
      let task = Task {
        do {
          for try await changeset in inner { continuation.yield(changeset) }
          continuation.finish()
        } catch {
          continuation.finish(throwing: error)
        }
      }
      continuation.onTermination = { _ in
        task.cancel()
        observation.stop()
      }
    }
  }
}
