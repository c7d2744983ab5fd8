import ListStore

/// One client following a list's changes: a server-sent event stream, or a long poll
/// that answers with the first changes. It receives the feed's changes on the loop's
/// thread and sends them there; what arrives before the stream started, or while its
/// snapshot is being sent, waits.
///
/// A stream stands at a position (`seq`): its client holds the list as it was there. A
/// change the feed sends covers the commits after its `from` up to its `seq`; it is sent
/// when it starts at or after the stream's position, skipped when it ends there or
/// before, and when it straddles the position (it may hold commits the client has) the
/// stream sends a fresh snapshot instead (`event: reset`), so that no commit is applied
/// twice or missed.
final class ChangeStream: FeedSubscriber, @unchecked Sendable {
  // `@unchecked Sendable`: everything mutable is touched on the loop's thread only.
  enum Kind {
    case events
    case poll(deadline: ContinuousClock.Instant)
  }

  let server: ListServer
  let exchange: HTTPExchange
  let feed: ListFeed
  let kind: Kind
  /// The token the stream was opened with (`nil` on a server without tokens).
  let token: String?
  // The loop's thread only:
  private var started = false
  /// Whether a snapshot is being sent (changes wait meanwhile).
  private var snapshotting = false
  private var waiting: [ListFeed.Change] = []
  private var waitingBytes = 0
  /// Whether changes were dropped while waiting: a snapshot must follow.
  private var needsReset = false
  private var ended = false
  private var position: Int64 = 0
  private var lastSent = ContinuousClock.now
  /// Bytes of the stream's opening (the changes a resuming client missed) beyond the bound.
  private var allowance = 0
  /// The snapshot being sent.
  private var sender: SnapshotSender?
  /// How the feed ended, when that reached the stream before its start.
  private var endBeforeStart: FeedEnd?

  init(server: ListServer, exchange: HTTPExchange, feed: ListFeed, kind: Kind, token: String?) {
    self.server = server
    self.exchange = exchange
    self.feed = feed
    self.kind = kind
    self.token = token
  }

  /// Ends the stream because its token no longer covers its list (on the loop's thread).
  func revoke() {
    guard !ended else { return }
    guard started else { return stop() }
    switch kind {
    case .events:
      fail("the stream's token no longer covers this list", code: "unauthorized")
    case .poll:
      exchange.sendNow(.error(401, "unauthorized", "the token no longer covers this list"))
      stop()
    }
  }

  func feed(_ feed: ListFeed, sent change: ListFeed.Change) {
    deliver([change])
  }

  func feed(_ feed: ListFeed, ended end: FeedEnd) {
    finish(end)
  }

  /// Starts the stream with the changes after `position` that its client missed; on the
  /// loop's thread.
  func start(missed: [ListFeed.Change], position: Int64) {
    guard !ended else { return }
    self.position = position
    begin()
    if case .events = kind {
      // The bound on unsent data counts from what the stream starts with: a catch-up as
      // large as the retained changes is sent whole, then only new changes count.
      allowance = missed.reduce(0) { $0 + $1.size }
    }
    let backlog = missed + waiting
    waiting = []
    waitingBytes = 0
    deliver(backlog)
    if let end = endBeforeStart { finish(end) }
  }

  /// Starts the stream with a snapshot read from the database (`event: snapshot` for a new
  /// client, `event: reset` for one too far behind); on the loop's thread.
  func startWithSnapshot(event: String) {
    guard !ended else { return }
    if let end = endBeforeStart {
      // No snapshot of a list that is gone.
      ended = true
      return respondEnded(end)
    }
    begin()
    sendSnapshot(event: event)
  }

  private func begin() {
    server.streams[ObjectIdentifier(self)] = self
    started = true
    switch kind {
    case .events:
      exchange.startStream(
        status: 200,
        headers: [
          ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
          ("X-Accel-Buffering", "no"),
          // A stream ends its connection: a client reconnects for the next one.
          ("Connection", "close"),
        ], onClose: { [self] in clientLeft() })
      send(Array("retry: 1000\n\n".utf8))
    case .poll(let deadline):
      exchange.hold(onClose: { [self] in clientLeft() })
      // Answered when its wait is over, to the millisecond (the tick is once a second).
      let wait = ContinuousClock.now.duration(to: deadline)
      let milliseconds = max(
        0,
        Int(wait.components.seconds) * 1000
          + Int(wait.components.attoseconds / 1_000_000_000_000_000))
      server.http.loop.after(milliseconds: milliseconds + 1) { [weak self] in
        self?.tick(now: .now)
      }
    }
  }

  /// Sends a snapshot as an event; changes wait until it went, then those after its
  /// position follow.
  private func sendSnapshot(event: String) {
    guard server.tryTakingSnapshotSlot() else {
      return fail("too many snapshots are being sent at once; reconnect shortly", code: "busy")
    }
    snapshotting = true
    needsReset = false
    sender = SnapshotSender.send(
      .list(feed.name), server: server, exchange: exchange, framing: .event(event)
    ) { [self] result in
      server.releaseSnapshotSlot()
      snapshotting = false
      sender = nil
      guard !ended else { return }
      switch result {
      case .success(let seq):
        position = seq
        lastSent = .now
        let backlog = waiting
        waiting = []
        waitingBytes = 0
        if needsReset {
          sendSnapshot(event: "reset")
        } else {
          deliver(backlog)
        }
      case .failure(.listNotFound):
        finish(.deleted)
      case .failure(let error):
        finish(.failed("\(error)"))
      }
    }
  }

  private func deliver(_ changes: [ListFeed.Change]) {
    guard !ended, !changes.isEmpty else { return }
    guard started, !snapshotting else {
      waiting += changes
      waitingBytes += changes.reduce(0) { $0 + $1.size }
      if waitingBytes > server.configuration.limits.streamBuffer {
        // More than the stream may hold: drop them, and send a snapshot after.
        waiting = []
        waitingBytes = 0
        needsReset = true
      }
      return
    }
    var fresh: [ListFeed.Change] = []
    for change in changes where change.seq > position {
      guard change.from >= position || !fresh.isEmpty else {
        // It may hold commits the client has: start it again from a snapshot.
        if case .events = kind { sendSnapshot(event: "reset") }
        return
      }
      fresh.append(change)
      position = change.seq
    }
    guard !fresh.isEmpty else { return }
    switch kind {
    case .events:
      send(fresh.count == 1 ? fresh[0].event : Array(fresh.map(\.event).joined()))
    case .poll:
      answerPoll(fresh)
    }
  }

  /// A long poll's answer: `{"seq": S, "changes": [{"seq", "changes"}…]}`.
  static func pollAnswer(_ changes: [ListFeed.Change], seq: Int64) -> HTTPResponse {
    .json(
      200,
      "{\"seq\":\(seq),\"changes\":["
        + changes.map { "{\"seq\":\($0.seq),\"changes\":\($0.json)}" }.joined(separator: ",") + "]}"
    )
  }

  private func answerPoll(_ changes: [ListFeed.Change]) {
    // Its own position, not the feed's: the feed may be ahead by a change still on its
    // way to this poll (a fan-out goes out in slices), which the client must still get.
    exchange.sendNow(Self.pollAnswer(changes, seq: changes.last?.seq ?? position))
    stop()
  }

  private func send(_ bytes: [UInt8]) {
    guard !ended else { return }
    let unsent = exchange.sendChunk(bytes)
    lastSent = .now
    let bound = server.configuration.limits.streamBuffer
    if unsent <= bound { allowance = 0 }
    if unsent > bound + allowance || (server.streamBudgetExceeded && unsent > bound / 8) {
      fail(
        "the client reads the stream too slowly; resume with Last-Event-ID", code: "slowConsumer")
    }
  }

  /// Ends the stream with `event: error`, queued behind what the client has not read yet:
  /// a client that keeps reading gets it (the connection closes only once it stops
  /// taking bytes).
  private func fail(_ message: String, code: String) {
    guard !ended else { return }
    if code == "slowConsumer" { server.slowConsumers.withLock { $0 += 1 } }
    let error = "{\"error\":\(JSONText.quote(message)),\"code\":\(JSONText.quote(code))}"
    exchange.sendChunk(Array("event: error\ndata: \(error)\n\n".utf8))
    exchange.endStream(closeWithin: 10)
    stop()
  }

  /// Once a second: a keep-alive comment on a quiet stream, the empty answer of a poll
  /// whose wait is over.
  func tick(now: ContinuousClock.Instant) {
    guard started, !ended else { return }
    switch kind {
    case .events:
      if !snapshotting,
        lastSent.duration(to: now) >= .seconds(server.configuration.limits.keepAliveSeconds)
      {
        send(Array(": keep-alive\n\n".utf8))
      }
    case .poll(let deadline):
      if now >= deadline { answerPoll([]) }
    }
  }

  /// The bytes waiting unsent on the stream's connection.
  var unsentBytes: Int { exchange.unsentBytes }

  private func finish(_ end: FeedEnd) {
    guard !ended else { return }
    guard started else {
      // Not started yet: its start sends what the client missed, then the end.
      endBeforeStart = endBeforeStart ?? end
      return
    }
    switch kind {
    case .events:
      switch end {
      case .deleted:
        send(Array("event: deleted\ndata: {\"list\":\(JSONText.quote(feed.name))}\n\n".utf8))
        exchange.endStream(closeWithin: 10)
      case .failed(let message):
        fail(message, code: "internal")
        return
      }
    case .poll:
      respondEnded(end)
    }
    stop()
  }

  private func respondEnded(_ end: FeedEnd) {
    switch end {
    case .deleted:
      exchange.sendNow(.error(404, "notFound", "the list \(JSONText.quote(feed.name)) was deleted"))
    case .failed(let message):
      exchange.sendNow(.error(500, "internal", message))
    }
  }

  /// Ends the stream from the server's side (shutting down): a poll answers with no
  /// changes; `closed` runs once its connection has sent what it holds and closed.
  func close(closed: @escaping () -> Void) {
    guard !ended else { return closed() }
    let streaming: Bool
    switch kind {
    case .events: streaming = true
    case .poll: streaming = false
    }
    exchange.finish(
      answering: ChangeStream.pollAnswer([], seq: started ? position : feed.seq),
      streaming: streaming, closed: closed)
    stop()
  }

  private func clientLeft() {
    stop()
  }

  private func stop() {
    ended = true
    sender?.cancel()
    sender = nil
    server.streams[ObjectIdentifier(self)] = nil
    feed.unsubscribe(self)
  }
}
