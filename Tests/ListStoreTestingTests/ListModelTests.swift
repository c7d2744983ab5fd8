import Foundation
import ListStore
import ListStoreTesting
import Observation
import Synchronization
import Testing

/// The `@Observable` model: which of its properties each change to the stored list
/// invalidates, observed with `withObservationTracking` as SwiftUI does.
@MainActor @Suite(.temporaryRepository) struct ListModelTests {
  typealias Model = ListModel<SectionMetadata, String>

  /// What fired since the last `track`.
  final class Fired: Sendable {
    private let names = Mutex<Set<String>>([])
    func insert(_ name: String) { names.withLock { _ = $0.insert(name) } }
    func take() -> Set<String> {
      names.withLock { names in
        defer { names = [] }
        return names
      }
    }
  }

  /// Tracks, once each, the model's properties a view of two sections would read.
  func track(_ model: Model, into fired: Fired) {
    func watch(_ name: String, _ read: @escaping @MainActor () -> Void) {
      withObservationTracking {
        read()
      } onChange: {
        fired.insert(name)
      }
    }
    watch("sections") { _ = model.sections }
    watch("lastChangeset") { _ = model.lastChangeset }
    watch("isFinished") { _ = model.isFinished }
    for (index, section) in model.sections.enumerated() {
      watch("items\(index)") { _ = section.items }
      watch("metadata\(index)") { _ = section.metadata }
    }
  }

  func makeList() throws -> StoredList<SectionMetadata, String> {
    let repository = try TemporaryRepository.required().repository
    let list = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "Cities"))
    try list.appendSection(SectionMetadata(header: "Towns"))
    try list.appendItems(["Paris", "Berlin"], toSection: 0)
    try list.appendItems(["Lund"], toSection: 1)
    return list
  }

  func contents(_ model: Model) -> [[String]] {
    model.sections.map { Array($0.items) }
  }

  @Test func eachChangeFiresExactlyThePropertiesItChanged() throws {
    let list = try makeList()
    let model = try Model(list)
    #expect(contents(model) == [["Paris", "Berlin"], ["Lund"]])
    #expect(model.lastChangeset == nil)
    let fired = Fired()

    // An item added to the second section, by this process on the main actor: the
    // model has changed when the write returns.
    track(model, into: fired)
    try list.appendItem("Ystad", toSection: 1)
    #expect(fired.take() == ["items1", "lastChangeset"])
    #expect(contents(model) == [["Paris", "Berlin"], ["Lund", "Ystad"]])
    #expect(model.lastChangeset?.insertedItems.map(\.value) == ["Ystad"])

    // A header changed by another connection, brought in by synchronize().
    track(model, into: fired)
    let other = try Repository(path: list.repository.path, createIfMissing: false)
    let otherList = try other.list("cities", metadata: SectionMetadata.self, item: String.self)
    try otherList.setMetadata(SectionMetadata(header: "Big cities"), forSectionAt: 0)
    model.synchronize()
    #expect(fired.take() == ["metadata0", "lastChangeset"])
    #expect(model.sections[0].metadata.header == "Big cities")

    // An item moved from one section to the other.
    track(model, into: fired)
    try list.moveItem(from: IndexPath(indexes: [0, 0]), to: IndexPath(indexes: [1, 0]))
    #expect(fired.take() == ["items0", "items1", "lastChangeset"])
    #expect(contents(model) == [["Berlin"], ["Paris", "Lund", "Ystad"]])

    // A section inserted: the array of sections changes, no section's items do.
    track(model, into: fired)
    let sectionsBefore = model.sections.map(ObjectIdentifier.init)
    try list.insert(section: SectionMetadata(header: "Villages"), at: 1)
    #expect(fired.take() == ["sections", "lastChangeset"])
    #expect(model.sections.map(\.metadata.header) == ["Big cities", "Villages", "Towns"])
    // The sections that stayed are the same objects, so views of them stay valid.
    #expect(
      [model.sections[0], model.sections[2]].map(ObjectIdentifier.init) == sectionsBefore)

    // The list deleted by another connection: the observation ends.
    track(model, into: fired)
    try other.deleteList("cities")
    model.synchronize()
    #expect(fired.take().contains("isFinished"))
    #expect(model.isFinished && model.failure == nil)
  }

  @Test func writesFromOtherThreadsArriveOnTheMainActor() async throws {
    let list = try makeList()
    let model = try Model(list)
    let fired = Fired()
    track(model, into: fired)
    try await Task.detached {
      _ = try list.appendItem("Malmö", toSection: 1)
    }.value
    // The write returned; the model changes when the main actor next runs.
    try await TemporaryRepository.required().settle(deliveringOn: [.main])
    #expect(fired.take() == ["items1", "lastChangeset"])
    #expect(contents(model) == [["Paris", "Berlin"], ["Lund", "Malmö"]])
  }
}
