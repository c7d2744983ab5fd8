/// One event of a `text/event-stream`.
struct ServerSentEvent: Equatable, Sendable {
  /// The `event:` field; `message` when none was given.
  var name = "message"
  /// The `data:` lines, joined with line breaks.
  var data = ""
  /// The `id:` field, if the event had one.
  var id: String?
}

/// Turns the bytes of a `text/event-stream` into events, whatever the pieces they arrive
/// in (the WHATWG rules: lines end with LF, CR LF or CR; `:` starts a comment; a blank
/// line ends an event; an event without data is dropped).
struct ServerSentEventParser {
  private var line: [UInt8] = []
  private var pending = ServerSentEvent()
  private var hasData = false
  private var dataLines: [String] = []
  /// Whether the last byte was a CR, so that an LF right after it ends no second line.
  private var afterCarriageReturn = false
  private var atStart = true

  /// The events that `bytes` completes, in order.
  mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
    var events: [ServerSentEvent] = []
    for byte in bytes {
      if afterCarriageReturn {
        afterCarriageReturn = false
        if byte == 0x0A { continue }
      }
      switch byte {
      case 0x0A:
        endLine(into: &events)
      case 0x0D:
        endLine(into: &events)
        afterCarriageReturn = true
      default:
        line.append(byte)
      }
    }
    return events
  }

  private mutating func endLine(into events: inout [ServerSentEvent]) {
    defer { line.removeAll(keepingCapacity: true) }
    if atStart {
      atStart = false
      if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
    }
    guard !line.isEmpty else {
      if hasData {
        pending.data = dataLines.joined(separator: "\n")
        events.append(pending)
      }
      pending = ServerSentEvent()
      dataLines = []
      hasData = false
      return
    }
    if line[0] == 0x3A { return }  // A comment (a keep-alive).
    let colon = line.firstIndex(of: 0x3A) ?? line.endIndex
    let field = String(decoding: line[..<colon], as: UTF8.self)
    var valueStart = colon < line.endIndex ? line.index(after: colon) : colon
    if valueStart < line.endIndex && line[valueStart] == 0x20 { valueStart += 1 }
    let value = String(decoding: line[valueStart...], as: UTF8.self)
    switch field {
    case "event": pending.name = value
    case "data":
      dataLines.append(value)
      hasData = true
    case "id" where !value.contains("\0"): pending.id = value
    default: break
    }
  }
}
