import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

/// One watched list, observed once for every client of it: its state as the last event
/// left it, the encoded changes it retains for clients that resume, and its open streams
/// and long polls. Each committed batch is encoded once, whatever the number of clients.
final class ListFeed: @unchecked Sendable {
  /// A change as clients receive it: its position, and its server-sent event, encoded once
  /// for every stream; the changeset's JSON object is a part of the event, kept once.
  struct Change: Sendable {
    let seq: Int64
    /// The position the change starts from: it covers the commits after it up to `seq`.
    let from: Int64
    /// `event: changes` with the change's position as its id, as UTF-8.
    let event: [UInt8]
    /// Where the changeset's JSON is in `event`.
    private let jsonRange: Range<Int>

    init(seq: Int64, from: Int64, json: String) {
      self.seq = seq
      self.from = from
      let head = Array("event: changes\nid: \(seq)\ndata: ".utf8)
      let body = Array(json.utf8)
      event = head + body + [0x0A, 0x0A]
      jsonRange = head.count..<head.count + body.count
    }

    /// The changeset's JSON object.
    var json: String { String(decoding: event[jsonRange], as: UTF8.self) }

    /// The bytes it holds.
    var size: Int { event.count }
  }

  /// What a client resuming after some position gets.
  enum Resume {
    /// The changes after it (possibly none): the client is in step.
    case changes([Change])
    /// A fresh snapshot: the client starts from none, its position is no longer
    /// retained, or it is ahead of the database.
    case reset
  }

  let name: String
  /// The loop the subscribers are called on, a slice of them at a time (``pump()``).
  private let loop: EventLoop
  private let array: Observable2DArray<RawJSON, RawJSON>
  private let bag = DisposeBag()
  private let limits: ServerLimits

  private struct State {
    /// The position of the last change received.
    var seq: Int64 = 0
    /// The changes after `retainedFrom`, oldest first.
    var retained: [Change] = []
    var retainedBytes = 0
    var retainedFrom: Int64 = 0
    var subscribers: [ObjectIdentifier: any FeedSubscriber] = [:]
    var ended: FeedEnd?
    /// When the feed last had no subscriber (for dropping idle feeds).
    var idleSince: ContinuousClock.Instant? = .now
    /// Changes and the end waiting to reach their subscribers, oldest first, and how many
    /// of the first one's subscribers have it.
    var deliveries: [(delivery: Delivery, to: [any FeedSubscriber])] = []
    var delivered = 0
    /// Whether ``pump()`` is queued on the loop.
    var pumping = false
  }

  private enum Delivery {
    case change(Change)
    case end(FeedEnd)
  }

  /// Subscribers a pass of ``pump()`` reaches before the loop serves its connections again.
  static let slice = 512

  private let state = Locked(State())

  /// Starts observing `list`, calling its subscribers on `loop`'s thread.
  init(list: StoredList<RawJSON, RawJSON>, limits: ServerLimits, loop: EventLoop)
    throws(ListStoreError)
  {
    name = list.name
    self.loop = loop
    self.limits = limits
    array = try list.observe()
    array.subscribe(
      initialWithVersion: { [state] _, seq in
        state.withLock { state in
          state.seq = seq
          state.retainedFrom = seq
        }
      },
      onNext: { [weak self] event in self?.received(event) }
    ).disposed(by: bag)
    array.subscribe(
      onError: { [weak self] error in self?.end(.failed("\(error)")) },
      onCompleted: { [weak self] in self?.end(.deleted) }
    ).disposed(by: bag)
  }

  private func received(_ event: Observable2DArrayEvent<RawJSON, RawJSON>) {
    let change = Change(
      seq: event.version, from: event.previousVersion,
      json: Rendering.json(changeset: event.changeset))
    let start = state.withLock { state -> Bool in
      state.seq = event.version
      state.retained.append(change)
      state.retainedBytes += change.size
      while state.retained.count > limits.retainedChanges
        || state.retainedBytes > limits.retainedBytes, let first = state.retained.first
      {
        state.retained.removeFirst()
        state.retainedBytes -= first.size
        state.retainedFrom = first.seq
      }
      return Self.queue(.change(change), in: &state)
    }
    if start { loop.execute { [self] in pump() } }
  }

  /// Queues `delivery` for the subscribers, after those before it (in the same locked step
  /// as the state it follows, so that an end never overtakes a change); whether
  /// ``pump()`` must be started.
  private static func queue(_ delivery: Delivery, in state: inout State) -> Bool {
    guard !state.subscribers.isEmpty else { return false }
    state.deliveries.append((delivery, Array(state.subscribers.values)))
    defer { state.pumping = true }
    return !state.pumping
  }

  /// On the loop's thread: hands the waiting deliveries to their subscribers in order, at
  /// most ``slice`` subscribers a pass, then queues itself again while some wait. Between
  /// passes the loop serves its connections: a change for 10,000 streams holds up a
  /// request by a slice (a few milliseconds), not by the whole fan-out.
  private func pump() {
    var budget = Self.slice
    while budget > 0 {
      let next = state.withLock { state -> (Delivery, ArraySlice<any FeedSubscriber>)? in
        guard let first = state.deliveries.first else {
          state.pumping = false
          return nil
        }
        let part = first.to[state.delivered...].prefix(budget)
        state.delivered += part.count
        if state.delivered == first.to.count {
          state.deliveries.removeFirst()
          state.delivered = 0
        }
        return (first.delivery, part)
      }
      guard let (delivery, part) = next else { return }
      budget -= part.count
      for subscriber in part {
        switch delivery {
        case .change(let change): subscriber.feed(self, sent: change)
        case .end(let end): subscriber.feed(self, ended: end)
        }
      }
    }
    loop.execute { [self] in pump() }
  }

  /// Ends the feed: its subscribers are told, and it sends nothing more.
  func end(_ end: FeedEnd) {
    let start = state.withLock { state -> Bool in
      guard state.ended == nil else { return false }
      state.ended = end
      defer { state.subscribers = [:] }
      return Self.queue(.end(end), in: &state)
    }
    if start { loop.execute { [self] in pump() } }
  }

  /// How the feed ended, if it did.
  var ended: FeedEnd? { state.withLock { $0.ended } }

  /// The position the feed's state reflects.
  var seq: Int64 { state.withLock { $0.seq } }

  /// What a client at `seq` needs to be in step — the changes after it, or a fresh
  /// snapshot — and, in the same step so that no change falls between or comes twice,
  /// registers `subscriber` for what follows.
  /// - Parameters:
  ///   - seq: The client's position; `nil` for a client that starts from a snapshot.
  ///   - databasePosition: The database's position, read after the feed caught up with
  ///     it, for a `seq` beyond the feed's: a `seq` beyond the database (a restored
  ///     backup) gets a snapshot.
  ///   - subscriber: Receives the changes that follow.
  /// - Returns: The changes after `seq`, or that the client needs a snapshot (read from
  ///   the database, after which it resumes again from the snapshot's position).
  func resume(
    after seq: Int64?, databasePosition: Int64?, subscriber: (any FeedSubscriber)?
  ) -> Resume {
    state.withLock { state in
      func reset() -> Resume { .reset }
      if let subscriber, state.ended == nil {
        state.subscribers[ObjectIdentifier(subscriber)] = subscriber
        state.idleSince = nil
      }
      guard let seq, seq >= state.retainedFrom else { return reset() }
      if seq > state.seq {
        // Ahead of what the feed has seen: in step when the database is not behind it
        // (nothing changed this list up to there).
        guard let databasePosition, seq <= databasePosition else { return reset() }
        return .changes([])
      }
      return .changes(Array(state.retained.drop { $0.seq <= seq }))
    }
  }

  func unsubscribe(_ subscriber: any FeedSubscriber) {
    state.withLock { state in
      state.subscribers[ObjectIdentifier(subscriber)] = nil
      if state.subscribers.isEmpty { state.idleSince = .now }
    }
  }

  /// Whether nobody has used the feed for `seconds`.
  func isIdle(for seconds: Int) -> Bool {
    state.withLock { state in
      guard let since = state.idleSince else { return false }
      return since.duration(to: .now) > .seconds(seconds)
    }
  }

  /// How many streams and polls follow the feed.
  var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}

/// How a feed ended.
enum FeedEnd: Sendable {
  case deleted
  case failed(String)
}

/// A stream or long poll that a feed sends its changes to, on the loop's thread.
protocol FeedSubscriber: AnyObject, Sendable {
  func feed(_ feed: ListFeed, sent change: ListFeed.Change)
  func feed(_ feed: ListFeed, ended: FeedEnd)
}

/// The server's bounds.
public struct ServerLimits: Sendable {
  /// The largest request body, in bytes (`--max-body`).
  public var maxBody = 256 * 1024 * 1024
  /// Unsent bytes past which a stream is closed as a slow consumer.
  public var streamBuffer = 8 * 1024 * 1024
  /// Unsent bytes of all streams together past which the slowest ones (those holding an
  /// eighth of `streamBuffer` or more) are closed as slow consumers.
  public var streamBudget = 256 * 1024 * 1024
  /// How many changes each feed retains for clients that resume.
  public var retainedChanges = 10_000
  /// How many bytes of encoded changes each feed retains for clients that resume.
  public var retainedBytes = 64 * 1024 * 1024
  /// Seconds between keep-alive comments on an idle stream.
  public var keepAliveSeconds = 15
  /// Seconds a feed with no client stays, for clients that come back.
  public var idleFeedSeconds = 60
  /// The largest request head (request line and fields), in bytes.
  public var maxHead = 64 * 1024
  /// Seconds a request's head may take from its first byte (a slow client's deadline).
  public var headSeconds = 10
  /// Seconds a connection may wait for a request: a new one, or a kept-alive one.
  public var idleSeconds = 60
  /// The slowest a body may arrive, in bytes a second after the head's deadline: a body
  /// of `n` bytes must be whole within `headSeconds + n / minimumBodyRate` seconds.
  public var minimumBodyRate = 64 * 1024
  /// The most connections open at once; the server lowers it to what its descriptor
  /// limit allows, keeping 64 spare.
  public var maxConnections = 4096
  /// The most change streams and long polls open at once (`--max-streams`); more get 503.
  public var maxStreams = 4096
  /// The most connections whose latest request carried one token
  /// (`--max-connections-per-token`); more get 429. A server without tokens has only its
  /// own limits.
  public var maxConnectionsPerToken = 256
  /// The most change streams and long polls one token holds open at once
  /// (`--max-streams-per-token`); more get 429.
  public var maxStreamsPerToken = 128

  /// The defaults of the HTTP contract.
  public init() {}
}
