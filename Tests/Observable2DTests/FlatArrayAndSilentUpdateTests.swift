import FoundationEssentials
import Observable2D
import ReactiveCore
import Testing

/// Bond's one-dimensional `MutableObservableArray`, subscript assignment and
/// `silentUpdate`, as Bond's users call them.
@Suite struct FlatArrayAndSilentUpdateTests {
  @Test func aFlatArrayEmitsOneEventPerMutationWithIndexesInItsOneSection() throws {
    let todos = MutableObservableArray(["milk", "eggs"])
    let recorder = EventRecorder(todos.array)
    todos.append("bread")
    #expect(recorder.events.last?.changeset.insertedItems.map(\.at) == [[0, 2]])
    todos[0] = "oat milk"
    #expect(recorder.events.last?.changeset.updatedItems.map(\.value) == ["oat milk"])
    try todos.move(from: 2, to: 0)
    #expect(recorder.events.last?.changeset.movedItems.map(\.to) == [[0, 0]])
    try todos.insert("jam", at: 1)
    #expect(try todos.remove(at: 3) == "eggs")
    #expect(try todos.removeLast() == "oat milk")
    #expect(Array(todos.items) == ["bread", "jam"])
    #expect(todos.count == 2 && !todos.isEmpty)
    #expect(recorder.events.count == 6)
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  @Test func aFlatArrayRefusesBadIndexesAndChangesNothing() {
    let todos = MutableObservableArray(["a", "b"])
    let recorder = EventRecorder(todos.array)
    #expect(throws: Observable2DArrayError.self) { try todos.insert("x", at: 3) }
    #expect(throws: Observable2DArrayError.self) { try todos.remove(at: 2) }
    #expect(throws: Observable2DArrayError.self) { try todos.move(from: 0, to: 2) }
    #expect(throws: Observable2DArrayError.self) { try todos.removeSubrange(1..<3) }
    #expect(throws: Observable2DArrayError.self) { try todos.move(from: [0, 2], to: 0) }
    todos.removeAll()
    #expect(throws: Observable2DArrayError.self) { try todos.removeLast() }
    #expect(recorder.events.count == 1)  // removeAll
    #expect(todos.array.numberOfSections == 1)
  }

  @Test func replacingAFlatArrayDiffsByValueAsBondDoes() {
    let numbers = MutableObservableArray([1, 2, 3])
    let recorder = EventRecorder(numbers.array)
    numbers.replace(with: [1, 2, 3, 4])
    let changeset = recorder.events.last?.changeset
    #expect(changeset?.insertedItems.map(\.at) == [[0, 3]])
    #expect(changeset?.entryCount == 1)
    numbers.replace(with: [4, 3, 2, 1])
    #expect(recorder.events.last?.changeset.movedItems.count == 3)
    numbers.replace(with: [0], performDiff: false)
    #expect(Array(numbers.items) == [0])
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }

  @Test func randomFlatMutationsMatchAnArrayModel() throws {
    for seed in 0..<UInt64(200) {
      var random = SeededRandom(seed: PropertyTestSettings.baseSeed &+ 700 &+ seed)
      var model = (0..<Int.random(in: 0...5, using: &random)).map { _ in
        Int.random(in: 0..<10, using: &random)
      }
      let list = MutableObservableArray(model)
      let recorder = EventRecorder(list.array)
      for _ in 0..<30 {
        let count = model.count
        let value = Int.random(in: 0..<10, using: &random)
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
          list.append(value)
          model.append(value)
        case 1:
          let index = Int.random(in: 0...count, using: &random)
          try list.insert(value, at: index)
          model.insert(value, at: index)
        case 2 where count > 0:
          let index = Int.random(in: 0..<count, using: &random)
          #expect(try list.remove(at: index) == model.remove(at: index))
        case 3 where count > 0:
          let from = Int.random(in: 0..<count, using: &random)
          let to = Int.random(in: 0..<count, using: &random)
          try list.move(from: from, to: to)
          model.insert(model.remove(at: from), at: to)
        case 4 where count > 0:
          let index = Int.random(in: 0..<count, using: &random)
          list[index] = value
          model[index] = value
        case 5 where count > 1:
          let lower = Int.random(in: 0..<count, using: &random)
          let upper = Int.random(in: lower...count, using: &random)
          try list.removeSubrange(lower..<upper)
          model.removeSubrange(lower..<upper)
        case 6:
          try list.batchUpdate { editor throws(Observable2DArrayError) in
            editor.append(value)
            if editor.count > 1 { try editor.move(from: 0, to: editor.count - 1) }
            try editor.replace(at: 0, with: value + 1)
          }
          model.append(value)
          if model.count > 1 { model.append(model.removeFirst()) }
          model[0] = value + 1
        default:
          let new = model.shuffled(using: &random).dropLast(Int.random(in: 0...1, using: &random))
          list.replace(with: Array(new))
          model = Array(new)
        }
        #expect(Array(list.items) == model, "seed \(seed)")
      }
      #expect(recorder.problems.isEmpty, "seed \(seed): \(recorder.problems)")
      #expect(recorder.state == list.array.sections)
    }
  }

  @Test func subscriptAssignmentReplacesAValueAndKeepsItsID() {
    let array = MutableObservable2DArray([
      Observable2DArraySection<String, String>(metadata: "S", items: ["a", "b"])
    ])
    let recorder = EventRecorder(array)
    let id = array.sections[0].items.id(at: 1)
    array[[0, 1]] = "B"
    #expect(array[[0, 1]] == "B")
    #expect(array.sections[0].items.id(at: 1) == id)
    #expect(recorder.events.last?.changeset.updatedItems.map(\.id) == [id])
  }

  @Test func aSilentUpdateChangesEverythingButTheBoundTableView() throws {
    let array = MutableObservable2DArray([
      Observable2DArraySection<String, String>(metadata: "S", items: ["a", "b", "c"])
    ])
    let tableView = TableView()
    let binding = array.bind(to: tableView, using: HeaderBond())
    defer { binding.dispose() }
    let filtered = array.filterItems { $0 != "x" }
    let recorder = EventRecorder(filtered)
    var silent: [Bool] = []
    let bag = DisposeBag()
    filtered.observeNext { silent.append($0.isSilent) }.disposed(by: bag)

    // The user edited the cell in place: the table shows "B" already, the array follows.
    try array.silentUpdate { editor throws(Observable2DArrayError) in
      try editor.replaceItem(at: [0, 1], with: "B")
    }
    #expect(Array(array.sections[0].items) == ["a", "B", "c"])
    #expect(tableView.cells(inSection: 0).map(\.text) == ["a", "b", "c"])  // not redrawn
    #expect(Array(filtered.sections[0].items) == ["a", "B", "c"])
    #expect(silent == [true])

    // Later changes apply as usual; a silent change of structure the table does not show
    // makes the next batch update fail, and the binding reloads.
    try array.appendItem("d", toSection: 0)
    #expect(tableView.rejectedUpdateCount == 0)
    try array.silentUpdate { editor throws(Observable2DArrayError) in
      _ = try editor.removeItem(at: [0, 0])
    }
    try array.appendItem("e", toSection: 0)
    #expect(tableView.rejectedUpdateCount == 1)
    #expect(tableView.cells(inSection: 0).map(\.text) == ["B", "c", "d", "e"])
    #expect(silent == [true, false, true, false])
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
  }
}
