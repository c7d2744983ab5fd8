/// One request being answered. Made on the loop's thread when a request was read whole;
/// other threads answer it through ``respond(_:)``, which hands the work to the loop; the
/// stream methods run on the loop's thread. Once answered (or its client gone), it lets
/// go of its connection.
final class HTTPExchange: @unchecked Sendable {
  // `@unchecked Sendable`: everything mutable is touched on the loop's thread only.
  let server: HTTPServer
  /// Whether the request is a `HEAD`: answered with the head alone.
  let isHead: Bool
  /// The connection, until the request is answered or the client went away.
  private var connection: HTTPConnection?
  /// Whether the client went away first (loop's thread only).
  private(set) var isClosed = false
  /// Called on the loop's thread when the client of a held request goes away.
  private var onClose: (() -> Void)?
  /// Called on the loop's thread when a stream's queued bytes were all sent.
  var onDrained: (() -> Void)?

  init(server: HTTPServer, connection: HTTPConnection, isHead: Bool) {
    self.server = server
    self.connection = connection
    self.isHead = isHead
  }

  /// Answers with `response`, from any thread.
  func respond(_ response: HTTPResponse) {
    server.loop.execute { self.sendNow(response) }
  }

  /// Answers on the loop's thread.
  func sendNow(_ response: HTTPResponse) {
    guard let connection else { return }
    self.connection = nil
    onClose = nil
    connection.write(response, for: connection.currentHead)
  }

  /// Starts a chunked answer that stays open (a stream), on the loop's thread; `onClose`
  /// runs there if the client goes away first. A `HEAD` request gets the head and the end.
  /// With `keepsConnection`, the connection serves the next request after it (an answer
  /// streamed because it is large).
  func startStream(
    status: Int, headers: [(String, String)], keepsConnection: Bool = false,
    onClose: @escaping () -> Void
  ) {
    guard let connection else { return }
    self.onClose = onClose
    connection.startStream(status: status, headers: headers, keepsConnection: keepsConnection)
    if isHead { endStream() }
  }

  /// Calls ``onDrained`` when what waits unsent falls to `bytes`, not only when all is sent.
  func setDrainThreshold(_ bytes: Int) {
    connection?.setDrainThreshold(bytes)
  }

  /// Holds the request without answering (a long poll), noticing its client leave.
  func hold(onClose: @escaping () -> Void) {
    guard let connection else { return }
    self.onClose = onClose
    connection.hold()
  }

  /// Sends a chunk of a started stream (loop's thread).
  /// - Returns: How many bytes wait unsent on the connection after it.
  @discardableResult
  func sendChunk(_ bytes: [UInt8]) -> Int {
    guard let connection, !isClosed else { return 0 }
    return connection.sendChunk(bytes)
  }

  /// Bytes queued on the connection and not yet taken by the client.
  var unsentBytes: Int { connection?.unsentBytes ?? 0 }

  /// Ends a started stream (loop's thread); `closeWithin` bounds how long a client that
  /// does not read may keep the connection.
  func endStream(closeWithin seconds: Int = 10) {
    guard let connection else { return }
    self.connection = nil
    onClose = nil
    onDrained = nil
    connection.endStream(closeWithin: seconds)
  }

  /// Ends the exchange from the server's side (loop's thread): a held request answers
  /// `response`, a started stream ends; either way the connection closes once what it
  /// holds is sent, and `closed` runs then (at once when the client is already gone).
  func finish(answering response: HTTPResponse, streaming: Bool, closed: @escaping () -> Void) {
    guard let connection, !isClosed else { return closed() }
    connection.onClosed = closed
    if streaming {
      endStream(closeWithin: 5)
    } else {
      var response = response
      response.headers.append(("Connection", "close"))
      sendNow(response)
    }
  }

  /// Whether a stream's head went out (loop's thread).
  var hasStarted: Bool { connection?.phase == .streaming }

  /// Cuts the connection at once, without ending a started answer: a client reading it
  /// sees it cut short, never a truncated answer that looks whole (loop's thread).
  func abort() {
    guard let connection else { return }
    self.connection = nil
    onClose = nil
    onDrained = nil
    connection.close()
  }

  /// The client went away (from the connection, on the loop's thread).
  func clientLeft() {
    isClosed = true
    connection = nil
    let onClose = self.onClose
    self.onClose = nil
    onDrained = nil
    onClose?()
  }

  /// The connection sent everything queued (from the connection, on the loop's thread).
  func drained() { onDrained?() }
}
