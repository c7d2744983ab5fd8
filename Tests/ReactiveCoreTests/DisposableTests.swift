import ReactiveCore
import Synchronization
import Testing

@Suite("Disposables and dispose bags")
struct DisposableTests {
  @Test func anonymousDisposableRunsItsActionOnce() {
    let count = Atomic(0)
    let disposable = Disposables.create { count.add(1, ordering: .relaxed) }
    #expect(!disposable.isDisposed)
    disposable.dispose()
    disposable.dispose()
    #expect(disposable.isDisposed)
    #expect(count.load(ordering: .relaxed) == 1)
  }

  @Test func compositeDisposesMembersAndLateInsertions() {
    let a = BooleanDisposable()
    let b = BooleanDisposable()
    let composite = Disposables.create(a, b)
    composite.dispose()
    #expect(a.isDisposed && b.isDisposed && composite.isDisposed)
    let late = BooleanDisposable()
    let group = CompositeDisposable()
    group.dispose()
    group.insert(late)
    #expect(late.isDisposed)
  }

  @Test func serialDisposableDisposesThePreviousOccupant() {
    let serial = SerialDisposable()
    let first = BooleanDisposable()
    let second = BooleanDisposable()
    serial.replace(with: first)
    serial.replace(with: second)
    #expect(first.isDisposed && !second.isDisposed)
    serial.dispose()
    let third = BooleanDisposable()
    serial.replace(with: third)
    #expect(second.isDisposed && third.isDisposed)
  }

  @Test func disposeBagDisposesEverythingOnDeinit() {
    let a = BooleanDisposable()
    let b = BooleanDisposable()
    do {
      let bag = DisposeBag()
      a.disposed(by: bag)
      b.dispose(in: bag)
      #expect(!a.isDisposed)
    }
    #expect(a.isDisposed && b.isDisposed)
  }

  @Test func disposedBagDisposesLaterInsertionsAtOnce() {
    let bag = DisposeBag()
    bag.dispose()
    let late = BooleanDisposable()
    late.disposed(by: bag)
    #expect(late.isDisposed)
  }

  @Test func replacingTheBagResetsBindingsAndOldBindingsNeverFireAgain() {
    final class Cell {
      var bag = DisposeBag()
      var label = ""
      var log: [String] = []

      func configure(with text: Observable<String>, name: String) {
        text.subscribe(onNext: { [unowned self] in
          self.label = $0
          self.log.append("\(name):\($0)")
        }).disposed(by: bag)
      }

      func prepareForReuse() {
        bag = DisposeBag()
      }
    }
    let first = PublishSubject<String>()
    let second = PublishSubject<String>()
    let cell = Cell()
    cell.configure(with: first.asObservable(), name: "first")
    first.onNext("1")
    cell.prepareForReuse()
    cell.configure(with: second.asObservable(), name: "second")
    first.onNext("stale")
    second.onNext("2")
    cell.prepareForReuse()
    second.onNext("stale")
    #expect(cell.log == ["first:1", "second:2"])
    #expect(cell.label == "2")
  }
}
