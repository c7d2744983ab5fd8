import Foundation
import ListStore
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

/// Position keys compare as bytes whatever the database's collation: on a database
/// whose default collation is ICU `en-US` (where `'Zz' < 'a0'` is false, and `a0v`
/// sorts before `a0V`), lists keep the order of their keys' bytes — in reads, in
/// observers, and in what the command line prints.
@Suite(.postgres) struct CollationTests {
  @Test func listsOrderByKeyBytesInAnICUDatabase() throws {
    let database = try freshDatabase(icuLocale: "en-US")
    defer { database.remove() }
    let foreign = try database.foreign()
    // The database really orders text the ICU way.
    #expect(try foreign.rows("SELECT 'Zz' < 'a0', 'a0v' < 'a0V'") == [["f", "t"]])

    let repository = try database.openRepository()
    let list = try repository.createList("keys", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON(#"{"header":"middle"}"#))
    let recorder = try record(list)
    // Through the API: keys below a0 (Zz, Zy, …) and above it.
    try list.appendItem(RawJSON(#""m""#), toSection: 0)  // a0
    try list.insert(item: RawJSON(#""b2""#), at: IndexPath(indexes: [0, 0]))  // Zz
    try list.insert(item: RawJSON(#""b1""#), at: IndexPath(indexes: [0, 0]))  // Zy
    try list.appendItem(RawJSON(#""z""#), toSection: 0)  // a1
    try list.insert(section: RawJSON(#"{"header":"first"}"#), at: 0)  // Zz
    try list.appendSection(RawJSON(#"{"header":"last"}"#))  // a1
    // A foreign client's keys that ICU orders the other way round.
    try foreign.execute(
      """
      INSERT INTO items(section_id, position, value)
      SELECT id, 'a0v', '"lower v"' FROM sections WHERE metadata::text = '{"header":"middle"}';
      INSERT INTO items(section_id, position, value)
      SELECT id, 'a0V', '"upper V"' FROM sections WHERE metadata::text = '{"header":"middle"}';
      """)
    repository.synchronizeObservers()

    let expected = [#""b1""#, #""b2""#, #""m""#, #""upper V""#, #""lower v""#, #""z""#]
    let stored = try list.sections()
    #expect(
      stored.map { $0.metadata.text } == [
        #"{"header":"first"}"#, #"{"header":"middle"}"#, #"{"header":"last"}"#,
      ])
    #expect(stored[1].items.map(\.text) == expected)
    // The keys chosen do sort differently under the database's own collation.
    let icuOrder = try foreign.rows(
      "SELECT value::text FROM items ORDER BY position COLLATE \"en-US-x-icu\""
    ).map { $0[0] }
    #expect(icuOrder != expected.map { Optional($0) })
    try expectExact(recorder, database, list: "keys")
    #expect(recorder.array.sections[1].items.map(\.text) == expected)
    // A fresh observer, and the command line, read the same order.
    #expect(try list.observe().sections[1].items.map(\.text) == expected)
    let shown = try #require(try showJSON("keys", location: database.location))
    let sections = try #require(shown["sections"] as? [[String: Any]])
    #expect(sections.map { $0["header"] as? String } == ["first", "middle", "last"])
    let values = (sections[1]["items"] as? [[String: Any]])?.map { $0["value"] as? String }
    #expect(values == ["b1", "b2", "m", "upper V", "lower v", "z"])
    // Moving by index places by key bytes too.
    try list.moveItem(from: IndexPath(indexes: [1, 5]), to: IndexPath(indexes: [1, 0]))
    try list.moveItem(from: IndexPath(indexes: [1, 1]), to: IndexPath(indexes: [1, 4]))
    #expect(
      try list.sections()[1].items.map(\.text) == [
        #""z""#, #""b2""#, #""m""#, #""upper V""#, #""b1""#, #""lower v""#,
      ])
    try expectExact(recorder, database, list: "keys")
  }
}
