import Foundation
import ListStore
import Observable2D
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

/// `Repository.write { }` and `StoredList.write { }`: several writes, one transaction,
/// one changeset per list.
@Suite struct BatchTests {
  typealias List = StoredList<SectionMetadata, String>

  func makeList(_ repository: Repository, _ name: String) throws -> List {
    let list = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "First"))
    try list.appendItems(["a", "b", "c"], toSection: 0)
    return list
  }

  @Test(arguments: TestEngine.tested)
  func aBatchAcrossListsIsOneChangesetPerList(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    let towns = try makeList(repository, "towns")
    let cityRecorder = ArrayRecorder(try cities.observe(), header: { $0.header })
    let townRecorder = ArrayRecorder(try towns.observe(), header: { $0.header })
    let count = try repository.write { () -> Int in
      let rome = try cities.appendItem("Rome", toSection: 0)
      try cities.moveItem(id: rome, to: IndexPath(indexes: [0, 0]))
      try cities.removeItem(at: IndexPath(indexes: [0, 1]))
      try towns.appendSection(SectionMetadata(header: "Second"))
      try towns.appendItem("x", toSection: 1)
      // Reads inside the batch see its writes.
      return try cities.numberOfItems(inSection: 0)
    }
    #expect(count == 3)
    #expect(cityRecorder.changesets.count == 1 && townRecorder.changesets.count == 1)
    let cityChange = try #require(cityRecorder.changesets.first)
    #expect(cityChange.insertedItems.map(\.value) == ["Rome"])
    #expect(cityChange.insertedItems.map(\.at) == [IndexPath(indexes: [0, 0])])
    #expect(cityChange.deletedItems.map(\.at) == [IndexPath(indexes: [0, 0])])
    #expect(townRecorder.changesets.first?.insertedSections.map(\.items.count) == [1])
    #expect(Array(cityRecorder.array.sections[0].items) == ["Rome", "b", "c"])
    #expect(cityRecorder.problems.isEmpty && townRecorder.problems.isEmpty)
  }

  struct Abandon: Error, Equatable {}

  @Test(arguments: TestEngine.tested)
  func anErrorInsideRollsBackEverythingAndEmitsNothing(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    let recorder = ArrayRecorder(try cities.observe(), header: { $0.header })
    #expect(throws: Abandon()) {
      try cities.write {
        try cities.appendItem("Rome", toSection: 0)
        try repository.createList("more")
        throw Abandon()
      }
    }
    #expect(recorder.changesets.isEmpty)
    #expect(try Array(cities.sections()[0].items) == ["a", "b", "c"])
    #expect(try repository.lists().map(\.name) == ["cities"])
  }

  @Test(arguments: TestEngine.tested)
  func aNestedBatchThatFailsIsUndoneAloneAndTheOuterOneCommits(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    let recorder = ArrayRecorder(try cities.observe(), header: { $0.header })
    try repository.write {
      try cities.appendItem("kept", toSection: 0)
      do {
        try repository.write {
          try cities.appendItem("undone", toSection: 0)
          throw Abandon()
        }
      } catch is Abandon {}
      // A failing mutation is undone alone too. (Not `#expect(throws:)` here: inside this
      // closure, swiftc 6.3.1 expands it around the nested batch's closure instead.)
      var failure: (any Error)?
      do { try cities.removeItem(at: IndexPath(indexes: [0, 99])) } catch { failure = error }
      #expect(failure is ListStoreError)
      try cities.appendItem("also kept", toSection: 0)
    }
    #expect(try Array(cities.sections()[0].items) == ["a", "b", "c", "kept", "also kept"])
    #expect(recorder.changesets.count == 1)
    #expect(recorder.changesets.first?.insertedItems.map(\.value) == ["kept", "also kept"])
  }

  @Test(arguments: TestEngine.tested)
  func anObserverMadeInsideABatchSeesTheBatchAsOneChangeset(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    var recorder: ArrayRecorder<SectionMetadata, String>?
    try repository.write {
      try cities.appendItem("before", toSection: 0)
      // It starts from the committed state, not the batch's.
      recorder = ArrayRecorder(try cities.observe(), header: { $0.header })
      try cities.appendItem("after", toSection: 0)
    }
    let made = try #require(recorder)
    #expect(made.changesets.count == 1)
    #expect(made.changesets.first?.insertedItems.map(\.value) == ["before", "after"])
    #expect(made.problems.isEmpty)
  }

  @Test(arguments: TestEngine.tested)
  func otherThreadsWaitForTheBatch(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    let inside = DispatchSemaphore(value: 0)
    let finish = DispatchSemaphore(value: 0)
    let order = Locked<[String]>([])
    let batch = Thread {
      try? repository.write {
        try cities.appendItem("batch 1", toSection: 0)
        inside.signal()
        finish.wait()
        try cities.appendItem("batch 2", toSection: 0)
        order.withLock { $0.append("batch") }
      }
    }
    batch.start()
    inside.wait()
    let other = Thread {
      _ = try? cities.appendItem("other", toSection: 0)
      order.withLock { $0.append("other") }
    }
    other.start()
    finish.signal()
    while !(batch.isFinished && other.isFinished) { sched_yield() }
    #expect(order.withLock { $0 } == ["batch", "other"])
    #expect(try Array(cities.sections()[0].items).suffix(3) == ["batch 1", "batch 2", "other"])
  }

  @Test(arguments: TestEngine.tested)
  func aBatchOnADeletedListFailsAndChangesNothing(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let cities = try makeList(repository, "cities")
    try repository.deleteList("cities")
    #expect(throws: ListStoreError.listNotFound(name: "cities")) {
      try cities.write { try repository.createList("side effect") }
    }
    #expect(try repository.lists().isEmpty)
  }
}
