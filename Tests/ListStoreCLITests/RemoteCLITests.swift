import Foundation
import ListStoreClientTesting
import PostgresTestSupport
import TestSupport
import Testing

/// The CLI against a server (`--db http://…`) prints what it prints against a file: the
/// same commands, run on a file and through a server started by the test (each on a fresh
/// database), give the same standard output, standard error and exit status.
@Suite(.serialized) struct RemoteCLITests {
  /// Runs `steps` on a fresh file and through a fresh server; returns the first step whose
  /// results differ.
  func firstDifference(_ steps: [[String]], files: [String: String] = [:]) throws -> String? {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let server = try TestServer()
    defer { server.remove() }
    let local = folder.file("local.sqlite")
    // The local database exists as the server's does, so that both create lists alike.
    _ = try liststore(["list", "create", "scratch"], database: local)
    _ = try liststore(["list", "create", "scratch"], database: server.url)
    for (name, text) in files {
      try text.write(toFile: folder.file(name), atomically: true, encoding: .utf8)
    }
    for step in steps {
      let arguments = step.map { $0.hasPrefix("@") ? folder.file(String($0.dropFirst())) : $0 }
      let here = try liststore(arguments, database: local)
      let there = try liststore(arguments, database: server.url)
      // Names of files differ only in their folder, which both print the same.
      if here.status != there.status || here.stdout != there.stdout
        || here.stderr != there.stderr
      {
        return "\(step):\n  file:   \(here)\n  server: \(there)"
      }
    }
    return nil
  }

  @Test func everyCommandPrintsTheSameAgainstAFileAndAServer() throws {
    let steps: [[String]] = [
      ["lists"], ["lists", "--json"],
      ["list", "create", "groceries"], ["list", "create", "groceries"], ["list", "create", ""],
      ["section", "add", "groceries", "Fruit", "--footer", "fresh"],
      ["section", "add", "groceries", "Dairy", "--at", "0"],
      ["section", "add", "groceries", "Bakery", "--after", "0"],
      ["section", "add", "groceries", "Nowhere", "--at", "9"],
      ["item", "add", "groceries", "0", "milk"], ["item", "add", "groceries", "2", "apples"],
      ["item", "add", "groceries", "2", "pears", "--at", "0"],
      ["item", "add", "groceries", "2", "{\"kind\":\"plum\",\"count\":3}", "--json"],
      ["item", "add", "groceries", "2", "kiwis", "--after", "#2"],
      ["item", "add", "groceries", "2", "figs", "--before", "#1"],
      ["item", "add", "groceries", "7", "nothing"],
      ["item", "add", "groceries", "0", "x", "--at", "5"],
      ["item", "move", "groceries", "2:0", "0:1"],
      ["item", "move", "groceries", "#2", "--after", "#3"],
      ["item", "move", "groceries", "9:9", "0:0"], ["item", "set", "groceries", "0:0", "oat milk"],
      ["item", "set", "groceries", "#999", "x"], ["item", "rm", "groceries", "2:0"],
      ["item", "rm", "groceries", "#999"],
      ["section", "move", "groceries", "0", "2"],
      ["section", "move", "groceries", "#1", "--before", "0"],
      ["section", "set", "groceries", "1", "--header", "Bread", "--no-footer"],
      ["section", "set", "groceries", "9", "--header", "x"], ["section", "rm", "groceries", "#3"],
      ["show", "groceries"], ["show", "groceries", "--json"], ["export", "groceries"],
      ["show", "nowhere"], ["export", "nowhere"], ["lists"], ["lists", "--json"],
      ["batch", "groceries", "@ops.jsonl"], ["batch", "groceries", "@bad-line.jsonl"],
      ["batch", "groceries", "@bad-row.jsonl"], ["batch", "nowhere", "@ops.jsonl"],
      ["import", "pantry", "@pantry.json"], ["import", "pantry", "@pantry.json"],
      ["import", "broken", "@broken.json"], ["import", "pantry", "@edited.json", "--replace"],
      ["import", "pantry", "@edited.json", "--replace"],
      ["import", "fresh", "@edited.json", "--replace"],
      ["show", "pantry"], ["list", "rename", "pantry", "larder"],
      // The old name is no list's any more, and can be a new list's.
      ["show", "pantry"], ["export", "pantry"], ["show", "larder"],
      ["list", "create", "pantry"], ["show", "pantry"], ["list", "rename", "nowhere", "x"],
      ["list", "rm", "larder"], ["list", "rm", "larder"], ["show", "groceries"], ["lists"],
      // Names that are dot segments in a path, and none.
      ["list", "create", "."], ["section", "add", ".", "S"], ["item", "add", ".", "0", "v"],
      ["show", "."], ["import", "..", "@pantry.json"], ["show", ".."], ["export", ".."],
      ["show", ""], ["export", ""], ["item", "add", "", "0", "v"], ["import", "", "@pantry.json"],
      ["list", "rm", "."], ["lists"],
    ]
    let files = [
      "ops.jsonl": """
      {"op": "item add", "section": 0, "value": "eggs"}

      {"op": "item set", "item": "0:0", "value": {"n": 1}}
      {"op": "section add", "header": "Drinks", "at": 0}
      """,
      "bad-line.jsonl":
        "{\"op\": \"item add\", \"section\": 0, \"value\": \"a\"}\n{\"op\": \"item frob\"}\n",
      "bad-row.jsonl":
        "{\"op\": \"item add\", \"section\": 0, \"value\": \"a\"}\n\n{\"op\": \"item rm\", \"item\": \"5:5\"}\n",
      "pantry.json": """
      {"sections": [{"header": "Shelf", "footer": "top", "items": ["rice", 42, {"value": [1, 2]}]},
                    {"metadata": {"color": "red"}, "items": []}]}
      """,
      "edited.json": """
      {"sections": [{"header": "Shelf", "footer": "top", "items": ["rice", "beans"]}]}
      """,
      "broken.json": "{\"sections\": [{\"header\": \"S\", \"items\": [1, 2,]}]}",
    ]
    if let difference = try firstDifference(steps, files: files) { Issue.record("\(difference)") }
  }

  @Test(arguments: [UInt64(1), 2, 3])
  func randomCommandSequencesPrintTheSame(seed: UInt64) throws {
    var random = SeededGenerator(seed: testSeed(0xC11 &+ seed))
    func number(_ range: ClosedRange<Int>) -> String { "\(Int.random(in: range, using: &random))" }
    var steps: [[String]] = [["list", "create", "l"], ["section", "add", "l", "S0"]]
    for _ in 0..<50 {
      let path = { number(0...2) + ":" + number(0...4) }
      let step: [String] =
        switch Int.random(in: 0..<9, using: &random) {
        case 0: ["section", "add", "l", "S" + number(0...9), "--at", number(0...3)]
        case 1: ["section", "rm", "l", number(0...3)]
        case 2: ["section", "move", "l", number(0...3), number(0...3)]
        case 3: ["item", "add", "l", number(0...3), "v" + number(0...99)]
        case 4: ["item", "add", "l", number(0...3), "v" + number(0...99), "--at", number(0...5)]
        case 5: ["item", "rm", "l", path()]
        case 6: ["item", "move", "l", path(), path()]
        case 7: ["item", "set", "l", path(), "w" + number(0...9)]
        default: ["show", "l"]
        }
      steps.append(step)
    }
    steps += [["show", "l", "--json"], ["lists"]]
    if let difference = try firstDifference(steps) {
      Issue.record("seed \(seed): \(difference)")
    }
  }

  @Test func commandsThatNeedTheDatabaseSaySo() throws {
    let server = try TestServer()
    defer { server.remove() }
    for step in [["check"], ["backup", "/tmp/never.sqlite"], ["repair"], ["demo"]] {
      let result = try liststore(step, database: server.url)
      #expect(result.status == 1, "\(step)")
      #expect(result.stderr.contains("works on the database itself, not through a server"))
      #expect(result.stdout.isEmpty)
    }
  }

  @Test func aTokenComesFromTheOptionOrTheEnvironment() throws {
    let server = try TestServer(tokens: try .init(parsing: "secret write", file: "tokens"))
    defer { server.remove() }
    let refused = try liststore(["lists"], database: server.url)
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("needs a token"))
    #expect(try liststore(["--token", "secret", "lists"], database: server.url).status == 0)
    #expect(
      try liststore(["lists"], database: server.url, environment: ["LISTSTORE_TOKEN": "secret"])
        .status == 0)
    let wrong = try liststore(["--token", "guess", "lists"], database: server.url)
    #expect(wrong.status == 1 && wrong.stderr.contains("is not known to"), "\(wrong)")
    #expect(wrong.stderr.contains("--token or LISTSTORE_TOKEN"), "\(wrong)")
  }

  @Test func watchInTextPrintsTheSameOverHTTP() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let server = try TestServer()
    defer { server.remove() }
    let local = folder.file("local.sqlite")
    var outputs: [String] = []
    for location in [local, server.url] {
      for step in [["list", "create", "l"], ["section", "add", "l", "S", "--footer", "f"]] {
        expectSuccess(try liststore(step, database: location))
      }
      let watch = try TestSupport.WatchProcess(
        [liststoreBinary, "--db", location, "watch", "l", "--max-events", "2"])
      #expect(watch.wait { lines, _ in lines.contains("      -- f") })
      expectSuccess(try liststore(["item", "add", "l", "0", "x"], database: location))
      #expect(watch.wait { lines, _ in lines.filter { $0 == "      -- f" }.count == 2 })
      expectSuccess(try liststore(["item", "set", "l", "0:0", "y"], database: location))
      watch.waitForExit()
      #expect(watch.process.terminationStatus == 0)
      outputs.append(watch.output)
    }
    #expect(outputs[0] == outputs[1], "file:\n\(outputs[0])\nserver:\n\(outputs[1])")
    #expect(outputs[1].contains("-- 1 item changed"))
  }

  @Test func watchOverHTTPResumesAfterTheServerRestartsWithoutLossOrRepeat() throws {
    let server = try TestServer()
    defer { server.remove() }
    #expect(try liststore(["list", "create", "l"], database: server.url).status == 0)
    #expect(try liststore(["section", "add", "l", "S"], database: server.url).status == 0)
    let watch = try TestSupport.WatchProcess(list: "l", location: server.url)
    defer { watch.stop() }
    #expect(watch.wait { lines, _ in lines.count == 1 })  // the snapshot
    for round in 0..<3 {
      #expect(
        try liststore(["item", "add", "l", "0", "a\(round)"], database: server.url).status == 0)
      server.stop()
      #expect(watch.wait { _, errors in errors.contains { $0.contains("reconnecting") } })
      // Written while the watch is cut off, straight into the database.
      #expect(
        try liststore(["item", "add", "l", "0", "b\(round)"], database: server.databasePath)
          .status == 0)
      try server.start()
      #expect(
        watch.wait { _, errors in
          errors.filter { $0.contains("connected again") }.count == round + 1
        })
      let expected = try showJSON("l", location: server.databasePath)
      #expect(watch.waitForReplay(equal: expected), "round \(round): \(watch.output)")
    }
    // Each change once: six insertions in all, each its own line or caught up together.
    let inserted = watch.lines.dropFirst().map { $0.components(separatedBy: "\"id\":").count - 1 }
    #expect(inserted.reduce(0, +) == 6, "\(watch.lines)")
  }
}

/// An export over HTTP cut off midway says so, and fails: what it printed is not a list.
@Suite struct CutExportTests {
  @Test func anExportCutOffMidwayFailsAndSaysSo() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["list", "create", "big"], database: database))
    expectSuccess(try liststore(["section", "add", "big", "all"], database: database))
    let value = String(repeating: "z", count: 200)
    let lines = (0..<20_000).map { _ in #"{"op":"item add","section":0,"value":"\#(value)"}"# }
    expectSuccess(
      try liststore(
        ["batch", "big", "--quiet"], database: database, input: lines.joined(separator: "\n")))
    let server = try ServerProcess(location: database)
    // The export's output goes to a pipe nobody reads yet: it stops once the pipe is
    // full, with the server waiting for it, still far from the end of the list.
    let export = Process()
    export.executableURL = URL(fileURLWithPath: liststoreBinary)
    export.arguments = ["--db", server.base, "export", "big"]
    let out = Pipe()
    let err = Pipe()
    export.standardOutput = out
    export.standardError = err
    try export.run()
    var first = Data()
    while first.count < 1024 {
      let piece = out.fileHandleForReading.availableData
      if piece.isEmpty { break }
      first += piece
    }
    #expect(first.count >= 1024)
    kill(server.output.process.processIdentifier, SIGKILL)
    server.output.process.waitUntilExit()
    let rest = out.fileHandleForReading.readDataToEndOfFile()
    export.waitUntilExit()
    let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(export.terminationStatus == 1, "\(message)")
    #expect(message.contains("was lost after") && message.contains("incomplete JSON"), "\(message)")
    #expect(first.count + rest.count < 20_000 * value.count)
  }
}
