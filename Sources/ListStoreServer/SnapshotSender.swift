internal import CLibEvent
import Dispatch
import Foundation
import ListStore
import ListStoreFormats
import ReactiveCore
import Synchronization

/// Connections of the server's own for reads that must not wait behind its writes:
/// snapshots, the list of lists, health checks. A reader that failed is dropped and a new
/// one opened next time; without any, the repository itself serves.
final class ReaderPool: Sendable {
  private let source: Repository
  private let idle = Mutex<[Repository]>([])

  init(source: Repository) { self.source = source }

  /// Runs `body` with a reader of its own.
  func withReader<Result>(_ body: (Repository) throws -> Result) throws -> Result {
    let reader = idle.withLock { $0.popLast() } ?? (try? source.openReader()) ?? source
    let result = try body(reader)
    if reader !== source { idle.withLock { $0.append(reader) } }
    return result
  }
}

/// Sends a list's snapshot — the `show --json` object with its `"seq"` — to one client as
/// fast as it takes it, from one read transaction of a reader, on a thread of its own,
/// never holding more than a window of it for the client: a list of any size costs the
/// server that window per client, whatever the client's speed.
final class SnapshotSender: @unchecked Sendable {
  // `@unchecked Sendable`: `room` and `cancelled` are behind `lock`; the rest is immutable.
  enum Framing: Sendable {
    /// The body of `GET /v1/lists/{name}`, with its head (`ETag`) and chunked framing.
    case document
    /// An `event: NAME` with the snapshot's seq as its id, on a started stream.
    case event(String)
  }

  /// The bytes held for a client at most, beyond what its socket took.
  static let window = 1 << 20
  /// The size of each piece handed to the loop.
  static let piece = 64 * 1024

  /// What is sent: a list's snapshot, or what a replica pulls.
  enum Source: Sendable {
    case list(String)
    /// The rows of `lists` (every list when `nil`) changed after `after` (all of them
    /// when `nil`), as `GET /v1/changes` answers them.
    case pull(lists: [Int64]?, mayRead: @Sendable (String) -> Bool, after: Int64?)
  }

  private let source: Source
  private let server: ListServer
  private let exchange: HTTPExchange
  private let framing: Framing
  private let done: @Sendable (Result<Int64, ListStoreError>) -> Void
  private let lock = NSCondition()
  private var room = true
  private var cancelled = false
  private var lastProgress = ContinuousClock.now

  private init(
    source: Source, server: ListServer, exchange: HTTPExchange, framing: Framing,
    done: @escaping @Sendable (Result<Int64, ListStoreError>) -> Void
  ) {
    self.source = source
    self.server = server
    self.exchange = exchange
    self.framing = framing
    self.done = done
  }

  /// Starts sending, on a thread of its own; `done` runs on the loop's thread with the
  /// snapshot's seq once all of it was handed to the connection (or with the error that
  /// stopped it; for a document whose head is not sent yet, the caller answers it).
  @discardableResult
  static func send(
    _ source: Source, server: ListServer, exchange: HTTPExchange, framing: Framing,
    done: @escaping @Sendable (Result<Int64, ListStoreError>) -> Void
  ) -> SnapshotSender {
    let sender = SnapshotSender(
      source: source, server: server, exchange: exchange, framing: framing, done: done)
    server.http.loop.execute {
      exchange.onDrained = { [weak sender] in sender?.drained() }
      exchange.setDrainThreshold(Self.window / 2)
    }
    Thread.detachNewThread { sender.run() }
    return sender
  }

  private func run() {
    let result: Result<Int64, ListStoreError>
    // Below the loop and the other requests: many snapshots starting at once (each
    // encodes its first window as fast as it can) share what those leave of the cores.
    _ = liststore_set_thread_nice(10)
    do {
      result = .success(try server.readers.withReader(sendRows))
    } catch let error as ListStoreError {
      result = .failure(error)
    } catch {
      result = .failure(.server(location: "the server", message: "\(error)"))
    }
    let done = self.done
    server.http.loop.execute { [exchange] in
      exchange.onDrained = nil
      exchange.setDrainThreshold(0)
      done(result)
    }
  }

  private struct Cancelled: Error {}

  /// Reads the source in one transaction and hands it over piece by piece.
  private func sendRows(_ reader: Repository) throws -> Int64 {
    switch source {
    case .list(let name): try sendList(name, reader)
    case .pull(let lists, let mayRead, let after):
      try sendPull(reader, lists: lists, mayRead: mayRead, after: after)
    }
  }

  /// Starts the document's head (on the loop's thread).
  private func startDocument(_ headers: [(String, String)]) {
    let exchange = self.exchange
    server.http.loop.execute { [weak self] in
      exchange.startStream(
        status: 200, headers: [("Content-Type", "application/json; charset=utf-8")] + headers,
        keepsConnection: true, onClose: { self?.cancel() })
    }
  }

  /// What a replica pulls: `{"seq", "reset", "rows": [...]}`.
  private func sendPull(
    _ reader: Repository, lists: [Int64]?, mayRead: (String) -> Bool, after: Int64?
  ) throws -> Int64 {
    var pending: [UInt8] = []
    pending.reserveCapacity(Self.piece + 4096)
    var position: Int64 = 0
    var first = true
    func append(_ text: String) { pending += text.utf8 }
    try reader.pull(
      lists: lists, mayRead: mayRead, after: after,
      start: { seq, reset in
        position = seq
        if reset && after != nil { self.server.replicaResets.withLock { $0 += 1 } }
        self.startDocument([("Cache-Control", "no-cache")])
        append("{\"seq\":\(seq),\"reset\":\(reset),\"rows\":[")
      },
      row: { row in
        append(first ? "{" : ",{")
        first = false
        switch row {
        case .list(let id, let name):
          append("\"list\":\(id),\"name\":" + JSONText.quote(name))
        case .section(let list, let id, let key, let metadata):
          append("\"list\":\(list),\"section\":\(id),\"position\":" + JSONText.quote(key))
          append(",\"metadata\":")
          pending += JSONText.singleLine(metadata).utf8
        case .item(let list, let id, let section, let key, let value):
          append(
            "\"list\":\(list),\"item\":\(id),\"section\":\(section),\"position\":"
              + JSONText.quote(key))
          append(",\"value\":")
          pending += JSONText.singleLine(value).utf8
        case .listDeleted(let id): append("\"list\":\(id),\"deleted\":true")
        case .sectionDeleted(let list, let id):
          append("\"list\":\(list),\"section\":\(id),\"deleted\":true")
        case .itemDeleted(let list, let id):
          append("\"list\":\(list),\"item\":\(id),\"deleted\":true")
        }
        pending.append(UInt8(ascii: "}"))
        if pending.count >= Self.piece { try self.flush(&pending) }
      })
    append("]}")
    try flush(&pending)
    return position
  }

  /// A list's snapshot.
  private func sendList(_ name: String, _ reader: Repository) throws -> Int64 {
    let list = try reader.list(name, metadata: RawJSON.self, item: RawJSON.self)
    var pending: [UInt8] = []
    pending.reserveCapacity(Self.piece + 4096)
    var snapshotSeq: Int64 = 0
    var firstSection = true
    var firstItem = true
    func append(_ text: String) { pending += text.utf8 }
    func flushIfFull() throws { if pending.count >= Self.piece { try flush(&pending) } }
    try list.forEachStoredRow(
      position: { seq in
        snapshotSeq = seq
        switch self.framing {
        case .document:
          self.startDocument([("ETag", "\"\(seq)\"")])
        case .event(let event):
          append("event: \(event)\nid: \(seq)\ndata: ")
        }
        append("{\"list\":" + JSONText.quote(name) + ",\"sections\":[")
      },
      section: { id, metadata in
        if !firstSection { append(",") }
        firstSection = false
        firstItem = true
        append(
          "{" + Rendering.sectionFields(id: id, metadata: String(decoding: metadata, as: UTF8.self))
            + ",\"items\":[")
        try flushIfFull()
      },
      item: { id, value in
        append(firstItem ? "{\"id\":\(id),\"value\":" : ",{\"id\":\(id),\"value\":")
        firstItem = false
        JSONText.appendSingleLine(value, to: &pending)
        pending.append(UInt8(ascii: "}"))
        try flushIfFull()
      },
      endSection: { append("]}") })
    append("],\"seq\":\(snapshotSeq)}")
    if case .event = framing { append("\n\n") }
    try flush(&pending)
    return snapshotSeq
  }

  /// Hands `bytes` to the loop once the client took enough of what it holds.
  private func flush(_ bytes: inout [UInt8]) throws {
    guard !bytes.isEmpty else { return }
    lock.lock()
    defer { lock.unlock() }
    while !room && !cancelled {
      // A client that takes nothing for the idle timeout loses the snapshot.
      let limit = Double(server.configuration.limits.idleSeconds)
      if !lock.wait(until: Date(timeIntervalSinceNow: 1)),
        lastProgress.duration(to: .now) > .seconds(limit)
      {
        cancelled = true
        // Cut, so that the part sent never looks whole.
        server.http.loop.execute { [exchange] in exchange.abort() }
      }
    }
    if cancelled { throw Cancelled() }
    room = false
    let piece = bytes
    bytes.removeAll(keepingCapacity: true)
    server.http.loop.execute { [weak self, exchange] in
      let unsent = exchange.sendChunk(piece)
      if unsent <= SnapshotSender.window || exchange.isClosed { self?.drained() }
    }
  }

  /// The client took what the loop held beyond half the window (on the loop's thread).
  private func drained() {
    lock.lock()
    room = true
    lastProgress = .now
    lock.signal()
    lock.unlock()
  }

  /// Stops reading: the client went away.
  func cancel() {
    lock.lock()
    cancelled = true
    lock.signal()
    lock.unlock()
  }
}
