import Foundation
import ListStore
import PostgresTestSupport
import TestSupport
import Testing

/// The API against its own description, by Schemathesis: requests generated from
/// docs/openapi.json (valid and invalid ones, and chains that follow its links: make a
/// list, add to it, read it, change it, delete it) at a real server, on each engine. No
/// answer may break the description, no valid request may be refused as malformed, no
/// 5xx but a documented 503, and the database is sound afterwards.
///
/// Schemathesis is a Python program: `.ci/run` installs it, pinned by version and hash
/// (`.ci/schemathesis-requirements.txt`), into `.build/schemathesis`, and runs this suite
/// with `LISTSTORE_SCHEMATHESIS=1`; `LISTSTORE_SCHEMATHESIS_EXAMPLES` (default 40 cases
/// an operation) and `LISTSTORE_SCHEMATHESIS_SEED` (default 1) make a run larger or
/// another.
@Suite(
  .serialized,
  .enabled(
    if: ProcessInfo.processInfo.environment["LISTSTORE_SCHEMATHESIS"] == "1",
    "Schemathesis runs in .ci/run's API fuzzing step (LISTSTORE_SCHEMATHESIS=1)"))
struct SchemathesisTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path
  static let program = root + "/.build/schemathesis/bin/schemathesis"

  static func setting(_ name: String, default fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? fallback
  }

  @Test(arguments: TestEngine.tested)
  func theAPIKeepsToItsDescription(engine: TestEngine) throws {
    try #require(
      FileManager.default.isExecutableFile(atPath: Self.program),
      Comment(
        rawValue: "no Schemathesis at \(Self.program): python3 -m venv .build/schemathesis && "
          + ".build/schemathesis/bin/pip install --require-hashes --no-deps "
          + "-r .ci/schemathesis-requirements.txt"))
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let work = TemporaryDirectory()
    defer { work.remove() }
    for name in ["demo", "groceries"] {
      expectSuccess(try liststore(["demo", "--list", name], database: database.location))
    }
    try Data("FUZZ write *\n".utf8).write(to: URL(fileURLWithPath: work.file("tokens")))
    let server = try ServerProcess(
      location: database.location, arguments: ["--tokens", work.file("tokens")])
    let examples = Self.setting("LISTSTORE_SCHEMATHESIS_EXAMPLES", default: 40)
    let seed = Self.setting("LISTSTORE_SCHEMATHESIS_SEED", default: 1)
    let log = work.file("requests.log")
    // One worker: Schemathesis's threads have tripped over Python's own compiler.
    let result = try run(
      "/usr/bin/timeout",
      [
        "900", Self.program, "--config-file", Self.root + "/.ci/schemathesis.toml", "run",
        server.base + "/v1/openapi.json", "--url", server.base,
        "-H", "Authorization: Bearer FUZZ", "--checks", "all", "--request-timeout", "10",
        "--max-examples", "\(examples)", "--seed", "\(seed)", "--workers", "1",
        "--report-dir", work.file("report"),
      ],
      environment: [
        "PYTHONPATH": Self.root + "/.ci", "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
        "LISTSTORE_SCHEMATHESIS_LOG": log, "NO_COLOR": "1",
      ],
      workingDirectory: work.path)
    let summary = result.stdout.components(separatedBy: "\n").suffix(40).joined(separator: "\n")
    #expect(result.status == 0, "Schemathesis on \(engine):\n\(result.stdout)\n\(result.stderr)")

    // Every request it made, and what came back.
    let requests =
      (try? String(contentsOfFile: log, encoding: .utf8))?
      .split(separator: "\n") ?? []
    let statuses = requests.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
    print(
      "Schemathesis on \(engine): \(requests.count) requests (\(examples) cases an operation, "
        + "seed \(seed)); statuses: "
        + Dictionary(grouping: statuses, by: { $0 }).sorted { $0.key < $1.key }
        .map { "\($0.key) × \($0.value.count)" }.joined(separator: ", "))
    #expect(requests.count >= 500, "too few requests to have tested much:\n\(summary)")
    let faults = requests.filter { line in
      line.split(separator: " ").last.flatMap { Int($0) }.map { $0 >= 500 && $0 != 503 } ?? true
    }
    #expect(faults.isEmpty, "\(faults.prefix(20))")

    // The server still answers, stops cleanly, and left the database sound.
    #expect(try http("GET", server.base + "/healthz").status == 200)
    #expect(server.stop() == 0, "\(server.output.errors.suffix(20))")
    expectSuccess(try liststore(["check"], database: database.location))
  }
}
