import ListStore
import ListStorePostgreSQL

/// B9: bulk append on PostgreSQL through the typed repository against raw libpq, both with
/// `COPY`: B1 on PostgreSQL.
enum PostgresInsertBenchmark {
  static let sections = 10
  static let target = "≥ 0.7 × baseline"

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let count = options.b9Items ?? (options.quick ? 100_000 : 1_000_000)
    let name = "PostgreSQL: append \(ObserveBenchmark.label(count)) items, String values"
    guard BenchPostgres.unavailableReason == nil else {
      return BenchPostgres.skipped("B9", name, target: target)
    }
    let runs = 3  // Per loader, after one warm-up; each run inserts `count` rows.
    let perSection = count / sections
    let strings = (0..<perSection).map(Fixtures.text)

    /// A fresh database with the list and its empty sections, made by the library.
    func prepared() throws -> (
      BenchPostgres.Database, Repository, StoredList<SectionMetadata, String>, [Int64]
    ) {
      let database = try BenchPostgres.makeDatabase(options)
      let repository = try Repository(url: database.connectionString)
      let list = try repository.createList(
        "b9", metadata: SectionMetadata.self, item: String.self)
      var sectionIDs: [Int64] = []
      for section in 0..<sections {
        sectionIDs.append(try list.appendSection(SectionMetadata(header: "S\(section)")))
      }
      return (database, repository, list, sectionIDs)
    }

    func listStore() throws -> Double {
      let (database, repository, list, _) = try prepared()
      defer { database.remove() }
      defer { repository.stopObserving() }
      let batches = Dictionary(uniqueKeysWithValues: (0..<sections).map { ($0, strings) })
      let time = try seconds { try list.appendItems(bySection: batches) }
      try check(try list.numberOfItems(inSection: sections - 1) == perSection, "B9 lost items")
      return Double(count) / time
    }

    func baseline() throws -> Double {
      let (database, repository, _, sectionIDs) = try prepared()
      defer { database.remove() }
      repository.stopObserving()
      let db = try RawPostgres(database.connectionString)
      var inserted = 0
      let time = try seconds {
        try db.execute("BEGIN")
        var section = 0
        var row = 0
        inserted = try db.copy("COPY items(section_id, position, value) FROM STDIN") { buffer in
          // A chunk of rows: `section_id TAB key TAB "value" NEWLINE` (no field needs
          // COPY's escaping).
          let sectionText = String(sectionIDs[section])
          for _ in 0..<1_000 {
            buffer.append(contentsOf: sectionText.utf8)
            buffer.append(9)
            buffer.append(contentsOf: Fixtures.positionKey(row).utf8)
            buffer.append(9)
            buffer.append(34)
            buffer.append(contentsOf: strings[row].utf8)
            buffer.append(34)
            buffer.append(10)
            row += 1
            if row == perSection {
              row = 0
              section += 1
              if section == sections { return false }
              return true
            }
          }
          return true
        }
        try db.execute("COMMIT")
      }
      try check(inserted == count, "B9 baseline inserted \(inserted) rows, not \(count)")
      return Double(count) / time
    }

    let results = try sideBySide(
      warmups: 1, runs: runs, subject: listStore, baseline: baseline)
    let value = Stats(results.subject).scaled(by: 1e-6)
    let floor = Stats(results.baseline).scaled(by: 1e-6)
    let ratio = value.median / floor.median
    return [
      Row(
        id: "B9", name: name, unit: "M rows/s", value: value, baseline: floor, ratio: ratio,
        target: target, pass: ratio >= 0.7,
        note:
          "appendItems(bySection:): one transaction, one COPY per section and the new ids read "
          + "back; baseline: raw libpq, BEGIN, one COPY of every row, COMMIT, into a database "
          + "migrated by the library (same schema and triggers), over the Unix socket")
    ]
  }
}
