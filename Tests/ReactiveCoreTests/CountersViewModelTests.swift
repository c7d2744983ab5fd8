import Foundation
import ReactiveCore
import Testing

// The counters example of the RxSwift article the project started from, built with this API.

private struct CellInput {
  let plus: Observable<Void>
  let minus: Observable<Void>
  let delete: Observable<Void>
}

private struct CellViewModel {
  let label: Observable<String>
  let value: Observable<Int>
  let delete: Observable<Void>
}

extension CellViewModel {
  init(_ input: CellInput, initialValue: Int) {
    let add = input.plus.map { 1 }  // plus adds one to the value
    let subtract = input.minus.map { -1 }  // minus subtracts one
    value = Observable.merge(add, subtract)
      .scan(initialValue, accumulator: +)  // the logic is here
    label =
      value
      .startWith(initialValue)
      .map { "number is \($0)" }  // create the string from the value
    delete = input.delete  // delete is just a passthrough in this case
  }
}

private struct Input {
  let value: Observable<(id: UUID, value: Int)>
  let add: Observable<Void>
  let delete: Observable<UUID>
}

private struct ViewModel {
  let counters: Observable<[(id: UUID, value: Int)]>
}

extension ViewModel {
  private enum Action {
    case add
    case value(id: UUID, value: Int)
    case delete(id: UUID)
  }

  init(_ input: Input, initialValues: [(id: UUID, value: Int)], makeID: @escaping () -> UUID) {
    let addAction = input.add.map { Action.add }
    let valueAction = input.value.map(Action.value)
    let deleteAction = input.delete.map(Action.delete)
    counters = Observable.merge(addAction, valueAction, deleteAction)
      .scan(into: initialValues) { model, new in
        switch new {
        case .add:
          model.append((id: makeID(), value: 0))
        case .value(let id, let value):
          if let index = model.firstIndex(where: { $0.id == id }) {
            model[index].value = value
          }
        case .delete(let id):
          if let index = model.firstIndex(where: { $0.id == id }) {
            model.remove(at: index)
          }
        }
      }
  }
}

/// A headless cell: three buttons, a label and a bag reset on reuse.
private final class Cell {
  let plus = PublishSubject<Void>()
  let minus = PublishSubject<Void>()
  let delete = PublishSubject<Void>()
  let label = Property("")
  var bag = DisposeBag()

  func prepareForReuse() {
    bag = DisposeBag()  // this resets the cell's bindings
  }

  func configure(with factory: (CellInput) -> CellViewModel) {
    let input = CellInput(
      plus: plus.asObservable(), minus: minus.asObservable(), delete: delete.asObservable())
    let viewModel = factory(input)
    viewModel.label.bind(to: label).disposed(by: bag)
  }
}

@Suite("Counters view models from the article")
struct CountersViewModelTests {
  @Test func cellViewModelCountsTapsAndLabelsTheValue() {
    let plus = PublishSubject<Void>()
    let minus = PublishSubject<Void>()
    let delete = PublishSubject<Void>()
    let viewModel = CellViewModel(
      CellInput(
        plus: plus.asObservable(), minus: minus.asObservable(), delete: delete.asObservable()),
      initialValue: 5)
    let labels = Recorder(viewModel.label)
    var values: [Int] = []
    var deletes = 0
    let bag = DisposeBag()
    viewModel.value.subscribe(onNext: { values.append($0) }).disposed(by: bag)
    viewModel.delete.subscribe(onNext: { deletes += 1 }).disposed(by: bag)

    plus.onNext()
    plus.onNext()
    minus.onNext()
    delete.onNext()

    #expect(labels.elements == ["number is 5", "number is 6", "number is 7", "number is 6"])
    #expect(values == [6, 7, 6])
    #expect(deletes == 1)
  }

  @Test func cellsReportValuesAndDeletesToTheScreenViewModel() {
    let first = UUID()
    let second = UUID()
    let added = UUID()
    let values = PublishSubject<(id: UUID, value: Int)>()
    let deletes = PublishSubject<UUID>()
    let add = PublishSubject<Void>()
    let screen = ViewModel(
      Input(value: values.asObservable(), add: add.asObservable(), delete: deletes.asObservable()),
      initialValues: [(id: first, value: 1), (id: second, value: 10)],
      makeID: { added })
    var snapshots: [[String]] = []
    let bag = DisposeBag()
    screen.counters
      .map {
        $0.map { "\($0.id == first ? "first" : $0.id == second ? "second" : "added")=\($0.value)" }
      }
      .subscribe(onNext: { snapshots.append($0) })
      .disposed(by: bag)

    // The controller binds each cell's view model as the article does.
    func bind(_ cell: Cell, to element: (id: UUID, value: Int)) {
      cell.configure { input in
        let viewModel = CellViewModel(input, initialValue: element.value)
        viewModel.value.map { (id: element.id, value: $0) }.bind(to: values).disposed(by: cell.bag)
        viewModel.delete.map { element.id }.bind(to: deletes).disposed(by: cell.bag)
        return viewModel
      }
    }
    let cell = Cell()
    bind(cell, to: (id: first, value: 1))
    #expect(cell.label.value == "number is 1")
    cell.plus.onNext()
    cell.plus.onNext()
    #expect(cell.label.value == "number is 3")

    // Reuse the cell for the second counter: the old bindings must never fire again.
    cell.prepareForReuse()
    bind(cell, to: (id: second, value: 10))
    #expect(cell.label.value == "number is 10")
    cell.minus.onNext()
    add.onNext()
    cell.delete.onNext()

    #expect(
      snapshots == [
        ["first=2", "second=10"],
        ["first=3", "second=10"],
        ["first=3", "second=9"],
        ["first=3", "second=9", "added=0"],
        ["first=3", "added=0"],
      ])
    #expect(cell.label.value == "number is 9")
  }
}
