import FoundationEssentials
import Observable2D

typealias TestSection = Observable2DArraySection<String, String>
typealias TestChangeset = Changeset<String, String>

/// Builds a section whose items are `"<prefix><id>"` strings with the given ids.
func makeSection(_ id: Int64, _ header: String, _ ids: [Int64]) -> TestSection {
  TestSection(id: id, metadata: header, items: ItemList(entries: ids.map { ($0, "v\($0)") }))
}

/// Builds a section from explicit `(id, value)` pairs.
func makeSection(_ id: Int64, _ header: String, entries: [(Int64, String)]) -> TestSection {
  TestSection(id: id, metadata: header, items: ItemList(entries: entries.map { ($0.0, $0.1) }))
}

func path(_ section: Int, _ row: Int) -> IndexPath {
  IndexPath(indexes: [section, row])
}

/// A plain model of a 2D array for the independent checks: arrays of `(id, value)`.
struct PlainSection<Metadata, Item> {
  var id: Int64
  var metadata: Metadata
  var items: [(id: Int64, value: Item)]

  init(_ section: Observable2DArraySection<Metadata, Item>) {
    id = section.id
    metadata = section.metadata
    items = Array(section.items.entries)
  }
}

/// Independent check of every rule of `docs/changesets.md`, written naively over plain arrays
/// (no `ItemList`, no `validate`), so that it cross-checks the library. Returns the broken rules.
func ruleViolations<Metadata: Equatable & Sendable, Item: Equatable & Sendable>(
  of changeset: Changeset<Metadata, Item>,
  from oldSections: [Observable2DArraySection<Metadata, Item>],
  to newSections: [Observable2DArraySection<Metadata, Item>]
) -> [String] {
  var problems: [String] = []
  let old = oldSections.map(PlainSection.init)
  let new = newSections.map(PlainSection.init)
  func validOld(_ p: IndexPath) -> Bool {
    p.count == 2 && old.indices.contains(p[0]) && old[p[0]].items.indices.contains(p[1])
  }
  func validNew(_ p: IndexPath) -> Bool {
    p.count == 2 && new.indices.contains(p[0]) && new[p[0]].items.indices.contains(p[1])
  }
  // Rule 1: bounds, ids at the old positions, and payloads at the new positions.
  for entry in changeset.deletedSections where !old.indices.contains(entry.index) {
    problems.append("rule 1: deleted section \(entry.index) out of bounds")
  }
  for entry in changeset.updatedSections
  where !old.indices.contains(entry.index) || old[entry.index].id != entry.id {
    problems.append("rule 1: updated section \(entry.index) out of bounds or wrong id")
  }
  for entry in changeset.insertedSections
  where !new.indices.contains(entry.index) || new[entry.index].id != entry.id {
    problems.append("rule 1: inserted section \(entry.index) out of bounds or wrong id")
  }
  for entry in changeset.movedSections
  where !old.indices.contains(entry.from) || !new.indices.contains(entry.to)
    || old[entry.from].id != entry.id || new[entry.to].id != entry.id
  {
    problems.append("rule 1: moved section \(entry.from)->\(entry.to) out of bounds or wrong id")
  }
  for entry in changeset.deletedItems
  where !validOld(entry.at) || old[entry.at[0]].items[entry.at[1]].id != entry.id {
    problems.append("rule 1: deleted item \(entry.at) out of bounds or wrong id")
  }
  for entry in changeset.updatedItems
  where !validOld(entry.at) || old[entry.at[0]].items[entry.at[1]].id != entry.id {
    problems.append("rule 1: updated item \(entry.at) out of bounds or wrong id")
  }
  for entry in changeset.insertedItems
  where !validNew(entry.at) || new[entry.at[0]].items[entry.at[1]].id != entry.id
    || new[entry.at[0]].items[entry.at[1]].value != entry.value
  {
    problems.append("rule 1: inserted item \(entry.at) out of bounds or wrong payload")
  }
  for entry in changeset.movedItems
  where !validOld(entry.from) || !validNew(entry.to)
    || old[entry.from[0]].items[entry.from[1]].id != entry.id
    || new[entry.to[0]].items[entry.to[1]].id != entry.id
    || new[entry.to[0]].items[entry.to[1]].value != entry.value
  {
    problems.append("rule 1: moved item \(entry.from)->\(entry.to) out of bounds or wrong payload")
  }
  if !problems.isEmpty { return problems }

  // Rule 2: uniqueness in each index space.
  let oldSectionIndexes =
    changeset.deletedSections.map(\.index) + changeset.movedSections.map(\.from)
    + changeset.updatedSections.map(\.index)
  if Set(oldSectionIndexes).count != oldSectionIndexes.count {
    problems.append("rule 2: an old section is named twice")
  }
  let newSectionIndexes =
    changeset.insertedSections.map(\.index) + changeset.movedSections.map(\.to)
  if Set(newSectionIndexes).count != newSectionIndexes.count {
    problems.append("rule 2: a new section is named twice")
  }
  let oldPaths =
    changeset.deletedItems.map(\.at) + changeset.movedItems.map(\.from)
    + changeset.updatedItems.map(\.at)
  if Set(oldPaths).count != oldPaths.count { problems.append("rule 2: an old item is named twice") }
  let newPaths = changeset.insertedItems.map(\.at) + changeset.movedItems.map(\.to)
  if Set(newPaths).count != newPaths.count { problems.append("rule 2: a new item is named twice") }

  // Rule 3: nothing listed inside deleted or inserted sections.
  let deletedSections = Set(changeset.deletedSections.map(\.index))
  let insertedSections = Set(changeset.insertedSections.map(\.index))
  if oldPaths.contains(where: { deletedSections.contains($0[0]) }) {
    problems.append("rule 3: an item of a deleted section is listed")
  }
  if newPaths.contains(where: { insertedSections.contains($0[0]) }) {
    problems.append("rule 3: an item of an inserted section is listed")
  }
  for entry in changeset.insertedSections
  where new[entry.index].items.map(\.id) != Array(entry.items.ids) {
    problems.append("rule 3: inserted section \(entry.index) does not carry all its items")
  }

  // Rule 4: counts of surviving sections (paired by id).
  var newIndexOfOld: [Int: Int] = [:]
  for (index, section) in old.enumerated() where !deletedSections.contains(index) {
    if let target = new.firstIndex(where: { $0.id == section.id }) { newIndexOfOld[index] = target }
  }
  for (oldIndex, newIndex) in newIndexOfOld {
    let removed =
      changeset.deletedItems.filter { $0.at[0] == oldIndex }.count
      + changeset.movedItems.filter { $0.from[0] == oldIndex }.count
    let added =
      changeset.insertedItems.filter { $0.at[0] == newIndex }.count
      + changeset.movedItems.filter { $0.to[0] == newIndex }.count
    if new[newIndex].items.count != old[oldIndex].items.count - removed + added {
      problems.append("rule 4: counts of section \(oldIndex)->\(newIndex) do not add up")
    }
  }

  // Rule 5: an id is listed once among moves and updates.
  let movedAndUpdated = changeset.movedItems.map(\.id) + changeset.updatedItems.map(\.id)
  if Set(movedAndUpdated).count != movedAndUpdated.count {
    problems.append("rule 5: an item is listed both as moved and updated")
  }
  let sectionsMovedAndUpdated =
    changeset.movedSections.map(\.id) + changeset.updatedSections.map(\.id)
  if Set(sectionsMovedAndUpdated).count != sectionsMovedAndUpdated.count {
    problems.append("rule 5: a section is listed both as moved and updated")
  }

  // Rule 6: the normative application, done naively, gives exactly the new state.
  if problems.isEmpty {
    var state = old
    for update in changeset.updatedSections { state[update.index].metadata = update.metadata }
    for update in changeset.updatedItems {
      state[update.at[0]].items[update.at[1]].value = update.value
    }
    let removals = (changeset.deletedItems.map(\.at) + changeset.movedItems.map(\.from)).sorted(
      by: >)
    for removal in removals { state[removal[0]].items.remove(at: removal[1]) }
    var kept: [Int: PlainSection<Metadata, Item>] = [:]
    let sectionRemovals =
      (changeset.deletedSections.map(\.index) + changeset.movedSections.map(\.from)).sorted(by: >)
    for index in sectionRemovals { kept[index] = state.remove(at: index) }
    var sectionInsertions: [(Int, PlainSection<Metadata, Item>)] = changeset.insertedSections.map {
      ($0.index, PlainSection($0.section))
    }
    for move in changeset.movedSections {
      if var section = kept[move.from] {
        section.metadata = move.metadata
        sectionInsertions.append((move.to, section))
      }
    }
    for (index, section) in sectionInsertions.sorted(by: { $0.0 < $1.0 }) {
      state.insert(section, at: index)
    }
    let itemInsertions =
      changeset.insertedItems.map { ($0.at, $0.id, $0.value) }
      + changeset.movedItems.map { ($0.to, $0.id, $0.value) }
    for (at, id, value) in itemInsertions.sorted(by: { $0.0 < $1.0 }) {
      state[at[0]].items.insert((id, value), at: at[1])
    }
    let same =
      state.count == new.count
      && zip(state, new).allSatisfy { a, b in
        a.id == b.id && a.metadata == b.metadata && a.items.count == b.items.count
          && zip(a.items, b.items).allSatisfy { $0.id == $1.id && $0.value == $1.value }
      }
    if !same { problems.append("rule 6: applying does not give the new state") }
  }
  return problems
}
