import Counters
import Foundation
import ReactiveCore
import TestSupport
import Testing

/// Every element an observable delivers, in order, on the test's thread.
final class Recorder<Element> {
  private(set) var elements: [Element] = []
  private let bag = DisposeBag()

  init(_ source: some ObservableType<Element>) {
    source.subscribe(onNext: { [unowned self] in self.elements.append($0) }).disposed(by: bag)
  }
}

/// The three buttons of a cell, as subjects.
struct Buttons {
  let plus = PublishSubject<Void>()
  let minus = PublishSubject<Void>()
  let delete = PublishSubject<Void>()

  var input: CellInput {
    CellInput(plus: plus.asObservable(), minus: minus.asObservable(), delete: delete.asObservable())
  }
}

@Suite("Cell view model")
struct CellViewModelTests {
  @Test func countsTapsAndLabelsEveryValueStartingWithTheInitialOne() {
    let buttons = Buttons()
    let viewModel = CellViewModel(buttons.input, initialValue: 5)
    let labels = Recorder(viewModel.label)
    let values = Recorder(viewModel.value)
    let deletes = Recorder(viewModel.delete)

    #expect(labels.elements == ["number is 5"])
    buttons.plus.onNext()
    buttons.plus.onNext()
    buttons.minus.onNext()
    buttons.delete.onNext()
    buttons.minus.onNext()
    buttons.minus.onNext()
    buttons.delete.onNext()

    #expect(
      labels.elements == [
        "number is 5", "number is 6", "number is 7", "number is 6", "number is 5", "number is 4",
      ])
    #expect(values.elements == [6, 7, 6, 5, 4])
    #expect(deletes.elements.count == 2)
  }

  @Test(arguments: [-3, 0, 41])
  func valueIsNotEmittedBeforeTheFirstTap(initialValue: Int) {
    let buttons = Buttons()
    let viewModel = CellViewModel(buttons.input, initialValue: initialValue)
    let values = Recorder(viewModel.value)
    let labels = Recorder(viewModel.label)
    #expect(values.elements.isEmpty)
    #expect(labels.elements == ["number is \(initialValue)"])
    buttons.minus.onNext()
    #expect(values.elements == [initialValue - 1])
  }

  @Test func eachSubscriptionCountsFromTheInitialValue() {
    let buttons = Buttons()
    let viewModel = CellViewModel(buttons.input, initialValue: 0)
    let early = Recorder(viewModel.value)
    buttons.plus.onNext()
    let late = Recorder(viewModel.value)
    buttons.plus.onNext()
    #expect(early.elements == [1, 2])
    #expect(late.elements == [1])
  }

  @Test func valuesSaturateInsteadOfTrappingAtTheLimits() {
    let buttons = Buttons()
    let high = Recorder(CellViewModel(buttons.input, initialValue: Int.max - 1).value)
    let low = Recorder(CellViewModel(buttons.input, initialValue: Int.min + 1).value)
    buttons.plus.onNext()
    buttons.plus.onNext()
    buttons.minus.onNext()
    #expect(high.elements == [Int.max, Int.max, Int.max - 1])
    #expect(low.elements == [Int.min + 2, Int.min + 3, Int.min + 2])
    let floor = Recorder(CellViewModel(buttons.input, initialValue: Int.min).value)
    buttons.minus.onNext()
    #expect(floor.elements == [Int.min])
  }
}

@Suite("Screen view model")
struct ScreenViewModelTests {
  /// Names for ids, so that whole lists compare as strings.
  final class Names {
    var names: [UUID: String] = [:]
    var added = 0

    func make() -> UUID {
      added += 1
      let id = UUID()
      names[id] = "added\(added)"
      return id
    }

    func describe(_ counters: [(id: UUID, value: Int)]) -> [String] {
      counters.map { "\(names[$0.id] ?? "?")=\($0.value)" }
    }
  }

  struct Subjects {
    let values = PublishSubject<(id: UUID, value: Int)>()
    let adds = PublishSubject<Void>()
    let deletes = PublishSubject<UUID>()

    var input: Input<UUID> {
      Input(value: values.asObservable(), add: adds.asObservable(), delete: deletes.asObservable())
    }
  }

  @Test func reducesAddsValuesAndDeletesInOrder() {
    let names = Names()
    let (a, b) = (UUID(), UUID())
    names.names = [a: "a", b: "b"]
    let subjects = Subjects()
    let screen = ViewModel(
      subjects.input, initialValues: [(id: a, value: 1), (id: b, value: 10)], makeID: names.make)
    let lists = Recorder(screen.counters.map(names.describe))

    #expect(lists.elements.isEmpty)  // the initial values are not emitted
    subjects.adds.onNext()
    subjects.values.onNext((id: b, value: 11))
    subjects.deletes.onNext(a)
    subjects.adds.onNext()
    subjects.values.onNext((id: a, value: 99))  // deleted: nothing changes
    subjects.deletes.onNext(UUID())  // unknown: nothing changes
    subjects.deletes.onNext(b)

    #expect(
      lists.elements == [
        ["a=1", "b=10", "added1=0"],
        ["a=1", "b=11", "added1=0"],
        ["b=11", "added1=0"],
        ["b=11", "added1=0", "added2=0"],
        ["b=11", "added1=0", "added2=0"],
        ["b=11", "added1=0", "added2=0"],
        ["added1=0", "added2=0"],
      ])
    #expect(names.added == 2)
  }

  @Test func addedCountersTakeValuesAndDeletesByTheirNewIDs() {
    var made: [UUID] = []
    let subjects = Subjects()
    let screen = ViewModel(
      subjects.input, initialValues: [],
      makeID: {
        let id = UUID()
        made.append(id)
        return id
      })
    let lists = Recorder(screen.counters.map { $0.map(\.value) })
    subjects.adds.onNext()
    subjects.adds.onNext()
    subjects.values.onNext((id: made[1], value: 7))
    subjects.values.onNext((id: made[0], value: -2))
    subjects.deletes.onNext(made[1])
    #expect(lists.elements == [[0], [0, 0], [0, 7], [-2, 7], [-2]])
  }

  /// Random actions against a plain array model; prints the seed when it fails.
  @Test func matchesAReferenceModelOnRandomActions() {
    let seed = testSeed(0x5EED_C0DE)
    var random = SeededGenerator(seed: seed)
    var nextID = 0
    let subjects = Subjects()
    let ids = (0..<40).map { _ in UUID() }
    let screen = ViewModel<UUID>(
      subjects.input, initialValues: [(id: ids[0], value: 3)],
      makeID: {
        nextID += 1
        return ids[nextID]
      })
    let lists = Recorder(screen.counters)
    var model: [(id: UUID, value: Int)] = [(id: ids[0], value: 3)]
    for step in 0..<scaled(300) {
      switch Int.random(in: 0..<3, using: &random) {
      case 0 where nextID < ids.count - 1:
        subjects.adds.onNext()
        model.append((id: ids[nextID], value: 0))
      case 1:
        let id = ids[Int.random(in: 0...nextID, using: &random)]
        let value = Int.random(in: -5...5, using: &random)
        subjects.values.onNext((id: id, value: value))
        if let index = model.firstIndex(where: { $0.id == id }) { model[index].value = value }
      default:
        let id = ids[Int.random(in: 0...nextID, using: &random)]
        subjects.deletes.onNext(id)
        model.removeAll { $0.id == id }
      }
      let last = lists.elements.last ?? []
      #expect(
        last.elementsEqual(model, by: ==), "step \(step), seed \(seed) (LISTSTORE_SEED=\(seed))")
      if !last.elementsEqual(model, by: ==) { return }
    }
  }
}

@Suite("Counter cell")
struct CounterCellTests {
  @Test func configureBindsTheLabelAndTheButtons() {
    let cell = CounterCell()
    #expect(cell.label.value == "")
    let values = PublishSubject<Int>()
    let recorded = Recorder(values)
    cell.configure { input in
      let viewModel = CellViewModel(input, initialValue: 2)
      viewModel.value.bind(to: values).disposed(by: cell.bag)
      return viewModel
    }
    #expect(cell.label.value == "number is 2")
    cell.plus.onNext()
    cell.plus.onNext()
    cell.minus.onNext()
    #expect(cell.label.value == "number is 3")
    #expect(recorded.elements == [3, 4, 3])
  }

  @Test func reuseResetsBindingsSoOldInputsChangeNothing() {
    let cell = CounterCell()
    let values = PublishSubject<(id: String, value: Int)>()
    let deletes = PublishSubject<String>()
    let recordedValues = Recorder(values.map { "\($0.id)=\($0.value)" })
    let recordedDeletes = Recorder(deletes)
    let labels = Recorder(cell.label)
    var inputs: [CellInput] = []

    func bind(_ id: String, initialValue: Int) {
      cell.configure { input in
        inputs.append(input)
        let viewModel = CellViewModel(input, initialValue: initialValue)
        viewModel.value.map { (id: id, value: $0) }.bind(to: values).disposed(by: cell.bag)
        viewModel.delete.map { id }.bind(to: deletes).disposed(by: cell.bag)
        return viewModel
      }
    }

    bind("first", initialValue: 1)
    cell.plus.onNext()
    cell.prepareForReuse()
    // Taps on the old input after reuse reach nothing: no label, no value, no delete.
    cell.plus.onNext()
    cell.delete.onNext()
    let oldInput = Recorder(inputs[0].plus)  // the old input itself still works as an observable
    cell.plus.onNext()
    #expect(oldInput.elements.count == 1)
    #expect(cell.label.value == "number is 2")

    bind("second", initialValue: 10)
    cell.minus.onNext()
    cell.delete.onNext()

    #expect(recordedValues.elements == ["first=2", "second=9"])
    #expect(recordedDeletes.elements == ["second"])
    #expect(labels.elements == ["", "number is 1", "number is 2", "number is 10", "number is 9"])
  }

  @Test func reuseReleasesTheOldViewModel() {
    final class Token {}
    weak var released: Token?
    let cell = CounterCell()
    do {
      let token = Token()
      released = token
      cell.configure { input in
        let viewModel = CellViewModel(input, initialValue: 0)
        viewModel.value.subscribe(onNext: { _ in _ = token }).disposed(by: cell.bag)
        return viewModel
      }
    }
    #expect(released != nil)
    cell.prepareForReuse()
    #expect(released == nil)
  }

  /// The article's controller wiring, with `UUID`s: cells report to the screen view model.
  @Test func cellsReportToTheScreenViewModelAcrossReuse() {
    let (first, second, added) = (UUID(), UUID(), UUID())
    let values = PublishSubject<(id: UUID, value: Int)>()
    let deletes = PublishSubject<UUID>()
    let add = PublishSubject<Void>()
    let screen = ViewModel(
      Input(value: values.asObservable(), add: add.asObservable(), delete: deletes.asObservable()),
      initialValues: [(id: first, value: 1), (id: second, value: 10)], makeID: { added })
    let names = [first: "first", second: "second", added: "added"]
    let lists = Recorder(screen.counters.map { $0.map { "\(names[$0.id] ?? "?")=\($0.value)" } })

    func bind(_ cell: CounterCell, to element: (id: UUID, value: Int)) {
      cell.configure { input in
        let viewModel = CellViewModel(input, initialValue: element.value)
        viewModel.value.map { (id: element.id, value: $0) }.bind(to: values).disposed(by: cell.bag)
        viewModel.delete.map { element.id }.bind(to: deletes).disposed(by: cell.bag)
        return viewModel
      }
    }
    let cell = CounterCell()
    bind(cell, to: (id: first, value: 1))
    cell.plus.onNext()
    cell.plus.onNext()
    cell.prepareForReuse()
    bind(cell, to: (id: second, value: 10))
    cell.minus.onNext()
    add.onNext()
    cell.delete.onNext()

    #expect(
      lists.elements == [
        ["first=2", "second=10"],
        ["first=3", "second=10"],
        ["first=3", "second=9"],
        ["first=3", "second=9", "added=0"],
        ["first=3", "added=0"],
      ])
    #expect(cell.label.value == "number is 9")
  }
}
