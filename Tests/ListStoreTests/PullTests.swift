import Foundation
import TestSupport
import Testing

@testable import ListStore

/// What a replica pulls (docs/replicas.md), on both engines: after random writes of
/// every kind to several lists, a mirror kept by pulling only the rows changed after its
/// position equals a mirror made from a fresh full read, and the database itself — for a
/// replica that follows some lists, and for one that follows them all.
@Suite struct PullTests {
  typealias List = StoredList<RawJSON, RawJSON>

  /// A replica's copy of the rows, as the pulled rows say.
  struct Mirror: Equatable {
    var seq: Int64 = 0
    var lists: [Int64: String] = [:]
    var sections: [Int64: (list: Int64, position: String, metadata: String)] = [:]
    var items: [Int64: (section: Int64, position: String, value: String)] = [:]

    static func == (lhs: Mirror, rhs: Mirror) -> Bool {
      lhs.lists == rhs.lists
        && lhs.sections.mapValues { "\($0)" } == rhs.sections.mapValues { "\($0)" }
        && lhs.items.mapValues { "\($0)" } == rhs.items.mapValues { "\($0)" }
    }

    mutating func apply(_ row: PulledRow) {
      switch row {
      case .list(let id, let name): lists[id] = name
      case .section(let list, let id, let position, let metadata):
        sections[id] = (list, position, metadata)
      case .item(_, let id, let section, let position, let value):
        items[id] = (section, position, value)
      case .listDeleted(let id):
        lists[id] = nil
        for (section, row) in sections where row.list == id { removeSection(section) }
      case .sectionDeleted(_, let id): removeSection(id)
      case .itemDeleted(_, let id): items[id] = nil
      }
    }

    mutating func removeSection(_ id: Int64) {
      sections[id] = nil
      items = items.filter { $0.value.section != id }
    }

    /// Pulls from `repository` what changed after its position (everything when `reset`).
    /// - Returns: How many rows came.
    @discardableResult
    mutating func pull(_ repository: Repository, lists: [Int64]?, reset: Bool = false) throws
      -> Int
    {
      var count = 0
      var copy = self
      try repository.pull(
        lists: lists, mayRead: { $0 != "hidden" }, after: reset ? nil : seq,
        start: { seq, isReset in
          if isReset { copy = Mirror() }
          copy.seq = seq
        },
        row: { row in
          count += 1
          copy.apply(row)
        })
      self = copy
      return count
    }
  }

  @Test(arguments: TestEngine.tested)
  func pullingChangesEqualsReadingEverything(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let seed = testSeed(0x9_1A11)
    var random = SeededGenerator(seed: seed)
    var lists: [List] = []
    for name in ["a", "b", "c"] {
      let list = try repository.createList(name, metadata: RawJSON.self, item: RawJSON.self)
      try list.appendSection(RawJSON("\"\(name) 0\""))
      lists.append(list)
    }
    let followed = [lists[0].id, lists[1].id]
    var some = Mirror()
    var all = Mirror()
    try some.pull(repository, lists: followed)
    try all.pull(repository, lists: nil)
    let rounds = engine == .sqlite ? scaled(150) : scaled(50)
    var counter = 0
    for round in 0..<rounds {
      for _ in 0...Int.random(in: 0..<4, using: &random) {
        counter += 1
        let list = lists.randomElement(using: &random)!
        let sections = try list.numberOfSections()
        let value = RawJSON("\(counter)")
        switch Int.random(in: 0..<12, using: &random) {
        case 0:
          try list.insert(section: value, at: Int.random(in: 0...sections, using: &random))
        case 1 where sections > 1:
          try list.removeSection(at: Int.random(in: 0..<sections, using: &random))
        case 2 where sections > 1:
          try list.moveSection(
            from: Int.random(in: 0..<sections, using: &random),
            to: Int.random(in: 0..<sections, using: &random))
        case 3:
          // A rename away and back, or to a name the replica may not read.
          let names = ["hidden", list.name]
          let other = try repository.lists().map(\.name)
          let name = names.randomElement(using: &random)!
          if !other.contains(name) {
            try repository.renameList(list.name, to: name)
            if name == "hidden" { try repository.renameList("hidden", to: list.name) }
          }
        case 4...7 where sections > 0:
          let section = Int.random(in: 0..<sections, using: &random)
          let rows = try list.numberOfItems(inSection: section)
          try list.insert(
            item: value,
            at: IndexPath(item: Int.random(in: 0...rows, using: &random), section: section))
        default:
          let counts = try (0..<sections).map { try list.numberOfItems(inSection: $0) }
          guard
            let section = counts.indices.filter({ counts[$0] > 0 }).randomElement(using: &random)
          else { continue }
          let at = IndexPath(
            item: Int.random(in: 0..<counts[section], using: &random), section: section)
          switch Int.random(in: 0..<3, using: &random) {
          case 0: try list.removeItem(at: at)
          case 1: try list.replaceItem(at: at, with: value)
          default:
            let target = Int.random(in: 0..<sections, using: &random)
            let limit = counts[target] - (target == section ? 1 : 0)
            try list.moveItem(
              from: at,
              to: IndexPath(item: Int.random(in: 0...limit, using: &random), section: target))
          }
        }
      }
      if round % 25 == 24 {
        // A list deleted and made again under its name: another list, another id.
        let index = Int.random(in: 0..<lists.count, using: &random)
        let name = lists[index].name
        try repository.deleteList(name)
        lists[index] = try repository.createList(name, metadata: RawJSON.self, item: RawJSON.self)
        try lists[index].appendSection(RawJSON("\"again\""))
      }
      try some.pull(repository, lists: followed)
      try all.pull(repository, lists: nil)
      var fresh = Mirror()
      try fresh.pull(repository, lists: followed, reset: true)
      #expect(some == fresh, "seed \(seed), round \(round): followed lists")
      try fresh.pull(repository, lists: nil, reset: true)
      #expect(all == fresh, "seed \(seed), round \(round): every list")
      #expect(some.seq == all.seq && all.seq == fresh.seq)
      guard some == fresh || all == fresh else { return }
    }
    // The database itself: each list's rows in order, as the mirror orders them by key.
    for list in lists {
      let stored = try list.storedSections()
      let mirrored = all.sections.filter { $0.value.list == list.id }
        .sorted { $0.value.position.utf8.lexicographicallyPrecedes($1.value.position.utf8) }
      #expect(stored.map(\.row.id) == mirrored.map(\.key))
      for section in stored {
        let items = all.items.filter { $0.value.section == section.row.id }
          .sorted { $0.value.position.utf8.lexicographicallyPrecedes($1.value.position.utf8) }
        #expect(section.items.map(\.id) == items.map(\.key))
        #expect(section.items.map(\.json) == items.map(\.value.value))
      }
    }
    // Nothing changed: a pull brings nothing, and says the same position.
    let seq = all.seq
    #expect(try all.pull(repository, lists: nil) == 0 && all.seq == seq)
    #expect(try repository.hasChanges(lists: [lists[0].id], after: seq) == false)
    try lists[0].appendSection(RawJSON("\"late\""))
    #expect(try repository.hasChanges(lists: [lists[0].id], after: seq))
    #expect(try repository.hasChanges(lists: [lists[2].id], after: seq) == false)
  }
}
