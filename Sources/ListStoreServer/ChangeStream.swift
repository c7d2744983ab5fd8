import ListStore

/// One client following a list's changes: a server-sent event stream, or a long poll
/// that answers with the first changes. It receives the feed's changes on the loop's
/// thread and sends them there; what arrives before the stream started waits.
final class ChangeStream: FeedSubscriber, @unchecked Sendable {
  enum Kind {
    case events
    case poll(deadline: ContinuousClock.Instant)
  }

  let server: ListServer
  let exchange: HTTPExchange
  let feed: ListFeed
  let kind: Kind
  // The loop's thread only:
  private var started = false
  private var waiting: [ListFeed.Change] = []
  private var ended = false
  private var lastSent = ContinuousClock.now
  /// Bytes of the stream's opening (its snapshot or catch-up) beyond the bound.
  private var allowance = 0

  init(server: ListServer, exchange: HTTPExchange, feed: ListFeed, kind: Kind) {
    self.server = server
    self.exchange = exchange
    self.feed = feed
    self.kind = kind
  }

  func feed(_ feed: ListFeed, sent change: ListFeed.Change) {
    deliver([change])
  }

  func feed(_ feed: ListFeed, ended end: FeedEnd) {
    finish(end)
  }

  /// Starts the stream with `first` (a snapshot or the changes the client missed); on
  /// the loop's thread.
  func start(first: [UInt8]) {
    guard !ended else { return }
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
      // The bound on unsent data counts from what the stream starts with: a snapshot
      // as large as the list is sent whole, however large, then only changes count.
      let opening = Array("retry: 1000\n\n".utf8) + first
      allowance = opening.count
      send(opening)
      let backlog = waiting
      waiting = []
      deliver(backlog)
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
      let backlog = waiting
      waiting = []
      if !backlog.isEmpty { deliver(backlog) }
    }
  }

  private func deliver(_ changes: [ListFeed.Change]) {
    guard !ended, !changes.isEmpty else { return }
    guard started else {
      waiting += changes
      return
    }
    switch kind {
    case .events:
      for change in changes { send(change.event) }
    case .poll:
      answerPoll(changes)
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
    exchange.sendNow(Self.pollAnswer(changes, seq: changes.last?.seq ?? feed.seq))
    stop()
  }

  private func send(_ texts: [String]) {
    send(Array(texts.joined().utf8))
  }

  private func send(_ bytes: [UInt8]) {
    guard !ended else { return }
    let unsent = exchange.sendChunk(bytes)
    lastSent = .now
    if unsent <= server.configuration.limits.streamBuffer { allowance = 0 }
    if unsent > server.configuration.limits.streamBuffer + allowance {
      let error =
        "{\"error\":\"the client reads the stream too slowly; resume with Last-Event-ID\","
        + "\"code\":\"slowConsumer\"}"
      exchange.sendChunk(Array("event: error\ndata: \(error)\n\n".utf8))
      exchange.endStream(closeWithin: 10)
      stop()
    }
  }

  /// Once a second: a keep-alive comment on a quiet stream, the empty answer of a poll
  /// whose wait is over.
  func tick(now: ContinuousClock.Instant) {
    guard started, !ended else { return }
    switch kind {
    case .events:
      if lastSent.duration(to: now) >= .seconds(server.configuration.limits.keepAliveSeconds) {
        send([": keep-alive\n\n"])
      }
    case .poll(let deadline):
      if now >= deadline { answerPoll([]) }
    }
  }

  private func finish(_ end: FeedEnd) {
    guard !ended else { return }
    guard started else {
      // Not started yet: the start finds the stream ended.
      ended = true
      respondEnded(end)
      return
    }
    switch kind {
    case .events:
      switch end {
      case .deleted:
        send(["event: deleted\ndata: {\"list\":\(JSONText.quote(feed.name))}\n\n"])
      case .failed(let message):
        send([
          "event: error\ndata: {\"error\":\(JSONText.quote(message)),\"code\":\"internal\"}\n\n"
        ])
      }
      exchange.endStream(closeWithin: 10)
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
      answering: ChangeStream.pollAnswer([], seq: feed.seq), streaming: streaming, closed: closed)
    stop()
  }

  private func clientLeft() {
    stop()
  }

  private func stop() {
    ended = true
    server.streams[ObjectIdentifier(self)] = nil
    feed.unsubscribe(self)
  }
}
