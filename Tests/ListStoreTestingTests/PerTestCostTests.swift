import Foundation
import ListStore
import ListStoreTesting
import Testing

/// What a temporary repository costs a test, copied from the template and migrated from
/// scratch, side by side. A measurement, not a check: it runs with `LISTSTORE_MEASURE=1`.
@Suite struct PerTestCostTests {
  @Test(.enabled(if: ProcessInfo.processInfo.environment["LISTSTORE_MEASURE"] != nil))
  func measureTemplateCopyAgainstMigrating() throws {
    let rounds = 200
    // The template is made by the first repository of the process; not counted.
    try TemporaryRepository().remove()
    let clock = ContinuousClock()
    var copied = Duration.zero
    var migrated = Duration.zero
    for _ in 0..<rounds {
      copied += try clock.measure {
        let temporary = try TemporaryRepository()
        _ = try temporary.repository.createList("cities")
        temporary.remove()
      }
      migrated += try clock.measure {
        let folder = NSTemporaryDirectory() + "liststore-measure-" + UUID().uuidString
        let repository = try Repository(path: folder + "/test.sqlite")
        _ = try repository.createList("cities")
        repository.stopObserving()
        try FileManager.default.removeItem(atPath: folder)
      }
    }
    print(
      "per-test repository, mean of \(rounds): template copy \(copied / rounds), "
        + "migrating \(migrated / rounds)")
  }
}
