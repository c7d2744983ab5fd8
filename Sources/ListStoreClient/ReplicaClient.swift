import CurlKit
import FoundationEssentials
import ListStore

/// Why a sync stopped, in the classes a caller acts on (the CLI's exit codes).
package struct ReplicaSyncError: Error, CustomStringConvertible, Sendable {
  package enum Kind: Sendable, Equatable {
    /// The server cannot be reached, or answers 5xx: try again later (75).
    case unreachable
    /// The server does not speak the replica's protocol (426): the writes wait (76).
    case protocolTooNew
    /// The token is missing, unknown or revoked (77).
    case unauthorized
    /// Anything else (1).
    case other
  }

  package var kind: Kind
  package var description: String

  package init(_ kind: Kind, _ description: String) {
    self.kind = kind
    self.description = description
  }
}

/// What one sync did.
package struct ReplicaSyncSummary: Sendable, Equatable {
  package var pushed = 0
  package var rejected: [RejectedWrite] = []
  package var pulled = 0
  package var seq: Int64 = 0
  package var reset = false
}

/// A replica's requests to its server: registration, push, pull (docs/replicas.md).
package struct ReplicaClient: Sendable {
  let base: String
  let token: String?
  let http: HTTPClient

  package init(server: String, token: String?) throws {
    base = server.hasSuffix("/") ? String(server.dropLast()) : server
    self.token = token
    do {
      http = try HTTPClient()
    } catch {
      throw ReplicaSyncError(.other, "\(error)")
    }
  }

  /// Sends a request; answers its status and parsed JSON body.
  private func send(_ method: String, _ path: String, body: String? = nil) throws
    -> (status: Int, bytes: [UInt8], json: JSONSyntax.Node?)
  {
    var headers: [(name: String, value: String)] = [("Accept", "application/json")]
    if let token { headers.append(("Authorization", "Bearer \(token)")) }
    if body != nil { headers.append(("Content-Type", "application/json")) }
    let response: HTTPClient.Response
    do {
      response = try http.perform(
        HTTPClient.Request(
          method: method, url: base + path, headers: headers, body: body.map { Array($0.utf8) },
          timeout: .seconds(120)))
    } catch {
      throw ReplicaSyncError(.unreachable, "\(base) cannot be reached: \(error)")
    }
    let json = try? JSONSyntax.parse(response.body)
    let sentence = json.flatMap {
      Self.member($0, "error", response.body)?.string(in: response.body)
    }
    switch response.status {
    case 200..<300: return (response.status, response.body, json)
    case 401:
      throw ReplicaSyncError(
        .unauthorized,
        "\(base) does not accept the token: give a new one with --token or LISTSTORE_TOKEN")
    case 426:
      throw ReplicaSyncError(.protocolTooNew, sentence ?? "the server needs a newer replica")
    case 500...:
      throw ReplicaSyncError(.unreachable, "\(base) answered \(response.status): \(sentence ?? "")")
    default:
      return (response.status, response.body, json)
    }
  }

  static func member(_ node: JSONSyntax.Node, _ key: String, _ bytes: [UInt8]) -> JSONSyntax.Node? {
    guard case .object(let pairs) = node.kind else { return nil }
    return pairs.first { $0.key == key }?.value
  }

  static func integer(_ node: JSONSyntax.Node?, _ key: String, _ bytes: [UInt8]) -> Int64? {
    node.flatMap { member($0, key, bytes) }.flatMap { Int64($0.text(in: bytes)) }
  }

  /// Registers a replica; `nil` when the token may only read (a read-only replica).
  package func register() throws -> Int64? {
    let answer = try send("POST", "/v1/replicas", body: "{\"protocol\":1}")
    if answer.status == 403 { return nil }
    guard answer.status == 201, let number = Self.integer(answer.json, "replica", answer.bytes)
    else { throw ReplicaSyncError(.other, "registration failed (\(answer.status))") }
    return number
  }

  /// The ids of the lists of these names.
  package func listIDs(_ names: [String]) throws -> [Int64] {
    let answer = try send("GET", "/v1/lists")
    guard answer.status == 200, let json = answer.json,
      case .array(let lists)? = Self.member(json, "lists", answer.bytes)?.kind
    else { throw ReplicaSyncError(.other, "the server's lists cannot be read (\(answer.status))") }
    var ids: [String: Int64] = [:]
    for list in lists {
      if let name = Self.member(list, "name", answer.bytes)?.string(in: answer.bytes),
        let id = Self.integer(list, "id", answer.bytes)
      {
        ids[name] = id
      }
    }
    return try names.map { name in
      guard let id = ids[name] else {
        throw ReplicaSyncError(.other, "\(base) has no list named \(quoted(name)) for this token")
      }
      return id
    }
  }

  /// Pushes the writes; answers each one's result.
  package func push(replica: Int64, ackedThrough: Int64, writes: [OutboxWrite]) throws
    -> [(number: Int64, result: ReplicaResult)]
  {
    let body =
      "{\"replica\":\(replica),\"protocol\":1,\"ackedThrough\":\(ackedThrough),\"writes\":["
      + writes.map(\.json).joined(separator: ",") + "]}"
    let answer = try send("POST", "/v1/push", body: body)
    guard answer.status == 200, let json = answer.json,
      case .array(let results)? = Self.member(json, "results", answer.bytes)?.kind
    else {
      let sentence = answer.json.flatMap { Self.member($0, "error", answer.bytes) }?
        .string(in: answer.bytes)
      throw ReplicaSyncError(.other, "the push was refused: \(sentence ?? "\(answer.status)")")
    }
    return results.compactMap { node in
      guard let number = Self.integer(node, "n", answer.bytes) else { return nil }
      if let seq = Self.integer(node, "seq", answer.bytes) { return (number, .applied(seq: seq)) }
      let code = Self.member(node, "code", answer.bytes)?.string(in: answer.bytes) ?? "invalid"
      let error = Self.member(node, "error", answer.bytes)?.string(in: answer.bytes) ?? ""
      return (number, .rejected(ReplicaRejection(code, error)))
    }
  }

  /// Pulls what changed after `after` (everything when `nil`).
  package func pull(lists: [Int64]?, after: Int64?, wait: Int = 0) throws
    -> (seq: Int64, reset: Bool, rows: [PulledRow])
  {
    var query = ["wait=\(wait)"]
    if let lists { query.append("lists=" + lists.map(String.init).joined(separator: ",")) }
    if let after { query.append("after=\(after)") }
    let answer = try send("GET", "/v1/changes?" + query.joined(separator: "&"))
    let bytes = answer.bytes
    guard answer.status == 200, let json = answer.json,
      let seq = Self.integer(json, "seq", bytes),
      case .array(let nodes)? = Self.member(json, "rows", bytes)?.kind
    else { throw ReplicaSyncError(.other, "the pull failed (\(answer.status))") }
    let reset = Self.member(json, "reset", bytes).map { $0.text(in: bytes) == "true" } ?? false
    var rows: [PulledRow] = []
    rows.reserveCapacity(nodes.count)
    for node in nodes {
      guard let list = Self.integer(node, "list", bytes) else { continue }
      let deleted = Self.member(node, "deleted", bytes) != nil
      let position = Self.member(node, "position", bytes)?.string(in: bytes) ?? ""
      if let item = Self.integer(node, "item", bytes) {
        if deleted {
          rows.append(.itemDeleted(list: list, id: item))
        } else if let section = Self.integer(node, "section", bytes),
          let value = Self.member(node, "value", bytes)
        {
          rows.append(
            .item(
              list: list, id: item, section: section, position: position,
              value: JSONText.singleLine(value.text(in: bytes))))
        }
      } else if let section = Self.integer(node, "section", bytes) {
        if deleted {
          rows.append(.sectionDeleted(list: list, id: section))
        } else if let metadata = Self.member(node, "metadata", bytes) {
          rows.append(
            .section(
              list: list, id: section, position: position,
              metadata: JSONText.singleLine(metadata.text(in: bytes))))
        }
      } else if deleted {
        rows.append(.listDeleted(id: list))
      } else if let name = Self.member(node, "name", bytes)?.string(in: bytes) {
        rows.append(.list(id: list, name: name))
      }
    }
    return (seq, reset, rows)
  }
}

/// Clone and sync of a replica's file over HTTP.
package enum ReplicaSync {
  /// Makes `path` a replica of `server`, following the lists named (every list the token
  /// may read when none): built in a temporary file beside it, renamed into place whole.
  package static func clone(server: String, path: String, lists names: [String], token: String?)
    throws -> ReplicaSyncSummary
  {
    let client = try ReplicaClient(server: server, token: token)
    let lists = names.isEmpty ? nil : try client.listIDs(names)
    let number = try client.register()
    let temporary = path + ".cloning-\(ProcessInfo.processInfo.processIdentifier)"
    defer {
      for suffix in ["", "-wal", "-shm"] {
        try? FileManager.default.removeItem(atPath: temporary + suffix)
      }
    }
    var summary = ReplicaSyncSummary()
    do {
      let repository = try Repository(path: temporary)
      try repository.makeReplica(
        server: server, number: number ?? 0, lists: lists, seq: 0, readOnly: number == nil)
      let pulled = try client.pull(lists: lists, after: nil)
      try repository.applyPull(seq: pulled.seq, reset: true, rows: pulled.rows)
      summary.pulled = pulled.rows.count
      summary.seq = pulled.seq
      summary.reset = true
    }
    guard !FileManager.default.fileExists(atPath: path) else {
      throw ReplicaSyncError(.other, "\(path) exists: clone into a new file")
    }
    try FileManager.default.moveItem(atPath: temporary, toPath: path)
    return summary
  }

  /// One sync of a replica's file: push, record, pull, apply.
  package static func sync(_ repository: Repository, token: String?) throws -> ReplicaSyncSummary {
    guard let record = try repository.replicaRecord() else {
      throw ReplicaSyncError(
        .other, "\(repository.path) is not a replica: make one with 'liststore clone'")
    }
    let client = try ReplicaClient(server: record.server, token: token)
    var summary = ReplicaSyncSummary()
    let writes = record.readOnly ? [] : try repository.outboxToPush()
    if !writes.isEmpty {
      let results = try client.push(
        replica: record.number, ackedThrough: record.ackedThrough, writes: writes)
      summary.rejected = try repository.recordPushResults(
        results, at: Date().formatted(.iso8601))
      summary.pushed = results.count
    }
    let pulled = try client.pull(lists: record.lists, after: record.seq)
    try repository.applyPull(seq: pulled.seq, reset: pulled.reset, rows: pulled.rows)
    summary.pulled = pulled.rows.count
    summary.seq = pulled.seq
    summary.reset = pulled.reset
    return summary
  }
}
