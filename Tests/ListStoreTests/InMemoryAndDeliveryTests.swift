import Dispatch
import Foundation
import ListStore
import Observable2D
import ReactiveCore
import Synchronization
import TestSupport
import Testing

/// `Repository(path: ":memory:")`, opening or creating a list, and `observe(on:)`.
@Suite struct InMemoryAndDeliveryTests {
  let folder = TemporaryDirectory()

  typealias List = StoredList<SectionMetadata, String>

  func makeList(_ repository: Repository, name: String = "cities") throws -> List {
    let list = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
    try list.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try list.appendItems(["Paris", "Berlin"], toSection: 0)
    return list
  }

  // MARK: - In memory

  @Test func anInMemoryRepositoryIsObservedLikeAFileAndVanishesWithTheRepository() throws {
    folder.remove()  // Not used here.
    var repository: Repository? = try Repository(path: ":memory:")
    let path = try #require(repository?.path)
    #expect(path != ":memory:")
    let list = try makeList(try #require(repository))
    let array = try list.observe()
    let recorder = ArrayRecorder(array, header: { $0.header })
    try list.appendItem("Rome", toSection: 0)
    #expect(recorder.changesets.last?.insertedItems.map(\.value) == ["Rome"])
    // Another connection, by the path the repository reports.
    let other = try Repository(path: path, createIfMissing: false)
    try other.list("cities", metadata: SectionMetadata.self, item: String.self)
      .appendItem("Oslo", toSection: 0)
    repository?.synchronizeObservers()
    #expect(array.sections[0].items.map { $0 } == ["Paris", "Berlin", "Rome", "Oslo"])
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    // Every in-memory repository is a database of its own.
    let second = try Repository(path: Repository.inMemoryPath)
    #expect(second.path != path)
    #expect(try second.lists().isEmpty)
    // Released: the files are gone.
    let parent = (path as NSString).deletingLastPathComponent
    repository = nil
    _ = consume list
    #expect(!FileManager.default.fileExists(atPath: parent))
  }

  // MARK: - Open or create

  @Test func openOrCreateCreatesOnceThenOpens() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("lists.sqlite"))
    let first = try repository.list(
      "cities", metadata: SectionMetadata.self, item: String.self, createIfMissing: true)
    try first.appendSection(SectionMetadata(header: "Cities"))
    let again = try repository.list(
      "cities", metadata: SectionMetadata.self, item: String.self, createIfMissing: true)
    #expect(again.id == first.id)
    #expect(try again.numberOfSections() == 1)
    #expect(try repository.lists().count == 1)
    #expect(throws: ListStoreError.listNotFound(name: "towns")) {
      try repository.list(
        "towns", metadata: SectionMetadata.self, item: String.self, createIfMissing: false)
    }
    #expect(throws: ListStoreError.emptyName) {
      try repository.list(
        " ", metadata: SectionMetadata.self, item: String.self, createIfMissing: true)
    }
  }

  // MARK: - Delivery on a queue

  @Test func onAQueueStateAndEventsChangeTogetherThere() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("q.sqlite"))
    let list = try makeList(repository)
    let queue = DispatchQueue(label: "observer")
    let array = try list.observe(on: queue)
    #expect(array.sections[0].items.map { $0 } == ["Paris", "Berlin"])
    let seen = Locked<[String]>([])
    let bag = DisposeBag()
    array.observeNext { event in
      dispatchPrecondition(condition: .onQueue(queue))
      // The array's state is the event's while the event is delivered.
      let matches = array.sections.map { Array($0.items) } == event.sections.map { Array($0.items) }
      seen.withLock { $0.append("\(event.changeset.insertedItems.map(\.value)) \(matches)") }
    }.disposed(by: bag)

    // A write on another thread reaches the queue afterwards.
    try list.appendItem("Rome", toSection: 0)
    queue.sync {}
    #expect(seen.withLock { $0 } == [#"["Rome"] true"#])

    // A write on the queue itself is delivered before it returns.
    let stateAfterWrite = try queue.sync {
      try list.appendItem("Oslo", toSection: 0)
      return (array.sections[0].items.last, seen.withLock { $0.count })
    }
    #expect(stateAfterWrite.0 == "Oslo" && stateAfterWrite.1 == 2)

    // Another connection's commit: synchronizeObservers hands it to the queue.
    let other = try Repository(path: repository.path, createIfMissing: false)
    try other.list("cities", metadata: SectionMetadata.self, item: String.self)
      .appendItem("Lund", toSection: 0)
    repository.synchronizeObservers()
    queue.sync {}
    #expect(array.sections[0].items.map { $0 } == ["Paris", "Berlin", "Rome", "Oslo", "Lund"])
    #expect(seen.withLock { $0 }.count == 3)
  }

  @Test func aWriteOnTheQueueIsAppliedBeforeItReturnsWhenAnotherThreadDeliversIt() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("q.sqlite"))
    let list = try makeList(repository)
    let queue = DispatchQueue(label: "observer")
    let source = try list.observe()
    let onQueue = source.delivered(on: queue)
    // A thread that delivers the source's first event stays in its callback until the
    // queue's write has committed, so that it, not the writer, delivers that write's event.
    let started = DispatchSemaphore(value: 0)
    let first = Locked(true)
    let bag = DisposeBag()
    source.observeNext { _ in
      let isFirst = first.withLock { isFirst in
        defer { isFirst = false }
        return isFirst
      }
      guard isFirst else { return }
      started.signal()
      while (try? list.numberOfItems(inSection: 0)) != 4 {}
    }.disposed(by: bag)
    let background = Thread { _ = try? list.appendItem("Rome", toSection: 0) }
    background.start()
    started.wait()
    let seen = try queue.sync {
      try list.appendItem("Oslo", toSection: 0)
      return onQueue.sections[0].items.map { $0 }
    }
    #expect(seen == ["Paris", "Berlin", "Rome", "Oslo"])
  }

  @Test func synchronizingWaitsForAnotherProcesssEventTheWatchIsStillDelivering() throws {
    defer { folder.remove() }
    let path = folder.file("sync.sqlite")
    let repository = try Repository(path: path)
    let list = try makeList(repository)
    let array = try list.observe()
    // The watch delivers the other process's commit and stays in the callback until the
    // test lets it go.
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let delivered = Atomic<Int>(0)
    let bag = DisposeBag()
    array.observeNext { event in
      guard event.changeset.insertedItems.map(\.value) == ["Oslo"] else { return }
      entered.signal()
      release.wait()
      delivered.add(1, ordering: .releasing)
    }.disposed(by: bag)
    let other = try Repository(path: path, createIfMissing: false)
    try other.list("cities", metadata: SectionMetadata.self, item: String.self)
      .appendItem("Oslo", toSection: 0)
    entered.wait()
    // synchronizeObservers() finds nothing new to read (the watch read it), yet it must
    // not return before that event is delivered.
    let returned = DispatchSemaphore(value: 0)
    let deliveredAtReturn = Atomic<Int>(-1)
    Thread {
      repository.synchronizeObservers()
      deliveredAtReturn.store(delivered.load(ordering: .acquiring), ordering: .releasing)
      returned.signal()
    }.start()
    // Not a synchronization: a window in which a synchronizeObservers() that does not
    // wait returns (and is caught below); one that waits cannot return before `release`.
    let returnedEarly = returned.wait(timeout: .now() + .milliseconds(100)) == .success
    release.signal()
    if !returnedEarly { returned.wait() }
    #expect(deliveredAtReturn.load(ordering: .acquiring) == 1)
  }

  @Test func theEndOfTheEventsReachesTheQueueToo() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("q.sqlite"))
    let list = try makeList(repository)
    let queue = DispatchQueue(label: "observer")
    let array = try list.observe(on: queue)
    let completed = Locked(false)
    let bag = DisposeBag()
    array.observeCompleted {
      dispatchPrecondition(condition: .onQueue(queue))
      completed.withLock { $0 = true }
    }.disposed(by: bag)
    try repository.deleteList("cities")
    queue.sync {}
    #expect(completed.withLock { $0 })
  }

  @Test func releasingTheQueuesArrayEndsTheObservation() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("q.sqlite"))
    let list = try makeList(repository)
    weak var released: Observable2DArray<SectionMetadata, String>?
    let queue = DispatchQueue(label: "observer")
    do {
      let array = try list.observe(on: queue)
      released = array
      try list.appendItem("Rome", toSection: 0)
    }
    // The delivery of Rome, queued before the array was let go, holds it until it runs.
    queue.sync {}
    try list.appendItem("Oslo", toSection: 0)
    queue.sync {}
    #expect(released == nil)
  }

  @MainActor @Test func onTheMainQueueAMainActorWriteIsAppliedBeforeItReturns() async throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("main.sqlite"))
    let list = try makeList(repository)
    let array = try list.observe(on: .main)
    try list.appendItem("Rome", toSection: 0)
    #expect(array.sections[0].items.last == "Rome")
    // A write on another thread arrives once the main queue runs.
    _ = try await Task.detached { try list.appendItem("Oslo", toSection: 0) }.value
    await withCheckedContinuation { continuation in
      DispatchQueue.main.async { continuation.resume() }
    }
    #expect(array.sections[0].items.map { $0 } == ["Paris", "Berlin", "Rome", "Oslo"])
  }
}
