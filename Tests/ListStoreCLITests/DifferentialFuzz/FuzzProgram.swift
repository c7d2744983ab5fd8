import Foundation
import SQLiteKit

@testable import ListStore

// The program a differential fuzz run executes: foreign SQL transactions, calls of the
// Swift API and refresh points, recorded as plain values so that a failing run can be
// replayed on a fresh database, shrunk, and printed as code one can paste.

/// What the schema must do with one foreign statement.
struct Expectation: Sendable, Hashable {
  enum Outcome: Sendable, Hashable {
    /// A legal write: it must succeed.
    case accepted
    /// It breaks a rule: it must fail with one of `messages`.
    case refused
    /// It may succeed or, depending on the rows it meets, fail with one of `messages`.
    case either
  }

  var outcome: Outcome
  /// On failure, SQLite's message must contain one of these.
  var messages: [String]
  /// Whether a failing statement may leave changes behind: `OR FAIL` keeps the rows
  /// written before the conflict, `OR ROLLBACK` undoes the whole transaction.
  var mayChangeOnFailure = false

  static let accepted = Expectation(outcome: .accepted, messages: [])

  static func refused(_ message: String) -> Expectation {
    Expectation(outcome: .refused, messages: [message])
  }

  static func either(_ messages: String...) -> Expectation {
    Expectation(outcome: .either, messages: messages)
  }

  /// BEGIN, COMMIT, ROLLBACK, SAVEPOINT and RELEASE: an `OR ROLLBACK` conflict may have
  /// ended the transaction already.
  static let control = Expectation.either("no transaction is active", "no such savepoint")
}

/// One statement of a foreign client, with what the schema must do with it.
struct ForeignStatement: Sendable, Hashable {
  var sql: String
  var expectation: Expectation

  init(_ sql: String, _ expectation: Expectation = .accepted) {
    self.sql = sql
    self.expectation = expectation
  }

  /// Whether it raises an id sequence, as a shrunk program does to keep the ids of the
  /// original run.
  var raisesSequence: Bool { sql.contains("sqlite_sequence") }

  /// Whether it only frames a transaction (it is not counted as a statement).
  var isControl: Bool {
    ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"].contains {
      sql.hasPrefix($0)
    }
  }
}

/// A foreign client's statements, run one after another on its own connection with
/// the pragmas set first; a failing statement does not stop the ones after it, and a
/// transaction left open at the end is rolled back.
struct ForeignTransaction: Sendable, Hashable {
  var foreignKeys: Bool
  var recursiveTriggers: Bool
  var statements: [ForeignStatement]
}

/// A call of the Swift API on the fuzzed repository.
enum APICall: Sendable, Hashable {
  case createList(String)
  case deleteList(String)
  case renameList(String, to: String)
  case pruneChangeLog
  /// An operation through a handle on list `id` named `name` (the id may be stale).
  case list(id: Int64, name: String, ListOperation)
}

/// The mutations of `StoredList`, with metadata and values as JSON text.
enum ListOperation: Sendable, Hashable {
  case appendSection(String)
  case insertSection(String, at: Int)
  case removeSection(at: Int)
  case removeSectionWithID(Int64)
  case moveSection(from: Int, to: Int)
  case moveSectionWithID(Int64, to: Int)
  case setMetadata(String, at: Int)
  case setMetadataOfSectionWithID(String, id: Int64)
  case appendItem(String, section: Int)
  case appendItems([String], section: Int)
  case appendItemsBySection([Int: [String]])
  case insertItem(String, at: [Int])
  case insertItemAfter(String, neighbor: Int64)
  case insertItemBefore(String, neighbor: Int64)
  case removeItem(at: [Int])
  case removeItemWithID(Int64)
  case moveItem(from: [Int], to: [Int])
  case moveItemWithID(Int64, to: [Int])
  case moveItemAfter(Int64, neighbor: Int64)
  case moveItemBefore(Int64, neighbor: Int64)
  case replaceItem(at: [Int], with: String)
  case replaceItemWithID(Int64, with: String)

  /// Whether it writes section metadata (else item values, or nothing new).
  var writesMetadata: Bool {
    switch self {
    case .appendSection, .insertSection, .setMetadata, .setMetadataOfSectionWithID: true
    default: false
    }
  }
}

/// One step of a program. `via` picks the repository: 0 is `repository`, 1 is `other`,
/// a second repository on the same file (as another process would have one), so that
/// each one's writes are another process's commits for the other.
enum FuzzStep: Sendable, Hashable {
  /// A foreign client's transaction (or autocommitted statements).
  case foreign(ForeignTransaction)
  /// A call of the Swift API, and the `ListStoreError` case it must fail with (`nil`:
  /// it must succeed).
  case api(APICall, failsWith: String?, via: Int)
  /// `Repository.synchronizeObservers()`: one refresh for every commit since the last.
  case synchronize(via: Int)
  /// Starts observing list `id` with `observe()`.
  case observe(listID: Int64, name: String, via: Int)
  /// Drops the oldest observer of list `id` (its array is released).
  case forget(listID: Int64, via: Int)
  /// Runs `liststore --db PATH` with these arguments, to its end.
  case cli([String])

  /// How reproductions name the repositories.
  static let repositoryNames = ["repository", "other"]
}

/// A step as a run generated it, with the id sequences (`sqlite_sequence` of lists,
/// sections and items) the database had before it. Replays that shrink a program raise
/// the sequences to these values before each step, so that the rows a step makes get
/// the ids later steps name whatever steps were left out before it.
struct RecordedStep: Sendable, Hashable {
  var step: FuzzStep
  var sequences: [String: Int64]
}

// MARK: - Performing API calls

typealias RawList = StoredList<RawJSON, RawJSON>

extension APICall {
  /// Performs the call on `repository`.
  func perform(on repository: Repository) throws(ListStoreError) {
    switch self {
    case .createList(let name): try repository.createList(name)
    case .deleteList(let name): try repository.deleteList(name)
    case .renameList(let name, let newName): try repository.renameList(name, to: newName)
    case .pruneChangeLog: try repository.pruneChangeLog()
    case .list(let id, let name, let operation):
      try operation.perform(on: RawList(repository: repository, id: id, name: name))
    }
  }

  /// The call as Swift, for a reproduction, on the repository named `repository`.
  func swift(on repository: String) -> String {
    switch self {
    case .createList(let name): "try \(repository).createList(\(literal(name)))"
    case .deleteList(let name): "try \(repository).deleteList(\(literal(name)))"
    case .renameList(let name, let newName):
      "try \(repository).renameList(\(literal(name)), to: \(literal(newName)))"
    case .pruneChangeLog: "try \(repository).pruneChangeLog()"
    case .list(let id, let name, let operation):
      "try RawList(repository: \(repository), id: \(id), name: \(literal(name)))."
        + operation.swift
    }
  }
}

extension ListOperation {
  func perform(on list: RawList) throws(ListStoreError) {
    switch self {
    case .appendSection(let metadata): try list.appendSection(RawJSON(metadata))
    case .insertSection(let metadata, let index):
      try list.insert(section: RawJSON(metadata), at: index)
    case .removeSection(let index): try list.removeSection(at: index)
    case .removeSectionWithID(let id): try list.removeSection(id: id)
    case .moveSection(let from, let to): try list.moveSection(from: from, to: to)
    case .moveSectionWithID(let id, let to): try list.moveSection(id: id, to: to)
    case .setMetadata(let metadata, let index):
      try list.setMetadata(RawJSON(metadata), forSectionAt: index)
    case .setMetadataOfSectionWithID(let metadata, let id):
      try list.setMetadata(RawJSON(metadata), forSectionWithID: id)
    case .appendItem(let value, let section):
      _ = try list.appendItem(RawJSON(value), toSection: section)
    case .appendItems(let values, let section):
      _ = try list.appendItems(values.map(RawJSON.init), toSection: section)
    case .appendItemsBySection(let batches):
      _ = try list.appendItems(bySection: batches.mapValues { $0.map(RawJSON.init) })
    case .insertItem(let value, let path):
      _ = try list.insert(item: RawJSON(value), at: IndexPath(indexes: path))
    case .insertItemAfter(let value, let neighbor):
      _ = try list.insert(item: RawJSON(value), after: neighbor)
    case .insertItemBefore(let value, let neighbor):
      _ = try list.insert(item: RawJSON(value), before: neighbor)
    case .removeItem(let path): try list.removeItem(at: IndexPath(indexes: path))
    case .removeItemWithID(let id): try list.removeItem(id: id)
    case .moveItem(let from, let to):
      try list.moveItem(from: IndexPath(indexes: from), to: IndexPath(indexes: to))
    case .moveItemWithID(let id, let to): try list.moveItem(id: id, to: IndexPath(indexes: to))
    case .moveItemAfter(let id, let neighbor): try list.moveItem(id: id, after: neighbor)
    case .moveItemBefore(let id, let neighbor): try list.moveItem(id: id, before: neighbor)
    case .replaceItem(let path, let value):
      try list.replaceItem(at: IndexPath(indexes: path), with: RawJSON(value))
    case .replaceItemWithID(let id, let value): try list.replaceItem(id: id, with: RawJSON(value))
    }
  }

  var swift: String {
    func raw(_ json: String) -> String { "RawJSON(\(literal(json)))" }
    func path(_ indexes: [Int]) -> String { "IndexPath(indexes: \(indexes))" }
    switch self {
    case .appendSection(let metadata): return "appendSection(\(raw(metadata)))"
    case .insertSection(let metadata, let index):
      return "insert(section: \(raw(metadata)), at: \(index))"
    case .removeSection(let index): return "removeSection(at: \(index))"
    case .removeSectionWithID(let id): return "removeSection(id: \(id))"
    case .moveSection(let from, let to): return "moveSection(from: \(from), to: \(to))"
    case .moveSectionWithID(let id, let to): return "moveSection(id: \(id), to: \(to))"
    case .setMetadata(let metadata, let index):
      return "setMetadata(\(raw(metadata)), forSectionAt: \(index))"
    case .setMetadataOfSectionWithID(let metadata, let id):
      return "setMetadata(\(raw(metadata)), forSectionWithID: \(id))"
    case .appendItem(let value, let section):
      return "appendItem(\(raw(value)), toSection: \(section))"
    case .appendItems(let values, let section):
      return "appendItems([\(values.map(raw).joined(separator: ", "))], toSection: \(section))"
    case .appendItemsBySection(let batches):
      let entries = batches.keys.sorted().map { key in
        "\(key): [\((batches[key] ?? []).map(raw).joined(separator: ", "))]"
      }
      return "appendItems(bySection: [\(entries.joined(separator: ", "))])"
    case .insertItem(let value, let at): return "insert(item: \(raw(value)), at: \(path(at)))"
    case .insertItemAfter(let value, let neighbor):
      return "insert(item: \(raw(value)), after: \(neighbor))"
    case .insertItemBefore(let value, let neighbor):
      return "insert(item: \(raw(value)), before: \(neighbor))"
    case .removeItem(let at): return "removeItem(at: \(path(at)))"
    case .removeItemWithID(let id): return "removeItem(id: \(id))"
    case .moveItem(let from, let to): return "moveItem(from: \(path(from)), to: \(path(to)))"
    case .moveItemWithID(let id, let to): return "moveItem(id: \(id), to: \(path(to)))"
    case .moveItemAfter(let id, let neighbor): return "moveItem(id: \(id), after: \(neighbor))"
    case .moveItemBefore(let id, let neighbor): return "moveItem(id: \(id), before: \(neighbor))"
    case .replaceItem(let at, let value):
      return "replaceItem(at: \(path(at)), with: \(raw(value)))"
    case .replaceItemWithID(let id, let value): return "replaceItem(id: \(id), with: \(raw(value)))"
    }
  }
}

/// The name of a `ListStoreError`'s case, as programs record what a call must fail with.
func errorCase(_ error: ListStoreError) -> String {
  switch error {
  case .listNotFound: "listNotFound"
  case .listExists: "listExists"
  case .emptyName: "emptyName"
  case .sectionOutOfRange: "sectionOutOfRange"
  case .itemOutOfRange: "itemOutOfRange"
  case .insertionOutOfRange: "insertionOutOfRange"
  case .sectionInsertionOutOfRange: "sectionInsertionOutOfRange"
  case .sectionNotFound: "sectionNotFound"
  case .itemNotFound: "itemNotFound"
  case .busy: "busy"
  default: "\(error)"
  }
}

// MARK: - Printing a program

/// `text` as a Swift string literal.
func literal(_ text: String) -> String {
  var result = "\""
  for scalar in text.unicodeScalars {
    switch scalar {
    case "\\": result += "\\\\"
    case "\"": result += "\\\""
    case "\n": result += "\\n"
    case "\r": result += "\\r"
    case "\t": result += "\\t"
    case "\0": result += "\\0"
    default: result.unicodeScalars.append(scalar)
    }
  }
  return result + "\""
}

extension FuzzStep {
  /// The step as Swift code that runs it, for a reproduction (see ``swiftCode(of:)``);
  /// `observer` names the recorder an `.observe` step makes, or the one a `.forget`
  /// step drops.
  func swift(observer: String) -> String {
    let names = Self.repositoryNames
    switch self {
    case .synchronize(let via):
      return "\(names[via]).synchronizeObservers()"
    case .cli(let arguments):
      let arguments = arguments.map(literal).joined(separator: ", ")
      return "_ = try liststore([\(arguments)], database: repository.path)"
    case .observe(let id, let name, let via):
      return
        "var \(observer): ArrayRecorder? = try record(RawList(repository: \(names[via]), id: \(id), name: \(literal(name))))"
    case .forget:
      return "\(observer) = nil"
    case .api(let call, let failure, let via):
      let call = call.swift(on: names[via])
      return failure.map { "_ = try? \(call.dropFirst(4))  // fails: \($0)" } ?? call
    case .foreign(let transaction):
      var lines = [
        "db = try foreign(repository, foreignKeys: \(transaction.foreignKeys), "
          + "recursiveTriggers: \(transaction.recursiveTriggers))",
        "for sql in [",
      ]
      for statement in transaction.statements {
        var line = "  " + literal(statement.sql) + ","
        switch statement.expectation.outcome {
        case .accepted: break
        case .refused:
          line += "  // refused: " + statement.expectation.messages.joined(separator: " | ")
        case .either: line += "  // may be refused"
        }
        lines.append(line)
      }
      lines.append("] { try? db.execute(sql) }")
      let ends = transaction.statements.last.map { ["COMMIT", "ROLLBACK"].contains($0.sql) }
      if transaction.statements.contains(where: { $0.sql.hasPrefix("BEGIN") }), ends != true {
        lines.append("try? db.execute(\"ROLLBACK\")  // a transaction left open is rolled back")
      }
      return lines.joined(separator: "\n")
    }
  }

  /// Whether it acts through the second repository.
  var usesOther: Bool {
    switch self {
    case .api(_, _, let via), .synchronize(let via), .observe(_, _, let via), .forget(_, let via):
      via == 1
    case .foreign, .cli: false
    }
  }

  /// How many foreign statements (not counting BEGIN, COMMIT and the like, nor raisings
  /// of id sequences) it holds.
  var statementCount: Int {
    guard case .foreign(let transaction) = self else { return 0 }
    return transaction.statements.filter { !$0.isControl && !$0.raisesSequence }.count
  }

  /// Whether it only raises id sequences (see ``RecordedStep``).
  var isAlignment: Bool {
    guard case .foreign(let transaction) = self else { return false }
    return transaction.statements.allSatisfy(\.raisesSequence)
  }
}

/// A program as Swift code one can paste into a test shaped like
/// `ExactObservationTests` (its `foreign(_:foreignKeys:recursiveTriggers:)` and
/// `record(_:)`): the steps, then the check that fails.
func swiftCode(of program: [FuzzStep]) -> String {
  var lines = [
    "let repository = try Repository(",
    "  path: folder.file(\"db.sqlite\"), busyTimeout: .seconds(10), readOnly: false,",
    "  maximumPageCount: nil, watchesDatabase: false)",
  ]
  if program.contains(where: \.usesOther) {
    lines += [
      "let other = try Repository(",
      "  path: repository.path, busyTimeout: .seconds(10), readOnly: false,",
      "  maximumPageCount: nil, watchesDatabase: false)",
    ]
  }
  lines.append("var db: Connection")
  var observers: [(name: String, listID: Int64, via: Int, live: Bool)] = []
  for step in program {
    var name = "observer\(observers.count + 1)"
    switch step {
    case .observe(let id, _, let via): observers.append((name, id, via, true))
    case .forget(let id, let via):
      guard let index = observers.firstIndex(where: { $0.live && $0.listID == id && $0.via == via })
      else { continue }
      observers[index].live = false
      name = observers[index].name
    default: break
    }
    lines.append(step.swift(observer: name))
  }
  for via in Set(observers.filter(\.live).map(\.via)).sorted() {
    lines.append("\(FuzzStep.repositoryNames[via]).synchronizeObservers()")
  }
  lines.append("let reader = try Connection(path: repository.path, mode: .readOnly)")
  for (name, id, _, live) in observers where live {
    lines.append("if let \(name) {")
    lines.append(
      "  #expect(\(name).isCompleted ? try ListContents.read(listID: \(id), db: reader) == nil"
        + " : ListContents(\(name).array.sections) == (try ListContents.read(listID: \(id), db: reader)))"
    )
    lines.append("  #expect(\(name).problems.isEmpty && \(name).error == nil)")
    lines.append("}")
  }
  return lines.joined(separator: "\n")
}
