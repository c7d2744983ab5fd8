import CSQLiteBench
import FoundationEssentials
import ListStore
import Observable2D

/// B13: `StoredList.replace(with:performDiff:)` of a 100k-item list with 1 % of it
/// changed, against the same row writes made directly with single-row statements in one
/// transaction.
enum ReplaceBenchmark {
  typealias Section = Observable2DArraySection<SectionMetadata, String>

  /// One row write of the baseline.
  enum Write {
    case insert(section: Int64, position: String, value: String)
    case move(id: Int64, section: Int64, position: String, value: String?)
    case update(id: Int64, value: String)
    case delete(id: Int64)
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let size = options.quick ? 20_000 : 100_000
    let sections = 10
    let runs = options.quick ? 3 : 9
    let folder = try ScratchFolder(in: scratch, name: "b13")
    defer {
      for name in ["template", "subject", "baseline"] {
        removeDatabase(folder.path + "/\(name).sqlite")
      }
      folder.remove()
    }
    let template = folder.path + "/template.sqlite"
    let subject = folder.path + "/subject.sqlite"
    let baseline = folder.path + "/baseline.sqlite"
    let before: [Section]
    do {
      let repository = try Repository(path: template)
      let list = try Fixtures.makeList(
        repository, name: "b13", sections: sections, perSection: size / sections)
      before = try list.sections()
    }
    let target = changed(before, count: size / 100)

    // Once, outside the measurement: what the sync writes, as the baseline's writes.
    try copyDatabase(template, to: subject)
    let (changeset, written) = try replace(subject, target)
    try check(
      written == Int64(changeset.entryCount) && changeset.insertedSections.isEmpty
        && changeset.deletedSections.isEmpty,
      "B13: \(written) rows written for \(changeset.entryCount) diff entries")
    var oldValues: [Int64: String] = [:]
    for section in before {
      for entry in section.items.entries { oldValues[entry.id] = entry.value }
    }
    let writes = try rowWrites(of: changeset, in: subject, oldValues: oldValues)
    try check(writes.count == changeset.entryCount, "B13: \(writes.count) writes to replay")

    let times = try sideBySide(
      warmups: 1, runs: runs,
      subject: {
        try copyDatabase(template, to: subject)
        let repository = try Repository(path: subject)
        let list = try repository.list("b13", metadata: SectionMetadata.self, item: String.self)
        var result = Changeset<SectionMetadata, String>()
        let time = try seconds { result = try list.replace(with: target) }
        try check(result.entryCount == changeset.entryCount, "B13: another diff")
        return time
      },
      baseline: {
        try copyDatabase(template, to: baseline)
        return try replay(writes, on: baseline)
      })
    // The replayed database holds what the sync wrote.
    try check(
      try dump(baseline) == dump(subject), "B13: the baseline's writes do not give the same list")
    let time = Stats(times.subject).scaled(by: 1e3)
    let floor = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / floor.median
    let label = ObserveBenchmark.label(size)
    return [
      Row(
        id: "B13",
        name: "replace(with:) of \(label) items, 1 % changed: \(changeset.entryCount) rows",
        unit: "ms", value: time, baseline: floor, ratio: ratio,
        target: "rows = diff entries; ≤ 3 × the rows written directly", pass: ratio <= 3,
        note:
          "\(written) rows written for \(changeset.entryCount) diff entries "
          + "(\(changeset.updatedItems.count) updated, \(changeset.deletedItems.count) deleted, "
          + "\(changeset.insertedItems.count) inserted, \(changeset.movedItems.count) moved); "
          + "baseline: the same rows by single-row statements in one transaction",
        details: ["rows": Double(written)])
    ]
  }

  /// `state` with `count` changes spread over it: a quarter each of value updates,
  /// deletions, insertions and moves (half of them to another section).
  static func changed(_ state: [Section], count: Int) -> [Section] {
    var random = BenchRandom(seed: 13)
    var state = state
    func randomRow(_ section: Int, extra: Int = 0) -> Int {
      random.next(below: state[section].items.count + extra)
    }
    for change in 0..<count {
      let section = random.next(below: state.count)
      switch change % 4 {
      case 0: state[section].items[randomRow(section)] = "changed \(change)"
      case 1: state[section].items.remove(at: randomRow(section))
      case 2: state[section].items.insert("new \(change)", id: 0, at: randomRow(section, extra: 1))
      default:
        let entry = state[section].items.removeEntry(at: randomRow(section))
        let to = change % 8 == 3 ? section : random.next(below: state.count)
        state[to].items.insert(entry.value, id: entry.id, at: randomRow(to, extra: 1))
      }
    }
    return state
  }

  /// Replaces the list in the database at `path`; returns the changeset and the rows
  /// written (change-log entries).
  static func replace(_ path: String, _ target: [Section]) throws -> (
    Changeset<SectionMetadata, String>, Int64
  ) {
    let logBefore = try logCount(path)
    let repository = try Repository(path: path)
    let list = try repository.list("b13", metadata: SectionMetadata.self, item: String.self)
    let changeset = try list.replace(with: target)
    return (changeset, try logCount(path) - logBefore)
  }

  static func logCount(_ path: String) throws -> Int64 {
    let db = try RawDatabase(path: path)
    let statement = try db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")
    defer { sqlite3_finalize(statement) }
    return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : 0
  }

  /// The writes that turn the template into the synced list, read back from it.
  static func rowWrites(
    of changeset: Changeset<SectionMetadata, String>, in path: String, oldValues: [Int64: String]
  ) throws -> [Write] {
    let db = try RawDatabase(path: path)
    let read = try db.prepare("SELECT section_id, position, value FROM items WHERE id = ?")
    defer { sqlite3_finalize(read) }
    func row(_ id: Int64) throws -> (Int64, String, String) {
      sqlite3_bind_int64(read, 1, id)
      defer { sqlite3_reset(read) }
      guard sqlite3_step(read) == SQLITE_ROW else { throw BenchError("B13: no item \(id)") }
      return (sqlite3_column_int64(read, 0), columnText(read, 1), columnText(read, 2))
    }
    var writes: [Write] = []
    for entry in changeset.updatedItems {
      writes.append(.update(id: entry.id, value: try row(entry.id).2))
    }
    for entry in changeset.insertedItems {
      let (section, position, value) = try row(entry.id)
      writes.append(.insert(section: section, position: position, value: value))
    }
    for entry in changeset.movedItems {
      let (section, position, value) = try row(entry.id)
      let changed = oldValues[entry.id] != entry.value
      writes.append(
        .move(id: entry.id, section: section, position: position, value: changed ? value : nil))
    }
    for entry in changeset.deletedItems { writes.append(.delete(id: entry.id)) }
    return writes
  }

  /// Runs `writes` with single-row statements in one transaction; returns the seconds.
  static func replay(_ writes: [Write], on path: String) throws -> Double {
    let db = try RawDatabase(path: path)
    try db.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL")
    return try seconds {
      try db.execute("BEGIN IMMEDIATE")
      let insert = try db.prepare("INSERT INTO items(section_id, position, value) VALUES (?, ?, ?)")
      let move = try db.prepare("UPDATE items SET section_id = ?, position = ? WHERE id = ?")
      let moveValue = try db.prepare(
        "UPDATE items SET section_id = ?, position = ?, value = ? WHERE id = ?")
      let update = try db.prepare("UPDATE items SET value = ? WHERE id = ?")
      let delete = try db.prepare("DELETE FROM items WHERE id = ?")
      defer {
        for statement in [insert, move, moveValue, update, delete] { sqlite3_finalize(statement) }
      }
      func text(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        sqlite3_bind_text(statement, index, text, -1, bench_sqlite_transient())
      }
      func step(_ statement: OpaquePointer) throws {
        guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError("B13: \(db.message)") }
        sqlite3_reset(statement)
      }
      for write in writes {
        switch write {
        case .insert(let section, let position, let value):
          sqlite3_bind_int64(insert, 1, section)
          text(insert, 2, position)
          text(insert, 3, value)
          try step(insert)
        case .move(let id, let section, let position, let value?):
          sqlite3_bind_int64(moveValue, 1, section)
          text(moveValue, 2, position)
          text(moveValue, 3, value)
          sqlite3_bind_int64(moveValue, 4, id)
          try step(moveValue)
        case .move(let id, let section, let position, nil):
          sqlite3_bind_int64(move, 1, section)
          text(move, 2, position)
          sqlite3_bind_int64(move, 3, id)
          try step(move)
        case .update(let id, let value):
          text(update, 1, value)
          sqlite3_bind_int64(update, 2, id)
          try step(update)
        case .delete(let id):
          sqlite3_bind_int64(delete, 1, id)
          try step(delete)
        }
      }
      try db.execute("COMMIT")
    }
  }

  /// Every item as `section position value`, in order: what two copies must agree on.
  static func dump(_ path: String) throws -> [String] {
    let db = try RawDatabase(path: path)
    let statement = try db.prepare(
      "SELECT section_id, position, value FROM items ORDER BY section_id, position")
    defer { sqlite3_finalize(statement) }
    var lines: [String] = []
    while sqlite3_step(statement) == SQLITE_ROW {
      lines.append(
        "\(sqlite3_column_int64(statement, 0)) \(columnText(statement, 1)) \(columnText(statement, 2))"
      )
    }
    return lines
  }
}

/// Copies a (closed, checkpointed) database file.
func copyDatabase(_ source: String, to target: String) throws {
  removeDatabase(target)
  guard let data = FileManager.default.contents(atPath: source),
    FileManager.default.createFile(atPath: target, contents: data)
  else { throw BenchError("cannot copy \(source) to \(target)") }
}

/// A small seeded generator (SplitMix64) for reproducible inputs.
struct BenchRandom {
  var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in `0..<bound` (0 when `bound` is 0).
  mutating func next(below bound: Int) -> Int {
    bound <= 0 ? 0 : Int(next() % UInt64(bound))
  }
}
