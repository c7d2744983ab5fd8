import Dispatch
import Foundation
import ListStore
import ListStoreTesting
import Synchronization
import Testing

/// The changeset recorder: deterministic settling, assertions and their failure messages.
@Suite(.temporaryRepository) struct ChangesetRecorderTests {
  func makeCities() throws -> StoredList<SectionMetadata, String> {
    let repository = try TemporaryRepository.required().repository
    let cities = try repository.createList(
      "cities", metadata: SectionMetadata.self, item: String.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try cities.appendItems(["Paris", "Berlin"], toSection: 0)
    return cities
  }

  /// Runs `body`, expecting it to record issues, and returns their messages and lines.
  func failures(_ body: () -> Void) -> [(message: String, line: Int?)] {
    let recorded = Mutex<[(message: String, line: Int?)]>([])
    withKnownIssue {
      body()
    } matching: { issue in
      let message = issue.comments.map(\.rawValue).joined(separator: "\n")
      recorded.withLock { $0.append((message, issue.sourceLocation?.line)) }
      return true
    }
    return recorded.withLock { $0 }
  }

  @Test func recordsThisProcesssWritesAsTheyReturn() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    let rome = try cities.appendItem("Rome", toSection: 0)
    #expect(recorder.changesets.count == 1)
    recorder.expect(
      next: Changeset(insertedItems: [
        .init(at: IndexPath(indexes: [0, 2]), id: rome, value: "Rome")
      ]))
    try cities.removeItem(at: IndexPath(indexes: [0, 0]))
    recorder.expect(nextJSON: #"{"changes": {"deletedItems": [{"at": [0, 0], "id": 1}]}}"#)
    recorder.expectNoMoreChangesets()
    #expect(recorder.sections[0].items.map { $0 } == ["Berlin", "Rome"])
  }

  @Test func settleBringsInAnotherConnectionsCommitsWithoutWaiting() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    // Another connection, as another process would write: its commits reach this
    // process's observers through settle(), not through a timer.
    let other = try Repository(path: cities.repository.path, createIfMissing: false)
    let theirs = try other.list("cities", metadata: SectionMetadata.self, item: String.self)
    for name in ["Oslo", "Lund", "Ystad"] { try theirs.appendItem(name, toSection: 0) }
    try theirs.setMetadata(SectionMetadata(header: "Nordic"), forSectionAt: 0)
    recorder.settle()
    #expect(recorder.sections[0].items.map { $0 } == ["Paris", "Berlin", "Oslo", "Lund", "Ystad"])
    #expect(recorder.sections[0].metadata.header == "Nordic")
    #expect(recorder.problems.isEmpty)
    // However the commits were batched, the sequence leads to the stored list.
    #expect(try cities.showJSON() == (try theirs.showJSON()))
  }

  @Test func theTranscriptIsTheWatchJSONOfEveryChangeset() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    try cities.appendItem("Rome", toSection: 0)
    try cities.moveItem(from: IndexPath(indexes: [0, 2]), to: IndexPath(indexes: [0, 0]))
    try cities.setMetadata(SectionMetadata(header: "Capitals"), forSectionAt: 0)
    try cities.repository.deleteList("cities")
    #expect(
      try recorder.transcript() == """
        {"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Rome"}]}}
        {"changes":{"movedItems":[{"from":[0,2],"to":[0,0],"id":3,"value":"Rome"}]}}
        {"changes":{"updatedSections":[{"index":0,"id":1,"header":"Capitals","footer":null}]}}
        """)
    #expect(recorder.isFinished && recorder.failure == nil)
  }

  @Test func aWrongExpectationSaysWhatWasExpectedWhatCameAndWhere() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    try cities.appendItem("Rome", toSection: 0)
    let line = #line + 2
    let reported = failures {
      recorder.expect(
        nextJSON: #"{"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Roma"}]}}"#)
    }
    #expect(reported.count == 1)
    #expect(reported.first?.line == line)
    #expect(
      reported.first?.message == """
        expected changeset 1 to be
          {"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Roma"}]}}
        but it was
          {"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Rome"}]}}
        """)
  }

  @Test func aTypedExpectationNamesTheFieldsThatDiffer() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    try cities.replaceItem(at: IndexPath(indexes: [0, 0]), with: "Paris, France")
    let reported = failures {
      recorder.expect(
        next: Changeset(insertedItems: [
          .init(at: IndexPath(indexes: [0, 0]), id: 1, value: "Paris")
        ]),
        "after renaming Paris")
    }
    #expect(
      reported.map(\.message) == [
        """
        expected changeset 1 to be
          Changeset(insertedItems: [[0, 0]#1=Paris])
        but it was
          Changeset(updatedItems: [[0, 0]#1=Paris, France])
        (they differ in insertedItems, updatedItems)
        after renaming Paris
        """
      ])
  }

  @Test func expectingMoreThanCameOrLessThanCameFails() throws {
    let cities = try makeCities()
    let recorder = try ChangesetRecorder(cities)
    try cities.appendItem("Rome", toSection: 0)
    let tooFew = failures { recorder.expectNoMoreChangesets() }
    #expect(
      tooFew.map(\.message) == [
        """
        expected no more changesets, but 1 more of 1 was recorded:
          Changeset(insertedItems: [[0, 2]#3=Rome])
        """
      ])
    #expect(recorder.next()?.insertedItems.map(\.value) == ["Rome"])
    let tooMany = failures { recorder.expect(nextJSON: #"{"changes":{}}"#) }
    #expect(
      tooMany.map(\.message) == [
        """
        expected the next changeset to be
          {"changes":{}}
        but none was left: 1 recorded, all taken before
        """
      ])
  }

  @Test func arraysObservedOnAQueueSettleToo() throws {
    let cities = try makeCities()
    let queue = DispatchQueue(label: "view model")
    let recorder = try ChangesetRecorder(cities, on: queue)
    let other = try Repository(path: cities.repository.path, createIfMissing: false)
    try other.list("cities", metadata: SectionMetadata.self, item: String.self)
      .appendItem("Oslo", toSection: 0)
    try cities.appendItem("Rome", toSection: 0)
    recorder.settle()
    #expect(recorder.sections[0].items.map { $0 } == ["Paris", "Berlin", "Oslo", "Rome"])
    #expect(recorder.array.sections[0].items.map { $0 } == ["Paris", "Berlin", "Oslo", "Rome"])
  }

  @Test func anyObservable2DArrayCanBeRecorded() throws {
    let array = MutableObservable2DArray([
      Observable2DArraySection<String, String>(metadata: "Cities", items: ["Paris"])
    ])
    let recorder = ChangesetRecorder(array)
    try array.appendItem("Berlin", toSection: 0)
    recorder.expect(
      next: Changeset(insertedItems: [
        .init(at: IndexPath(indexes: [0, 1]), id: 3, value: "Berlin")
      ]))
    recorder.expectNoMoreChangesets()
  }
}
