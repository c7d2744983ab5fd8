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
