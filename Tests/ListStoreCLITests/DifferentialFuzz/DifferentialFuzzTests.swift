import Foundation
import PostgresTestSupport
import SQLiteKit
import Synchronization
import TestSupport
import Testing

@testable import ListStore

/// The differential fuzzer of issue 10: a seeded foreign client writes the public
/// schema with every statement shape it allows and many it refuses (foreign keys and
/// recursive triggers on and off), interleaved with writes through the Swift API, while
/// observers follow every list. After every refresh each observer must equal the test's
/// own reading of the database (``ListContents``, ordered by key bytes), and every
/// changeset must pass the headless table view.
///
/// Two layers: a deterministic core (one thread: foreign transactions, API calls through
/// two quiet repositories, `liststore` processes and refresh points; a failure is
/// replayed and shrunk to a short program printed as Swift) and a concurrent one (two
/// threads writing through the repositories, `liststore` processes, and a
/// `watch --json` process whose replay must give the database's state). Besides the
/// table view's checks, every changeset must say exactly what changed
/// (``PrecisionChecker``). `LISTSTORE_SEED=N` replays one seed, `LISTSTORE_TEST_SCALE=10`
/// runs ten times as many seeds, `LISTSTORE_VERBOSE=1` prints each seed's figures and
/// how often each statement shape ran and failed.
///
/// Files: `FuzzProgram` (steps, API calls, printing), `FuzzGenerator` (what to write),
/// `FuzzRunner` (running, checking, replaying, shrinking),
/// `PrecisionChecker`, `WatchFollower`.
@Suite struct DifferentialFuzzTests {
  /// Foreign statements per seed in the deterministic core.
  static let statementsPerSeed = 500

  /// The seeds to run: `LISTSTORE_SEED` alone when set, else `count` from `base`.
  static func seeds(base: UInt64, count: Int) -> [UInt64] {
    if ProcessInfo.processInfo.environment["LISTSTORE_SEED"] != nil { return [testSeed(base)] }
    return (0..<UInt64(count)).map { base + $0 }
  }

  static var verbose: Bool { ProcessInfo.processInfo.environment["LISTSTORE_VERBOSE"] != nil }

  // MARK: - The deterministic core

  @Test func everyWriteOfEveryClientIsObservedExactlyAfterEveryRefresh() {
    let seeds = Self.seeds(base: 0xF0_0000, count: scaled(20))
    let started = ContinuousClock.now
    let totals = Mutex(FuzzTotals())
    let reports = Mutex<[String]>([])
    let next = Atomic<Int>(0)
    // Two seeds at a time, one per core.
    DispatchQueue.concurrentPerform(iterations: min(2, seeds.count)) { _ in
      while true {
        let index = next.add(1, ordering: .relaxed).oldValue
        guard index < seeds.count else { return }
        let outcome = Self.fuzz(seed: seeds[index], statements: Self.statementsPerSeed)
        totals.withLock { $0.add(outcome.totals) }
        if let report = outcome.report { reports.withLock { $0.append(report) } }
      }
    }
    var all = totals.withLock { $0 }
    all.seconds = Self.seconds(since: started)
    print("Differential fuzz, deterministic core: \(all)")
    if Self.verbose { print("statements\tfailed\tshape\n" + all.shapeTable) }
    for report in reports.withLock({ $0 }) { Issue.record(Comment(rawValue: report)) }
    #expect(all.seeds == seeds.count)
    #expect(all.statements >= seeds.count * Self.statementsPerSeed)
  }

  static func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
  }

  /// What one seed's run did: its figures, the report of its failure (shrunk), and the
  /// shrunk program.
  struct Outcome {
    var totals: FuzzTotals
    var report: String?
    var shrunk: [FuzzStep]?
  }

  /// Runs seed `seed` until the foreign client issued `statements` statements; on a
  /// failure, shrinks the program and reports it with a reproduction.
  static func fuzz(
    seed: UInt64, statements target: Int, fault: ((Connection) -> String?)? = nil,
    printsReport: Bool = true
  ) -> Outcome {
    let runner: FuzzRunner
    do {
      runner = try FuzzRunner(mode: .generate)
    } catch {
      return Outcome(totals: FuzzTotals(), report: "seed \(seed): cannot start: \(error)")
    }
    runner.injectedFault = fault
    var generator = FuzzGenerator(seed: seed)
    var program: [RecordedStep] = []
    func perform(_ step: FuzzStep) {
      program.append(RecordedStep(step: step, sequences: runner.sequences()))
      runner.run(step)
    }
    func observeNewLists(via: Int) {
      for step in runner.missingObservers(via: via) where runner.failure == nil { perform(step) }
    }
    prologue(runner, lists: ["L0", "L1", "L2"], perform: perform)
    observeNewLists(via: 0)
    observeNewLists(via: 1)
    // How often observers refresh: from rarely (many commits in one refresh) to often.
    let refreshBias = generator.pick([0.1, 0.4, 1.0]) ?? 1.0
    while runner.failure == nil && runner.totals.statements < target {
      // Mostly the first repository, which observers and writers use more.
      let via = generator.chance(0.7) ? 0 : 1
      switch generator.int(0..<100) {
      case 0..<58:
        let sequences = runner.sequences()
        program.append(
          RecordedStep(
            step: runner.generateTransaction(&generator, immediate: false), sequences: sequences))
      case 58..<80:
        guard let state = try? FuzzState.read(runner.foreign) else { break }
        let (call, expected) = generator.apiCall(state)
        perform(.api(call, failsWith: expected, via: via))
        observeNewLists(via: via)
      case 80..<82:
        // Another process's commit, coalesced with the others at the next refresh.
        guard let state = try? FuzzState.read(runner.foreign) else { break }
        perform(.cli(generator.cliArguments(state)))
      case 82..<84:
        // One more observer of a list: observers at different places in the log.
        guard let state = try? FuzzState.read(runner.foreign),
          let list = generator.pick(state.lists)
        else { break }
        perform(.observe(listID: list.id, name: list.name, via: via))
      case 84..<85:
        guard let observer = generator.pick(runner.recorders) else { break }
        perform(.forget(listID: observer.listID, via: observer.via))
      default:
        guard generator.chance(refreshBias) else { break }
        perform(.synchronize(via: via))
        observeNewLists(via: via)
      }
    }
    for via in runner.repositories.indices where runner.failure == nil {
      perform(.synchronize(via: via))
    }
    let failure = runner.failure
    runner.close()
    var totals = runner.totals
    totals.seeds = 1
    if verbose { print("seed \(seed): \(totals)") }
    // Keys `PositionKey` got wrong need no program to reproduce.
    let keyReport =
      generator.keyProblems.isEmpty
      ? nil : "seed \(seed): " + generator.keyProblems.joined(separator: "\n")
    guard let failure else { return Outcome(totals: totals, report: keyReport) }

    let (shrunk, verified, replays) = FuzzRunner.shrink(program, failure: failure, fault: fault)
    let reproduced = FuzzRunner.replay(
      shrunk.map { RecordedStep(step: $0, sequences: [:]) }, target: failure, fault: fault,
      aligned: false
    ).failure
    let report = """
      Differential fuzz failure, seed \(seed) (replay: LISTSTORE_SEED=\(seed) swift test --filter DifferentialFuzzTests)
      \(failure)
      The program had \(program.count) steps (\(program.map(\.step.statementCount).reduce(0, +)) foreign statements); \
      \(replays) replays shrank it to \(shrunk.filter { !$0.isAlignment }.count) steps (\(shrunk.map(\.statementCount).reduce(0, +)) statements, and raisings of id sequences that keep the original ids), which fail with:
      \(reproduced?.detail ?? "(nothing: the shrunk program does not fail\(verified ? "" : " when replayed plainly"))")
      Reproduction:
      \(swiftCode(of: shrunk))
      """
    if printsReport { print(report) }
    return Outcome(
      totals: totals, report: [keyReport, report].compactMap { $0 }.joined(separator: "\n"),
      shrunk: shrunk)
  }

  /// Makes `lists`, each with two sections of three items, through the API.
  @discardableResult
  static func prologue(
    _ runner: FuzzRunner, lists: [String], perform: (FuzzStep) -> Void
  ) -> [FuzzStep] {
    var steps: [FuzzStep] = []
    func add(_ step: FuzzStep) {
      steps.append(step)
      perform(step)
    }
    for name in lists {
      add(.api(.createList(name), failsWith: nil, via: 0))
      guard
        let id = (try? runner.reader.scalarInt64("SELECT id FROM lists WHERE name = ?", name))
          ?? nil
      else { continue }
      for section in 0..<2 {
        add(
          .api(
            .list(
              id: id, name: name,
              .appendSection("{\"header\":\"\(name)/\(section)\",\"footer\":null}")),
            failsWith: nil, via: 0))
        add(
          .api(
            .list(
              id: id, name: name,
              .appendItems((0..<3).map { "\"\(name).\(section).\($0)\"" }, section: section)),
            failsWith: nil, via: 0))
      }
    }
    return steps
  }

  // MARK: - The shrinker finds short reproductions

  /// A fault injected into the checks (two items holding `{ "spaced" : n }` exist) stands
  /// for a bug: the run must find it and shrink hundreds of steps to the few that matter.
  @Test func aFailingRunIsShrunkToAShortReproduction() throws {
    let fault: (Connection) -> String? = { db in
      let count =
        (try? db.scalarInt64("SELECT count(*) FROM items WHERE value LIKE '{ \"spaced\"%'")) ?? nil
      return (count ?? 0) >= 2 ? "two items hold spaced objects" : nil
    }
    var found: Outcome?
    for seed in Self.seeds(base: 0x5_0000, count: 8) {
      let outcome = Self.fuzz(
        seed: seed, statements: 300, fault: fault, printsReport: Self.verbose)
      if outcome.shrunk != nil {
        found = outcome
        break
      }
    }
    let outcome = try #require(found, "no seed met the injected fault")
    let shrunk = try #require(outcome.shrunk)
    #expect(shrunk.filter { !$0.isAlignment }.count <= 8, "\(outcome.report ?? "")")
    #expect(shrunk.map(\.statementCount).reduce(0, +) <= 6, "\(outcome.report ?? "")")
    let report = try #require(outcome.report)
    #expect(report.contains("Reproduction:\nlet repository = try Repository("))
    #expect(report.contains("two items hold spaced objects"))
  }

  // MARK: - Found by the fuzzer

  /// A client may write any key of the documented form, the smallest integer but one
  /// `A00000000000000000000000001` included; inserting or moving a row in front of it
  /// must then work. `PositionKey.between(nil, that)` decrements its integer to the
  /// smallest integer `A00000000000000000000000000`, which is no key (`split` rejects it,
  /// and so does the schema), so the write fails with the schema's refusal.
  @Test func insertingBeforeTheLowestKeyAClientMayWriteSucceeds() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    let section = try list.appendSection(RawJSON("null"))
    try Connection(path: repository.path).execute(
      "INSERT INTO items(section_id, position, value) VALUES (\(section), 'A00000000000000000000000001', '\"low\"')"
    )
    let key = try PositionKey.between(nil, "A00000000000000000000000001")
    #expect(PositionKey.isValid(key), "\(key)")
    try list.insert(item: RawJSON("\"first\""), at: IndexPath(indexes: [0, 0]))
    #expect(try list.sections()[0].items.map(\.text) == ["\"first\"", "\"low\""])
  }

  // MARK: - Position keys: the Swift rules and the schema's

  /// `PositionKey.isValid` and the schema's triggers agree on what a key is, for random
  /// strings near the rules' edges (head letters, lengths, zeros, other characters).
  @Test func theSchemaAndPositionKeyAgreeOnWhatAKeyIs() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    let section = try list.appendSection(RawJSON("null"))
    let db = try Connection(path: repository.path)
    var random = SeededGenerator(seed: testSeed(0x4B_E7))
    let characters = Array("0129AZazbyBY~ -é\u{301}")
    var disagreements: [String] = []
    try db.execute("BEGIN")
    for _ in 0..<scaled(20_000) {
      var key = ""
      if Bool.random(using: &random) {
        key.append(Array("aZbYzA").randomElement(using: &random) ?? "a")
        key += String(repeating: "0", count: Int.random(in: 0...27, using: &random))
      }
      for _ in 0..<Int.random(in: 0...4, using: &random) {
        key.append(characters.randomElement(using: &random) ?? "0")
      }
      var accepted = true
      do {
        try db.run(
          "INSERT INTO items(section_id, position, value) VALUES (?, ?, '1')", section, key)
        try db.run("DELETE FROM items WHERE section_id = ? AND position = ?", section, key)
      } catch let error as SQLiteError
        where error.message.contains("position must be a position key")
      {
        accepted = false
      }
      if accepted != PositionKey.isValid(key) {
        disagreements.append(
          "\(key.debugDescription): the schema \(accepted ? "accepts" : "refuses") it")
      }
    }
    try db.execute("ROLLBACK")
    #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
  }

  /// Between any two keys, and below and above any key, `PositionKey` makes well-formed
  /// keys in order — the property every insert and move of the repository relies on — for
  /// random keys, the ends of the key space included.
  @Test func positionKeyMakesKeysBetweenAnyTwoKeys() {
    var generator = FuzzGenerator(seed: testSeed(0xB7_0000))
    var problems: Set<String> = []
    for _ in 0..<scaled(5_000) {
      let (first, second) = (generator.validKey(), generator.validKey())
      guard first != second else { continue }
      let (low, high) =
        first.utf8.lexicographicallyPrecedes(second.utf8) ? (first, second) : (second, first)
      for (lower, upper) in [(low, high), (nil, low), (low, nil), (nil, high), (high, nil)] {
        let made = (try? PositionKey.keys(between: lower, upper, count: 3)) ?? []
        let single = try? PositionKey.between(lower, upper)
        let keys = made + [single].compactMap { $0 }
        let ordered = [lower].compactMap { $0 } + made + [upper].compactMap { $0 }
        let fine =
          made.count == 3 && single != nil && keys.allSatisfy(PositionKey.isValid)
          && zip(ordered, ordered.dropFirst()).allSatisfy { pair in
            pair.0.utf8.lexicographicallyPrecedes(pair.1.utf8)
          }
        if fine { continue }
        problems.insert("between \(lower ?? "nil") and \(upper ?? "nil"): \(keys)")
      }
    }
    #expect(problems.isEmpty, "\(problems.sorted().prefix(20))")
  }

  // MARK: - The concurrent layer

  @Test func concurrentWritersOfEveryKindConvergeWithEveryChangesetValid() {
    let seeds = Self.seeds(base: 0xC0_0000, count: scaled(3))
    let started = ContinuousClock.now
    var totals = FuzzTotals()
    for seed in seeds {
      let (seedTotals, problems) = Self.fuzzConcurrently(seed: seed, rounds: 5)
      totals.add(seedTotals)
      for problem in problems {
        Issue.record(
          Comment(
            rawValue:
              "concurrent differential fuzz, seed \(seed) (LISTSTORE_SEED=\(seed)): \(problem)"))
      }
    }
    totals.seconds = Self.seconds(since: started)
    print("Differential fuzz, concurrent layer: \(totals)")
    #expect(totals.seeds == seeds.count)
  }

  /// One seed of the concurrent fuzzer: in each round the foreign client (this thread),
  /// two threads writing through the repositories and a thread running `liststore`
  /// commands all write at once, this thread synchronizing observers and starting new
  /// ones now and then; then everyone stops, and every observer (of both repositories),
  /// and the replay of a `watch --json` process, must equal the database.
  static func fuzzConcurrently(seed: UInt64, rounds: Int) -> (FuzzTotals, [String]) {
    let runner: FuzzRunner
    do {
      runner = try FuzzRunner(mode: .generate)
    } catch {
      return (FuzzTotals(), ["cannot start: \(error)"])
    }
    var problems: [String] = []
    var generator = FuzzGenerator(seed: seed)
    generator.protectedNames = ["W"]
    generator.concurrent = true
    prologue(runner, lists: ["W", "L0", "L1"], perform: runner.run)
    for via in runner.repositories.indices {
      for step in runner.missingObservers(via: via) { runner.run(step) }
    }
    let watched = (try? runner.reader.scalarInt64("SELECT id FROM lists WHERE name = 'W'")) ?? nil
    let watch: WatchFollower
    do {
      watch = try WatchFollower(
        path: runner.path, list: "W", errorFile: runner.folder.file("watch.err"))
    } catch {
      runner.close()
      return (runner.totals, ["cannot start watch: \(error)"])
    }
    if !watch.wait(timeout: 3 * TestLimits.eventSeconds, until: { _ in true }) {
      problems.append("watch printed no snapshot")
    }

    let failures = Mutex<[String]>([])
    let threadTotals = Mutex(FuzzTotals())
    let repositories = runner.repositories
    let path = runner.path
    for round in 0..<rounds where problems.isEmpty {
      let group = DispatchGroup()
      for writer in 0..<3 {
        group.enter()
        let threadSeed = seed &* 31 &+ UInt64(round * 4 + writer + 1)
        // Both threads on one repository in some rounds, one on each in the others.
        let repository = repositories[writer == 1 ? round % 2 : 0]
        Thread {
          defer { group.leave() }
          if writer < 2 {
            apiWriter(
              repository: repository, path: path, seed: threadSeed, calls: 25, failures: failures,
              totals: threadTotals)
          } else {
            cliWriter(
              path: path, seed: threadSeed, runs: 4, failures: failures, totals: threadTotals)
          }
        }.start()
      }
      runner.othersWrite = true
      for _ in 0..<30 where runner.failure == nil {
        _ = runner.generateTransaction(&generator, immediate: true)
        if generator.chance(0.3) {
          repositories[generator.int(0..<2)].synchronizeObservers()
          runner.totals.refreshes += 1
        }
        if generator.chance(0.05), let state = try? FuzzState.read(runner.reader),
          let list = generator.pick(state.lists)
        {
          // An observer that starts while the others write and deliver.
          runner.run(.observe(listID: list.id, name: list.name, via: generator.int(0..<2)))
        }
      }
      group.wait()
      runner.othersWrite = false
      problems += failures.withLock { failures in
        defer { failures.removeAll() }
        return failures
      }
      // Everyone stopped: after one refresh every observer equals the database.
      for via in repositories.indices {
        runner.run(.synchronize(via: via))
        for step in runner.missingObservers(via: via) { runner.run(step) }
      }
      if let failure = runner.failure {
        problems.append("round \(round): \(failure)")
        break
      }
      guard let watched,
        let contents = try? ListContents.read(listID: watched, db: runner.reader)
      else {
        problems.append("the watched list is gone")
        break
      }
      let expected = ComparableSections.of(contents)
      if !watch.wait(
        timeout: 3 * TestLimits.eventSeconds,
        until: { ComparableSections.of(watch: $0).isEqual(expected) })
      {
        let state = watch.state
        problems.append(
          """
          round \(round): the watch --json replay differs from the database.
          replay: \(state.sections.map { ComparableSections.of(watch: $0) } ?? [])
          database: \(expected)
          problems: \(state.problems)
          """)
      }
    }

    // The watch process: every line applied, and its replay is what `show --json` prints.
    let final = watch.state
    let stopped = watch.stop()
    problems += final.problems.map { "watch --json: \($0)" }
    if stopped.status != 0 || stopped.signaled || !stopped.errors.isEmpty {
      problems.append(
        "watch ended with \(stopped.signaled ? "signal" : "status") \(stopped.status): \(stopped.errors)"
      )
    }
    if let shown = try? liststore(["show", "W", "--json"], database: path),
      let object = try? JSONSerialization.jsonObject(with: Data(shown.stdout.utf8))
        as? [String: Any],
      let sections = object["sections"] as? [[String: Any]]
    {
      if !(NSArray(array: final.sections ?? []).isEqual(NSArray(array: sections))) {
        problems.append("the watch --json replay differs from show --json")
      }
    } else {
      problems.append("show --json failed")
    }
    runner.close()
    var totals = runner.totals
    totals.add(threadTotals.withLock { $0 })
    totals.seeds = 1
    totals.watchLines = final.lines
    if verbose { print("concurrent seed \(seed): \(totals)") }
    return (totals, problems)
  }

  /// Errors a write may meet when another writer changed the list since it looked.
  static func isExpectedRace(_ error: ListStoreError) -> Bool {
    switch error {
    case .listNotFound, .listExists, .sectionNotFound, .itemNotFound, .sectionOutOfRange,
      .itemOutOfRange, .insertionOutOfRange, .sectionInsertionOutOfRange:
      true
    default: false
    }
  }

  /// Random API calls on the rows a read-only connection sees, through `repository`.
  static func apiWriter(
    repository: Repository, path: String, seed: UInt64, calls: Int,
    failures: borrowing Mutex<[String]>,
    totals: borrowing Mutex<FuzzTotals>
  ) {
    var generator = FuzzGenerator(seed: seed)
    generator.protectedNames = ["W"]
    var made = FuzzTotals()
    do {
      let db = try Connection(path: path, mode: .readOnly)
      for _ in 0..<calls {
        let (call, _) = generator.apiCall(try FuzzState.read(db))
        made.apiCalls += 1
        do {
          try call.perform(on: repository)
        } catch {
          made.apiRefused += 1
          if !isExpectedRace(error) {
            failures.withLock { $0.append("\(call.swift(on: "repository"))\nfailed: \(error)") }
          }
        }
      }
    } catch {
      failures.withLock { $0.append("an API writer could not read: \(error)") }
    }
    totals.withLock { $0.add(made) }
  }

  /// Random `liststore` commands on the rows a read-only connection sees.
  static func cliWriter(
    path: String, seed: UInt64, runs: Int, failures: borrowing Mutex<[String]>,
    totals: borrowing Mutex<FuzzTotals>
  ) {
    var generator = FuzzGenerator(seed: seed)
    generator.protectedNames = ["W"]
    var made = FuzzTotals()
    do {
      let db = try Connection(path: path, mode: .readOnly)
      for _ in 0..<runs {
        let arguments = generator.cliArguments(try FuzzState.read(db))
        let result = try liststore(arguments, database: path)
        made.cliRuns += 1
        // Status 1 when another writer got there first (an index out of range).
        if !(result.status == 0 || (result.status == 1 && result.stderr.hasPrefix("error: "))) {
          failures.withLock { $0.append("liststore \(arguments): \(result)") }
        }
      }
    } catch {
      failures.withLock { $0.append("a CLI writer failed: \(error)") }
    }
    totals.withLock { $0.add(made) }
  }
}
