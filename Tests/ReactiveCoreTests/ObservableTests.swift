import ReactiveCore
import Testing

@Suite("Observable creation and subscription")
struct ObservableTests {
  @Test func justEmitsOneElementThenCompletes() {
    let recorder = Recorder(Observable.just(7))
    #expect(recorder.events == [.next(7), .completed])
  }

  @Test func ofAndFromEmitInOrderThenComplete() {
    #expect(Recorder(Observable.of(1, 2, 3)).events == [.next(1), .next(2), .next(3), .completed])
    #expect(Recorder(Observable.from(4...6)).events == [.next(4), .next(5), .next(6), .completed])
  }

  @Test func emptyNeverAndErrorDeliverTheirSingleOutcome() {
    #expect(Recorder(Observable<Int>.empty()).events == [.completed])
    #expect(Recorder(Observable<Int>.never()).events == [])
    #expect(
      Recorder(Observable<Int>.error(TestError(code: 1))).events == [.failed(TestError(code: 1))])
  }

  @Test func createIsColdAndRunsOncePerSubscription() {
    var runs = 0
    let source = Observable<Int> { observer in
      runs += 1
      observer.onNext(runs)
      observer.onCompleted()
      return Disposables.create()
    }
    #expect(runs == 0)
    #expect(Recorder(source).events == [.next(1), .completed])
    #expect(Recorder(source).events == [.next(2), .completed])
  }

  @Test func createDropsEventsAfterTerminalAndDisposesItsResource() {
    let resource = BooleanDisposable()
    let source = Observable<Int>.create { observer in
      observer.onNext(1)
      observer.onError(TestError(code: 2))
      observer.onNext(3)
      observer.onCompleted()
      return resource
    }
    #expect(Recorder(source).events == [.next(1), .failed(TestError(code: 2))])
    #expect(resource.isDisposed)
  }

  @Test func createStopsDeliveringOnceDisposed() {
    var captured: Observer<Int>?
    let resource = BooleanDisposable()
    let source = Observable<Int> { observer in
      captured = observer
      return resource
    }
    let recorder = Recorder(source)
    captured?.onNext(1)
    recorder.dispose()
    captured?.onNext(2)
    captured?.onCompleted()
    #expect(recorder.events == [.next(1)])
    #expect(resource.isDisposed)
  }

  @Test func subscribeClosuresRunInOrderAndOnDisposedFollowsCompletion() {
    var log: [String] = []
    let subscription = Observable.of(1, 2).subscribe(
      onNext: { log.append("next \($0)") },
      onError: { _ in log.append("error") },
      onCompleted: { log.append("completed") },
      onDisposed: { log.append("disposed") })
    #expect(log == ["next 1", "next 2", "completed", "disposed"])
    #expect(subscription.isDisposed)
    subscription.dispose()
    #expect(log.count == 4)
  }

  @Test func onDisposedRunsOnceWhenDisposedExplicitly() {
    let subject = PublishSubject<Int>()
    var disposals = 0
    var received: [Int] = []
    let subscription = subject.subscribe(
      onNext: { received.append($0) }, onDisposed: { disposals += 1 })
    subject.onNext(1)
    subscription.dispose()
    subscription.dispose()
    subject.onNext(2)
    #expect(received == [1])
    #expect(disposals == 1)
  }

  @Test func onErrorReceivesTheFailure() {
    var failure: TestError?
    _ = Observable<Int>.error(TestError(code: 9)).subscribe(onError: { failure = $0 as? TestError })
    #expect(failure == TestError(code: 9))
  }

  @Test func observeNextAndObserveWithAreReactiveKitSpellings() {
    let subject = PublishSubject<String>()
    var elements: [String] = []
    var events: [String] = []
    let bag = DisposeBag()
    subject.observeNext { elements.append($0) }.dispose(in: bag)
    subject.observe { events.append($0.description) }.dispose(in: bag)
    subject.send("a")
    subject.onCompleted()
    #expect(elements == ["a"])
    #expect(events == ["next(a)", "completed"])
  }

  @Test func bindToSubjectForwardsElementsButNotCompletion() {
    let target = PublishSubject<Int>()
    let recorder = Recorder(target)
    let binding = Observable.of(1, 2).bind(to: target)
    target.onNext(3)
    #expect(recorder.events == [.next(1), .next(2), .next(3)])
    #expect(binding.isDisposed)
  }

  @Test func bindToPropertySetsItsValue() {
    let property = Property(0)
    let source = PublishSubject<Int>()
    let binding = source.bind(to: property)
    source.onNext(5)
    #expect(property.value == 5)
    binding.dispose()
    source.onNext(6)
    #expect(property.value == 5)
  }

  @Test func bindToObserverAndClosure() {
    let recorder = Recorder<Int>()
    var last = 0
    let source = PublishSubject<Int>()
    let bag = DisposeBag()
    source.bind(to: recorder.observer).disposed(by: bag)
    source.bind(onNext: { last = $0 }).disposed(by: bag)
    source.onNext(4)
    #expect(recorder.events == [.next(4)])
    #expect(last == 4)
  }

  @Test func subscribeForwardsEveryEventToAnObserver() {
    let target = ReplaySubject<Int>.createUnbounded()
    _ = Observable.of(1, 2).subscribe(target)
    #expect(Recorder(target).events == [.next(1), .next(2), .completed])
  }

  @Test func voidTuplesArraysAndStructsAreValidElements() {
    struct Point: Equatable {
      var x: Int
    }
    var taps = 0
    _ = Observable<Void>.just(()).subscribe(onNext: { taps += 1 })
    var pairs: [(id: Int, value: Int)] = []
    _ = Observable.just((id: 1, value: 2)).subscribe(onNext: { pairs.append($0) })
    #expect(taps == 1)
    #expect(pairs.map(\.value) == [2])
    #expect(Recorder(Observable.just([1, 2])).events == [.next([1, 2]), .completed])
    #expect(Recorder(Observable.just(Point(x: 1))).events == [.next(Point(x: 1)), .completed])
  }
}
