import Foundation
import ListStore
import TestSupport
import Testing

/// Random sequences of repository operations, checked after every step against a
/// plain in-memory model of the list. Invalid operations must throw and change
/// nothing.
@Suite struct RepositoryModelTests {
  struct Model: Equatable {
    var sections: [(id: Int64, metadata: String, items: [(id: Int64, value: String)])] = []

    static func == (a: Model, b: Model) -> Bool {
      a.sections.count == b.sections.count
        && zip(a.sections, b.sections).allSatisfy { x, y in
          x.id == y.id && x.metadata == y.metadata && x.items.map(\.id) == y.items.map(\.id)
            && x.items.map(\.value) == y.items.map(\.value)
        }
    }
  }

  static func read(_ list: StoredList<String, String>) throws -> Model {
    Model(
      sections: try list.storedSections().map { section in
        (
          section.row.id, JSONText.unquote(section.row.json) ?? "?",
          section.items.map { ($0.id, JSONText.unquote($0.json) ?? "?") }
        )
      })
  }

  @Test(arguments: TestEngine.tested, [11, 12, 13])
  func randomOperationsMatchTheModel(engine: TestEngine, seed: UInt64) throws {
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let seed = testSeed(seed)
    var random = SeededGenerator(seed: seed)
    let repository = try database.openRepository()
    let list = try repository.createList("l", metadata: String.self, item: String.self)
    var model = Model()
    var log: [String] = []
    for step in 0..<scaled(400) {
      let sectionCount = model.sections.count
      let anySection = Int.random(in: -1...sectionCount, using: &random)  // sometimes invalid
      let counts = model.sections.map(\.items.count)
      let value = "v\(step)"
      var expectFailure = false
      do {
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
          log.append("appendSection")
          let id = try list.appendSection("s\(step)")
          model.sections.append((id, "s\(step)", []))
        case 1:
          log.append("insertSection at \(anySection)")
          expectFailure = anySection < 0 || anySection > sectionCount
          let id = try list.insert(section: "s\(step)", at: anySection)
          model.sections.insert((id, "s\(step)", []), at: anySection)
        case 2:
          log.append("removeSection \(anySection)")
          expectFailure = !(0..<sectionCount).contains(anySection)
          try list.removeSection(at: anySection)
          model.sections.remove(at: anySection)
        case 3:
          let to = Int.random(in: -1...max(sectionCount, 0), using: &random)
          log.append("moveSection \(anySection) → \(to)")
          expectFailure =
            !(0..<sectionCount).contains(anySection) || !(0..<sectionCount).contains(to)
          try list.moveSection(from: anySection, to: to)
          let section = model.sections.remove(at: anySection)
          model.sections.insert(section, at: to)
        case 4:
          log.append("setMetadata \(anySection)")
          expectFailure = !(0..<sectionCount).contains(anySection)
          try list.setMetadata("m\(step)", forSectionAt: anySection)
          model.sections[anySection].metadata = "m\(step)"
        case 5, 6:
          guard sectionCount > 0 else { continue }
          let section = Int.random(in: 0..<sectionCount, using: &random)
          let row = Int.random(in: -1...counts[section] + 1, using: &random)
          log.append("insert item at \(section):\(row)")
          expectFailure = row < 0 || row > counts[section]
          let id = try list.insert(item: value, at: IndexPath(indexes: [section, row]))
          model.sections[section].items.insert((id, value), at: row)
        case 7:
          guard sectionCount > 0 else { continue }
          let section = Int.random(in: 0..<sectionCount, using: &random)
          let row = Int.random(in: 0...counts[section], using: &random)
          log.append("remove item \(section):\(row)")
          expectFailure = row >= counts[section]
          if Bool.random(using: &random), row < counts[section] {
            try list.removeItem(id: model.sections[section].items[row].id)
          } else {
            try list.removeItem(at: IndexPath(indexes: [section, row]))
          }
          model.sections[section].items.remove(at: row)
        case 8:
          guard sectionCount > 0 else { continue }
          let from = Int.random(in: 0..<sectionCount, using: &random)
          let to = Int.random(in: 0..<sectionCount, using: &random)
          let fromRow = Int.random(in: 0...counts[from], using: &random)
          let limit = counts[to] - (from == to ? 1 : 0)
          let toRow = Int.random(in: 0...max(limit + 1, 0), using: &random)
          log.append("move item \(from):\(fromRow) → \(to):\(toRow)")
          expectFailure = fromRow >= counts[from] || toRow > limit
          try list.moveItem(
            from: IndexPath(indexes: [from, fromRow]), to: IndexPath(indexes: [to, toRow]))
          let item = model.sections[from].items.remove(at: fromRow)
          model.sections[to].items.insert(item, at: toRow)
        default:
          guard sectionCount > 0 else { continue }
          let section = Int.random(in: 0..<sectionCount, using: &random)
          let row = Int.random(in: 0...counts[section], using: &random)
          log.append("replace item \(section):\(row)")
          expectFailure = row >= counts[section]
          try list.replaceItem(at: IndexPath(indexes: [section, row]), with: value)
          model.sections[section].items[row].value = value
        }
        #expect(!expectFailure, "\(engine) seed \(seed): \(log.last ?? "") should have failed")
      } catch {
        #expect(expectFailure, "\(engine) seed \(seed): \(log.last ?? "") failed: \(error)")
      }
      let stored = try Self.read(list)
      if stored != model {
        let recent = log.suffix(12).joined(separator: "\n")
        Issue.record("\(engine) seed \(seed) diverged at step \(step); last operations:\n\(recent)")
        return
      }
    }
  }
}
