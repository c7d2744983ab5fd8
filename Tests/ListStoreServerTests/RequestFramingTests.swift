import TestSupport
import Testing

@testable import ListStoreServer

/// The server's own reading of request heads and chunked bodies (RFC 9112), strict where
/// two readers could disagree about where a request ends.
@Suite struct RequestFramingTests {
  static func parse(_ text: String, limit: Int = 65536) throws(HeadError) -> RequestHead.Parsed {
    try RequestHead.parse(Array(text.utf8), limit: limit)
  }

  static func head(_ text: String) throws -> RequestHead {
    guard case .head(let head, let length) = try parse(text) else {
      Issue.record("incomplete: \(text.debugDescription)")
      throw HeadError.bad("incomplete")
    }
    #expect(length == text.utf8.count, "\(text.debugDescription)")
    return head
  }

  @Test func aPlainHeadIsReadWithItsFieldsAndFraming() throws {
    let head = try Self.head(
      "POST /v1/lists/a%20b/batch?report=message HTTP/1.1\r\nHost: x\r\n"
        + "Content-Type:  application/json \r\nContent-Length: 12\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
    #expect(head.method == "POST")
    #expect(head.target == "/v1/lists/a%20b/batch?report=message")
    #expect(head.minorVersion == 1)
    #expect(head.field("content-type") == "application/json")
    #expect(head.field("x-a") == "1, 2")
    #expect(head.framing == .length(12))
    #expect(head.keepAlive && !head.expectsContinue)
  }

  @Test func framingKeepAliveAndExpectations() throws {
    #expect(try Self.head("GET / HTTP/1.1\r\nHost: x\r\n\r\n").framing == .none)
    #expect(
      try Self.head("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").framing == .none)
    #expect(
      try Self.head("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n").framing
        == .length(5))
    #expect(
      try Self.head("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n").framing
        == .chunked)
    #expect(try !Self.head("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").keepAlive)
    #expect(try !Self.head("GET / HTTP/1.0\r\n\r\n").keepAlive)
    #expect(try Self.head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
    #expect(
      try Self.head(
        "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n"
      )
      .expectsContinue)
    // Bare LF line ends, and empty lines before the request line, are read (RFC 9112 §2.2).
    #expect(try Self.head("\r\n\nGET / HTTP/1.1\nHost: x\n\n").method == "GET")
  }

  @Test func incompleteHeadsWaitAndOversizedOnesAreRefused() throws {
    let full = "GET /v1/lists HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer T\r\n\r\n"
    let bytes = Array(full.utf8)
    for cut in 0..<bytes.count {
      #expect(try RequestHead.parse(bytes[..<cut], limit: 65536) == .incomplete, "cut at \(cut)")
    }
    #expect(throws: HeadError.self) { try Self.parse(full, limit: 20) }
    #expect(throws: HeadError.self) {
      try Self.parse(
        "GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 100), limit: 64)
    }
  }

  /// Shapes that let a front end and a back end split requests differently: each is
  /// refused, with the status RFC 9112 gives it.
  @Test(arguments: [
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    (
      "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n",
      501
    ),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\n Content-Length: 3\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\rX-A: b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", 417),
  ])
  func ambiguousHeadsAreRefused(text: String, status: Int) {
    #expect(performing: { try Self.parse(text) }, throws: { ($0 as? HeadError)?.status == status })
  }

  /// Random heads, and random edits of them, never trap; what parses takes exactly its
  /// head, and no prefix of it parses.
  @Test func randomHeadsNeverTrapAndParseTheSameInAnyPieces() throws {
    let seed = testSeed(0x4EAD_F00D)
    var random = SeededGenerator(seed: seed)
    let lines = [
      "GET / HTTP/1.1", "POST /v1/lists/x/batch HTTP/1.1", "GET /a HTTP/1.0", "Host: x",
      "Content-Length: 5", "Content-Length: 7", "Content-Length: 5, 5",
      "Transfer-Encoding: chunked",
      "Transfer-Encoding: gzip", "Connection: close", "X-A: b", "Expect: 100-continue",
      " folded", "X-B:\tc\t", "",
    ]
    var parsed = 0
    for round in 0..<scaled(3000) {
      // A head of random lines, then (often) one byte changed, added or removed.
      var text = Array(lines[Int.random(in: 0...2, using: &random)].utf8) + [13, 10]
      for _ in 0..<Int.random(in: 0...5, using: &random) {
        text += Array((lines.randomElement(using: &random) ?? "").utf8)
        text += Bool.random(using: &random) ? [13, 10] : [10]
      }
      text += [13, 10] + Array("next".utf8)
      if Int.random(in: 0..<3, using: &random) == 0 {
        let at = Int.random(in: 0..<text.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: text[at] = UInt8.random(in: 0...255, using: &random)
        case 1: text.insert(UInt8.random(in: 0...255, using: &random), at: at)
        default: text.remove(at: at)
        }
      }
      let whole = Result { () throws(HeadError) in try RequestHead.parse(text, limit: 256) }
      guard case .success(.head(let head, let length)) = whole else { continue }
      parsed += 1
      // The head ends at an empty line, and no prefix short of it parses.
      let end = Array(text[..<length].suffix(3))
      #expect(
        end.suffix(2) == [10, 10] || end == [10, 13, 10], "seed \(seed) round \(round): \(end)")
      let cut = Int.random(in: 0..<length, using: &random)
      let prefix = Result { () throws(HeadError) in try RequestHead.parse(text[..<cut], limit: 256)
      }
      if case .success(.head) = prefix {
        Issue.record("seed \(seed) round \(round): a prefix of \(cut) bytes parsed as a head")
      }
      #expect(try RequestHead.parse(text, limit: 256) == .head(head, length: length))
    }
    // The generator makes heads that parse, not only noise.
    #expect(parsed > scaled(3000) / 10, "only \(parsed) heads parsed")
  }

  @Test func aChunkedBodyDecodesTheSameInAnyPieces() throws {
    let seed = testSeed(0xC4_0C4E)
    var random = SeededGenerator(seed: seed)
    for round in 0..<scaled(500) {
      var body: [UInt8] = []
      var wire: [UInt8] = []
      for _ in 0..<Int.random(in: 0...5, using: &random) {
        let chunk = (0..<Int.random(in: 1...40, using: &random)).map { _ in
          UInt8.random(in: 0...255, using: &random)
        }
        body += chunk
        let size = String(chunk.count, radix: 16, uppercase: Bool.random(using: &random))
        let ext = Bool.random(using: &random) ? ";name=value" : ""
        wire += Array((size + ext + "\r\n").utf8) + chunk + Array("\r\n".utf8)
      }
      wire += Array(("0\r\n" + (Bool.random(using: &random) ? "Trailer: x\r\n" : "") + "\r\n").utf8)
      let extra = Array("GET / HTTP/1.1\r\n".utf8)
      wire += extra
      // Fed in random pieces, as reads deliver them.
      var decoder = ChunkedDecoder(limit: 1 << 20)
      var decoded: [UInt8] = []
      var pending: [UInt8] = []
      var offset = 0
      while !decoder.isComplete && offset < wire.count {
        let step = Int.random(in: 1...9, using: &random)
        pending += wire[offset..<min(wire.count, offset + step)]
        offset = min(wire.count, offset + step)
        let used = try decoder.decode(pending[...], into: &decoded)
        pending.removeFirst(used)
      }
      #expect(decoder.isComplete, "seed \(seed) round \(round)")
      #expect(decoded == body, "seed \(seed) round \(round)")
      // What follows the body is the next request's, untouched.
      #expect(pending + wire[offset...] == extra[...], "seed \(seed) round \(round)")
    }
  }

  @Test func malformedOrOversizedChunkedBodiesAreRefused() {
    for (wire, status) in [
      ("zz\r\nabc\r\n0\r\n\r\n", 400), ("3\r\nabcX0\r\n\r\n", 400), ("-3\r\nabc\r\n", 400),
      ("3\rabc\r\n", 400), ("100\r\n", 413), ("\r\n", 400),
    ] {
      var decoder = ChunkedDecoder(limit: 16)
      var body: [UInt8] = []
      #expect(
        "\(wire.debugDescription)",
        performing: { _ = try decoder.decode(Array(wire.utf8)[...], into: &body) },
        throws: { ($0 as? HeadError)?.status == status })
    }
  }
}
