import Foundation
import ListStoreTesting
import PostgresTestSupport

/// A fresh folder under the system's temporary directory, removed by `remove()`; named
/// after this process, so that the next test process removes what a killed one left.
public struct TemporaryDirectory: Sendable {
  /// The folder's absolute path.
  public let path: String

  /// Creates a new, empty folder.
  public init() {
    let parent = NSTemporaryDirectory()
    let made = OwnedFolder.make(prefix: "liststore-tests", in: parent)
    path = made ?? parent + "/liststore-tests-\(getpid())-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  /// A path inside the folder.
  public func file(_ name: String) -> String { path + "/" + name }

  /// Deletes the folder and everything in it, making read-only files writable first.
  public func remove() {
    _ = try? run("/bin/chmod", ["-R", "u+w", path])
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// What a finished process printed and how it exited.
public struct ProcessResult: Sendable, CustomStringConvertible {
  /// The exit status (or 128 + signal number when a signal ended it).
  public var status: Int32
  /// Everything written to standard output.
  public var stdout: String
  /// Everything written to standard error.
  public var stderr: String

  /// Standard output split into lines, without the final empty one.
  public var lines: [String] {
    stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast(
      stdout.hasSuffix("\n") ? 1 : 0
    )
    .map(String.init)
  }

  /// Status and both outputs, for failure messages.
  public var description: String { "status \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

/// Runs a program to completion.
/// - Parameters:
///   - executable: The program's path.
///   - arguments: Its arguments.
///   - environment: Variables added to (or replacing) this process's environment.
///   - input: Text for its standard input (empty input when `nil`).
///   - workingDirectory: Where it runs; this process's directory by default.
/// - Returns: Its status and output.
/// - Throws: When the program cannot be started.
public func run(
  _ executable: String, _ arguments: [String], environment: [String: String] = [:],
  input: String? = nil, workingDirectory: String? = nil
) throws -> ProcessResult {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
  let out = Pipe()
  let err = Pipe()
  let inPipe = Pipe()
  process.standardOutput = out
  process.standardError = err
  process.standardInput = inPipe
  try process.run()
  // Drain both pipes concurrently so a large output cannot block the child.
  let outData = LockedData()
  let errData = LockedData()
  let group = DispatchGroup()
  for (pipe, sink) in [(out, outData), (err, errData)] {
    group.enter()
    DispatchQueue.global().async {
      sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
      group.leave()
    }
  }
  if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
  try? inPipe.fileHandleForWriting.close()
  group.wait()
  process.waitUntilExit()
  let status =
    process.terminationReason == .uncaughtSignal
    ? 128 + process.terminationStatus : process.terminationStatus
  return ProcessResult(
    status: status, stdout: String(decoding: outData.get(), as: UTF8.self),
    stderr: String(decoding: errData.get(), as: UTF8.self))
}

private final class LockedData: @unchecked Sendable {
  // Written once by one reader thread, read after `group.wait()`; the lock orders both.
  private let lock = NSLock()
  private var data = Data()
  func set(_ value: Data) { lock.withLock { data = value } }
  func get() -> Data { lock.withLock { data } }
}

/// The folder of the built products (`.build/<triple>/debug`), where `liststore` is.
public var productsDirectory: String {
  if let explicit = ProcessInfo.processInfo.environment["LISTSTORE_PRODUCTS"] { return explicit }
  var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  // The test runner is `.build/<triple>/debug/ListStorePackageTests.xctest`.
  while url.path != "/" {
    url.deleteLastPathComponent()
    if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("liststore").path) {
      return url.path
    }
  }
  return FileManager.default.currentDirectoryPath + "/.build/debug"
}

/// The built `liststore` binary.
public var liststoreBinary: String { productsDirectory + "/liststore" }

/// Runs the built `liststore` with `--db database` before `arguments`.
public func liststore(
  _ arguments: [String], database: String?, environment: [String: String] = [:],
  input: String? = nil
) throws -> ProcessResult {
  let full = (database.map { ["--db", $0] } ?? []) + arguments
  return try run(liststoreBinary, full, environment: environment, input: input)
}

/// The user that ``asUnprivileged(_:)`` runs programs as: `nobody` when the tests run as
/// root (who reads and writes any file whatever its mode), else the tests' own user.
public var unprivilegedUser: (uid: uid_t, gid: gid_t) {
  guard getuid() == 0, let entry = getpwnam("nobody") else { return (getuid(), getgid()) }
  return (entry.pointee.pw_uid, entry.pointee.pw_gid)
}

/// `command` (a program and its arguments) prefixed so that it runs as
/// ``unprivilegedUser``: through `setpriv` when the tests run as root, as it is otherwise.
/// The files it reaches must let that user in (a test's folder is made for its owner
/// only: open it with `chmod 0o755`).
/// - Throws: When running as root and `setpriv` is missing.
public func asUnprivileged(_ command: [String]) throws -> [String] {
  guard getuid() == 0 else { return command }
  guard
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first(where: {
      FileManager.default.isExecutableFile(atPath: $0)
    })
  else { throw TestFailure("running as root needs setpriv (util-linux) to drop privileges") }
  let user = unprivilegedUser
  return [setpriv, "--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups"] + command
}

/// Runs the built `liststore` as ``unprivilegedUser`` with `--db database` before
/// `arguments`.
public func liststoreUnprivileged(_ arguments: [String], database: String) throws
  -> ProcessResult
{
  let command = try asUnprivileged([liststoreBinary, "--db", database] + arguments)
  return try run(command[0], Array(command.dropFirst()))
}

/// The bytes of a file, or `nil` when it cannot be read.
public func fileBytes(_ path: String) -> Data? {
  FileManager.default.contents(atPath: path)
}

/// A small, fast, seedable random number generator (SplitMix64), so randomized
/// tests can print their seed and be replayed exactly.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var state: UInt64

  /// Creates a generator; the same seed gives the same sequence.
  public init(seed: UInt64) { state = seed }

  /// The next 64 random bits.
  /// - Returns: A pseudo-random number.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The seed for a randomized test: `LISTSTORE_SEED` when set, else `fallback`.
public func testSeed(_ fallback: UInt64) -> UInt64 {
  ProcessInfo.processInfo.environment["LISTSTORE_SEED"].flatMap { UInt64($0) } ?? fallback
}

/// A count scaled by `TestLimits.scale` (`LISTSTORE_TEST_SCALE`, 1 by default), for heavier
/// runs.
public func scaled(_ count: Int) -> Int {
  max(1, Int(Double(count) * TestLimits.scale))
}
