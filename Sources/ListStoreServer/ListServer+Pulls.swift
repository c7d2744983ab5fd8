import Dispatch
import ListStore
import ListStoreFormats

/// A long poll of `GET /v1/changes` waiting for a commit.
struct PullWaiter: Sendable {
  let lists: [Int64]?
  let mayRead: @Sendable (String) -> Bool
  let after: Int64
  let deadline: ContinuousClock.Instant
  let exchange: HTTPExchange
}

/// The waiting long polls, and how many times commits arrived (so that a poll checked
/// while one arrived is checked again).
struct PullWaiters {
  var waiting: [PullWaiter] = []
  var generation = 0
  var watch: (any ChangeWatch)?
}

// What replicas pull: many lists on one connection (docs/replicas.md).
extension ListServer {
  /// `GET /v1/changes?lists=ID,…&after=SEQ&wait=SECONDS`: the rows of the lists (every
  /// list the token may read without `lists`) changed after `SEQ`, each as it is now — at
  /// once when there are any, else when some are or after `wait` seconds — or, without
  /// `after` (or one the log no longer reaches), every row of them, with `"reset": true`.
  func pullChanges(_ request: HTTPRequest, _ exchange: HTTPExchange, grant: Tokens.Grant)
    throws -> HTTPResponse?
  {
    var lists: [Int64]?
    if let text = request.query["lists"] {
      lists = try text.split(separator: ",", omittingEmptySubsequences: false).map { part in
        guard let id = Int64(String(part).trimmingSpaces()), id >= 1 else {
          throw APIFailure(
            400, "badRequest",
            "lists=\(text) must be list ids (whole numbers from 1), comma-separated")
        }
        return id
      }
    }
    let (after, wait) = try Self.position(request)
    if request.method == "HEAD" {
      return HTTPResponse(
        status: 200,
        headers: [
          ("Content-Type", "application/json; charset=utf-8"), ("Cache-Control", "no-cache"),
        ])
    }
    let mayRead: @Sendable (String) -> Bool = { grant.mayRead($0) }
    guard let after else {
      try takeSnapshotSlot()
      sendPull(lists: lists, mayRead: mayRead, after: nil, exchange)
      return nil
    }
    let waiter = PullWaiter(
      lists: lists, mayRead: mayRead, after: after,
      deadline: .now + .milliseconds(Int(wait * 1000)), exchange: exchange)
    let changed = try readers.withReader { try $0.hasChanges(lists: lists, after: after) }
    if wait == 0 || changed {
      try takeSnapshotSlot()
      sendPull(lists: lists, mayRead: mayRead, after: after, exchange)
      return nil
    }
    http.loop.execute { [weak self] in
      exchange.hold { self?.forget(exchange) }
    }
    startWatchingCommits()
    recheck([waiter])
    return nil
  }

  /// Sends the pull's answer, streamed from one read transaction; a slot is taken.
  private func sendPull(
    lists: [Int64]?, mayRead: @escaping @Sendable (String) -> Bool, after: Int64?,
    _ exchange: HTTPExchange
  ) {
    SnapshotSender.send(
      .pull(lists: lists, mayRead: mayRead, after: after), server: self, exchange: exchange,
      framing: .document
    ) { [self] result in
      releaseSnapshotSlot()
      Self.finishDocument(exchange, result)
    }
  }

  /// Answers a waiting poll now (from any thread).
  private func answer(_ waiter: PullWaiter) {
    guard tryTakingSnapshotSlot() else {
      waiter.exchange.respond(
        .error(503, "busy", "too many snapshots are being sent at once; try again shortly"))
      return
    }
    sendPull(
      lists: waiter.lists, mayRead: waiter.mayRead, after: waiter.after, waiter.exchange)
  }

  private func startWatchingCommits() {
    let watching = pullWaiters.withLock { $0.watch != nil }
    guard !watching else { return }
    let watch = repository.watchCommits { [weak self] in self?.commitsArrived() }
    let extra = pullWaiters.withLock { state -> (any ChangeWatch)? in
      if state.watch == nil {
        state.watch = watch
        return nil
      }
      return watch
    }
    extra?.cancel()
  }

  /// After commits: every waiting poll checks whether it has changes now.
  func commitsArrived() {
    let waiting = pullWaiters.withLock { state in
      state.generation += 1
      defer { state.waiting = [] }
      return state.waiting
    }
    if !waiting.isEmpty { recheck(waiting) }
  }

  /// Checks each poll: answered when it has changes, else waiting again — checked once
  /// more when commits arrived meanwhile.
  private func recheck(_ waiters: [PullWaiter]) {
    work.async { [self] in
      let generation = pullWaiters.withLock { $0.generation }
      var still: [PullWaiter] = []
      for waiter in waiters {
        let changed =
          (try? readers.withReader {
            try $0.hasChanges(lists: waiter.lists, after: waiter.after)
          }) ?? true
        if changed { answer(waiter) } else { still.append(waiter) }
      }
      let again = pullWaiters.withLock { state -> Bool in
        if state.generation != generation { return true }
        state.waiting += still
        return false
      }
      if again && !still.isEmpty { recheck(still) }
    }
  }

  /// Drops a poll whose client went away (on the loop's thread).
  private func forget(_ exchange: HTTPExchange) {
    pullWaiters.withLock { $0.waiting.removeAll { $0.exchange === exchange } }
  }

  /// Answers the polls whose wait is over (on the loop's thread, once a second).
  func expirePulls(now: ContinuousClock.Instant) {
    let expired = pullWaiters.withLock { state -> [PullWaiter] in
      let expired = state.waiting.filter { $0.deadline <= now }
      state.waiting.removeAll { $0.deadline <= now }
      return expired
    }
    for waiter in expired { answer(waiter) }
  }

  /// Ends every waiting poll and the watch: the server stops.
  func stopPulls() {
    let (waiting, watch) = pullWaiters.withLock { state in
      defer {
        state.waiting = []
        state.watch = nil
      }
      return (state.waiting, state.watch)
    }
    watch?.cancel()
    for waiter in waiting {
      waiter.exchange.respond(.error(503, "stopping", "the server is stopping; try again shortly"))
    }
  }
}
