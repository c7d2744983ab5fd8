import Foundation
import ListStore
import ListStoreTesting
import Synchronization
import Testing

/// The temporary repositories, as a user's test target uses them.
@Suite struct TemporaryRepositoryTests {
  @Test func isAFreshMigratedDatabaseInAFolderOfItsOwnThatRemoveDeletes() throws {
    let temporary = try TemporaryRepository()
    #expect(temporary.path.hasPrefix(temporary.folder + "/"))
    #expect(FileManager.default.fileExists(atPath: temporary.path))
    #expect(try temporary.repository.lists().isEmpty)
    // A real, current ListStore database: another connection opens it without migrating.
    let other = try Repository(path: temporary.path, createIfMissing: false)
    let list = try other.createList("groceries", metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "Fruit"))
    #expect(try temporary.repository.lists().map(\.name) == ["groceries"])
    temporary.remove()
    #expect(!FileManager.default.fileExists(atPath: temporary.folder))
    temporary.remove()  // Idempotent.
  }

  @Test func everyRepositoryStartsEmptyWithIdsFromOne() throws {
    for _ in 0..<3 {
      let temporary = try TemporaryRepository()
      defer { temporary.remove() }
      let list = try temporary.repository.createList(
        "cities", metadata: SectionMetadata.self, item: String.self)
      #expect(list.id == 1)
      #expect(try list.appendSection(SectionMetadata(header: "Cities")) == 1)
      #expect(try list.appendItem("Paris", toSection: 0) == 1)
    }
  }

  @Test(.temporaryRepository) func theTraitPutsTheTestsRepositoryInCurrent() throws {
    let temporary = try #require(TemporaryRepository.current)
    #expect(try TemporaryRepository.required().path == temporary.path)
    #expect(FileManager.default.fileExists(atPath: temporary.path))
    #expect(try temporary.repository.lists().isEmpty)
  }

  @Test func withoutTheTraitThereIsNoneAndRequiredSaysWhatToDo() {
    #expect(TemporaryRepository.current == nil)
    #expect {
      try TemporaryRepository.required()
    } throws: { error in
      "\(error)".contains("add the .temporaryRepository trait")
    }
  }

  @Test(.temporaryRepository) func childTasksSeeTheSameRepository() async throws {
    let path = try TemporaryRepository.required().path
    let seen = await withTaskGroup(of: String?.self) { group in
      for _ in 0..<4 { group.addTask { TemporaryRepository.current?.path } }
      return await group.reduce(into: [String?]()) { $0.append($1) }
    }
    #expect(seen == Array(repeating: path, count: 4))
  }
}

/// The paths of the repositories the parallel tests got, to prove that none was shared.
private let parallelPaths = Mutex<Set<String>>([])

/// Many tests at once, each with its own store, each seeing only its own changes.
@Suite(.temporaryRepository) struct ParallelIsolationTests {
  @Test(arguments: 0..<40)
  func parallelTestsNeverSeeEachOthersChanges(number: Int) throws {
    let temporary = try TemporaryRepository.required()
    #expect(parallelPaths.withLock { $0.insert(temporary.path).inserted })
    // Every test uses the same list name and writes its own number.
    let list = try temporary.repository.createList(
      "shared name", metadata: SectionMetadata.self, item: Int.self)
    let recorder = try ChangesetRecorder(list)
    try list.appendSection(SectionMetadata(header: "numbers"))
    for step in 0..<5 { try list.appendItem(number * 100 + step, toSection: 0) }
    try list.removeItem(at: IndexPath(indexes: [0, 0]))
    // Another connection of the same test's database, and settle() instead of waiting.
    let other = try Repository(path: temporary.path, createIfMissing: false)
    try other.list("shared name", metadata: SectionMetadata.self, item: Int.self)
      .appendItem(number, toSection: 0)
    recorder.settle()
    let values = recorder.sections.flatMap { $0.items.map { $0 } }
    #expect(values == [1, 2, 3, 4].map { number * 100 + $0 } + [number])
    #expect(recorder.changesets.count == 8)
    #expect(recorder.problems.isEmpty)
    #expect(try temporary.repository.lists().map(\.name) == ["shared name"])
  }
}
