import ReactiveCore
import Testing

@Suite("Multi-source operators")
struct CombiningOperatorTests {
  @Test func mergeInterleavesAndCompletesWhenAllSourcesComplete() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    let c = PublishSubject<Int>()
    let recorder = Recorder(Observable.merge(a.asObservable(), b.asObservable(), c.asObservable()))
    a.onNext(1)
    b.onNext(2)
    a.onCompleted()
    c.onNext(3)
    b.onCompleted()
    #expect(recorder.events == [.next(1), .next(2), .next(3)])
    c.onCompleted()
    #expect(recorder.events == [.next(1), .next(2), .next(3), .completed])
  }

  @Test func mergeFailsOnFirstErrorAndDisposesTheOtherSources() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    var bDisposed = false
    let merged = Observable.merge([
      a.asObservable(), b.asObservable().subscribeOnDisposed { bDisposed = true },
    ])
    let recorder = Recorder(merged)
    a.onNext(1)
    a.onError(TestError(code: 5))
    b.onNext(2)
    #expect(recorder.events == [.next(1), .failed(TestError(code: 5))])
    #expect(bDisposed)
  }

  @Test func mergeOfNothingCompletesAtOnce() {
    #expect(Recorder(Observable<Int>.merge([])).events == [.completed])
  }

  @Test func mergeWithIsTheInstanceSpelling() {
    let recorder = Recorder(Observable.of(1, 2).merge(with: Observable.just(3)))
    #expect(recorder.events == [.next(1), .next(2), .next(3), .completed])
  }

  @Test func disposingMergeDisposesEverySource() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    var disposed: [String] = []
    let recorder = Recorder(
      Observable.merge(
        a.asObservable().subscribeOnDisposed { disposed.append("a") },
        b.asObservable().subscribeOnDisposed { disposed.append("b") }))
    a.onNext(1)
    recorder.dispose()
    b.onNext(2)
    #expect(recorder.events == [.next(1)])
    #expect(disposed == ["a", "b"])
  }

  @Test func combineLatestWaitsForEverySourceThenEmitsOnEachChange() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<String>()
    let recorder = Recorder(Observable.combineLatest(a, b) { "\($0)\($1)" })
    a.onNext(1)
    a.onNext(2)
    b.onNext("x")
    a.onNext(3)
    b.onNext("y")
    #expect(recorder.events == [.next("2x"), .next("3x"), .next("3y")])
    a.onCompleted()
    b.onNext("z")
    b.onCompleted()
    #expect(recorder.events == [.next("2x"), .next("3x"), .next("3y"), .next("3z"), .completed])
  }

  @Test func combineLatestProducesTuples() {
    let a = BehaviorSubject(value: 1)
    let b = BehaviorSubject(value: "a")
    var pairs: [String] = []
    let subscription = Observable.combineLatest(a, b).subscribe(onNext: {
      pairs.append("\($0.0)\($0.1)")
    })
    b.onNext("b")
    #expect(pairs == ["1a", "1b"])
    subscription.dispose()
    let tuples = Recorder(a.combineLatest(with: b).map { "\($0.0)-\($0.1)" })
    #expect(tuples.events == [.next("1-b")])
  }

  @Test func combineLatestOfThree() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    let c = PublishSubject<Int>()
    let recorder = Recorder(Observable.combineLatest(a, b, c).map { $0.0 + $0.1 + $0.2 })
    a.onNext(1)
    b.onNext(10)
    #expect(recorder.events == [])
    c.onNext(100)
    a.onNext(2)
    #expect(recorder.events == [.next(111), .next(112)])
  }

  @Test func combineLatestCompletesWhenASourceCompletesEmpty() {
    let a = PublishSubject<Int>()
    let recorder = Recorder(Observable.combineLatest(a, Observable<Int>.empty()) { $0 + $1 })
    a.onNext(1)
    #expect(recorder.events == [.completed])
  }

  @Test func combineLatestFailsOnAnySourceError() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    let recorder = Recorder(Observable.combineLatest(a, b) { $0 + $1 })
    a.onNext(1)
    b.onError(TestError(code: 6))
    a.onNext(2)
    #expect(recorder.events == [.failed(TestError(code: 6))])
  }

  @Test func withLatestFromSamplesTheSecondSource() {
    let trigger = PublishSubject<Void>()
    let value = PublishSubject<Int>()
    let recorder = Recorder(trigger.withLatestFrom(value))
    trigger.onNext(())
    value.onNext(1)
    value.onNext(2)
    trigger.onNext(())
    value.onCompleted()
    trigger.onNext(())
    trigger.onCompleted()
    #expect(recorder.events == [.next(2), .next(2), .completed])
  }

  @Test func withLatestFromCombinesWithASelectorAndForwardsErrors() {
    let first = PublishSubject<Int>()
    let second = BehaviorSubject(value: 10)
    let recorder = Recorder(first.withLatestFrom(second) { $0 + $1 })
    first.onNext(1)
    second.onError(TestError(code: 7))
    first.onNext(2)
    #expect(recorder.events == [.next(11), .failed(TestError(code: 7))])
  }

  @Test func flatMapLatestSwitchesToTheNewestInnerAndDisposesThePrevious() {
    let outer = PublishSubject<String>()
    let inners = ["a": PublishSubject<Int>(), "b": PublishSubject<Int>()]
    var disposed: [String] = []
    let recorder = Recorder(
      outer.flatMapLatest { key in
        (inners[key] ?? PublishSubject()).asObservable().subscribeOnDisposed {
          disposed.append(key)
        }
      })
    outer.onNext("a")
    inners["a"]?.onNext(1)
    outer.onNext("b")
    #expect(disposed == ["a"])
    inners["a"]?.onNext(2)
    inners["b"]?.onNext(3)
    #expect(recorder.events == [.next(1), .next(3)])
  }

  @Test func flatMapLatestCompletesWhenOuterAndCurrentInnerComplete() {
    let outer = PublishSubject<Int>()
    let inner = PublishSubject<Int>()
    let recorder = Recorder(outer.flatMapLatest { _ in inner })
    outer.onNext(0)
    outer.onCompleted()
    inner.onNext(1)
    #expect(recorder.events == [.next(1)])
    inner.onCompleted()
    #expect(recorder.events == [.next(1), .completed])
  }

  @Test func flatMapLatestWithSynchronousInnersAndErrors() {
    let outer = PublishSubject<Int>()
    let recorder = Recorder(
      outer.flatMapLatest { n in
        n < 0 ? Observable.error(TestError(code: n)) : Observable.from(0..<n)
      })
    outer.onNext(2)
    outer.onNext(1)
    outer.onNext(-8)
    outer.onNext(3)
    #expect(recorder.events == [.next(0), .next(1), .next(0), .failed(TestError(code: -8))])
  }
}
