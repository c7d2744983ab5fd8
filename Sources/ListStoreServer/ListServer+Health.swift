import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

// `/healthz` and `/metrics`.
extension ListServer {
  func health() -> HTTPResponse {
    do {
      _ = try readers.withReader { try $0.changeLogPosition() }
      return HTTPResponse(
        status: 200, headers: [("Content-Type", "text/plain; charset=utf-8")],
        body: Array("ok\n".utf8))
    } catch {
      return .error(
        503, "unavailable", "the database does not answer: \(error)",
        headers: [("Retry-After", "1")])
    }
  }

  func metrics(_ request: HTTPRequest) throws -> HTTPResponse {
    let counts = http.statusCounts.withLock { $0 }
    let feeds = feeds.withLock { Array($0.values) }
    let position = try? readers.withReader { try $0.changeLogPosition() }
    let lag = feedLag(position: position)
    let reads = repository.changeFeedReads
    var lines = [
      "# HELP liststore_http_responses_total Responses sent, by status.",
      "# TYPE liststore_http_responses_total counter",
    ]
    for (status, count) in counts.sorted(by: { $0.key < $1.key }) {
      lines.append("liststore_http_responses_total{status=\"\(status)\"} \(count)")
    }
    lines += [
      "# HELP liststore_open_streams Change streams and long polls open.",
      "# TYPE liststore_open_streams gauge",
      "liststore_open_streams \(feeds.reduce(0) { $0 + $1.subscriberCount })",
      "# HELP liststore_slow_consumers_total Streams ended because their client read too slowly.",
      "# TYPE liststore_slow_consumers_total counter",
      "liststore_slow_consumers_total \(slowConsumers.withLock { $0 })",
      "# HELP liststore_watched_lists Lists observed for clients.",
      "# TYPE liststore_watched_lists gauge",
      "liststore_watched_lists \(feeds.count)",
      "# HELP liststore_feed_lag_entries How far the slowest feed is behind the database, in log entries.",
      "# TYPE liststore_feed_lag_entries gauge",
      "liststore_feed_lag_entries \(lag.entries)",
      "# HELP liststore_feed_lag_seconds How long the feeds have been behind the database (since a scrape first saw the commit they have not read).",
      "# TYPE liststore_feed_lag_seconds gauge",
      "liststore_feed_lag_seconds \(lag.seconds)",
      "# HELP liststore_feed_log_reads_total Reads of the change log by the server's one feed of every watched list (one per commit, whatever the number of clients).",
      "# TYPE liststore_feed_log_reads_total counter",
      "liststore_feed_log_reads_total \(reads.reads)",
      "# HELP liststore_feed_log_rows_read_total Rows those reads returned.",
      "# TYPE liststore_feed_log_rows_read_total counter",
      "liststore_feed_log_rows_read_total \(reads.rows)",
      "# HELP liststore_replica_resets_total Pulls of replicas answered with every row of their lists: their position was older than the change log keeps, or ahead of the database.",
      "# TYPE liststore_replica_resets_total counter",
      "liststore_replica_resets_total \(replicaResets.withLock { $0 })",
      "# HELP liststore_replica_waiting_pulls Replicas' long polls waiting for a commit.",
      "# TYPE liststore_replica_waiting_pulls gauge",
      "liststore_replica_waiting_pulls \(pullWaiters.withLock { $0.waiting.count })",
    ]
    return HTTPResponse(
      status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
      body: Array((lines.joined(separator: "\n") + "\n").utf8))
  }

  /// How far the feeds are behind the database: in log entries, and in seconds since a
  /// scrape first saw the oldest commit they have not read.
  func feedLag(position: Int64?) -> (entries: Int64, seconds: Double) {
    let observed = repository.observedChangeLogPosition
    return lagSince.withLock { behind in
      guard let position, let observed, observed < position else {
        behind = nil
        return (0, 0)
      }
      if behind == nil || observed >= behind?.target ?? 0 {
        behind = (position, .now)
      }
      let since = behind?.since ?? .now
      let elapsed = since.duration(to: .now)
      let seconds =
        Double(elapsed.components.seconds)
        + Double(elapsed.components.attoseconds) / 1e18
      return (position - observed, seconds)
    }
  }
}
