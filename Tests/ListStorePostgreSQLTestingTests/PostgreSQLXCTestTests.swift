import Foundation
import ListStore
import ListStorePostgreSQLTesting
import ListStoreTesting
import XCTest

/// ListStorePostgreSQLTesting from XCTest: a database per test, dropped in the tear-down.
final class PostgreSQLXCTestTests: XCTestCase {
  var temporary: TemporaryRepository?

  override func setUpWithError() throws {
    try skipUnlessPostgreSQLIsInstalled()
    temporary = try makeTemporaryRepository(
      lists: [
        .json(#"{"list": "cities", "sections": [{"header": "Cities", "items": ["Paris"]}]}"#)
      ],
      engine: .postgresql)
  }

  override func tearDown() {
    // The tear-down block registered by makeTemporaryRepository ran before this, as XCTest
    // runs tear-down blocks before tearDown(): the database is gone.
    guard let temporary else { return }
    XCTAssertThrowsError(try Repository.open(temporary.path, createIfMissing: false))
  }

  func testRecordsAndExpectsWithXCTest() throws {
    let repository = try XCTUnwrap(temporary).repository
    let cities = try repository.list("cities", metadata: SectionMetadata.self, item: String.self)
    let recorder = try ChangesetRecorder(cities)
    try cities.appendItem("Berlin", toSection: 0)
    recorder.expect(
      nextJSON: #"{"changes":{"insertedItems":[{"at":[0,1],"id":2,"value":"Berlin"}]}}"#)
    recorder.expectNoMoreChangesets()
    XCTAssertEqual(
      try cities.showText(), "cities\n  [0] Cities\n      0:0  Paris\n      0:1  Berlin")
  }

  func testEachTestHasItsOwnDatabase() throws {
    let repository = try XCTUnwrap(temporary).repository
    XCTAssertTrue(Repository.isPostgreSQLLocation(repository.path))
    XCTAssertEqual(try repository.lists().map(\.name), ["cities"])
    XCTAssertEqual(
      try repository.list("cities", metadata: RawJSON.self, item: RawJSON.self).numberOfItems(
        inSection: 0), 1)
  }
}
