import Foundation
import Testing

/// `liststore serve` in a process of its own, on a free loopback port.
public final class ServerProcess: @unchecked Sendable {
  /// The process and its output lines.
  public let output: WatchProcess
  /// The port it listens on.
  public let port: Int

  /// `http` or, serving TLS, `https`.
  public let scheme: String

  /// `http://127.0.0.1:PORT` (or `https://`).
  public var base: String { "\(scheme)://127.0.0.1:\(port)" }

  /// Starts `liststore --db location serve --listen 127.0.0.1:0 arguments…` and waits for
  /// its `listening on` line.
  /// - Parameters:
  ///   - location: The `--db` value.
  ///   - arguments: More arguments of `serve`.
  ///   - environment: Variables added to the environment.
  ///   - workingDirectory: Where it runs (relative paths in `arguments` start there); this
  ///     process's own folder unless given.
  ///   - descriptorLimit: A lower limit of open files for the server (`ulimit -n`).
  ///   - port: The port to listen on (0: a free one); a restarted server takes its old one.
  /// - Throws: When it does not start listening.
  public init(
    location: String, arguments: [String] = [], environment: [String: String] = [:],
    workingDirectory: String? = nil, descriptorLimit: Int? = nil, port: Int = 0
  ) throws {
    let command =
      [liststoreBinary, "--db", location, "serve", "--listen", "127.0.0.1:\(port)"] + arguments
    // With a limit, through a shell that sets it and then becomes the server.
    output = try WatchProcess(
      descriptorLimit.map { ["/bin/sh", "-c", "ulimit -n \($0) && exec \"$0\" \"$@\""] + command }
        ?? command,
      environment: environment, workingDirectory: workingDirectory)
    output.wait { lines, _ in !lines.isEmpty }
    guard let line = output.lines.first, line.hasPrefix("listening on http"),
      line.contains("://127.0.0.1:"), let port = Int(line.split(separator: ":").last ?? "")
    else {
      output.stop()
      throw ServerStartError(description: "serve did not start: \(output.lines) \(output.errors)")
    }
    self.port = port
    scheme = line.hasPrefix("listening on https") ? "https" : "http"
  }

  /// Stops it with SIGTERM and returns its exit status.
  @discardableResult
  public func stop() -> Int32 {
    output.stop()
    return output.process.terminationStatus
  }
}

/// Why a server process did not start.
public struct ServerStartError: Error, CustomStringConvertible {
  /// What happened.
  public var description: String
}

/// An HTTP response as the tests read it.
public struct HTTPResult: CustomStringConvertible, Sendable {
  /// The status code.
  public var status: Int
  /// The headers, by lowercased name.
  public var headers: [String: String]
  /// The body.
  public var body: String

  /// The body parsed as a JSON object.
  public var object: [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
  }

  /// The status, headers and body, for failure messages.
  public var description: String { "\(status) \(headers) \(body)" }
}

/// Makes one request with the `curl` program and returns the response.
/// - Parameters:
///   - method: `GET`, `POST`, …
///   - url: The whole URL.
///   - body: The body, sent as JSON unless `headers` names another type.
///   - headers: Request headers.
/// - Returns: The status, headers and body.
/// - Throws: When `curl` cannot run or gets no HTTP response.
public func http(
  _ method: String, _ url: String, body: String? = nil, headers: [String: String] = [:]
) throws -> HTTPResult {
  var arguments = ["-s", "-i", "-X", method, "--max-time", "30", url]
  var headers = headers
  if body != nil && headers["Content-Type"] == nil {
    headers["Content-Type"] = "application/json"
  }
  for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
    arguments += ["-H", "\(name): \(value)"]
  }
  if body != nil { arguments += ["--data-binary", "@-"] }
  let result = try run("/usr/bin/env", ["curl"] + arguments, input: body)
  var text = result.stdout
  // Interim responses (100 Continue) come first.
  while text.hasPrefix("HTTP/1.1 100") {
    guard let end = text.range(of: "\r\n\r\n") else { break }
    text = String(text[end.upperBound...])
  }
  guard let end = text.range(of: "\r\n\r\n") else {
    throw ServerStartError(description: "no HTTP response from \(url): \(result)")
  }
  let head = text[..<end.lowerBound].components(separatedBy: "\r\n")
  let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
  var parsed: [String: String] = [:]
  for line in head.dropFirst() {
    guard let colon = line.firstIndex(of: ":") else { continue }
    parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...]
      .trimmingCharacters(in: .whitespaces)
  }
  let answer = HTTPResult(status: status, headers: parsed, body: String(text[end.upperBound...]))
  // Every answer of the tests' requests fits the API's description.
  if let components = URLComponents(string: url) {
    let problems = OpenAPIValidator.problems(
      method: method, path: components.percentEncodedPath, status: status,
      contentType: parsed["content-type"], body: Array(answer.body.utf8))
    for problem in problems {
      Issue.record(Comment(rawValue: "docs/openapi.json: \(problem)"))
    }
  }
  return answer
}

/// A server-sent event.
public struct ServerSentEvent: Equatable, Sendable {
  /// Its `event:` field (`message` when it has none).
  public var event: String
  /// Its `id:` field.
  public var id: String?
  /// Its `data:` lines, joined by newlines.
  public var data: String

  /// An event with these fields.
  public init(event: String, id: String?, data: String) {
    self.event = event
    self.id = id
    self.data = data
  }
}

/// A change stream read by `curl -sN`, parsed into events as they arrive.
public final class EventStreamClient: @unchecked Sendable {
  /// The `curl` process and its output lines.
  public let process: WatchProcess

  /// Opens `url` with `Accept: text/event-stream` and `headers`.
  public init(_ url: String, headers: [String: String] = [:]) throws {
    var arguments = ["-sN", "-H", "Accept: text/event-stream"]
    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
    process = try WatchProcess(["/usr/bin/env", "curl"] + arguments + [url])
  }

  /// The events received so far.
  public var events: [ServerSentEvent] { Self.parse(process.lines) }

  /// Parses the lines of a stream into its whole events (comments and `retry:` left out).
  public static func parse(_ lines: [String]) -> [ServerSentEvent] {
    var events: [ServerSentEvent] = []
    var current: ServerSentEvent?
    for line in lines {
      if line.isEmpty {
        if let event = current { events.append(event) }
        current = nil
      } else if line.hasPrefix(":") || line.hasPrefix("retry:") {
        continue
      } else if let colon = line.firstIndex(of: ":") {
        let field = String(line[..<colon])
        var value = String(line[line.index(after: colon)...])
        if value.hasPrefix(" ") { value.removeFirst() }
        var event = current ?? ServerSentEvent(event: "message", id: nil, data: "")
        switch field {
        case "event": event.event = value
        case "id": event.id = value
        case "data": event.data += (event.data.isEmpty ? "" : "\n") + value
        default: break
        }
        current = event
      }
    }
    return events
  }

  /// Waits until `condition` holds for the events (bounded by ``TestLimits``).
  @discardableResult
  public func wait(until condition: ([ServerSentEvent]) -> Bool) -> Bool {
    process.wait { lines, _ in condition(Self.parse(lines)) }
  }

  /// What replaying the events gives: the last snapshot or reset with the changes after
  /// it applied, without its `seq` (as `show --json` prints it).
  public func replayed() throws -> NSDictionary? {
    try Self.replay(events)
  }

  /// See ``replayed()``.
  public static func replay(_ events: [ServerSentEvent]) throws -> NSDictionary? {
    guard let start = events.lastIndex(where: { $0.event == "snapshot" || $0.event == "reset" })
    else { return nil }
    guard
      var snapshot = try JSONSerialization.jsonObject(with: Data(events[start].data.utf8))
        as? [String: Any]
    else { return nil }
    snapshot["seq"] = nil
    var lines = [
      String(
        decoding: try JSONSerialization.data(withJSONObject: ["snapshot": snapshot]), as: UTF8.self)
    ]
    for event in events[(start + 1)...] where event.event == "changes" {
      lines.append("{\"changes\":" + event.data + "}")
    }
    return try replayWatch(lines.joined(separator: "\n"))
  }

  /// Ends `curl` (with SIGKILL: it inherits the test runner's blocked SIGTERM).
  public func stop() { process.stop(signal: SIGKILL) }
}

/// A TCP connection to a loopback port that sends exactly the bytes a test gives, for
/// requests `curl` would not send (no length, malformed, cut off, never finished).
public final class RawConnection: Sendable {
  private let fd: Int32

  /// Connects to `127.0.0.1:port`.
  /// - Parameters:
  ///   - port: The server's port.
  ///   - timeout: Seconds after which a read gives up.
  ///   - receiveBuffer: The socket's receive buffer in bytes (a small one makes a client
  ///     that reads slowly), or the system's.
  /// - Throws: When the connection cannot be made.
  public init(port: Int, timeout: Int = 30, receiveBuffer: Int32? = nil) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard fd >= 0, connected == 0 else {
      close(fd)
      throw ServerStartError(description: "cannot connect to port \(port): errno \(errno)")
    }
    var limit = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  /// Sends `text`'s bytes.
  public func send(_ text: String) {
    let bytes = Array(text.utf8)
    var sent = 0
    while sent < bytes.count {
      let count = bytes[sent...].withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard count > 0 else { return }
      sent += count
    }
  }

  /// Sends `count` bytes of filler (a body), until they are sent or the server stops
  /// taking them; returns how many it took.
  @discardableResult
  public func sendFiller(_ count: Int) -> Int {
    let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
    var sent = 0
    while sent < count {
      let taken = chunk[..<min(chunk.count, count - sent)].withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard taken > 0 else { break }
      sent += taken
    }
    return sent
  }

  /// Waits up to `milliseconds` for the server to close the connection (what it sends
  /// first is dropped); `true` once it did, `false` when the time passed first.
  public func waitForClose(milliseconds: Int32) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&descriptor, 1, milliseconds) > 0 else { return false }
    var buffer = [UInt8](repeating: 0, count: 65536)
    let count = buffer.withUnsafeMutableBytes {
      recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
    }
    if count > 0 { return waitForClose(milliseconds: milliseconds) }
    return count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
  }

  /// Whether the server closed the connection: a read gets its end (or a reset) before the
  /// read times out; what it sends before is dropped.
  public func isClosedByServer() -> Bool {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count > 0 { continue }
      return count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
    }
  }

  /// Closes the sending half: the server reads the end of the request.
  public func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

  /// Reads until the server closes the connection (or a read times out), at most `bytes`
  /// every `interval`: a client that reads slowly.
  public func readAll(atMost bytes: Int, every interval: Duration) -> String {
    var read: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: bytes)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      read += buffer[..<count]
      // The pace of the attack, not a wait for something to happen.
      Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18)
    }
    return String(decoding: read, as: UTF8.self)
  }

  /// Reads until the server closes the connection (or the read times out).
  public func readAll() -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Reads until what was read contains `marker` (or the connection ends, or a read
  /// times out), and returns it all.
  public func read(until marker: String) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !String(decoding: bytes, as: UTF8.self).contains(marker) {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Reads one response: its head, then as many body bytes as its Content-Length says
  /// (none for the answer to a `HEAD`, `bodyless`).
  public func readResponse(bodyless: Bool = false) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    func complete() -> Bool {
      let text = String(decoding: bytes, as: UTF8.self)
      guard let end = text.range(of: "\r\n\r\n") else { return false }
      if bodyless { return true }
      let head = text[..<end.lowerBound].lowercased()
      guard
        let line = head.components(separatedBy: "\r\n").first(where: {
          $0.hasPrefix("content-length:")
        }),
        let length = Int(
          line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
      else { return true }
      return text[end.upperBound...].utf8.count >= length
    }
    while !complete() {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
