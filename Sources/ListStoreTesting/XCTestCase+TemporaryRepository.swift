public import ListStore
public import XCTest

extension XCTestCase {
  /// A fresh ``TemporaryRepository`` for this test, removed when the test ends, whether it
  /// passed or not, by a tear-down block (XCTest runs those before `tearDown()`). Call it in
  /// `setUp()` or in the test itself.
  ///
  /// ```swift
  /// final class CityTests: XCTestCase {
  ///   var temporary: TemporaryRepository!
  ///   override func setUpWithError() throws {
  ///     temporary = try makeTemporaryRepository()
  ///   }
  ///   func testAddsACity() throws {
  ///     let cities = try temporary.repository.createList(
  ///       "cities", metadata: SectionMetadata.self, item: String.self)
  ///     …
  ///   }
  /// }
  /// ```
  /// - Parameters:
  ///   - lists: Lists to create, from `liststore export` JSON.
  ///   - engine: Where the database comes from; SQLite by default.
  /// - Returns: The repository.
  /// - Throws: `ListStoreError` when it cannot be made.
  public func makeTemporaryRepository(
    lists: [ListFixture] = [], engine: TemporaryRepository.Engine = .sqlite
  ) throws(ListStoreError) -> TemporaryRepository {
    let temporary = try TemporaryRepository(lists: lists, engine: engine)
    addTeardownBlock { temporary.remove() }
    return temporary
  }
}
