import Foundation
import ListStore
import Observable2D
import ReactiveCore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

/// The change feed under threads: observers come and go while several threads write,
/// observers write from inside their callbacks, and repositories go away while events
/// are in flight. `.ci/run` runs this suite under ThreadSanitizer too.
@Suite struct FeedConcurrencyTests {
  let folder = TemporaryDirectory()

  typealias RawList = StoredList<RawJSON, RawJSON>

  func makeList(_ repository: Repository) throws -> RawList {
    let list = try repository.createList("shared", metadata: RawJSON.self, item: RawJSON.self)
    try list.appendSection(RawJSON("\"A\""))
    try list.appendSection(RawJSON("\"B\""))
    return list
  }

  /// Random single-row writes through `list`, `count` of them, from `seed`.
  static func randomWrites(_ list: RawList, count: Int, seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    for step in 0..<count {
      let section = Int.random(in: 0...1, using: &random)
      do {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<5:
          try list.appendItem(RawJSON("\"\(seed)-\(step)\""), toSection: section)
        case 5..<7:
          let rows = try list.numberOfItems(inSection: section)
          guard rows > 0 else { continue }
          try list.removeItem(
            at: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]))
        case 7..<9:
          let rows = try list.numberOfItems(inSection: section)
          guard rows > 0 else { continue }
          try list.moveItem(
            from: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]),
            to: IndexPath(indexes: [1 - section, 0]))
        default:
          let rows = try list.numberOfItems(inSection: section)
          guard rows > 0 else { continue }
          try list.replaceItem(
            at: IndexPath(indexes: [section, Int.random(in: 0..<rows, using: &random)]),
            with: RawJSON("\"set \(step)\""))
        }
      } catch {
        // Another thread removed the row meanwhile: an index out of range is expected.
      }
    }
  }

  @Test func observersAddedAndRemovedWhileThreadsWriteStayExact() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository)
    let other = try Repository(path: repository.path)
    let otherList = try other.list("shared", metadata: RawJSON.self, item: RawJSON.self)
    let writes = scaled(80)
    let kept = Locked<[ArrayRecorder<RawJSON, RawJSON>]>([])
    DispatchQueue.concurrentPerform(iterations: 5) { worker in
      switch worker {
      case 0: Self.randomWrites(list, count: writes, seed: 1)
      case 1: Self.randomWrites(list, count: writes, seed: 2)
      case 2: Self.randomWrites(otherList, count: writes, seed: 3)
      default:
        // Observers come and go: some are kept, some subscribe and are dropped at once.
        for round in 0..<scaled(15) {
          guard let array = try? list.observe() else { continue }
          let recorder = ArrayRecorder(array, describe: { $0.text }, header: { $0.text })
          if round % 3 == 0 { kept.withLock { $0.append(recorder) } }
        }
      }
    }
    let truth = try ListContents.read(list: "shared", path: repository.path)
    for recorder in kept.withLock({ $0 }) {
      #expect(recorder.wait { ListContents($0.array.sections) == truth })
      #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    }
  }

  @Test func observersMayWriteFromInsideTheirCallbacks() throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try makeList(repository)
    let array = try list.observe()
    let recorder = ArrayRecorder(array, describe: { $0.text }, header: { $0.text })
    let bag = DisposeBag()
    let answered = Atomic<Int>(0)
    // Every "ping" inserted into section A is answered with a "pong" in section B.
    array.observeNext { event in
      for inserted in event.changeset.insertedItems
      where inserted.value.text.hasPrefix("\"ping") && inserted.at[0] == 0 {
        do {
          try list.appendItem(RawJSON("\"pong\""), toSection: 1)
          answered.add(1, ordering: .relaxed)
        } catch {
          Issue.record("a write from inside a callback failed: \(error)")
        }
      }
    }.disposed(by: bag)
    let other = try Repository(path: repository.path)
    let otherList = try other.list("shared", metadata: RawJSON.self, item: RawJSON.self)
    let pings = scaled(40)
    DispatchQueue.concurrentPerform(iterations: 3) { worker in
      for number in 0..<pings {
        let target = worker == 2 ? otherList : list
        _ = try? target.appendItem(RawJSON("\"ping \(worker) \(number)\""), toSection: 0)
      }
    }
    // Every ping, by this process or the other repository, gets its pong.
    #expect(recorder.wait { $0.array.sections[1].items.count == pings * 3 })
    #expect(answered.load(ordering: .relaxed) == pings * 3)
    let truth = try ListContents.read(list: "shared", path: repository.path)
    #expect(recorder.wait { ListContents($0.array.sections) == truth })
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  @Test func repositoriesReleasedWhileEventsAreInFlight() throws {
    defer { folder.remove() }
    let path = folder.file("db.sqlite")
    _ = try makeList(try Repository(path: path))
    let writer = try Repository(path: path)
    let writerList = try writer.list("shared", metadata: RawJSON.self, item: RawJSON.self)
    let stop = Atomic<Bool>(false)
    let background = Thread {
      // Bounded, so that each round's observer loads a small list however slow the run.
      for number in 0..<scaled(400) where !stop.load(ordering: .relaxed) {
        _ = try? writerList.appendItem(RawJSON("\(number)"), toSection: number % 2)
      }
    }
    background.start()
    defer { stop.store(true, ordering: .relaxed) }
    for round in 0..<scaled(25) {
      // A repository of its own, observed, written to, and dropped at once — while the
      // other repository's commits keep its watcher delivering.
      weak var released: Repository?
      do {
        let repository = try Repository(path: path)
        released = repository
        let list = try repository.list("shared", metadata: RawJSON.self, item: RawJSON.self)
        let array = try list.observe()
        let seen = Atomic<Int>(0)
        let subscription = array.observeNext { _ in seen.add(1, ordering: .relaxed) }
        try list.appendItem(RawJSON("\"round \(round)\""), toSection: 0)
        #expect(seen.load(ordering: .relaxed) >= 1)
        if round % 2 == 0 { subscription.dispose() }
        if round % 3 == 0 { repository.stopObserving() }
      }
      #expect(released == nil, "round \(round): the repository outlived its last reference")
    }
  }
}
