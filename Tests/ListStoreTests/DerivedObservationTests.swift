import Foundation
import ListStore
import Observable2D
import ReactiveCore
import TestSupport
import Testing

/// Filtered, sorted and grouped arrays over a stored list's observation, following writes
/// through the API and a foreign client's SQL, checked against a recomputation from a fresh
/// read after every write, with their changesets checked by a recorder.
@Suite struct DerivedObservationTests {
  typealias List = StoredList<SectionMetadata, String>
  typealias Section = Observable2DArraySection<SectionMetadata, String>

  static func filtered(_ sections: [Section], _ isIncluded: (String) -> Bool) -> [Section] {
    sections.map {
      Section(
        id: $0.id, metadata: $0.metadata,
        items: ItemList(entries: $0.items.entries.filter { isIncluded($0.value) }))
    }
  }

  /// Sorted by value, stably (ties keep the list's order).
  static func sorted(_ sections: [Section]) -> [Section] {
    sections.map {
      let entries = Array($0.items.entries).enumerated().sorted {
        ($0.element.value, $0.offset) < ($1.element.value, $1.offset)
      }.map(\.element)
      return Section(id: $0.id, metadata: $0.metadata, items: ItemList(entries: entries))
    }
  }

  /// The groups by first letter: keys, and the ids in each, in the list's order.
  static func groups(_ sections: [Section]) -> [String: [Int64]] {
    var groups: [String: [Int64]] = [:]
    for section in sections {
      for entry in section.items.entries {
        groups[String(entry.value.prefix(1)), default: []].append(entry.id)
      }
    }
    return groups
  }

  @Test(arguments: TestEngine.tested)
  func derivedArraysFollowWritesOfTheAPIAndOfAnotherClient(engine: TestEngine) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("words", metadata: SectionMetadata.self, item: String.self)
    var random = SeededGenerator(seed: 0xD3_41_7E)
    let words = ["apple", "bread", "cheese", "dates", "eggs", "figs", "grapes", "honey"]
    func word() -> String {
      words[Int(random.next() % UInt64(words.count))] + "\(random.next() % 3)"
    }
    for header in ["A", "B"] {
      try list.appendSection(SectionMetadata(header: header))
      try list.appendItems((0..<20).map { _ in word() }, toSection: header == "A" ? 0 : 1)
    }
    let observed = try list.observe()
    let isShort: (String) -> Bool = { $0.count <= 5 }
    let filtered = observed.filterItems(isShort)
    let sorted = filtered.sortedItems(by: <)
    let grouped = observed.groupedItems { String($0.prefix(1)) }
    let recorders = (
      filtered: ArrayRecorder(filtered, header: { $0.header }),
      sorted: ArrayRecorder(sorted, header: { $0.header }),
      grouped: ArrayRecorder(grouped, header: { $0 })
    )
    let foreign = try database.foreign()
    defer { foreign.close() }

    for step in 0..<120 {
      let state = try list.sections()
      let counts = state.map(\.items.count)
      let section = Int(random.next() % 2)
      let count = counts[section]
      switch random.next() % 6 {
      case 0:
        try list.insert(
          item: word(),
          at: IndexPath(item: Int(random.next() % UInt64(count + 1)), section: section))
      case 1 where count > 0:
        try list.removeItem(
          at: IndexPath(item: Int(random.next() % UInt64(count)), section: section))
      case 2 where count > 0:
        let target = Int(random.next() % 2)
        let limit = counts[target] - (target == section ? 1 : 0)
        try list.moveItem(
          from: IndexPath(item: Int(random.next() % UInt64(count)), section: section),
          to: IndexPath(item: Int(random.next() % UInt64(limit + 1)), section: target))
      case 3 where count > 0:
        try list.replaceItem(
          at: IndexPath(item: Int(random.next() % UInt64(count)), section: section), with: word())
      case 4 where count > 0:
        // Another client rewrites a value in SQL; the observer reads it from the change log.
        let id = state[section].items.id(at: Int(random.next() % UInt64(count)))
        try foreign.execute("UPDATE items SET value = '\"\(word())\"' WHERE id = \(id)")
        repository.synchronizeObservers()
      default:
        try repository.write {
          try list.appendItem(word(), toSection: section)
          if count > 1 { try list.removeItem(at: IndexPath(item: 0, section: section)) }
        }
      }
      let fresh = try list.sections()
      let context = "step \(step)"
      #expect(filtered.sections == Self.filtered(fresh, isShort), "\(context)")
      #expect(sorted.sections == Self.sorted(Self.filtered(fresh, isShort)), "\(context)")
      let groups = Dictionary(
        uniqueKeysWithValues: grouped.sections.map { ($0.metadata, Array($0.items.ids)) })
      #expect(groups == Self.groups(fresh), "\(context)")
      #expect(grouped.sections.map(\.metadata) == grouped.sections.map(\.metadata).sorted())
    }
    #expect(recorders.filtered.problems.isEmpty, "\(recorders.filtered.problems)")
    #expect(recorders.sorted.problems.isEmpty, "\(recorders.sorted.problems)")
    #expect(recorders.grouped.problems.isEmpty, "\(recorders.grouped.problems)")
    #expect(recorders.sorted.changesets.count > 20)
  }
}
