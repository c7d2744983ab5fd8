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
    var after: Int64?
    if let text = request.query["after"] ?? request.headers["last-event-id"] {
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
    let stream = ChangeStream(server: self, exchange: exchange, feed: feed, kind: kind)
    switch feed.resume(
      after: after, databasePosition: position, subscriber: stream, snapshot: wantsEvents)
    {
    case .reset(let json, let seq):
      guard wantsEvents, let json else {
        feed.unsubscribe(stream)
        throw APIFailure(
          409, "mustRefetch",
          "the changes after \(after ?? 0) are no longer retained: fetch the list again and follow it from its seq"
        )
      }
      let event = (after == nil ? "snapshot" : "reset")
      let first = Array("event: \(event)\nid: \(seq)\ndata: \(json)\n\n".utf8)
      http.loop.execute { stream.start(first: first) }
    case .changes(let missed):
      if !wantsEvents && !missed.isEmpty {
        feed.unsubscribe(stream)
        return ChangeStream.pollAnswer(missed, seq: missed.last?.seq ?? feed.seq)
      }
      let first = Array(missed.map(\.event).joined())
      http.loop.execute { stream.start(first: first) }
    }
    return nil
  }

  /// Once a second, on the loop's thread.
  func tick() {
    let now = ContinuousClock.now
    for stream in streams.values { stream.tick(now: now) }
    dropIdleFeeds()
  }
}
