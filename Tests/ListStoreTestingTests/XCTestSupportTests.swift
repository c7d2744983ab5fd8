import ListStore
import ListStoreTesting
import XCTest

/// ListStoreTesting from XCTest: a repository per test, removed in the tear-down.
final class XCTestSupportTests: XCTestCase {
  var temporary: TemporaryRepository?
  var folder = ""

  override func setUpWithError() throws {
    let temporary = try makeTemporaryRepository(
      lists: [.json(#"{"list": "cities", "sections": [{"header": "Cities", "items": ["Paris"]}]}"#)]
    )
    self.temporary = temporary
    folder = temporary.folder
  }

  override func tearDown() {
    // The tear-down block registered by makeTemporaryRepository ran before this, as XCTest
    // runs tear-down blocks before tearDown().
    XCTAssertFalse(folder.isEmpty)
    XCTAssertFalse(FileManager.default.fileExists(atPath: folder))
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

  func testEachTestHasItsOwnRepository() throws {
    let repository = try XCTUnwrap(temporary).repository
    XCTAssertEqual(try repository.lists().map(\.name), ["cities"])
    XCTAssertEqual(
      try repository.list("cities", metadata: RawJSON.self, item: RawJSON.self).numberOfItems(
        inSection: 0), 1)
  }
}
