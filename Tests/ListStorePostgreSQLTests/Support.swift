import Foundation
import ListStore
import ListStorePostgreSQL
import PostgreSQLKit
import PostgresTestSupport
import TestSupport
import Testing

typealias RawList = StoredList<RawJSON, RawJSON>

/// A fresh ListStore database on the shared PostgreSQL server.
func freshDatabase(icuLocale: String? = nil) throws -> TestDatabase {
  try TestEngine.postgresql.makeDatabase(icuLocale: icuLocale)
}

/// Records `list`'s observation, checking every changeset as a table view would.
func record(_ list: RawList) throws -> ArrayRecorder<RawJSON, RawJSON> {
  ArrayRecorder(try list.observe(), describe: { $0.text }, header: { $0.text })
}

/// The observer's array equals the test's own reading of the database, and every
/// changeset it emitted passed the table view's checks.
func expectExact(
  _ recorder: ArrayRecorder<RawJSON, RawJSON>, _ database: TestDatabase, list: String,
  _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let truth = try database.contents(list: list)
  #expect(
    ListContents(recorder.array.sections) == truth,
    "\(comment)\nobserver:\n\(ListContents(recorder.array.sections))\ndatabase:\n\(truth?.description ?? "no list")",
    sourceLocation: sourceLocation)
  #expect(
    recorder.problems.isEmpty, "\(comment) \(recorder.problems)", sourceLocation: sourceLocation)
  #expect(
    recorder.error == nil, "\(comment) \(String(describing: recorder.error))",
    sourceLocation: sourceLocation)
}

/// Waits until the observer's array equals the test's own reading of the database.
func waitUntilExact(
  _ recorder: ArrayRecorder<RawJSON, RawJSON>, _ database: TestDatabase, list: String
) throws -> Bool {
  let truth = try database.contents(list: list)
  return recorder.wait { ListContents($0.array.sections) == truth }
}

/// Grants `role` what ListStore needs on the tables of `database` (and nothing more).
func grantListStoreRights(to role: String, on database: TestDatabase) throws {
  let quoted = PGConnection.quoteIdentifier(role)
  try PGConnection(database.location).execute(
    """
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(quoted);
    GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO \(quoted);
    """)
}
