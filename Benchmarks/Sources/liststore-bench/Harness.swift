import FoundationEssentials
import ListStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Nanoseconds of `CLOCK_MONOTONIC`, which on Linux is one clock for the whole
/// system, so timestamps of two processes can be subtracted.
func monotonicNanoseconds() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Seconds `body` takes, by `CLOCK_MONOTONIC`.
func seconds(_ body: () throws -> Void) rethrows -> Double {
  let start = monotonicNanoseconds()
  try body()
  return Double(monotonicNanoseconds() - start) / 1e9
}

/// The median, minimum, maximum and 99th percentile of a set of samples.
struct Stats: Encodable {
  var median: Double
  var min: Double
  var max: Double
  var p99: Double
  var count: Int

  init(_ samples: [Double]) {
    precondition(!samples.isEmpty, "Stats need at least one sample")
    let sorted = samples.sorted()
    count = sorted.count
    median =
      sorted.count.isMultiple(of: 2)
      ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
    min = sorted[0]
    max = sorted[sorted.count - 1]
    p99 = sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
  }

  /// The same statistics in another unit.
  func scaled(by factor: Double) -> Stats {
    var result = self
    result.median *= factor
    result.min *= factor
    result.max *= factor
    result.p99 *= factor
    return result
  }
}

/// One line of the result table.
struct Row: Encodable {
  /// B1 … B7.
  var id: String
  /// What was measured.
  var name: String
  /// The unit of `value` and `baseline`.
  var unit: String
  /// ListStore's figures.
  var value: Stats?
  /// The floor's figures, measured in the same run.
  var baseline: Stats?
  /// value ÷ baseline (or the figure the target is stated on).
  var ratio: Double?
  /// The target, as the issue states it.
  var target: String
  /// Whether the target is met; `nil` for rows without a target of their own.
  var pass: Bool?
  /// Counts, checks and other facts worth keeping.
  var note: String = ""
  /// Further figures (per-operation medians, counts), for the JSON.
  var details: [String: Double] = [:]
  /// Why the measurement failed to run, if it did.
  var error: String?
  /// Why the measurement was not run, if it was not (such as PostgreSQL's server programs
  /// missing); not a failure.
  var skipped: String?
}

/// How the harness runs.
struct Options {
  var quick = false
  var jsonPath: String?
  var only: Set<String>?
  /// The `liststore` binary for B7.
  var cliPath: String?
  /// List sizes for B2 instead of the defaults (for profiling one size).
  var b2Sizes: [Int]?
  /// Rounds of B2's operations instead of the default (for profiling).
  var b2Rounds: Int?
  /// Items inserted by B1 instead of the default (for profiling a reduced run).
  var b1Items: Int?
  /// Rounds of each change B19 makes instead of the default (for profiling).
  var b19Rounds: Int?
  /// Items appended by B9 instead of the default.
  var b9Items: Int?
  /// Whether B10 connects over TCP on 127.0.0.1 rather than the Unix socket (to measure
  /// what round trips cost with latency added, e.g. by `tc qdisc … netem delay`).
  var postgresOverTCP = false
  /// Microseconds a proxy holds every chunk between B10 and PostgreSQL, in each direction
  /// (TCP): a round trip's latency of another host.
  var postgresDelay: Int?
  /// List sizes for B10 instead of the defaults.
  var b10Sizes: [Int]?
  /// Whether B10 also counts the statements the server ran per write, with
  /// `pg_stat_statements` (loaded into the server for the whole run).
  var countStatements = false
}

/// Runs `warmups` unmeasured rounds and then `runs` measured rounds of a subject and its
/// baseline, alternately and baseline first, so that both see the same machine.
///
/// Each closure returns the figure of one round (seconds, or whatever the caller
/// measures), so that set-up work can stay outside it.
func sideBySide(
  warmups: Int, runs: Int, subject: () throws -> Double, baseline: () throws -> Double
) rethrows -> (subject: [Double], baseline: [Double]) {
  for _ in 0..<warmups {
    _ = try baseline()
    _ = try subject()
  }
  var subjects: [Double] = []
  var baselines: [Double] = []
  for _ in 0..<runs {
    baselines.append(try baseline())
    subjects.append(try subject())
  }
  return (subjects, baselines)
}

/// A failure that stops one measurement.
struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Throws when `condition` is false: a measurement that does not do what it claims
/// must not report a figure.
func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
  if !condition { throw BenchError(message()) }
}

/// A fresh scratch folder under `$TMPDIR`, or `/tmp` when it is not set.
func makeScratchFolder() throws -> String {
  let parent = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
  var template = Array(((parent ?? "/tmp") + "/liststore-bench-XXXXXX").utf8CString)
  let made = template.withUnsafeMutableBufferPointer { buffer in
    buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
  }
  guard let path = made else {
    throw BenchError("mkdtemp failed: \(String(cString: strerror(errno)))")
  }
  return path
}

/// `text` without white space at either end.
func trimmed(_ text: some StringProtocol) -> String {
  String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
}

/// A folder of its own under the scratch folder, for one database, so that the files of
/// one measurement never meet another's.
struct ScratchFolder {
  let path: String

  init(in scratch: String, name: String) throws {
    path = scratch + "/" + name
    guard mkdir(path, 0o700) == 0 else { throw BenchError("mkdir \(path): \(errnoText())") }
  }

  /// The database file in it.
  var database: String { path + "/list.sqlite" }

  /// Deletes the database and the folder.
  func remove() {
    removeDatabase(database)
    rmdir(path)
  }
}

/// Deletes a database file with its WAL and shared-memory files.
func removeDatabase(_ path: String) {
  for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
}
