import Foundation
import ListStore
import SQLiteKit
import TestSupport
import Testing

/// Writers killed with SIGKILL at random moments lose nothing that was committed and
/// leave nothing half-written. The number of kill points scales with
/// `LISTSTORE_TEST_SCALE` (at least 50 in all by default).
@Suite(.serialized) struct CrashTests {
  @Test(arguments: TestEngine.tested)
  func killedImportsLeaveTheirListAbsentOrComplete(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    let folder = database.folder
    defer { database.remove() }
    let path = database.location
    let repository = try database.openRepository()
    var random = SeededGenerator(seed: testSeed(61))
    // PostgreSQL's triggers make an import slower: fewer items, fewer rounds.
    let (items, rounds) = engine == .sqlite ? (20000, scaled(25)) : (4000, scaled(15))

    // How long one import takes here, to spread the kill points over it.
    let started = Date()
    let timing = try Worker(stressBinary, ["import", path, "timing", "\(items)"], folder: folder)
    timing.wait()
    #expect(timing.lines == ["begin", "committed"], "\(timing.errors)")
    let duration = Date().timeIntervalSince(started)

    var outcomes: [String: Int] = [:]
    for round in 0..<rounds {
      let name = "import \(round)"
      let application = "killed-import-\(round)"
      let worker = try Worker(
        stressBinary,
        ["import", database.location(applicationName: application), name, "\(items)"],
        folder: folder)
      pause(Double.random(in: 0...(duration * 1.2), using: &random))
      worker.kill()
      try waitForSessionsToEnd(database, applicationName: application)
      let lines = worker.lines
      let summary = try repository.lists().first { $0.name == name }
      if lines.contains("committed") {
        #expect(summary?.itemCount == items && summary?.sectionCount == 10, "round \(round)")
        outcomes["after commit", default: 0] += 1
      } else if let summary {
        // Killed between the commit and its report: the list must be whole.
        #expect(summary.itemCount == items && summary.sectionCount == 10, "round \(round)")
        outcomes["committed, unreported", default: 0] += 1
      } else {
        outcomes[lines.isEmpty ? "before starting" : "during the transaction", default: 0] += 1
      }
      let problems = try repository.check()
      #expect(problems.isEmpty, "round \(round): \(problems)")
    }
    print("import kill points: \(outcomes)")
    #expect(
      outcomes["during the transaction", default: 0] > 0,
      "no kill landed inside a transaction: \(outcomes)")
    // A fresh observer of a surviving list reads it whole.
    if let survivor = try repository.lists().first(where: { $0.name.hasPrefix("import") }) {
      let array = try repository.list(survivor.name, metadata: RawJSON.self, item: RawJSON.self)
        .observe()
      #expect(array.sections.reduce(0) { $0 + $1.items.count } == items)
    }
  }

  @Test(arguments: TestEngine.tested)
  func killedMovesLeaveTheListBeforeOrAfterTheInterruptedMove(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    let folder = database.folder
    defer { database.remove() }
    let path = database.location
    let repository = try database.openRepository()
    let contents = (0..<10).map { section in
      (
        metadata: "{\"header\":\"S\(section)\",\"footer\":null}",
        items: (0..<50).map { "\"\(section)-\($0)\"" }
      )
    }
    _ = try repository.createList("moves", contents: contents)
    var model = try itemIDs(path, list: "moves")

    // An observer in another process, running through every kill.
    let watcher = try Worker(
      liststoreBinary, ["--db", path, "watch", "moves", "--json"], folder: folder)
    defer { watcher.kill() }
    var random = SeededGenerator(seed: testSeed(62))
    var interrupted = 0
    for round in 0..<scaled(30) {
      let application = "killed-moves-\(round)"
      let worker = try Worker(
        stressBinary,
        ["moves", database.location(applicationName: application), "moves", "400", "\(round)"],
        folder: folder)
      pause(Double.random(in: 0.005...0.15, using: &random))
      worker.kill()
      try waitForSessionsToEnd(database, applicationName: application)
      var pending: (id: Int64, section: Int, row: Int)?
      for line in worker.lines {
        let parts = line.split(separator: " ")
        if parts.first == "begin", parts.count == 4, let id = Int64(parts[1]),
          let section = Int(parts[2]),
          let row = Int(parts[3])
        {
          pending = (id, section, row)
        } else if line == "committed", let move = pending {
          model = Self.moved(model, move)
          pending = nil
        }
      }
      let actual = try itemIDs(path, list: "moves")
      if actual != model, let move = pending, Self.moved(model, move) == actual {
        model = actual  // The interrupted move had committed before the kill.
      }
      if pending != nil { interrupted += 1 }
      #expect(
        actual == model, "round \(round): the list is neither before nor after the interrupted move"
      )
      #expect(try repository.check().isEmpty, "round \(round)")
      if actual != model { return }
    }
    #expect(interrupted > 0, "no kill landed inside a move")

    // Observers started now, and the one that ran throughout, end equal to the database.
    let fresh = try repository.list("moves", metadata: RawJSON.self, item: RawJSON.self).observe()
    #expect(fresh.sections.map { Array($0.items.ids) } == model)
    let shown = try liststore(["show", "moves", "--json"], database: path)
    let expected = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? NSDictionary
    var replayed: NSDictionary?
    let deadline = Date().addingTimeInterval(10)
    repeat {
      do {
        replayed = try replayWatch(watcher.output)
      } catch {
        _ = try? run("/bin/cp", [watcher.outputPath, "/tmp/failed-watch.jsonl"])
        throw error
      }
      if replayed == expected { break }
      pause(0.02)
    } while Date() < deadline
    #expect(
      replayed != nil && replayed == expected,
      "the watching process did not end equal to the database")
  }

  /// `model` after moving item `id` to `row` of `section` (`row` counted after the move).
  static func moved(_ model: [[Int64]], _ move: (id: Int64, section: Int, row: Int)) -> [[Int64]] {
    var model = model
    for index in model.indices { model[index].removeAll { $0 == move.id } }
    model[move.section].insert(move.id, at: min(move.row, model[move.section].count))
    return model
  }
}
