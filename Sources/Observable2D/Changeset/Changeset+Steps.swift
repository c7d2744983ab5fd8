public import FoundationEssentials

extension Changeset {
  /// One operation of a changeset, for consumers that apply changes one at a time (an
  /// outline view, an undo log, a terminal that redraws row by row): each step's indexes
  /// name the state that the steps before it left, and a move's `to` is where the thing is
  /// after the step.
  public enum Step {
    /// The metadata of the section at `at` changes.
    case updateSection(at: Int, id: Int64, metadata: Metadata)
    /// The value of the item at `at` changes.
    case updateItem(at: IndexPath, id: Int64, value: Item)
    /// The item at `at` goes.
    case deleteItem(at: IndexPath, id: Int64)
    /// The section at `at` goes, with its items.
    case deleteSection(at: Int, id: Int64)
    /// A section appears at `at`, with its items.
    case insertSection(at: Int, Section)
    /// The section at `from` moves to `to`, with its items, and has `metadata`.
    case moveSection(from: Int, to: Int, id: Int64, metadata: Metadata)
    /// An item appears at `at`.
    case insertItem(at: IndexPath, id: Int64, value: Item)
    /// The item at `from` moves to `to` and has `value`.
    case moveItem(from: IndexPath, to: IndexPath, id: Int64, value: Item)

    /// The step as a changeset of one entry, which validates against and applies to the
    /// state the steps before it left (``Changeset/applied(to:)``), or feeds an array
    /// (``MutableObservable2DArray/apply(_:)``) one step at a time.
    public var changeset: Changeset {
      switch self {
      case .updateSection(let at, let id, let metadata):
        Changeset(updatedSections: [UpdatedSection(index: at, id: id, metadata: metadata)])
      case .updateItem(let at, let id, let value):
        Changeset(updatedItems: [UpdatedItem(at: at, id: id, value: value)])
      case .deleteItem(let at, let id):
        Changeset(deletedItems: [DeletedItem(at: at, id: id)])
      case .deleteSection(let at, let id):
        Changeset(deletedSections: [DeletedSection(index: at, id: id)])
      case .insertSection(let at, let section):
        Changeset(insertedSections: [
          InsertedSection(
            index: at, id: section.id, metadata: section.metadata, items: section.items)
        ])
      case .moveSection(let from, let to, let id, let metadata):
        Changeset(movedSections: [MovedSection(from: from, to: to, id: id, metadata: metadata)])
      case .insertItem(let at, let id, let value):
        Changeset(insertedItems: [InsertedItem(at: at, id: id, value: value)])
      case .moveItem(let from, let to, let id, let value):
        Changeset(movedItems: [MovedItem(from: from, to: to, id: id, value: value)])
      }
    }
  }

  /// The changeset as a sequence of single operations, one per entry, which applied one
  /// after another to the old state give what the batch gives (Bond's patch form of a diff).
  ///
  /// The order: updates (where the old state has them), item deletions from the last index
  /// path up, section deletions from the last up, then the sections inserted and moved in
  /// the order of their new indexes, then the items inserted and moved in the order of their
  /// new index paths. A moved section or item is one step, from where it is at that point to
  /// where it then belongs.
  ///
  /// ```swift
  /// var state = old
  /// for step in changeset.steps { state = try step.changeset.applied(to: state) }
  /// assert(state == (try changeset.applied(to: old)))
  /// ```
  ///
  /// - Precondition: The changeset is valid for some state (as every emitted one is).
  /// - Complexity: O(*k* log *k* + *k* · *m*) for *k* entries of which at most *m* moves
  ///   start in one section: it never walks the sections or items the changeset leaves.
  public var steps: [Step] {
    var steps: [Step] = []
    steps.reserveCapacity(entryCount)
    for update in updatedSections {
      steps.append(.updateSection(at: update.index, id: update.id, metadata: update.metadata))
    }
    for update in updatedItems {
      steps.append(.updateItem(at: update.at, id: update.id, value: update.value))
    }
    // Deleting from the last index path up leaves the old index paths of the rest valid.
    for deletion in deletedItems.sorted(by: { $0.at > $1.at }) {
      steps.append(.deleteItem(at: deletion.at, id: deletion.id))
    }
    for deletion in deletedSections.sorted(by: { $0.index > $1.index }) {
      steps.append(.deleteSection(at: deletion.index, id: deletion.id))
    }

    // Sections: the ones left in place keep their order; each inserted or moved one goes,
    // in the order of its new index, after the sections that come before it in the new
    // state. Moved sections not yet placed sit among them (`waiting`, by position).
    let deletedIndexes = deletedSections.map(\.index).sorted()
    var waiting = Waiting()
    for (entry, move) in movedSections.enumerated() {
      waiting.add(position: move.from - deletedIndexes.sortedIndex(of: move.from), key: entry)
    }
    var sectionTargets = insertedSections.indices.map {
      (insertedSections[$0].index, StepTarget.inserted($0))
    }
    sectionTargets += movedSections.indices.map { (movedSections[$0].to, StepTarget.moved($0)) }
    sectionTargets.sort { $0.0 < $1.0 }
    for (index, target) in sectionTargets {
      switch target {
      case .inserted(let entry):
        let position = waiting.place(atSortedIndex: index)
        steps.append(.insertSection(at: position, insertedSections[entry].section))
      case .moved(let entry):
        let from = waiting.remove(key: entry)
        let position = waiting.place(atSortedIndex: index)
        let move = movedSections[entry]
        steps.append(.moveSection(from: from, to: position, id: move.id, metadata: move.metadata))
      }
    }

    // Items, likewise within each section (sections are where the new state has them now).
    // A moved item waits in its section, at its old row less the rows deleted above it.
    let newSectionIndex = sectionIndexMap()
    var deletedRows: [Int: [Int]] = [:]
    for deletion in deletedItems { deletedRows[deletion.at[0], default: []].append(deletion.at[1]) }
    for key in deletedRows.keys { deletedRows[key]?.sort() }
    var waitingItems: [Int: Waiting] = [:]
    var itemSource: [Int] = []
    itemSource.reserveCapacity(movedItems.count)
    for (entry, move) in movedItems.enumerated() {
      let section = newSectionIndex(move.from[0])
      let row = move.from[1] - (deletedRows[move.from[0]] ?? []).sortedIndex(of: move.from[1])
      waitingItems[section, default: Waiting()].add(position: row, key: entry)
      itemSource.append(section)
    }
    var itemTargets = insertedItems.indices.map { (insertedItems[$0].at, StepTarget.inserted($0)) }
    itemTargets += movedItems.indices.map { (movedItems[$0].to, StepTarget.moved($0)) }
    itemTargets.sort { $0.0 < $1.0 }
    for (path, target) in itemTargets {
      let section = path[0]
      switch target {
      case .inserted(let entry):
        let row = waitingItems[section, default: Waiting()].place(atSortedIndex: path[1])
        let insertion = insertedItems[entry]
        steps.append(
          .insertItem(at: [section, row], id: insertion.id, value: insertion.value))
      case .moved(let entry):
        let source = itemSource[entry]
        let from = waitingItems[source, default: Waiting()].remove(key: entry)
        let row = waitingItems[section, default: Waiting()].place(atSortedIndex: path[1])
        let move = movedItems[entry]
        steps.append(
          .moveItem(from: [source, from], to: [section, row], id: move.id, value: move.value))
      }
    }
    return steps
  }

  /// The new index of each section that survives, by its old index: a moved section's is
  /// its `to`; one left in place keeps its rank among those left in place.
  private func sectionIndexMap() -> (Int) -> Int {
    var movedTo: [Int: Int] = [:]
    for move in movedSections { movedTo[move.from] = move.to }
    let removed = (deletedSections.map(\.index) + movedSections.map(\.from)).sorted()
    let placed = (insertedSections.map(\.index) + movedSections.map(\.to)).sorted()
    return { old in
      if let to = movedTo[old] { return to }
      // The rank-th index of the new state that no inserted or moved section takes.
      var index = old - removed.sortedIndex(of: old)
      for taken in placed {
        if taken <= index { index += 1 } else { break }
      }
      return index
    }
  }
}

/// An inserted or a moved section or item, by its entry's index.
private enum StepTarget {
  case inserted(Int)
  case moved(Int)
}

/// The moved things of one section (or of the list of sections) that have not been placed
/// yet, by their position now, among the things in their final order.
private struct Waiting {
  /// Positions now, ascending, with the entry each belongs to.
  private var entries: [(position: Int, key: Int)] = []

  mutating func add(position: Int, key: Int) {
    let index = entries.firstIndex { $0.position > position } ?? entries.count
    entries.insert((position, key), at: index)
  }

  /// Takes a waiting thing out and returns where it was; those after it move up.
  mutating func remove(key: Int) -> Int {
    guard let index = entries.firstIndex(where: { $0.key == key }) else { return 0 }
    let position = entries.remove(at: index).position
    for later in index..<entries.count { entries[later].position -= 1 }
    return position
  }

  /// Where a thing goes that has `sortedIndex` things in their final order before it: past
  /// them and past the waiting ones among them; the waiting ones after it move down.
  mutating func place(atSortedIndex sortedIndex: Int) -> Int {
    var position = sortedIndex
    var first = 0
    while first < entries.count, entries[first].position < position {
      position += 1
      first += 1
    }
    for later in first..<entries.count { entries[later].position += 1 }
    return position
  }
}

extension Changeset.Step: Sendable where Metadata: Sendable, Item: Sendable {}
extension Changeset.Step: Equatable where Metadata: Equatable, Item: Equatable {}
