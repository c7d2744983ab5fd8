import CSQLiteBench
import ListStore

/// B1: bulk insert through the typed repository against a prepared-statement loop.
enum InsertBenchmark {
  static let sections = 10

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let count = options.b1Items ?? (options.quick ? 100_000 : 1_000_000)
    let runs = 3  // Per loader, after one warm-up; each run inserts `count` rows.
    let perSection = count / sections
    let strings = (0..<perSection).map(Fixtures.text)
    let entries = (0..<perSection).map { Entry(name: Fixtures.text($0), count: $0) }
    let folder = try ScratchFolder(in: scratch, name: "b1")
    defer { folder.remove() }
    let path = folder.database

    func typed<Item: Codable>(_ values: [Item]) throws -> Double {
      removeDatabase(path)
      defer { removeDatabase(path) }
      let repository = try Repository(path: path)
      let list = try repository.createList("b1", metadata: SectionMetadata.self, item: Item.self)
      for section in 0..<sections { try list.appendSection(SectionMetadata(header: "S\(section)")) }
      let batches = Dictionary(uniqueKeysWithValues: (0..<sections).map { ($0, values) })
      let time = try seconds { try list.appendItems(bySection: batches) }
      try check(try list.numberOfItems(inSection: sections - 1) == perSection, "B1 lost items")
      return Double(count) / time
    }

    func baseline(json: (Int) -> String) throws -> Double {
      removeDatabase(path)
      defer { removeDatabase(path) }
      // The same schema and triggers: a database migrated by the library.
      var sectionIDs: [Int64] = []
      do {
        let repository = try Repository(path: path)
        let list = try repository.createList(
          "b1", metadata: SectionMetadata.self, item: String.self)
        for section in 0..<sections {
          sectionIDs.append(try list.appendSection(SectionMetadata(header: "S\(section)")))
        }
      }
      let db = try RawDatabase(path: path)
      // The repository's connection settings (WAL is a property of the file).
      try db.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL")
      let time = try seconds {
        try db.execute("BEGIN IMMEDIATE")
        let insert = try db.prepare(
          "INSERT INTO items(section_id, position, value) VALUES (?, ?, ?)")
        defer { sqlite3_finalize(insert) }
        for sectionID in sectionIDs {
          for row in 0..<perSection {
            let key = Fixtures.positionKey(row)
            let value = json(row)
            sqlite3_bind_int64(insert, 1, sectionID)
            let status = key.withCString { key in
              value.withCString { value in
                sqlite3_bind_text(insert, 2, key, -1, bench_sqlite_static())
                sqlite3_bind_text(insert, 3, value, -1, bench_sqlite_static())
                return sqlite3_step(insert)
              }
            }
            guard status == SQLITE_DONE else { throw BenchError("insert: \(db.message)") }
            sqlite3_reset(insert)
          }
        }
        try db.execute("COMMIT")
      }
      return Double(count) / time
    }

    let stringRuns = try sideBySide(
      warmups: 1, runs: runs, subject: { try typed(strings) },
      baseline: { try baseline { Fixtures.quoted(strings[$0]) } })
    let entryRuns = try sideBySide(
      warmups: 1, runs: runs, subject: { try typed(entries) },
      baseline: { try baseline { Fixtures.json(entries[$0]) } })

    func row(_ name: String, _ runs: (subject: [Double], baseline: [Double])) -> Row {
      let value = Stats(runs.subject).scaled(by: 1e-6)
      let floor = Stats(runs.baseline).scaled(by: 1e-6)
      let ratio = value.median / floor.median
      return Row(
        id: "B1", name: "insert \(ObserveBenchmark.label(count)) items, \(name)", unit: "M rows/s",
        value: value,
        baseline: floor, ratio: ratio, target: "≥ 0.8 × baseline", pass: ratio >= 0.8,
        note:
          "appendItems(bySection:), one transaction for the \(sections) sections; "
          + "baseline: one transaction, one prepared INSERT")
    }
    return [row("String values", stringRuns), row("Codable struct values", entryRuns)]
  }
}
