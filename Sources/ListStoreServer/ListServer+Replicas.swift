import ListStore
import ListStoreFormats

// Replicas: files that follow lists of this server and write them offline
// (docs/replicas.md).
extension ListServer {
  /// The replica protocol's version this server speaks. A replica's write made under a
  /// later one is answered 426, and waits in the replica's outbox.
  public static let replicaProtocol: Int64 = 1

  /// `POST /v1/replicas`: registers a replica, for a token that may write (a read-only
  /// token's replica pulls and reads, and never registers). The body is empty or
  /// `{"protocol": N}`; the answer gives the replica's number, its range of ids, the
  /// protocol, and the server's position.
  func registerReplica(_ request: HTTPRequest) throws -> HTTPResponse {
    if !bodyIsBlank(request) {
      let body = try JSONBody(request, keys: ["protocol"])
      if let version = try body.integer("protocol") {
        guard version >= 1 else {
          throw APIFailure(400, "badRequest", "\"protocol\" must be a version, from 1")
        }
        guard version <= Self.replicaProtocol else { throw Self.protocolTooNew(version) }
      }
    }
    let replica = try repository.registerReplica()
    let seq = try repository.changeLogPosition()
    let first = replica * Repository.originSpan + 1
    let last = (replica + 1) * Repository.originSpan - 1
    return .json(
      201,
      "{\"replica\":\(replica),\"ids\":{\"from\":\(first),\"through\":\(last)},"
        + "\"protocol\":\(Self.replicaProtocol),\"seq\":\(seq)}")
  }

  /// The answer to a replica whose protocol this server does not speak.
  static func protocolTooNew(_ version: Int64) -> APIFailure {
    APIFailure(
      426, "upgradeRequired",
      "this server speaks the replica protocol \(replicaProtocol), not \(version): "
        + "upgrade the server; the replica's writes wait until then")
  }
}

extension ListServer {
  /// `POST /v1/push`: a replica's writes, applied exactly once under a lock on its record
  /// (`{"replica", "protocol", "ackedThrough", "writes": [...]}`); answers one result per
  /// write, `{"results": [...], "last", "seq"}`.
  func push(_ request: HTTPRequest, grant: Tokens.Grant) throws -> HTTPResponse {
    let body = try JSONBody(request, keys: ["replica", "protocol", "ackedThrough", "writes"])
    guard let replica = try body.integer("replica"), replica >= 1 else {
      throw APIFailure(400, "badRequest", "the body needs \"replica\": the replica's number")
    }
    let version = try body.integer("protocol") ?? 1
    guard version >= 1 else {
      throw APIFailure(400, "badRequest", "\"protocol\" must be a version, from 1")
    }
    let ackedThrough = try body.integer("ackedThrough") ?? 0
    guard ackedThrough >= 0 else {
      throw APIFailure(400, "badRequest", "\"ackedThrough\" must be a write's number, or 0")
    }
    guard let node = body.node("writes"), case .array(let elements) = node.kind else {
      throw APIFailure(400, "badRequest", "the body needs \"writes\": an array of writes")
    }
    var writes: [ReplicaWrite] = []
    writes.reserveCapacity(elements.count)
    do {
      for (index, element) in elements.enumerated() {
        writes.append(
          try ReplicaWire.write(
            element, in: body.bytes, at: "writes[\(index)]", protocolVersion: version))
      }
    } catch {
      throw APIFailure(400, "badRequest", "\(error.message) (nothing was applied)")
    }
    // A later protocol is answered once the whole body is known to be well formed.
    guard version <= Self.replicaProtocol else { throw Self.protocolTooNew(version) }
    if let later = writes.first(where: { $0.protocolVersion > Self.replicaProtocol }) {
      throw Self.protocolTooNew(later.protocolVersion)
    }
    let outcome: PushOutcome
    do {
      outcome = try repository.applyPush(
        replica: replica, ackedThrough: ackedThrough, writes: writes, mayWrite: grant.mayWrite)
    } catch let refusal as PushRefusal {
      throw Self.failure(refusal)
    }
    let results = outcome.results.map { $0.result.json(number: $0.number) }
    return .json(
      200,
      "{\"results\":[" + results.joined(separator: ",") + "],\"last\":\(outcome.last),"
        + "\"seq\":\(outcome.seq)}")
  }

  /// The answer to a push refused whole.
  static func failure(_ refusal: PushRefusal) -> APIFailure {
    switch refusal {
    case .unknownReplica(let replica):
      return APIFailure(
        404, "notFound",
        "no replica \(replica) is registered on this server: register with POST /v1/replicas")
    case .serverBehind(let last, let acked):
      var response = HTTPResponse.error(
        409, "serverBehind",
        "the replica acknowledged write \(acked), but this server applied its writes only "
          + "through \(last): the server's database is older than the replica's last sync "
          + "(restored from a backup?)")
      response.insertFields(",\"last\":\(last)")
      return APIFailure(response)
    case .outOfOrder(let last, let got):
      var response = HTTPResponse.error(
        409, "outOfOrder",
        "write \(got) is not the next: the server applied this replica's writes through "
          + "\(last); send them from \(last + 1), one after another")
      response.insertFields(",\"last\":\(last)")
      return APIFailure(response)
    case .forked(let number):
      var response = HTTPResponse.error(
        409, "replicaForked",
        "write \(number) came with other content than the server applied, or again after "
          + "its result was acknowledged: this replica's file was copied or restored; "
          + "register it again (POST /v1/replicas)")
      response.insertFields(",\"write\":\(number)")
      return APIFailure(response)
    }
  }
}
