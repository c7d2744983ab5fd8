import ReactiveCore
import Testing

@Suite("Subjects and properties")
struct SubjectTests {
  @Test func publishSubjectDeliversOnlyLaterEventsToEachSubscriber() {
    let subject = PublishSubject<Int>()
    subject.onNext(0)
    let first = Recorder(subject)
    subject.onNext(1)
    let second = Recorder(subject)
    subject.onNext(2)
    subject.onCompleted()
    #expect(first.events == [.next(1), .next(2), .completed])
    #expect(second.events == [.next(2), .completed])
  }

  @Test func publishSubjectIgnoresEventsAfterTerminalAndReplaysTheTerminalToLateSubscribers() {
    let subject = PublishSubject<Int>()
    subject.onError(TestError(code: 1))
    subject.onNext(1)
    subject.onCompleted()
    #expect(Recorder(subject).events == [.failed(TestError(code: 1))])
  }

  @Test func disposedSubscriberReceivesNothingMore() {
    let subject = PublishSubject<Int>()
    let kept = Recorder(subject)
    let dropped = Recorder(subject)
    subject.onNext(1)
    dropped.dispose()
    subject.onNext(2)
    #expect(kept.elements == [1, 2])
    #expect(dropped.elements == [1])
  }

  @Test func reentrantSendIsDeliveredAfterTheCurrentEventReachedEveryObserver() {
    let subject = PublishSubject<Int>()
    var log: [String] = []
    let bag = DisposeBag()
    subject.subscribe(onNext: { value in
      log.append("A\(value)")
      if value == 1 { subject.onNext(2) }
    }).disposed(by: bag)
    subject.subscribe(onNext: { log.append("B\($0)") }).disposed(by: bag)
    subject.onNext(1)
    #expect(log == ["A1", "B1", "A2", "B2"])
  }

  @Test func disposingFromInsideAnObserverStopsTheNextDeliveriesAtOnce() {
    let subject = PublishSubject<Int>()
    var received: [Int] = []
    var subscription: (any Disposable)?
    subscription = subject.subscribe(onNext: { value in
      received.append(value)
      subject.onNext(value + 1)  // queued behind the dispose below
      subscription?.dispose()
    })
    subject.onNext(1)
    subject.onNext(5)
    #expect(received == [1])
  }

  @Test func subscribingFromInsideAnObserverSeesOnlyLaterEvents() {
    let subject = PublishSubject<Int>()
    let late = Recorder<Int>()
    let bag = DisposeBag()
    subject.subscribe(onNext: { value in
      if value == 1 { subject.subscribe(late.observer).disposed(by: bag) }
    }).disposed(by: bag)
    subject.onNext(1)
    subject.onNext(2)
    #expect(late.events == [.next(2)])
  }

  @Test func behaviorSubjectReplaysTheLatestElement() {
    let subject = BehaviorSubject(value: 1)
    #expect(Recorder(subject).events == [.next(1)])
    subject.onNext(2)
    #expect(subject.value == 2)
    let late = Recorder(subject)
    subject.onNext(3)
    #expect(late.events == [.next(2), .next(3)])
    subject.onCompleted()
    subject.onNext(4)
    #expect(subject.value == 3)
    #expect(Recorder(subject).events == [.next(3), .completed])
  }

  @Test func replaySubjectReplaysUpToItsBufferSize() {
    let subject = ReplaySubject<Int>.create(bufferSize: 2)
    for value in 1...5 { subject.onNext(value) }
    #expect(Recorder(subject).events == [.next(4), .next(5)])
    subject.onError(TestError(code: 2))
    #expect(Recorder(subject).events == [.next(4), .next(5), .failed(TestError(code: 2))])
    let none = ReplaySubject<Int>(bufferSize: 0)
    none.onNext(1)
    #expect(Recorder(none).events == [])
  }

  @Test func propertyHoldsAValueAndReplaysItToEachSubscriber() {
    let property = Property("a")
    let recorder = Recorder(property)
    property.value = "b"
    #expect(property.value == "b")
    let late = Recorder(property.asObservable())
    property.send("c")
    #expect(recorder.events == [.next("a"), .next("b"), .next("c")])
    #expect(late.events == [.next("b"), .next("c")])
  }

  @Test func propertyIgnoresTerminalEvents() {
    let property = Property(1)
    let recorder = Recorder(property)
    property.onCompleted()
    property.onError(TestError(code: 1))
    property.value = 2
    #expect(recorder.events == [.next(1), .next(2)])
  }

  @Test func propertyReadInsideAnObserverSeesTheLatestValueSet() {
    let property = Property(0)
    var seen: [String] = []
    let subscription = property.subscribe(onNext: { value in
      if value == 1 { property.value = 2 }
      seen.append("\(value)/\(property.value)")
    })
    property.value = 1
    subscription.dispose()
    #expect(seen == ["0/0", "1/2", "2/2"])
  }

  @Test func optionalPropertyCanHoldNil() {
    let property = Property<Int?>(nil)
    #expect(property.value == nil)
    property.value = 3
    #expect(Recorder(property).events == [.next(3)])
  }
}
