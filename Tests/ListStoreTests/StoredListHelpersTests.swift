import Foundation
import ListStore
import Observable2D
import ReactiveCore
import TestSupport
import Testing

/// Bond's everyday helpers on a stored list, against the same helpers of the in-memory
/// array: the same random calls leave both with the same contents (ids included), each call
/// one changeset that an observed array applies.
@Suite struct StoredListHelpersTests {
  let folder = TemporaryDirectory()

  @Test(arguments: [UInt64(41), 42, 43])
  func helpersDoOnTheDatabaseWhatTheyDoInMemory(seed: UInt64) throws {
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("helpers-\(seed).sqlite"))
    let list = try repository.createList("h", metadata: String.self, item: String.self)
    var random = SeededGenerator(seed: seed)
    for section in 0..<3 {
      try list.appendSection("S\(section)")
      for row in 0..<Int.random(in: 0...5, using: &random) {
        try list.appendItem("v\(section).\(row)", toSection: section)
      }
    }
    let observed = try list.observe()
    let memory = MutableObservable2DArray(try list.sections())
    var value = 0
    var changed = 0
    for step in 0..<150 {
      if try list.numberOfSections() == 0 {
        try list.appendSection("again")
        memory.appendSection(
          Observable2DArraySection(id: try list.sectionID(at: 0), metadata: "again"))
      }
      let sections = try list.numberOfSections()
      let section = Int.random(in: 0..<sections, using: &random)
      let count = try list.numberOfItems(inSection: section)
      let before = try list.sections()
      var stored: Result<Void, any Error> = .success(())
      var inMemory: Result<Void, any Error> = .success(())
      let label: String
      switch Int.random(in: 0..<10, using: &random) {
      case 0:
        label = "removeLastSection"
        stored = Result { try list.removeLastSection() }
        inMemory = Result { try memory.removeLastSection() }
      case 1, 2:
        label = "removeLastItem(\(section))"
        stored = Result { try list.removeLastItem(inSection: section) }
        inMemory = Result { try memory.removeLastItem(inSection: section) }
      case 3:
        label = "removeAllItems"
        stored = Result { try list.removeAllItems() }
        memory.removeAllItems()
      case 4:
        label = "removeAllSections"
        stored = Result { try list.removeAllSections() }
        memory.removeAllSections()
      case 5, 6:
        let low = Int.random(in: -1...count, using: &random)
        let high = Int.random(in: max(low, 0)...count + 1, using: &random)
        label = "removeItems(\(section), \(low)..<\(high))"
        stored = Result { try list.removeItems(inSection: section, subrange: low..<high) }
        inMemory = Result { try memory.removeItems(inSection: section, subrange: low..<high) }
      case 7:
        let values = (0..<Int.random(in: 0...3, using: &random)).map { _ in
          value += 1
          return "new \(value)"
        }
        label = "replaceItems(\(section), \(values))"
        switch Result(catching: { try list.replaceItems(ofSectionAt: section, with: values) }) {
        case .success(let ids):
          // The in-memory array takes the database's new ids.
          inMemory = Result {
            try memory.batchUpdate { editor throws(Observable2DArrayError) in
              try editor.removeItems(inSection: section, subrange: 0..<count)
            }
            for (offset, id) in ids.enumerated() {
              try memory.apply(
                Changeset(insertedItems: [
                  .init(at: [section, offset], id: id, value: values[offset])
                ]))
            }
          }
        case .failure(let error): stored = .failure(error)
        }
      default:
        var paths: [IndexPath] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
          let from = Int.random(in: 0..<sections, using: &random)
          let rows = try list.numberOfItems(inSection: from)
          paths.append([from, Int.random(in: 0...max(rows, 1) - 1, using: &random)])
        }
        let target = Int.random(in: 0..<sections, using: &random)
        let row = Int.random(in: 0...count + 1, using: &random)
        label = "moveItems(\(paths), [\(target), \(row)])"
        stored = Result { try list.moveItems(from: paths, to: [target, row]) }
        inMemory = Result { try memory.moveItems(from: paths, to: [target, row]) }
      }
      let place = "seed \(seed) step \(step): \(label)"
      let after = try list.sections()
      switch (stored, inMemory) {
      case (.success, .success):
        if after != before { changed += 1 }
      case (.failure, .failure):
        #expect(after == before, "\(place): a refused call changed the list")
      default:
        Issue.record("\(place): the database said \(stored), memory \(inMemory)")
      }
      #expect(after == memory.sections, "\(place)")
      repository.synchronizeObservers()
      #expect(observed.sections == after, "\(place): the observer")
    }
    #expect(changed >= 30, "only \(changed) calls changed the list")
  }
}
