import Foundation
import Observable2D
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// Writers of every kind — this process's repository, `liststore` processes and the
/// engine's shell (`sqlite3` or `psql`) — make random changes to one list at the same time while several
/// observers watch: each changeset must pass the headless table view, every observer
/// must end equal to the database, and `liststore watch --json` replayed onto its
/// snapshot must give what `show --json` prints.
@Suite struct ChangeFeedEndToEndTests {
  /// Deadlocks the writers met (PostgreSQL's known issue), for the test to report.

  typealias Section = Observable2DArraySection<SectionMetadata, RawJSON>

  /// What one writer knows of the list when it picks an operation.
  struct Shape {
    var sections: [(id: Int64, key: String, items: [(id: Int64, key: String)])]
  }

  static func shape(_ db: ForeignConnection, listID: Int64) throws -> Shape {
    var shape = Shape(sections: [])
    for row in try db.rows(
      "SELECT id, position FROM sections WHERE list_id = \(listID) ORDER BY position")
    {
      shape.sections.append((Int64(row[0] ?? "") ?? 0, row[1] ?? "", []))
    }
    for index in shape.sections.indices {
      for row in try db.rows(
        "SELECT id, position FROM items WHERE section_id = \(shape.sections[index].id) ORDER BY position"
      ) {
        shape.sections[index].items.append((Int64(row[0] ?? "") ?? 0, row[1] ?? ""))
      }
    }
    return shape
  }

  @Test(arguments: TestEngine.tested, [101, 102])
  func randomWritersOfEveryKindAndSeveralObserversAgree(engine: TestEngine, seed: UInt64) throws {
    let database = try engine.makeDatabase()
    let folder = database.folder
    defer { database.remove() }
    let seed = testSeed(seed)
    let path = database.location
    let repository = try database.openRepository()
    let list = try repository.createList("mix", metadata: SectionMetadata.self, item: RawJSON.self)
    for header in ["A", "B", "C"] {
      try list.appendSection(SectionMetadata(header: header))
      try list.appendItems(
        (0..<4).map { RawJSON("\"\(header)\($0)\"") }, toSection: try list.numberOfSections() - 1)
    }

    // Observers: this repository's feed, a second repository's feed (as another
    // process would have), and a `liststore watch --json` process.
    let first = ArrayRecorder(try list.observe(), describe: \.text, header: { $0.header })
    let secondRepository = try database.openRepository()
    let second = ArrayRecorder(
      try secondRepository.list("mix", metadata: SectionMetadata.self, item: RawJSON.self)
        .observe(),
      describe: \.text, header: { $0.header })
    let watchOutput = folder.file("watch.jsonl")
    let watcher = Process()
    watcher.executableURL = URL(fileURLWithPath: liststoreBinary)
    watcher.arguments = ["--db", path, "watch", "mix", "--json"]
    _ = FileManager.default.createFile(atPath: watchOutput, contents: nil)
    watcher.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: watchOutput))
    let watchErrors = folder.file("watch.err")
    _ = FileManager.default.createFile(atPath: watchErrors, contents: nil)
    watcher.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: watchErrors))
    try watcher.run()
    defer { if watcher.isRunning { watcher.terminate() } }
    // The watcher has printed its snapshot once the file has a line.
    let started = Date()
    while (fileBytes(watchOutput)?.count ?? 0) == 0 && Date().timeIntervalSince(started) < 10 {
      usleep(5000)
    }

    let operations = scaled(24)
    let failures = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 3) { writer in
      var random = SeededGenerator(seed: seed &* 31 &+ UInt64(writer))
      do {
        let db = try database.foreign()
        for step in 0..<operations {
          let shape = try Self.shape(db, listID: list.id)
          switch writer {
          case 0: try Self.repositoryStep(list, shape, &random, step)
          case 1: try Self.cliStep(path, shape, &random, step)
          default: try Self.shellStep(database, shape, &random, step)
          }
        }
      } catch {
        failures.withLock { $0.append("writer \(writer): \(error)") }
      }
    }
    #expect(failures.withLock { $0 }.isEmpty, "\(engine) seed \(seed): \(failures.withLock { $0 })")

    // Everyone converges on the database.
    repository.synchronizeObservers()
    secondRepository.synchronizeObservers()
    let truth = try list.observe().sections
    #expect(first.wait { $0.array.sections == truth }, "\(engine) seed \(seed)")
    #expect(second.wait { $0.array.sections == truth }, "\(engine) seed \(seed)")
    #expect(first.problems.isEmpty, "\(engine) seed \(seed): \(first.problems)")
    #expect(second.problems.isEmpty, "\(engine) seed \(seed): \(second.problems)")
    #expect(first.changesets.count > 10)
    if ProcessInfo.processInfo.environment["LISTSTORE_VERBOSE"] != nil {
      print(
        "\(engine) seed \(seed): \(first.changesets.count) changesets, \(first.changesets.map(\.entryCount).reduce(0, +)) entries"
      )
    }

    // The watch process's lines, replayed, give what `show --json` prints.
    let shown = try liststore(["show", "mix", "--json"], database: path)
    let expected = try #require(
      try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? NSDictionary)
    let converged = Date()
    var replayed: NSDictionary?
    repeat {
      replayed = try replayWatch(String(decoding: fileBytes(watchOutput) ?? Data(), as: UTF8.self))
      if replayed == expected { break }
      usleep(20_000)
    } while Date().timeIntervalSince(converged) < 10
    #expect(replayed == expected, "\(engine) seed \(seed): watch replay differs from show --json")

    // Deleting the list ends every observer, and the watch process exits cleanly.
    try repository.deleteList("mix")
    secondRepository.synchronizeObservers()
    #expect(first.isCompleted)
    #expect(second.wait { $0.isCompleted })
    let deadline = Date().addingTimeInterval(10)
    while watcher.isRunning && Date() < deadline { usleep(10_000) }
    #expect(!watcher.isRunning)
    let errors = String(decoding: fileBytes(watchErrors) ?? Data(), as: UTF8.self)
    #expect(
      watcher.terminationReason == .exit && watcher.terminationStatus == 0,
      "watch ended with \(watcher.terminationReason == .exit ? "status" : "signal") \(watcher.terminationStatus): \(errors)"
    )
    #expect(errors == "liststore: the list \"mix\" was deleted\n")
  }

  // MARK: - Writers

  /// Picks a random position among `keys` (as a gap index) and its key.
  static func gapKey(_ keys: [String], excluding: String? = nil, _ random: inout SeededGenerator)
    throws
    -> (index: Int, key: String)
  {
    let keys = keys.filter { $0 != excluding }
    let index = Int.random(in: 0...keys.count, using: &random)
    let key = try PositionKey.between(
      index > 0 ? keys[index - 1] : nil, index < keys.count ? keys[index] : nil)
    return (index, key)
  }

  static func repositoryStep(
    _ list: StoredList<SectionMetadata, RawJSON>, _ shape: Shape, _ random: inout SeededGenerator,
    _ step: Int
  ) throws {
    let value = RawJSON("{\"r\":\(step)}")
    do {
      switch Int.random(in: 0..<10, using: &random) {
      case 0:
        try list.insert(
          section: SectionMetadata(header: "R\(step)"),
          at: Int.random(in: 0...shape.sections.count, using: &random))
      case 1 where shape.sections.count > 1:
        try list.moveSection(
          from: Int.random(in: 0..<shape.sections.count, using: &random),
          to: Int.random(in: 0..<shape.sections.count, using: &random))
      case 2 where !shape.sections.isEmpty:
        try list.setMetadata(
          SectionMetadata(header: "M\(step)", footer: "f"),
          forSectionAt: Int.random(in: 0..<shape.sections.count, using: &random))
      default:
        guard let section = shape.sections.indices.randomElement(using: &random) else { return }
        let count = shape.sections[section].items.count
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
          try list.insert(
            item: value,
            at: IndexPath(indexes: [section, Int.random(in: 0...count, using: &random)]))
        case 1 where count > 0:
          try list.removeItem(
            id: shape.sections[section].items[Int.random(in: 0..<count, using: &random)].id)
        case 2 where count > 0:
          let target = Int.random(in: 0..<shape.sections.count, using: &random)
          try list.moveItem(
            id: shape.sections[section].items[Int.random(in: 0..<count, using: &random)].id,
            to: IndexPath(indexes: [target, 0]))
        default:
          guard count > 0 else { return }
          try list.replaceItem(
            id: shape.sections[section].items[Int.random(in: 0..<count, using: &random)].id,
            with: value)
        }
      }
    } catch {
      // Another writer changed the list since `shape` was read: a clear refusal is fine.
      switch error {
      case .itemNotFound, .sectionNotFound, .itemOutOfRange, .sectionOutOfRange,
        .insertionOutOfRange,
        .sectionInsertionOutOfRange:
        return
      default: throw error
      }
    }
  }

  static func cliStep(_ path: String, _ shape: Shape, _ random: inout SeededGenerator, _ step: Int)
    throws
  {
    guard let section = shape.sections.indices.randomElement(using: &random) else { return }
    let count = shape.sections[section].items.count
    var arguments: [String]
    switch Int.random(in: 0..<5, using: &random) {
    case 0, 1:
      arguments = [
        "item", "add", "mix", "\(section)", "cli \(step)", "--at",
        "\(Int.random(in: 0...count, using: &random))",
      ]
    case 2 where count > 0:
      arguments = ["item", "rm", "mix", "\(section):\(Int.random(in: 0..<count, using: &random))"]
    case 3 where count > 0:
      let target = Int.random(in: 0..<shape.sections.count, using: &random)
      arguments = [
        "item", "move", "mix", "\(section):\(Int.random(in: 0..<count, using: &random))",
        "\(target):0",
      ]
    case 4 where count > 0:
      arguments = [
        "item", "set", "mix", "\(section):\(Int.random(in: 0..<count, using: &random))",
        "[\(step)]", "--json",
      ]
    default: arguments = ["section", "set", "mix", "\(section)", "--footer", "cli \(step)"]
    }
    let result = try liststore(arguments, database: path)
    // Status 1 when another writer got there first (an index out of range); never a crash.
    guard result.status == 0 || (result.status == 1 && result.stderr.hasPrefix("error: ")) else {
      throw ProcessFailure(description: "\(arguments): \(result)")
    }
  }

  static func shellStep(
    _ database: TestDatabase, _ shape: Shape, _ random: inout SeededGenerator, _ step: Int
  ) throws {
    guard let section = shape.sections.randomElement(using: &random) else { return }
    let keys = section.items.map(\.key)
    var statements: [String] = []
    // One to three statements in one transaction: one changeset for all of them.
    for _ in 0..<Int.random(in: 1...3, using: &random) {
      switch Int.random(in: 0..<5, using: &random) {
      case 0, 1:
        let (_, key) = try gapKey(keys, &random)
        statements.append(
          "INSERT INTO items(section_id, position, value) VALUES (\(section.id), '\(key)', '\"sh \(step)\"') ON CONFLICT DO NOTHING"
        )
      case 2 where !section.items.isEmpty:
        statements.append(
          "DELETE FROM items WHERE id = \(section.items.randomElement(using: &random)?.id ?? 0)")
      case 3 where !section.items.isEmpty:
        guard let item = section.items.randomElement(using: &random),
          let target = shape.sections.randomElement(using: &random)
        else { continue }
        let (_, key) = try gapKey(target.items.map(\.key), excluding: item.key, &random)
        // Skipped when another writer took the key (SQLite's UPDATE OR IGNORE, in SQL
        // that PostgreSQL runs too); on PostgreSQL a writer that takes it concurrently
        // wins, and this transaction is refused as a whole (see below).
        statements.append(
          """
          UPDATE items SET section_id = \(target.id), position = '\(key)' WHERE id = \(item.id)
          AND NOT EXISTS (SELECT 1 FROM items WHERE section_id = \(target.id) AND position = '\(key)')
          """)
      default:
        statements.append(
          "UPDATE items SET value = '{\"sh\":\(step)}' WHERE id = \(section.items.randomElement(using: &random)?.id ?? 0)"
        )
      }
    }
    let script = "BEGIN;\n" + statements.joined(separator: ";\n") + ";\nCOMMIT;"
    let result = try database.shell(script)
    // A move that lost the race for its key on PostgreSQL: the transaction committed
    // nothing, a clear refusal, as the CLI's when another writer got there first.
    let lostRace =
      result.status != 0
      && result.stderr.contains(
        "duplicate key value violates unique constraint \"items_section_id_position_key\"")
    guard result.status == 0 || lostRace else {
      throw ProcessFailure(description: "shell: \(result)")
    }
  }

  struct ProcessFailure: Error, CustomStringConvertible {
    var description: String
  }
}
