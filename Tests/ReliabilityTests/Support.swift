import Foundation
import ListStore
import ListStorePostgreSQL
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

/// The stress workloads' binary (see `Tests/Stress/main.swift`).
var stressBinary: String { productsDirectory + "/liststore-stress" }

/// A process started with its standard output and error collected in files, so that
/// it can be killed at any moment and read afterwards.
final class Worker {
  let process = Process()
  let outputPath: String
  let errorPath: String

  init(
    _ executable: String, _ arguments: [String], folder: TemporaryDirectory,
    environment: [String: String] = [:]
  )
    throws
  {
    let name = UUID().uuidString
    outputPath = folder.file("\(name).out")
    errorPath = folder.file("\(name).err")
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
    process.standardInput = FileHandle.nullDevice
    try process.run()
  }

  /// Sends SIGKILL and waits for the process to be gone.
  func kill() {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }

  /// Waits for the process to end by itself.
  func wait() { process.waitUntilExit() }

  var output: String { String(decoding: fileBytes(outputPath) ?? Data(), as: UTF8.self) }
  var errors: String { String(decoding: fileBytes(errorPath) ?? Data(), as: UTF8.self) }
  var lines: [String] { output.split(separator: "\n").map(String.init) }
  var exitedNormally: Bool { process.terminationReason == .exit }
  var status: Int32 { process.terminationStatus }
}

/// The item ids of every section of list `name`, in order, read afresh.
/// - Parameters:
///   - location: A SQLite file or a PostgreSQL connection string.
///   - name: The list's name.
/// - Returns: The ids, section by section.
/// - Throws: ``ListStoreError`` when the list cannot be read.
func itemIDs(_ location: String, list name: String) throws -> [[Int64]] {
  let list = try Repository.open(location).list(name, metadata: RawJSON.self, item: RawJSON.self)
  return try list.storedSections().map { $0.items.map(\.id) }
}

/// Sleeps for `seconds`.
func pause(_ seconds: Double) { usleep(useconds_t(max(0, seconds) * 1_000_000)) }

/// Whether this process may mount file systems (a size-limited tmpfs stands in for a
/// full disk, a read-only remount for read-only media).
let canMount: Bool = {
  let folder = TemporaryDirectory()
  defer { folder.remove() }
  guard
    let result = try? run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", folder.path]),
    result.status == 0
  else { return false }
  _ = try? run("/bin/umount", [folder.path])
  return true
}()

/// Waits until the server has ended every session of the processes that ran with
/// `applicationName` (no-op for SQLite): a killed client's transaction is over — rolled
/// back, or committed when its `COMMIT` had reached the server — only once its session
/// is gone. Polls `pg_stat_activity` (external state), with a bound.
func waitForSessionsToEnd(_ database: TestDatabase, applicationName: String) throws {
  guard database.engine == .postgresql else { return }
  let admin = try PGConnection(database.location)
  let gone = try pollUntil {
    try admin.scalarInt64(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", applicationName) == 0
  }
  if !gone { throw TestFailure("the sessions of \(applicationName) did not end") }
}

/// Waits until a worker has printed at least one line (its file is external state).
func waitForFirstLine(_ worker: Worker) -> Bool {
  pollUntil { !worker.lines.isEmpty }
}
