import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

// The feeds of watched lists, and their change streams and long polls.
extension ListServer {
  /// The feed of list `name`, started on first use.
  func feed(_ name: String) throws -> ListFeed {
    if let feed = feeds.withLock({ $0[name] }), feed.ended == nil { return feed }
    return try feedCreation.withLock { _ in
      if let feed = feeds.withLock({ $0[name] }), feed.ended == nil { return feed }
      let feed = try ListFeed(list: try list(name), limits: configuration.limits, loop: http.loop)
      feeds.withLock { $0[name] = feed }
      return feed
    }
  }

  /// Drops the feeds nobody used for a while, and the ended ones.
  func dropIdleFeeds() {
    let seconds = configuration.limits.idleFeedSeconds
    feeds.withLock { feeds in
      feeds = feeds.filter { $0.value.ended == nil && !$0.value.isIdle(for: seconds) }
    }
  }

  func forget(_ feed: ListFeed) {
    feeds.withLock { feeds in
      if feeds[feed.name] === feed { feeds[feed.name] = nil }
    }
  }

  /// `GET /v1/lists/{name}/changes`: a server-sent event stream, or a long poll.
  func changes(_ name: String, _ request: HTTPRequest, _ exchange: HTTPExchange) throws
    -> HTTPResponse?
  {
    let feed = try feed(name)
    let wantsEvents = request.headers["accept"]?.contains("text/event-stream") == true
    if request.method == "HEAD" {
      // What a GET would start with, and no stream held open.
      return HTTPResponse(
        status: 200,
        headers: [
          (
            "Content-Type",
            wantsEvents ? "text/event-stream; charset=utf-8" : "application/json; charset=utf-8"
          ), ("Cache-Control", "no-cache"),
        ])
    }
    // An empty Last-Event-ID is none (a stream that has seen no event with an id).
    let lastEventID = request.headers["last-event-id"].flatMap { $0.isEmpty ? nil : $0 }
    let (after, wait) = try Self.position(request, lastEventID: lastEventID)
    if !wantsEvents && after == nil {
      throw APIFailure(
        400, "badRequest",
        "a long poll needs after=SEQ (a snapshot's seq); ask with 'Accept: text/event-stream' for a stream that starts with a snapshot"
      )
    }
    // A position beyond the feed's: catch up with the database first, and tell whether
    // the database is behind it (a restored backup).
    var position: Int64?
    if let after, after > feed.seq {
      repository.synchronizeObservers()
      position = try repository.changeLogPosition()
    }
    let kind: ChangeStream.Kind =
      wantsEvents ? .events : .poll(deadline: .now + .milliseconds(Int(wait * 1000)))
    let token = currentTokens == nil ? nil : try credential(request)
    let stream = ChangeStream(
      server: self, exchange: exchange, feed: feed, kind: kind, token: token)
    let mustRefetch = APIFailure(
      409, "mustRefetch",
      "the changes after \(after ?? 0) are no longer retained: fetch the list again and follow it from its seq"
    )
    switch feed.resume(after: after, databasePosition: position, subscriber: stream) {
    case .reset:
      guard wantsEvents else {
        feed.unsubscribe(stream)
        throw mustRefetch
      }
      let event = (after == nil ? "snapshot" : "reset")
      http.loop.execute { stream.startWithSnapshot(event: event) }
    case .changes(let missed):
      let from = after ?? feed.seq
      if !wantsEvents && !missed.isEmpty {
        feed.unsubscribe(stream)
        // A change that began before the client's position may hold some it has.
        guard let first = missed.first, first.from >= from else { throw mustRefetch }
        return ChangeStream.pollAnswer(missed, seq: missed.last?.seq ?? feed.seq)
      }
      http.loop.execute { stream.start(missed: missed, position: from) }
    }
    return nil
  }

  /// A long poll's or stream's `after=SEQ` (or `Last-Event-ID`), and its `wait=SECONDS`
  /// (30 by default, 0 to 300).
  static func position(_ request: HTTPRequest, lastEventID: String? = nil) throws
    -> (after: Int64?, wait: Double)
  {
    var after: Int64?
    if let text = request.query["after"] ?? lastEventID {
      guard let value = Int64(text.trimmingSpaces()), value >= 0 else {
        throw APIFailure(400, "badRequest", "after=\(text) must be a seq: a whole number from 0")
      }
      after = value
    }
    var wait = 30.0
    if let text = request.query["wait"] {
      guard let seconds = Double(text), seconds >= 0, seconds <= 300 else {
        throw APIFailure(
          400, "badRequest", "wait=\(text) must be a number of seconds from 0 to 300")
      }
      wait = seconds
    }
    return (after, wait)
  }

  /// Once a second, on the loop's thread.
  func tick() {
    let now = ContinuousClock.now
    let unsent = streams.values.reduce(0) { $0 + $1.unsentBytes }
    streamBudgetExceeded = unsent > configuration.limits.streamBudget
    for stream in streams.values { stream.tick(now: now) }
    dropIdleFeeds()
    expirePulls(now: now)
  }
}

// Snapshots: read by readers of the server's own, sent as the client takes them.
extension ListServer {
  /// The most snapshots sent at once (each holds a reader and a thread while its client
  /// takes it); more get 503 and retry.
  static let snapshotLimit = 32

  /// `GET /v1/lists/{name}`: the snapshot, streamed from one read transaction; `HEAD`, its
  /// head alone.
  func snapshot(_ name: String, _ request: HTTPRequest, _ exchange: HTTPExchange) throws
    -> HTTPResponse?
  {
    if request.method == "HEAD" {
      let seq = try readers.withReader { reader in
        _ = try reader.list(name, metadata: RawJSON.self, item: RawJSON.self)
        return try reader.changeLogPosition()
      }
      return HTTPResponse(
        status: 200,
        headers: [("Content-Type", "application/json; charset=utf-8"), ("ETag", "\"\(seq)\"")])
    }
    try takeSnapshotSlot()
    SnapshotSender.send(.list(name), server: self, exchange: exchange, framing: .document) {
      [self] result in
      releaseSnapshotSlot()
      Self.finishDocument(exchange, result)
    }
    return nil
  }

  /// Ends a streamed document (on the loop's thread): whole, or — failed before its head —
  /// the error's answer, or after it a cut connection, so that a cut document never looks
  /// whole.
  static func finishDocument(_ exchange: HTTPExchange, _ result: Result<Int64, ListStoreError>) {
    switch result {
    case .success: exchange.endStream()
    case .failure(let error):
      if exchange.hasStarted {
        exchange.abort()
      } else {
        exchange.sendNow(response(for: error))
      }
    }
  }

  /// Counts a snapshot in, or refuses it when too many are under way.
  func takeSnapshotSlot() throws {
    guard tryTakingSnapshotSlot() else {
      throw APIFailure(
        503, "busy", "too many snapshots are being sent at once; try again shortly",
        headers: [("Retry-After", "1")])
    }
  }

  /// Counts a snapshot in; `false` when too many are under way.
  func tryTakingSnapshotSlot() -> Bool {
    snapshotsUnderWay.withLock { count in
      guard count < Self.snapshotLimit else { return false }
      count += 1
      return true
    }
  }

  func releaseSnapshotSlot() {
    snapshotsUnderWay.withLock { $0 -= 1 }
  }
}
