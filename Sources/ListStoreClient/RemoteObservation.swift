import CurlKit
import Dispatch
import FoundationEssentials
public import ListStore
import ListStoreFormats
public import Observable2D
public import ReactiveCore
import Synchronization

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

  /// Ends the observation: the stream closes and the array's events complete.
  public func stop() {
    control.stop()
  }
}

/// What the observation shares with its thread: the position reached, and the stop.
final class StreamControl: Sendable {
  private struct State {
    var seq: Int64
    var stopped = false
    var client: HTTPClient?
  }

  private let state: Mutex<State>
  /// Signalled by ``stop()``, to cut a wait short.
  let wakeUp = DispatchSemaphore(value: 0)

  init(seq: Int64) {
    state = Mutex(State(seq: seq))
  }

  var seq: Int64 {
    get { state.withLock { $0.seq } }
    set { state.withLock { $0.seq = newValue } }
  }

  var isStopped: Bool { state.withLock { $0.stopped } }

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
  let list: RemoteList<Metadata, Item>
  let array: MutableObservable2DArray<Metadata, Item>
  let states: Property<ConnectionState>
  let control: StreamControl
  private var parser = ServerSentEventParser()
  /// Why the loop ends, once it knows: `nil` inside means the list was deleted.
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

  func run() {
    var delay = Self.shortestDelay
    while !control.isStopped && ending == nil {
      let reason = follow(resetDelay: { delay = Self.shortestDelay })
      guard ending == nil, !control.isStopped, let reason else { break }
      states.value = .offline(reason: reason, retryIn: delay)
      let nanoseconds =
        delay.components.seconds * 1_000_000_000
        + delay.components.attoseconds / 1_000_000_000
      _ = control.wakeUp.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
      delay = min(delay * 2, Self.longestDelay)
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

  /// One connection to the change stream, until it ends; returns why it ended when the
  /// loop should connect again, `nil` when it should not (``ending`` says why).
  private func follow(resetDelay: () -> Void) -> String? {
    if states.value != .resynchronising { states.value = .connecting }
    let repository = list.repository
    let client: HTTPClient
    do {
      client = try repository.connection()
    } catch {
      ending = .some(error)
      return nil
    }
    guard control.use(client) else { return nil }
    defer { _ = control.use(nil) }
    parser = ServerSentEventParser()
    let seq = control.seq
    var status = 0
    var failure: String?
    var body: [UInt8] = []
    let request = HTTPClient.Request(
      method: "GET", url: repository.location + list.path + "/changes?after=\(seq)",
      headers: [("Accept", "text/event-stream"), ("Last-Event-ID", "\(seq)")]
        + repository.authorization)
    do {
      try client.stream(
        request,
        onResponse: { code, _ in
          status = code
          guard code == 200 else { return true }  // Read the error body.
          resetDelay()
          self.states.value = .online
          return true
        },
        onData: { bytes in
          guard status == 200 else {
            body.append(contentsOf: bytes)
            return true
          }
          for event in self.parser.feed(bytes) {
            if let problem = self.handle(event) {
              failure = problem
              return false
            }
          }
          return self.ending == nil && !self.control.isStopped
        })
    } catch {
      return repository.transportError(error).description
    }
    guard ending == nil else { return nil }
    if status != 200 && status != 0 {
      let response = HTTPClient.Response(status: status, headers: [:], body: body)
      switch status {
      case 404:
        ending = .some(nil)  // The list was deleted while the stream was closed.
        return nil
      case 401, 403:
        ending = .some(repository.error(for: response))
        return nil
      default:
        return RemoteRepository.message(of: response)
      }
    }
    return failure ?? "the server closed the change stream"
  }

  /// Applies one event; returns why the stream must be opened again, if it must.
  private func handle(_ event: ServerSentEvent) -> String? {
    switch event.name {
    case "changes":
      guard let id = event.id, let seq = Int64(id) else { return "a change came without its seq" }
      do {
        let raw = try WireFormat.changeset(Array(event.data.utf8))
        let changeset = try Self.typed(raw)
        // The position first, so that whoever sees the event sees it too.
        control.seq = seq
        array.setVersion(seq)
        try array.apply(changeset)
      } catch let error as ListStoreError {
        ending = .some(error)
      } catch {
        // The change does not fit the array: start again from a snapshot.
        return resynchronise()
      }
      return nil
    case "snapshot", "reset":
      if event.name == "reset" { states.value = .resynchronising }
      do {
        let snapshot = try WireFormat.snapshot(Array(event.data.utf8))
        try apply(snapshot)
      } catch let error as ListStoreError {
        ending = .some(error)
      } catch {
        return "the server sent a snapshot that cannot be read: \(error)"
      }
      states.value = .online
      return nil
    case "deleted":
      ending = .some(nil)
      return nil
    default:
      // `error` (a slow consumer) is followed by the end of the stream; others are new.
      return event.name == "error" ? "the server ended the stream: \(event.data)" : nil
    }
  }

  /// Brings the array to the list as it is now, in one changeset.
  private func resynchronise() -> String? {
    states.value = .resynchronising
    do {
      try apply(try list.snapshotNow())
    } catch {
      if case .listNotFound = error {
        ending = .some(nil)
        return nil
      }
      return error.description
    }
    return "resynchronised"
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
    typealias List = RemoteList<Metadata, Item>
    var result = Changeset<Metadata, Item>()
    for entry in raw.deletedSections {
      result.deletedSections.append(.init(index: entry.index, id: entry.id))
    }
    for entry in raw.insertedSections {
      var items = ItemList<Item>()
      for item in entry.items.entries {
        items.append(try List.value(Item.self, from: item.value), id: item.id)
      }
      result.insertedSections.append(
        .init(
          index: entry.index, id: entry.id,
          metadata: try List.value(Metadata.self, from: entry.metadata), items: items))
    }
    for entry in raw.movedSections {
      result.movedSections.append(
        .init(
          from: entry.from, to: entry.to, id: entry.id,
          metadata: try List.value(Metadata.self, from: entry.metadata)))
    }
    for entry in raw.updatedSections {
      result.updatedSections.append(
        .init(
          index: entry.index, id: entry.id,
          metadata: try List.value(Metadata.self, from: entry.metadata)))
    }
    for entry in raw.deletedItems { result.deletedItems.append(.init(at: entry.at, id: entry.id)) }
    for entry in raw.insertedItems {
      result.insertedItems.append(
        .init(at: entry.at, id: entry.id, value: try List.value(Item.self, from: entry.value)))
    }
    for entry in raw.movedItems {
      result.movedItems.append(
        .init(
          from: entry.from, to: entry.to, id: entry.id,
          value: try List.value(Item.self, from: entry.value)))
    }
    for entry in raw.updatedItems {
      result.updatedItems.append(
        .init(at: entry.at, id: entry.id, value: try List.value(Item.self, from: entry.value)))
    }
    return result
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
