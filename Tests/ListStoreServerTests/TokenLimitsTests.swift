import Foundation
import PostgresTestSupport
import TestSupport
import Testing

/// The limits of connections and streams, per token and for the whole server: a client
/// over one is told so with a status and a sentence, the other tokens are served, and a
/// slot comes back when its stream ends.
@Suite(.serialized) struct TokenLimitsTests {
  static let hangSeconds = Int(5 * max(1, TestLimits.eventSeconds / 20))

  /// Opens a change stream on `demo` with `token` and reads its answer's head: the
  /// connection, and the head (with the snapshot's event, when it was admitted).
  static func openStream(_ port: Int, token: String) throws -> (RawConnection, String) {
    let connection = try RawConnection(port: port, timeout: hangSeconds)
    connection.send(
      "GET /v1/lists/demo/changes HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n"
        + "Authorization: Bearer \(token)\r\n\r\n")
    // A refusal ends with the connection.
    return (connection, connection.read(until: "event: snapshot"))
  }

  /// Ends a stream from the client's side, and waits for the server to close it: its slot
  /// is free once the connection's end arrived.
  static func end(_ stream: RawConnection) {
    stream.finishSending()
    #expect(stream.waitForClose(milliseconds: Int32(hangSeconds * 1000)))
  }

  @Test func aTokenOverItsStreamsOrConnectionsIsToldAndOthersAreServed() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo"], database: database))
    try Data("A read\nB read\nC read\n".utf8).write(
      to: URL(fileURLWithPath: folder.file("tokens")))
    let server = try ServerProcess(
      location: database,
      arguments: [
        "--tokens", folder.file("tokens"), "--max-streams-per-token", "3",
        "--max-connections-per-token", "5", "--max-streams", "5",
      ])
    defer { #expect(server.stop() == 0, "\(server.output.errors)") }

    var streamsOfA: [RawConnection] = []
    for _ in 0..<3 {
      let (connection, answer) = try Self.openStream(server.port, token: "A")
      #expect(answer.contains("event: snapshot"), "\(answer)")
      streamsOfA.append(connection)
    }
    // A fourth stream of A: 429, with what to do.
    let (_, refused) = try Self.openStream(server.port, token: "A")
    #expect(refused.hasPrefix("HTTP/1.1 429"), "\(refused)")
    #expect(refused.contains("\"tooManyStreams\"") && refused.contains("--max-streams-per-token"))
    #expect(refused.contains("Retry-After: 1"))
    // A's plain requests still go, up to its connections.
    let keptAlive = try RawConnection(port: server.port, timeout: Self.hangSeconds)
    let listsOfA = "GET /v1/lists HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer A\r\n\r\n"
    keptAlive.send(listsOfA)
    #expect(keptAlive.readResponse().hasPrefix("HTTP/1.1 200"))
    let fifth = try RawConnection(port: server.port, timeout: Self.hangSeconds)
    fifth.send(listsOfA)
    #expect(fifth.readResponse().hasPrefix("HTTP/1.1 200"))
    // A sixth connection of A: 429; the ones it has serve it still.
    let sixth = try RawConnection(port: server.port, timeout: Self.hangSeconds)
    sixth.send(listsOfA)
    let tooMany = sixth.readAll()
    #expect(tooMany.hasPrefix("HTTP/1.1 429"), "\(tooMany)")
    #expect(tooMany.contains("\"tooManyConnections\""))
    keptAlive.send(listsOfA)
    #expect(keptAlive.readResponse().hasPrefix("HTTP/1.1 200"))

    // B is served beside A, up to the server's five streams; then C hears that the
    // server is full: 503.
    var streamsOfB: [RawConnection] = []
    for _ in 0..<2 {
      let (connection, answer) = try Self.openStream(server.port, token: "B")
      #expect(answer.contains("event: snapshot"), "\(answer)")
      streamsOfB.append(connection)
    }
    let (_, full) = try Self.openStream(server.port, token: "C")
    #expect(full.hasPrefix("HTTP/1.1 503") && full.contains("--max-streams"), "\(full)")
    let health = try http("GET", server.base + "/healthz")
    #expect(health.status == 200)

    // A stream that ends gives its slot back: to its token, and to the server.
    Self.end(streamsOfA.removeFirst())
    let (streamOfC, again) = try Self.openStream(server.port, token: "C")
    defer { withExtendedLifetime(streamOfC) {} }
    #expect(again.contains("event: snapshot"), "\(again)")
    let (_, stillFull) = try Self.openStream(server.port, token: "A")
    #expect(stillFull.hasPrefix("HTTP/1.1 503"), "\(stillFull)")
    Self.end(streamsOfB.removeFirst())
    let (_, back) = try Self.openStream(server.port, token: "A")
    #expect(back.contains("event: snapshot"), "\(back)")
  }

  /// Twenty replicas on one token, each following two lists and writing on a connection
  /// of its own, fit the default limits.
  @Test func twentyReplicasOnOneTokenFitTheDefaults() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    for name in ["demo", "other"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database))
    }
    try Data("APP write *\n".utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let server = try ServerProcess(
      location: database, arguments: ["--tokens", folder.file("tokens")])
    defer { #expect(server.stop() == 0, "\(server.output.errors)") }
    let snapshot = try http(
      "GET", server.base + "/v1/lists/demo", headers: ["Authorization": "Bearer APP"])
    let sections = snapshot.object?["sections"] as? [[String: Any]]
    let section = try #require(sections?.first?["id"] as? Int)
    var held: [RawConnection] = []
    for replica in 0..<20 {
      for list in ["demo", "other"] {
        let connection = try RawConnection(port: server.port, timeout: Self.hangSeconds)
        connection.send(
          "GET /v1/lists/\(list)/changes HTTP/1.1\r\nHost: test\r\n"
            + "Accept: text/event-stream\r\nAuthorization: Bearer APP\r\n\r\n")
        let answer = connection.read(until: "event: snapshot")
        #expect(answer.contains("event: snapshot"), "replica \(replica), \(list): \(answer)")
        held.append(connection)
      }
      let writer = try RawConnection(port: server.port, timeout: Self.hangSeconds)
      let body = #"{"value":"from replica \#(replica)"}"#
      writer.send(
        "POST /v1/lists/demo/sections/\(section)/items HTTP/1.1\r\nHost: test\r\n"
          + "Authorization: Bearer APP\r\nContent-Type: application/json\r\n"
          + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
      let written = writer.readResponse()
      #expect(written.hasPrefix("HTTP/1.1 201"), "replica \(replica): \(written)")
      held.append(writer)
    }
    // Every stream has every replica's item.
    for stream in held.indices where stream % 3 == 0 {
      let seen = held[stream].read(until: "from replica 19")
      #expect(seen.contains("from replica 19"))
    }
  }
}
