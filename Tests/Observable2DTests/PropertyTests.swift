import FoundationEssentials
import Observable2D
import ReactiveCore
import Testing

/// One random mutation, described independently of the state so that a failing sequence can
/// be shrunk: indexes are reduced modulo the current counts when the operation runs.
indirect enum Operation: CustomStringConvertible, Sendable {
  case appendItem(section: Int, value: String)
  case insertItem(section: Int, row: Int, value: String)
  case removeItem(section: Int, row: Int)
  case moveItem(fromSection: Int, fromRow: Int, toSection: Int, toRow: Int)
  case replaceItem(section: Int, row: Int, value: String)
  case appendSection(header: String, items: [String])
  case insertSection(index: Int, header: String, items: [String])
  case removeSection(index: Int)
  case moveSection(from: Int, to: Int)
  case setHeader(section: Int, header: String)
  case batch([Operation])
  /// `replace(with:performDiff: true)` with a random edit of the state (keeping ids).
  case replaceByID(seed: UInt64)
  /// `replace(with:itemKey:)` with a random edit, matching values.
  case replaceByValue(seed: UInt64)
  /// `replace(with:performDiff: false)` with a random edit.
  case reload(seed: UInt64)
  /// `apply(_:)` of the id-based diff to a random edit, as the repository does.
  case applyDiff(seed: UInt64)
  /// A mutation with an index out of range: it must throw and change nothing.
  case invalid(kind: Int)

  var description: String {
    switch self {
    case .appendItem(let s, let v): "appendItem(\(v), s\(s))"
    case .insertItem(let s, let r, let v): "insertItem(\(v), s\(s) r\(r))"
    case .removeItem(let s, let r): "removeItem(s\(s) r\(r))"
    case .moveItem(let s, let r, let t, let u): "moveItem(s\(s) r\(r) -> s\(t) r\(u))"
    case .replaceItem(let s, let r, let v): "replaceItem(s\(s) r\(r), \(v))"
    case .appendSection(let h, let items): "appendSection(\(h), \(items))"
    case .insertSection(let i, let h, let items): "insertSection(\(i), \(h), \(items))"
    case .removeSection(let i): "removeSection(\(i))"
    case .moveSection(let f, let t): "moveSection(\(f) -> \(t))"
    case .setHeader(let s, let h): "setHeader(s\(s), \(h))"
    case .batch(let operations): "batch\(operations)"
    case .replaceByID(let seed): "replaceByID(seed: \(seed))"
    case .replaceByValue(let seed): "replaceByValue(seed: \(seed))"
    case .reload(let seed): "reload(seed: \(seed))"
    case .applyDiff(let seed): "applyDiff(seed: \(seed))"
    case .invalid(let kind): "invalid(kind: \(kind))"
    }
  }

  static func random(_ random: inout SeededRandom, depth: Int = 0) -> Operation {
    func int() -> Int { Int.random(in: 0..<64, using: &random) }
    func value() -> String {
      ["a", "b", "c", "d"][Int.random(in: 0..<4, using: &random)] + "\(int() % 5)"
    }
    func items() -> [String] { (0..<Int.random(in: 0...3, using: &random)).map { _ in value() } }
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<14: return .appendItem(section: int(), value: value())
    case 14..<26: return .insertItem(section: int(), row: int(), value: value())
    case 26..<38: return .removeItem(section: int(), row: int())
    case 38..<52:
      return .moveItem(fromSection: int(), fromRow: int(), toSection: int(), toRow: int())
    case 52..<60: return .replaceItem(section: int(), row: int(), value: value())
    case 60..<64: return .appendSection(header: value(), items: items())
    case 64..<68: return .insertSection(index: int(), header: value(), items: items())
    case 68..<71: return .removeSection(index: int())
    case 71..<75: return .moveSection(from: int(), to: int())
    case 75..<78: return .setHeader(section: int(), header: value())
    case 78..<88 where depth == 0:
      return .batch(
        (0..<Int.random(in: 1...8, using: &random)).map { _ in Self.random(&random, depth: 1) })
    case 88..<91: return .replaceByID(seed: random.next())
    case 91..<93: return .replaceByValue(seed: random.next())
    case 93..<94: return .reload(seed: random.next())
    case 94..<97: return .applyDiff(seed: random.next())
    default: return .invalid(kind: int())
    }
  }
}

/// The mutations shared by the array and the batch editor, so one interpreter drives both.
protocol TestMutator {
  var currentSections: [TestSection] { get }
  mutating func appendItem(_ item: String, toSection section: Int) throws(Observable2DArrayError)
  mutating func insert(item: String, at indexPath: IndexPath) throws(Observable2DArrayError)
  mutating func removeItem(at indexPath: IndexPath) throws(Observable2DArrayError) -> String
  mutating func moveItem(from: IndexPath, to: IndexPath) throws(Observable2DArrayError)
  mutating func replaceItem(at indexPath: IndexPath, with item: String)
    throws(Observable2DArrayError)
  mutating func appendSection(_ section: TestSection)
  mutating func insert(section: TestSection, at index: Int) throws(Observable2DArrayError)
  mutating func removeSection(at index: Int) throws(Observable2DArrayError) -> TestSection
  mutating func moveSection(from: Int, to: Int) throws(Observable2DArrayError)
  mutating func setMetadata(_ metadata: String, forSection section: Int)
    throws(Observable2DArrayError)
}

extension MutableObservable2DArray: TestMutator where Metadata == String, Item == String {
  var currentSections: [TestSection] { sections }
}

extension Observable2DArrayEditor: TestMutator where Metadata == String, Item == String {
  var currentSections: [TestSection] { sections }
}

/// A plain model of the values: headers and item values, no ids.
struct PlainModel: Equatable {
  var sections: [(header: String, items: [String])]

  init(_ sections: [TestSection]) {
    self.sections = sections.map { ($0.metadata, Array($0.items)) }
  }

  static func == (lhs: PlainModel, rhs: PlainModel) -> Bool {
    lhs.sections.count == rhs.sections.count
      && zip(lhs.sections, rhs.sections).allSatisfy {
        $0.header == $1.header && $0.items == $1.items
      }
  }
}

/// A bond that shows the metadata as the header and the values as the rows.
struct HeaderBond: TableViewBond {
  func cellForRow(
    at indexPath: IndexPath, tableView: TableView, dataSource: Observable2DArray<String, String>
  ) -> TableViewCell {
    let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
    cell.text = dataSource[indexPath]
    return cell
  }

  func titleForHeader(in section: Int, dataSource: Observable2DArray<String, String>) -> String? {
    dataSource[section].metadata
  }

  func titleForFooter(in section: Int, dataSource: Observable2DArray<String, String>) -> String? {
    "end of " + dataSource[section].metadata
  }
}

/// Runs operation sequences on an observed, bound array and reports the first broken property.
struct PropertyRunner {
  /// Runs `operations` from `initial` and returns a description of the first failure.
  static func firstFailure(initialSeed: UInt64, operations: [Operation]) -> String? {
    var states = RandomStates(seed: initialSeed)
    let initial = states.state(maxSections: 3, maxItems: 4).map {
      TestSection(metadata: $0.metadata, items: Array($0.items))
    }
    let array = MutableObservable2DArray(initial)
    let recorder = EventRecorder(array)
    let tableView = TableView()
    let binding = array.bind(to: tableView, using: HeaderBond())
    defer { binding.dispose() }
    var model = PlainModel(array.sections)
    for (step, operation) in operations.enumerated() {
      let before = array.sections
      let eventsBefore = recorder.events.count
      var expected = model
      let threw: Bool
      do {
        try run(operation, on: array, model: &expected)
        threw = false
      } catch {
        threw = true
      }
      let context = "step \(step) \(operation)"
      if threw {
        if array.sections != before { return "\(context): threw but changed the array" }
        expected = model
      }
      if PlainModel(array.sections) != expected {
        return
          "\(context): values \(PlainModel(array.sections).sections) != expected \(expected.sections)"
      }
      // One event for a change; a mutation that changed nothing (a value replaced by an
      // equal one, say) may still report it, but never with an empty changeset.
      let emitted = recorder.events.count - eventsBefore
      let changed = array.sections != before
      if emitted > 1 || (changed && emitted == 0) || (threw && emitted > 0) {
        return
          "\(context): \(emitted) events for a change that \(changed ? "did" : "did not") happen"
      }
      if let problem = recorder.problems.first { return "\(context): \(problem)" }
      if tableView.rejectedUpdateCount > 0, let error = tableView.lastRejectedUpdate {
        return "\(context): the table view rejected the update: \(error)"
      }
      if let mismatch = tableMismatch(tableView, array.sections) {
        return "\(context): \(mismatch)"
      }
      model = expected
    }
    return nil
  }

  static func tableMismatch(_ tableView: TableView, _ sections: [TestSection]) -> String? {
    guard tableView.numberOfSections == sections.count else {
      return "table has \(tableView.numberOfSections) sections, array \(sections.count)"
    }
    for (index, section) in sections.enumerated() {
      guard tableView.titleForHeader(inSection: index) == section.metadata,
        tableView.titleForFooter(inSection: index) == "end of " + section.metadata
      else { return "titles of section \(index) differ" }
      let cells = tableView.cells(inSection: index)
      let ids = (0..<cells.count).map { tableView.identifierForRow(at: path(index, $0)) }
      guard cells.map(\.text) == Array(section.items).map(Optional.some),
        ids == Array(section.items.ids).map(Optional.some)
      else {
        return
          "rows of section \(index) differ: table \(zip(ids, cells.map(\.text)).map { "\($0.0 ?? -1):\($0.1 ?? "")" }), array \(section.items.debugDescription)"
      }
    }
    return nil
  }

  /// Reduces an index modulo a count; `nil` when the count is zero.
  static func pick(_ index: Int, _ count: Int) -> Int? {
    count > 0 ? index % count : nil
  }

  static func run<Target: TestMutator>(
    _ operation: Operation, on target: inout Target, model: inout PlainModel
  ) throws(Observable2DArrayError) {
    let sections = target.currentSections
    switch operation {
    case .appendItem(let s, let value):
      guard let s = pick(s, sections.count) else { return }
      try target.appendItem(value, toSection: s)
      model.sections[s].items.append(value)
    case .insertItem(let s, let r, let value):
      guard let s = pick(s, sections.count) else { return }
      let r = r % (sections[s].items.count + 1)
      try target.insert(item: value, at: path(s, r))
      model.sections[s].items.insert(value, at: r)
    case .removeItem(let s, let r):
      guard let s = pick(s, sections.count), let r = pick(r, sections[s].items.count) else {
        return
      }
      _ = try target.removeItem(at: path(s, r))
      model.sections[s].items.remove(at: r)
    case .moveItem(let s, let r, let t, let u):
      guard let s = pick(s, sections.count), let r = pick(r, sections[s].items.count),
        let t = pick(t, sections.count)
      else { return }
      let u = u % (sections[t].items.count - (s == t ? 1 : 0) + 1)
      try target.moveItem(from: path(s, r), to: path(t, u))
      let value = model.sections[s].items.remove(at: r)
      model.sections[t].items.insert(value, at: u)
    case .replaceItem(let s, let r, let value):
      guard let s = pick(s, sections.count), let r = pick(r, sections[s].items.count) else {
        return
      }
      try target.replaceItem(at: path(s, r), with: value)
      model.sections[s].items[r] = value
    case .appendSection(let header, let items):
      target.appendSection(TestSection(metadata: header, items: items))
      model.sections.append((header, items))
    case .insertSection(let i, let header, let items):
      let i = i % (sections.count + 1)
      try target.insert(section: TestSection(metadata: header, items: items), at: i)
      model.sections.insert((header, items), at: i)
    case .removeSection(let i):
      guard let i = pick(i, sections.count) else { return }
      _ = try target.removeSection(at: i)
      model.sections.remove(at: i)
    case .moveSection(let f, let t):
      guard let f = pick(f, sections.count), let t = pick(t, sections.count) else { return }
      try target.moveSection(from: f, to: t)
      let moved = model.sections.remove(at: f)
      model.sections.insert(moved, at: t)
    case .setHeader(let s, let header):
      guard let s = pick(s, sections.count) else { return }
      try target.setMetadata(header, forSection: s)
      model.sections[s].header = header
    case .invalid(let kind):
      switch kind % 4 {
      case 0: _ = try target.removeSection(at: sections.count)
      case 1: try target.insert(item: "x", at: path(sections.count, 0))
      case 2: try target.moveSection(from: 0, to: sections.count)
      default:
        guard let s = pick(kind, sections.count) else {
          try target.appendItem("x", toSection: 0)
          return
        }
        try target.replaceItem(at: path(s, sections[s].items.count), with: "x")
      }
    case .batch, .replaceByID, .replaceByValue, .reload, .applyDiff:
      break
    }
  }

  /// A random edit of `sections`: kept sections and items keep their ids, new ones have id 0.
  static func edit(_ sections: [TestSection], seed: UInt64) -> [TestSection] {
    var states = RandomStates(seed: seed)
    let firstNew: Int64 = 1 << 40
    states.nextID = firstNew
    return states.edited(sections, maxEdits: 6).map { section in
      var section = section
      if section.id >= firstNew { section.id = 0 }
      section.items = ItemList(
        entries: section.items.entries.map { (id: $0.id >= firstNew ? 0 : $0.id, value: $0.value) })
      return section
    }
  }

  static func run(
    _ operation: Operation, on array: MutableObservable2DArray<String, String>,
    model: inout PlainModel
  ) throws(Observable2DArrayError) {
    switch operation {
    case .batch(let operations):
      var batchModel = model
      try array.batchUpdate { editor throws(Observable2DArrayError) in
        for operation in operations { try run(operation, on: &editor, model: &batchModel) }
      }
      model = batchModel
    case .replaceByID(let seed):
      let edited = edit(array.sections, seed: seed)
      array.replace(with: edited, performDiff: true)
      model = PlainModel(edited)
    case .replaceByValue(let seed):
      let edited = edit(array.sections, seed: seed)
      array.replace(with: edited, itemKey: { $0 })
      model = PlainModel(edited)
    case .reload(let seed):
      let edited = edit(array.sections, seed: seed)
      array.replace(with: edited, performDiff: false)
      model = PlainModel(edited)
    case .applyDiff(let seed):
      let edited = edit(array.sections, seed: seed)
      try array.apply(TestChangeset.diffByID(from: array.sections, to: edited))
      model = PlainModel(edited)
    default:
      var target = array
      try run(operation, on: &target, model: &model)
    }
  }

  /// Removes operations (and flattens batches) while the failure persists.
  static func shrink(initialSeed: UInt64, operations: [Operation]) -> [Operation] {
    var current = operations
    var chunk = max(1, current.count / 2)
    while chunk >= 1 {
      var start = 0
      var removedAny = false
      while start < current.count {
        var candidate = current
        candidate.removeSubrange(start..<min(current.count, start + chunk))
        if firstFailure(initialSeed: initialSeed, operations: candidate) != nil {
          current = candidate
          removedAny = true
        } else {
          start += chunk
        }
      }
      if !removedAny { chunk /= 2 }
    }
    for index in current.indices {
      guard case .batch(let inner) = current[index] else { continue }
      var candidate = current
      candidate.replaceSubrange(index...index, with: inner)
      if firstFailure(initialSeed: initialSeed, operations: candidate) != nil {
        return shrink(initialSeed: initialSeed, operations: candidate)
      }
    }
    return current
  }
}

@Suite struct PropertyTests {
  @Test func randomMutationSequencesEmitValidChangesetsThatTheTableViewAccepts() {
    let iterations = PropertyTestSettings.iterations(default: 3_000)
    var failures = 0
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 1_000 &+ UInt64(iteration)
      var random = SeededRandom(seed: seed)
      let operations = (0..<24).map { _ in Operation.random(&random) }
      guard let failure = PropertyRunner.firstFailure(initialSeed: seed, operations: operations)
      else { continue }
      let minimal = PropertyRunner.shrink(initialSeed: seed, operations: operations)
      let reason = PropertyRunner.firstFailure(initialSeed: seed, operations: minimal) ?? failure
      Issue.record(
        """
        seed \(seed) (replay with LISTSTORE_PROPTEST_SEED=\(seed &- 1_000 &- UInt64(iteration)) \
        and enough iterations): \(reason)
        minimal reproduction from the initial state of seed \(seed):
        \(minimal.map { "  \($0)" }.joined(separator: "\n"))
        """)
      failures += 1
      if failures >= 3 { break }
    }
  }

  @Test func largeRandomBatchesStillEmitOneValidChangeset() {
    // Past 1,024 touched items a batch ends with a diff; these batches cross that limit.
    let iterations = max(1, PropertyTestSettings.iterations(default: 3_000) / 300)
    for iteration in 0..<iterations {
      let seed = PropertyTestSettings.baseSeed &+ 77 &+ UInt64(iteration)
      var random = SeededRandom(seed: seed)
      let operations = [
        Operation.batch(
          (0..<1_500).map { _ in
            var operation = Operation.random(&random, depth: 1)
            while case .invalid = operation { operation = Operation.random(&random, depth: 1) }
            return operation
          })
      ]
      if let failure = PropertyRunner.firstFailure(initialSeed: seed, operations: operations) {
        Issue.record("seed \(seed): \(failure)")
      }
    }
  }
}
