import Foundation
import TestSupport
import Testing

@testable import ListStore

/// The change log kept for a time (migration 7, docs/replicas.md), on both engines: with a
/// retention, pruning keeps every entry reached more recently than that, whatever the
/// readers — a replica away that long pulls its changes, deletions included — and goes on
/// through what was reached before; without one, it prunes as before. A replica whose
/// position was pruned away gets a reset.
@Suite struct LogRetentionTests {
  @Test(arguments: TestEngine.tested)
  func pruningKeepsWhatIsYoungerThanTheRetention(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("log", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON("\"s\""))
    let away = try repository.changeLogPosition()
    let doomed = try list.appendItem(RawJSON("1"), toSection: 0)
    try list.removeItem(id: doomed)
    try repository.setChangeLogRetention(seconds: 3600)
    try repository.pruneChangeLog()
    let first = try repository.changeLogPosition()
    // No reader holds the log, yet nothing went: it is younger than an hour.
    #expect(try horizon(repository) == 0)
    // A replica away since before the delete pulls it.
    var rows: [PulledRow] = []
    try repository.pull(
      lists: [list.id], mayRead: { _ in true }, after: away, start: { _, reset in #expect(!reset) },
      row: { rows.append($0) })
    #expect(rows == [.itemDeleted(list: list.id, id: doomed)])
    // Two hours pass (the marks say when the log reached its seqs): what was reached
    // before the last hour goes, the rest stays.
    let foreign = try database.foreign()
    try foreign.execute("UPDATE change_log_marks SET at = at - 7200")
    try list.appendItem(RawJSON("2"), toSection: 0)
    try repository.pruneChangeLog()
    #expect(try horizon(repository) == first)
    let kept = try foreign.rows("SELECT count(*) FROM changes")
    #expect(kept.first?.first == "1", "\(kept)")
    // Pulled from before the horizon: a reset.
    var reset = false
    try repository.pull(
      lists: [list.id], mayRead: { _ in true }, after: away,
      start: { _, isReset in reset = isReset },
      row: { _ in })
    #expect(reset)
    // Without a retention, pruning goes through what no reader needs.
    try repository.setChangeLogRetention(seconds: 0)
    try repository.pruneChangeLog()
    #expect(try horizon(repository) == (try repository.changeLogPosition()))
  }

  func horizon(_ repository: Repository) throws -> Int64 {
    try repository.read { db in try ChangeLog.horizon(db: db) }
  }
}
