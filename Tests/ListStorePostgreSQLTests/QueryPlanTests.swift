import Foundation
import ListStore
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

@testable import ListStorePostgreSQL

/// What a read of the change log costs grows with the entries it reads, not with the
/// items table: on PostgreSQL, each entry's item row is sought through the primary key,
/// also in a plan made before the parameters are known (a prepared statement's generic
/// plan, which guesses that a third of the log follows the position). Such a plan once
/// hashed every item of a small list's table on every write (a tenth of a millisecond at
/// a thousand items, more with more).
@Suite(.postgres) struct QueryPlanTests {
  @Test func changeLogPagesSeekItemRowsWhateverThePlannerGuesses() throws {
    let database = try freshDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    for section in 0..<4 {
      try list.appendSection(RawJSON(#"{"header":"\#(section)"}"#))
      try list.appendItems((0..<500).map { RawJSON("\($0)") }, toSection: section)
    }
    let other = try repository.createList("other", metadata: RawJSON.self, item: RawJSON.self)
    try other.appendSection(RawJSON(#"{"header":"o"}"#))
    let db = try PGConnection(database.location)
    try db.execute("VACUUM ANALYZE")
    try db.execute("SET plan_cache_mode = force_generic_plan")
    let lastSeq = try #require(
      try db.query("SELECT max(seq) FROM changes", parameters: []).optionalString(row: 0, column: 0)
    )
    let pages = PostgreSQLDatabase.dialect.changeLogPage
    let queries: [(name: String, sql: String, arguments: String)] = [
      ("single", pages.single, "\(list.id), \(lastSeq)"),
      ("many", pages.many, "'{\(list.id),\(other.id)}', \(lastSeq)"),
      ("all", pages.all, lastSeq),
    ]
    for (name, sql, arguments) in queries {
      try db.execute("PREPARE page_\(name) AS \(PostgreSQLDatabase.numbered(sql))")
      let plan = try db.query("EXPLAIN EXECUTE page_\(name)(\(arguments))", parameters: [])
      let lines = (0..<plan.rowCount).map { plan.string(row: $0, column: 0) }
      let text = lines.joined(separator: "\n")
      let itemReads = lines.filter { $0.contains(" on items") }
      #expect(
        !itemReads.isEmpty
          && itemReads.allSatisfy { $0.contains("Index Scan using items_pkey on items") },
        "\(name): the items are not sought by id\n\(text)")
    }
  }
}
