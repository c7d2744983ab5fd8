import Testing

@testable import ListStoreClient

@Suite struct ServerSentEventParserTests {
  @Test func eventsAreParsedWhateverThePiecesTheyArriveIn() {
    let stream = Array(
      "\u{FEFF}: keep-alive\n\nevent: snapshot\ndata: {\"a\":1}\n\nid: 7\r\nevent: changes\r\ndata: x\r\ndata:  y\r\n\r\ndata\rid: 8\r\r: comment only\n\nevent: ignored\n\n"
        .utf8)
    let expected = [
      ServerSentEvent(name: "snapshot", data: "{\"a\":1}", id: nil),
      ServerSentEvent(name: "changes", data: "x\n y", id: "7"),
      ServerSentEvent(name: "message", data: "", id: "8"),
    ]
    // Whole, byte by byte, and in random pieces: the same events.
    var whole = ServerSentEventParser()
    #expect(whole.feed(stream) == expected)
    var bytewise = ServerSentEventParser()
    #expect(stream.flatMap { bytewise.feed([$0]) } == expected)
    var random = SystemRandomNumberGenerator()
    for _ in 0..<200 {
      var parser = ServerSentEventParser()
      var events: [ServerSentEvent] = []
      var start = 0
      while start < stream.count {
        let end = min(stream.count, start + Int.random(in: 1...9, using: &random))
        events += parser.feed(stream[start..<end])
        start = end
      }
      #expect(events == expected)
    }
  }
}
