import Foundation
import Observable2D
import SQLiteKit
import TestSupport

@testable import ListStore

/// Why a run failed, and what identifies that failure when a shorter program is replayed.
struct FuzzFailure: Error, CustomStringConvertible {
  enum Category: String {
    /// An observer's array differs from the database, emitted a changeset the table
    /// view rejects, failed, or completed (or not) when it should not have.
    case observer
    /// The schema refused a legal statement, accepted one it must refuse, refused with
    /// another message, or let a refused statement change something.
    case schema
    /// A call of the Swift API failed when it should not have, or the other way round.
    case api
  }

  var category: Category
  /// The category, and for a statement or a call its text: a replay reproduces the
  /// failure when it fails with the same signature.
  var signature: String
  var detail: String
  /// The index of the step after which it was found.
  var step: Int

  var description: String { "\(category) failure after step \(step): \(detail)" }
}

/// What the fuzzers did, for the closing figures.
struct FuzzTotals: Sendable, CustomStringConvertible {
  var seeds = 0
  /// Foreign transactions (or groups of autocommitted statements).
  var transactions = 0
  /// Foreign statements, not counting BEGIN, COMMIT, SAVEPOINT and the like.
  var statements = 0
  /// Foreign statements that failed: refused by the schema, or by a constraint.
  var refused = 0
  var apiCalls = 0
  /// API calls that failed with a `ListStoreError` (all of them expected).
  var apiRefused = 0
  var cliRuns = 0
  /// `synchronizeObservers()` calls: refreshes that brought a batch of commits.
  var refreshes = 0
  /// Comparisons of an observer's array with the independent reading of the database.
  var comparisons = 0
  /// Changesets checked against the headless table view and the rules.
  var changesets = 0
  /// `watch --json` lines replayed.
  var watchLines = 0
  /// For each statement shape (``FuzzTotals/shape(of:)``): how many ran, and how many failed.
  var shapes: [String: [Int]] = [:]
  var seconds = 0.0

  mutating func add(_ other: FuzzTotals) {
    seeds += other.seeds
    transactions += other.transactions
    statements += other.statements
    refused += other.refused
    apiCalls += other.apiCalls
    apiRefused += other.apiRefused
    cliRuns += other.cliRuns
    refreshes += other.refreshes
    comparisons += other.comparisons
    changesets += other.changesets
    watchLines += other.watchLines
    shapes.merge(other.shapes) { zip($0, $1).map(+) }
  }

  /// A statement's shape: its verb, conflict clause and table, and how it gives rows.
  static func shape(of sql: String) -> String {
    let words = sql.split(separator: " ")
    guard let verb = words.first else { return "" }
    var shape = [String(verb)]
    for word in words.dropFirst() {
      shape.append(String(word))
      if ["items", "sections", "lists", "changes", "change_log_horizon"].contains(word) { break }
      if word.hasPrefix("items(") || word.hasPrefix("sections(") || word.hasPrefix("lists(") {
        shape[shape.count - 1] = String(word.prefix { $0 != "(" })
        break
      }
      if shape.count > 5 { break }
    }
    if sql.contains(" SELECT ") && verb != "DELETE" { shape.append("… SELECT") }
    if sql.contains("), (") { shape.append("… multi-row") }
    if sql.contains("DO NOTHING") { shape.append("… DO NOTHING") }
    if sql.contains("DO UPDATE") { shape.append("… DO UPDATE") }
    if let set = sql.range(of: " SET ") {
      // The columns assigned, between SET and WHERE.
      let clause = sql[set.upperBound...].prefix { $0 != "W" }
      let columns = clause.components(separatedBy: ", ").compactMap { assignment in
        assignment.split(separator: " ").first.map(String.init)
      }
      shape.append("SET " + columns.filter { !$0.isEmpty }.joined(separator: ","))
    }
    return shape.joined(separator: " ")
  }

  /// The shapes, one line each: runs and failures.
  var shapeTable: String {
    shapes.sorted { $0.key < $1.key }.map { "\($0.value[0])\t\($0.value[1])\t\($0.key)" }
      .joined(separator: "\n")
  }

  var description: String {
    "\(seeds) seeds, \(statements) foreign statements in \(transactions) transactions"
      + " (\(refused) refused), \(apiCalls) API calls (\(apiRefused) refused),"
      + " \(cliRuns) CLI runs, \(refreshes) refreshes, \(comparisons) comparisons with the"
      + " database, \(changesets) changesets checked, \(watchLines) watch lines replayed,"
      + " \(String(format: "%.1f", seconds)) s"
  }
}

/// Runs a program against a fresh database: a foreign client's connection, a quiet
/// repository (no database watch: other clients' commits reach its observers only at a
/// `synchronize` step, or with one of its own writes, so commits pile up into one
/// refresh) and an `observe()` recorder per observed list. After every refresh — every
/// `synchronize` step and every successful API write — each observer must equal
/// ``ListContents`` read through a connection of its own, and every changeset must have
/// passed the headless table view.
///
/// Not thread-safe: one thread drives it (in the concurrent fuzzer, other threads use
/// only ``repository`` and ``path``).
final class FuzzRunner {
  enum Mode {
    /// Every failure counts, and ends the run.
    case generate
    /// Only a failure with the signature of `target` counts: shrinking replays.
    case replay(target: FuzzFailure)
  }

  let folder = TemporaryDirectory()
  let path: String
  /// Two quiet repositories on the file: each one's writes are another process's
  /// commits for the other's observers.
  let repositories: [Repository]
  /// The first repository.
  var repository: Repository { repositories[0] }
  /// The foreign client: a connection of its own, as Python's `sqlite3` would use.
  let foreign: Connection
  /// The independent reading, through a read-only connection.
  let reader: Connection
  let mode: Mode
  private(set) var recorders:
    [(
      listID: Int64, via: Int, recorder: ArrayRecorder<RawJSON, RawJSON>,
      precision: PrecisionChecker
    )] = []
  var totals = FuzzTotals()
  private(set) var failure: FuzzFailure?
  /// How many steps ran.
  private(set) var stepCount = 0
  /// Whether other threads write at the moment (the concurrent fuzzer): an observer that
  /// starts then cannot be compared with a reading made at another moment.
  var othersWrite = false
  /// A fault the shrinker's own test injects: a check of the database that fails.
  var injectedFault: ((Connection) -> String?)?

  init(mode: Mode) throws {
    let path = folder.file("fuzz.sqlite")
    self.path = path
    self.mode = mode
    repositories = try (0..<2).map { _ in
      try Repository(
        path: path, busyTimeout: .seconds(60), readOnly: false, maximumPageCount: nil,
        watchesDatabase: false)
    }
    foreign = try Connection(path: path, busyTimeout: .seconds(60))
    reader = try Connection(path: path, mode: .readOnly, busyTimeout: .seconds(60))
  }

  /// Whether statements' and calls' expectations are checked (a replay that shrinks an
  /// observer failure skips them, and the database dumps they take).
  var checksExpectations: Bool {
    switch mode {
    case .generate: true
    case .replay(let target): target.category != .observer
    }
  }

  /// Ends the observations and deletes the database.
  func close() {
    for entry in recorders { totals.changesets += entry.recorder.changesets.count }
    recorders.removeAll()
    for repository in repositories { repository.stopObserving() }
    foreign.close()
    reader.close()
    folder.remove()
  }

  private func fail(_ category: FuzzFailure.Category, _ signature: String, _ detail: String) {
    guard failure == nil else { return }
    let found = FuzzFailure(
      category: category, signature: signature, detail: detail, step: stepCount)
    switch mode {
    case .generate: failure = found
    case .replay(let target): if target.signature == signature { failure = found }
    }
  }

  // MARK: Steps

  func run(_ step: FuzzStep) {
    defer { stepCount += 1 }
    switch step {
    case .synchronize(let via):
      repositories[via].synchronizeObservers()
      totals.refreshes += 1
      checkObservers(via: via)
    case .observe(let id, let name, let via):
      observe(listID: id, name: name, via: via)
    case .forget(let id, let via):
      if let index = recorders.firstIndex(where: { $0.listID == id && $0.via == via }) {
        totals.changesets += recorders[index].recorder.changesets.count
        recorders.remove(at: index)
      }
    case .api(let call, let expected, let via):
      perform(call, failsWith: expected, via: via)
    case .cli(let arguments):
      runCLI(arguments)
    case .foreign(let transaction):
      totals.transactions += 1
      setPragmas(transaction)
      for statement in transaction.statements { execute(statement) }
      if foreign.isInTransaction { try? foreign.execute("ROLLBACK") }
    }
  }

  private func setPragmas(_ transaction: ForeignTransaction) {
    try? foreign.execute(
      "PRAGMA foreign_keys = \(transaction.foreignKeys ? "ON" : "OFF");"
        + " PRAGMA recursive_triggers = \(transaction.recursiveTriggers ? "ON" : "OFF")")
  }

  /// Runs one foreign statement and checks what the schema did with it.
  private func execute(_ statement: ForeignStatement) {
    let checking = checksExpectations
    let before = checking && !statement.isControl ? dump() : nil
    var message: String?
    do {
      try foreign.execute(statement.sql)
    } catch let error as SQLiteError {
      message = error.message
    } catch {
      message = "\(error)"
    }
    if !statement.isControl {
      totals.statements += 1
      if message != nil { totals.refused += 1 }
      totals.shapes[FuzzTotals.shape(of: statement.sql), default: [0, 0]][0] += 1
      if message != nil {
        totals.shapes[FuzzTotals.shape(of: statement.sql), default: [0, 0]][1] += 1
      }
    }
    guard checking else { return }
    let expectation = statement.expectation
    let signature = "schema|\(statement.sql)"
    if let message {
      if expectation.outcome == .accepted {
        fail(
          .schema, signature + "|refused",
          "the legal statement\n  \(statement.sql)\nwas refused: \(message)")
      } else if !expectation.messages.contains(where: message.contains) {
        fail(
          .schema, signature + "|message",
          "\(statement.sql)\nwas refused with \(message.debugDescription); expected one of \(expectation.messages)"
        )
      } else if let before, !expectation.mayChangeOnFailure, dump() != before {
        fail(
          .schema, signature + "|changed",
          "the refused statement\n  \(statement.sql)\nchanged the database")
      }
    } else if expectation.outcome == .refused {
      fail(
        .schema, signature + "|accepted",
        "\(statement.sql)\nwas accepted; the schema must refuse it with \(expectation.messages)")
    }
  }

  /// Every row of the public tables, the id sequences and the change log's extent, as
  /// the foreign connection sees them (inside its transaction).
  private func dump() -> String {
    [
      "SELECT group_concat(id || ':' || name, ',') FROM (SELECT * FROM lists ORDER BY id)",
      "SELECT group_concat(id || ':' || list_id || ':' || quote(position) || ':' || metadata, ',') FROM (SELECT * FROM sections ORDER BY id)",
      "SELECT group_concat(id || ':' || section_id || ':' || quote(position) || ':' || value, ',') FROM (SELECT * FROM items ORDER BY id)",
      "SELECT group_concat(name || ':' || seq, ',') FROM (SELECT * FROM sqlite_sequence ORDER BY name)",
      "SELECT count(*) || ':' || coalesce(max(seq), 0) FROM changes",
      "SELECT pruned_through FROM change_log_horizon",
    ].map { ((try? foreign.scalarText($0)) ?? nil) ?? "-" }.joined(separator: "\n")
  }

  private func perform(_ call: APICall, failsWith expected: String?, via: Int) {
    let before = checksExpectations ? dump() : nil
    totals.apiCalls += 1
    let code = call.swift(on: FuzzStep.repositoryNames[via])
    let signature = "api|\(code)"
    do {
      try call.perform(on: repositories[via])
      if checksExpectations, let expected {
        fail(.api, signature + "|succeeded", "\(code)\nsucceeded; expected \(expected)")
      }
      // The write brought every observer of that repository up to date, other clients'
      // commits included.
      checkObservers(via: via)
    } catch {
      totals.apiRefused += 1
      let kind = errorCase(error)
      guard checksExpectations else { return }
      if kind != expected {
        fail(
          .api, signature + "|\(kind)",
          "\(code)\nfailed: \(error)\nexpected \(expected.map { "to fail with \($0)" } ?? "success")"
        )
      } else if let before, dump() != before {
        fail(.api, signature + "|changed", "\(code)\nfailed and changed the database")
      }
    }
  }

  /// Runs `liststore`: another process's commit, which observers see at the next refresh.
  private func runCLI(_ arguments: [String]) {
    totals.cliRuns += 1
    let result: ProcessResult
    do {
      result = try liststore(arguments, database: path)
    } catch {
      fail(.api, "cli|\(arguments)|start", "liststore \(arguments) did not start: \(error)")
      return
    }
    guard checksExpectations, result.status != 0 else { return }
    fail(.api, "cli|\(arguments)|\(result.status)", "liststore \(arguments) failed: \(result)")
  }

  // MARK: Observers

  /// Starts observing list `id` through repository `via`; its starting state must be
  /// the database's.
  private func observe(listID id: Int64, name: String, via: Int) {
    do {
      let array = try RawList(repository: repositories[via], id: id, name: name).observe()
      let recorder = ArrayRecorder(array, describe: { $0.text }, header: { $0.text })
      recorders.append((id, via, recorder, PrecisionChecker(array)))
      if !othersWrite { compare(recorder, listID: id, when: "it started") }
    } catch {
      // Only a replay of a shorter program observes a list that is not there, or another
      // writer deleted it meanwhile.
      if case .listNotFound = error, othersWrite { return }
      if case .generate = mode {
        fail(.api, "observe|\(id)", "observing list \(id) failed: \(error)")
      }
    }
  }

  /// The steps that observe, through repository `via`, every list it does not observe yet.
  func missingObservers(via: Int = 0) -> [FuzzStep] {
    var steps: [FuzzStep] = []
    let observed = Set(recorders.filter { $0.via == via }.map(\.listID))
    try? reader.cachedStatement("SELECT id, name FROM lists ORDER BY id").forEachRow { row in
      if !observed.contains(row.int64(at: 0)) {
        steps.append(.observe(listID: row.int64(at: 0), name: row.string(at: 1), via: via))
      }
    }
    return steps
  }

  /// After a refresh of repository `via`: each of its observers equals the database, or
  /// completed because its list is gone; every changeset of every observer passed the
  /// table view and says exactly what changed.
  func checkObservers(via: Int) {
    if let fault = injectedFault?(reader) {
      fail(.observer, "observer", fault)
      return
    }
    for (id, observerVia, recorder, precision) in recorders {
      if !precision.problems.isEmpty {
        fail(
          .observer, "observer",
          "the observer of list \(id) emitted changesets that say more than what changed:\n"
            + precision.problems.joined(separator: "\n"))
      }
      if let error = recorder.error {
        fail(.observer, "observer", "the observer of list \(id) failed: \(error)")
      }
      if !recorder.problems.isEmpty {
        fail(
          .observer, "observer",
          "the observer of list \(id) emitted a changeset the table view rejects:\n"
            + recorder.problems.joined(separator: "\n"))
      }
      guard observerVia == via else { continue }
      let exists = ((try? reader.scalarInt64("SELECT 1 FROM lists WHERE id = ?", id)) ?? nil) != nil
      if recorder.isCompleted {
        if exists {
          fail(.observer, "observer", "the observer of list \(id) completed; the list exists")
        }
      } else if !exists {
        fail(.observer, "observer", "list \(id) is gone; its observer did not complete")
      } else {
        compare(recorder, listID: id, when: "a refresh")
      }
    }
    // Completed observers are done with.
    for entry in recorders where entry.via == via && entry.recorder.isCompleted {
      totals.changesets += entry.recorder.changesets.count
    }
    recorders.removeAll { $0.via == via && $0.recorder.isCompleted }
  }

  private func compare(_ recorder: ArrayRecorder<RawJSON, RawJSON>, listID id: Int64, when: String)
  {
    totals.comparisons += 1
    let observed = ListContents(recorder.array.sections)
    let stored: ListContents?
    do {
      stored = try ListContents.read(listID: id, db: reader)
    } catch {
      fail(.observer, "observer", "reading list \(id) failed: \(error)")
      return
    }
    guard observed != stored else { return }
    let recent = recorder.changesets.suffix(2).map { "  \($0)" }.joined(separator: "\n")
    fail(
      .observer, "observer",
      """
      after \(when), the observer of list \(id) differs from the database.
      observer:
      \(observed)
      database:
      \(stored?.description ?? "(no list)")
      its last changesets:
      \(recent)
      """)
  }

  // MARK: Generating

  /// Generates and runs one foreign transaction, statement by statement, each chosen
  /// from the rows the foreign connection sees at that moment.
  /// - Parameters:
  ///   - generator: Chooses the pragmas, the framing and the statements.
  ///   - immediate: Always `BEGIN IMMEDIATE … COMMIT/ROLLBACK`, so that no other writer
  ///     changes the rows between a statement's choice and its run.
  /// - Returns: The transaction as a step, to replay.
  func generateTransaction(_ generator: inout FuzzGenerator, immediate: Bool) -> FuzzStep {
    defer { stepCount += 1 }
    totals.transactions += 1
    var transaction = ForeignTransaction(
      foreignKeys: generator.chance(0.5), recursiveTriggers: generator.chance(0.5), statements: [])
    setPragmas(transaction)
    func perform(_ statement: ForeignStatement) {
      transaction.statements.append(statement)
      execute(statement)
    }
    // 0, 1: autocommitted statements; 2: rolled back; 3: BEGIN IMMEDIATE; else BEGIN.
    let framing = immediate ? (generator.chance(0.1) ? 2 : 3) : generator.int(0..<10)
    let inTransaction = framing >= 2
    if inTransaction {
      perform(ForeignStatement(framing == 3 || immediate ? "BEGIN IMMEDIATE" : "BEGIN", .control))
    }
    var savepoint = false
    for _ in 0..<generator.int(1...(inTransaction ? 6 : 3)) where failure == nil {
      if inTransaction && !savepoint && generator.chance(0.08) {
        perform(ForeignStatement("SAVEPOINT f", .control))
        savepoint = true
      }
      if generator.chance(0.01) {
        // Another process pruned the log past every observer: they reload and diff.
        perform(ForeignStatement("DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes)"))
        perform(
          ForeignStatement(
            "UPDATE change_log_horizon SET pruned_through = (SELECT seq FROM sqlite_sequence WHERE name = 'changes')"
          ))
      }
      guard let state = try? FuzzState.read(foreign) else { break }
      for statement in generator.statements(state) where failure == nil { perform(statement) }
      if savepoint && generator.chance(0.3) {
        if generator.chance(0.6) { perform(ForeignStatement("ROLLBACK TO f", .control)) }
        perform(ForeignStatement("RELEASE f", .control))
        savepoint = false
      }
    }
    if savepoint {
      perform(ForeignStatement("ROLLBACK TO f", .control))
      perform(ForeignStatement("RELEASE f", .control))
    }
    if inTransaction { perform(ForeignStatement(framing == 2 ? "ROLLBACK" : "COMMIT", .control)) }
    if foreign.isInTransaction { try? foreign.execute("ROLLBACK") }
    return .foreign(transaction)
  }

  // MARK: Replaying and shrinking

  /// The id sequences of lists, sections and items (`sqlite_sequence`).
  func sequences() -> [String: Int64] {
    var result: [String: Int64] = [:]
    try? reader.cachedStatement(
      "SELECT name, seq FROM sqlite_sequence WHERE name IN ('lists', 'sections', 'items')"
    ).forEachRow { result[$0.string(at: 0)] = $0.int64(at: 1) }
    return result
  }

  /// The statements that raise the id sequences to `sequences` where they are lower (as
  /// if rows had been made and deleted: ids are never reused).
  func alignment(to sequences: [String: Int64]) -> [ForeignStatement] {
    let current = self.sequences()
    return ["lists", "sections", "items"].compactMap { name in
      guard let wanted = sequences[name], wanted > current[name] ?? 0 else { return nil }
      return ForeignStatement(
        current[name] == nil
          ? "INSERT INTO sqlite_sequence(name, seq) VALUES ('\(name)', \(wanted))"
          : "UPDATE sqlite_sequence SET seq = \(wanted) WHERE name = '\(name)'")
    }
  }

  /// Runs `program` on a fresh database, then one more refresh of each repository.
  /// - Parameters:
  ///   - program: The steps.
  ///   - target: The failure that counts.
  ///   - fault: A fault to inject into the checks.
  ///   - aligned: Whether the id sequences are raised before each step to what they were
  ///     when the step was generated.
  /// - Returns: The failure with `target`'s signature, if it happened, and the steps as
  ///   run, the raising of id sequences included as foreign steps.
  static func replay(
    _ program: [RecordedStep], target: FuzzFailure, fault: ((Connection) -> String?)? = nil,
    aligned: Bool = true
  ) -> (failure: FuzzFailure?, steps: [FuzzStep]) {
    guard let runner = try? FuzzRunner(mode: .replay(target: target)) else { return (nil, []) }
    defer { runner.close() }
    runner.injectedFault = fault
    var steps: [FuzzStep] = []
    for recorded in program where runner.failure == nil {
      let alignment = aligned ? runner.alignment(to: recorded.sequences) : []
      if !alignment.isEmpty {
        let step = FuzzStep.foreign(
          ForeignTransaction(foreignKeys: true, recursiveTriggers: false, statements: alignment))
        runner.run(step)
        steps.append(step)
      }
      runner.run(recorded.step)
      steps.append(recorded.step)
    }
    for via in runner.repositories.indices where runner.failure == nil {
      runner.run(.synchronize(via: via))
    }
    return (runner.failure, steps)
  }

  /// A short program that still fails like `program` did: delta debugging over the
  /// steps, then over the statements of each foreign step, then over the steps again,
  /// within `budget` replays and two minutes; replays raise the id sequences before each
  /// step (``RecordedStep``), and the result has those raisings as foreign steps.
  /// - Returns: The short program, whether a plain replay of it (with no raising but its
  ///   own) fails like `program`, and how many replays it took.
  static func shrink(
    _ program: [RecordedStep], failure: FuzzFailure, budget: Int = 600,
    fault: ((Connection) -> String?)? = nil
  ) -> (program: [FuzzStep], verified: Bool, replays: Int) {
    var replays = 0
    let deadline = ContinuousClock.now + .seconds(120)
    func fails(_ candidate: [RecordedStep]) -> Bool {
      guard ContinuousClock.now < deadline else { return false }
      replays += 1
      return replay(candidate, target: failure, fault: fault).failure != nil
    }
    var current = Array(program.prefix(failure.step + 1))
    guard fails(current) else { return (program.map(\.step), false, replays) }
    current = minimized(current, budget: budget - replays, fails)
    var index = 0
    while index < current.count && replays < budget {
      if case .foreign(var transaction) = current[index].step, transaction.statements.count > 1 {
        let fixed = current
        let at = index
        transaction.statements = minimized(transaction.statements, budget: budget - replays) {
          statements in
          var candidate = fixed
          var shorter = transaction
          shorter.statements = statements
          candidate[at].step = .foreign(shorter)
          return fails(candidate)
        }
        current[index].step = .foreign(transaction)
      }
      index += 1
    }
    current = minimized(current, budget: budget - replays, fails)
    let steps = replay(current, target: failure, fault: fault).steps
    let plain = steps.map { RecordedStep(step: $0, sequences: [:]) }
    let verified = replay(plain, target: failure, fault: fault, aligned: false).failure != nil
    return (steps, verified, replays + 2)
  }

  /// Delta debugging (ddmin, by complements): removes chunks of `elements`, ever smaller,
  /// as long as `fails` holds for what is left, then single elements.
  static func minimized<Element>(
    _ elements: [Element], budget: Int, _ fails: ([Element]) -> Bool
  ) -> [Element] {
    var current = elements
    var tries = 0
    var parts = 2
    while current.count >= 2 && tries < budget {
      let size = (current.count + parts - 1) / parts
      var reduced = false
      var start = 0
      while start < current.count && tries < budget {
        let end = min(start + size, current.count)
        let candidate = Array(current[..<start] + current[end...])
        tries += 1
        if fails(candidate) {
          current = candidate
          parts = max(parts - 1, 2)
          reduced = true
          break
        }
        start = end
      }
      if !reduced {
        if parts >= current.count { break }
        parts = min(parts * 2, current.count)
      }
    }
    return current
  }
}
