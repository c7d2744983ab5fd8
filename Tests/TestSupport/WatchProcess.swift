import Foundation
import PostgresTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A running `liststore watch LIST --json` (or any program) whose standard output and
/// error are read line by line as they arrive, so that a test waits for the lines it
/// expects rather than for time to pass.
public final class WatchProcess: @unchecked Sendable {
  // `@unchecked Sendable`: the lines are touched only under `lock`; `process` is
  // started in `init` and then only asked about or signalled.
  private let lock = NSCondition()
  private var outputLines: [String] = []
  private var errorLines: [String] = []
  private var openStreams = 2
  /// The process.
  public let process = Process()

  /// Starts `liststore --db location watch list --json`.
  /// - Parameters:
  ///   - list: The list's name.
  ///   - location: The `--db` value.
  ///   - prefix: A command to run it under, such as `ip netns exec NAME`.
  ///   - environment: Variables added to the environment.
  /// - Throws: When the program cannot be started.
  public convenience init(
    list: String, location: String, prefix: [String] = [], environment: [String: String] = [:]
  ) throws {
    try self.init(
      prefix + [liststoreBinary, "--db", location, "watch", list, "--json"],
      environment: environment)
  }

  /// Starts a program.
  /// - Parameters:
  ///   - command: The program's path and its arguments.
  ///   - environment: Variables added to the environment.
  ///   - workingDirectory: Where it runs; this process's own folder unless given.
  /// - Throws: When the program cannot be started.
  public init(
    _ command: [String], environment: [String: String] = [:], workingDirectory: String? = nil
  ) throws {
    process.executableURL = URL(fileURLWithPath: command[0])
    if let workingDirectory {
      process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
    }
    process.arguments = Array(command.dropFirst())
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    for (pipe, isOutput) in [(out, true), (err, false)] {
      let handle = pipe.fileHandleForReading
      Thread.detachNewThread { [self] in
        var pending = Data()
        while true {
          let chunk = handle.availableData
          if chunk.isEmpty { break }
          pending.append(chunk)
          var lines: [String] = []
          while let newline = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending.removeSubrange(pending.startIndex...newline)
          }
          if !lines.isEmpty {
            changing {
              if isOutput { outputLines += lines } else { errorLines += lines }
            }
          }
        }
        if !pending.isEmpty {
          let last = String(decoding: pending, as: UTF8.self)
          changing { isOutput ? outputLines.append(last) : errorLines.append(last) }
        }
        changing { openStreams -= 1 }
      }
    }
  }

  deinit { stop() }

  private func changing(_ body: () -> Void) {
    lock.lock()
    body()
    lock.broadcast()
    lock.unlock()
  }

  /// The lines printed on standard output so far.
  public var lines: [String] { locked { outputLines } }
  /// The lines printed on standard error so far.
  public var errors: [String] { locked { errorLines } }
  /// Standard output so far, one line per line.
  public var output: String { lines.map { $0 + "\n" }.joined() }

  /// Waits until `condition` holds for the output and error lines, checking it again
  /// whenever a line arrives or the process closes its output, for `timeout` seconds
  /// at most (a bound for a test that would otherwise hang).
  /// - Returns: Whether it held.
  @discardableResult
  public func wait(
    timeout: TimeInterval = TestLimits.eventSeconds,
    until condition: (_ lines: [String], _ errors: [String]) -> Bool
  ) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    lock.lock()
    defer { lock.unlock() }
    while !condition(outputLines, errorLines) {
      if openStreams == 0 || !lock.wait(until: deadline) {
        return condition(outputLines, errorLines)
      }
    }
    return true
  }

  /// Waits until standard output replayed (``replayWatch(_:)``) equals `expected`.
  /// - Returns: Whether it did.
  @discardableResult
  public func waitForReplay(
    equal expected: NSDictionary?, timeout: TimeInterval = TestLimits.eventSeconds
  ) -> Bool {
    wait(timeout: timeout) { lines, _ in
      let text = lines.map { $0 + "\n" }.joined()
      return (try? replayWatch(text)) == expected
    }
  }

  /// Ends the process with `signal` (SIGTERM unless told; if it still runs) and waits for
  /// it and its output. A program that does not install its own handler inherits the test
  /// runner's blocked signals and ignores SIGTERM: stop such one (`curl`) with SIGKILL.
  public func stop(signal: Int32 = SIGTERM) {
    if process.isRunning { kill(process.processIdentifier, signal) }
    process.waitUntilExit()
    wait(timeout: TestLimits.exitSeconds) { _, _ in false }
  }

  /// Waits for the process to end by itself and for the last of its output.
  public func waitForExit() {
    process.waitUntilExit()
    wait(timeout: TestLimits.exitSeconds) { _, _ in false }
  }
}

extension WatchProcess {
  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }
}

/// What `liststore show LIST --json` prints for `location`, as an object; `nil` when it
/// fails or prints something else.
/// - Parameters:
///   - list: The list's name.
///   - location: The `--db` value.
/// - Returns: The object.
/// - Throws: When `liststore` cannot be started or prints malformed JSON.
public func showJSON(_ list: String, location: String) throws -> NSDictionary? {
  let shown = try liststore(["show", list, "--json"], database: location)
  guard shown.status == 0 else { return nil }
  return try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? NSDictionary
}
