import ReactiveCore
import Testing

@Suite("AsyncSequence view")
struct AsyncSequenceTests {
  @Test func valuesEndsWhenTheObservableCompletes() async {
    var collected: [Int] = []
    for await value in Observable.from(1...5).map({ $0 * 10 }).values {
      collected.append(value)
    }
    #expect(collected == [10, 20, 30, 40, 50])
  }

  @Test func valuesReceivesElementsSentFromAnotherTask() async {
    let subject = PublishSubject<Int>()
    let stream = subject.values
    let producer = Task {
      for value in 1...3 { subject.onNext(value) }
      subject.onCompleted()
    }
    var collected: [Int] = []
    for await value in stream { collected.append(value) }
    await producer.value
    #expect(collected == [1, 2, 3])
  }

  @Test func valuesEndsSilentlyOnFailure() async {
    var collected: [Int] = []
    let failing = Observable.merge(Observable.of(1, 2), Observable.error(TestError(code: 1)))
    for await value in failing.values { collected.append(value) }
    #expect(collected == [1, 2])
  }

  @Test func throwingValuesRethrowsTheFailure() async {
    var collected: [Int] = []
    let failing = Observable.merge(Observable.of(1), Observable.error(TestError(code: 3)))
    await #expect(throws: TestError(code: 3)) {
      for try await value in failing.throwingValues { collected.append(value) }
    }
    #expect(collected == [1])
  }

  @Test func breakingOutOfTheLoopDisposesTheSubscription() async {
    let subject = PublishSubject<Int>()
    let disposed = BooleanDisposable()
    let source = Observable<Int> { observer in
      let subscription = subject.subscribe(observer)
      return Disposables.create {
        subscription.dispose()
        disposed.dispose()
      }
    }
    do {
      let stream = source.values
      subject.onNext(1)
      subject.onNext(2)
      for await value in stream where value == 1 { break }
    }
    #expect(disposed.isDisposed)
  }
}

@Suite("Sharing")
struct ShareTests {
  @Test func shareSubscribesOnceForAllSubscribers() {
    let subject = PublishSubject<Int>()
    var subscriptions = 0
    let source = Observable<Int> { observer in
      subscriptions += 1
      return subject.subscribe(observer)
    }
    let shared = source.map { $0 * 2 }.share()
    let first = Recorder(shared)
    let second = Recorder(shared)
    subject.onNext(1)
    #expect(subscriptions == 1)
    #expect(first.events == [.next(2)])
    #expect(second.events == [.next(2)])
  }

  @Test func shareReplaysTheLatestElementsToLateSubscribers() {
    let subject = PublishSubject<Int>()
    let shared = subject.share(replay: 2)
    let first = Recorder(shared)
    for value in 1...3 { subject.onNext(value) }
    let late = Recorder(shared)
    subject.onNext(4)
    #expect(first.elements == [1, 2, 3, 4])
    #expect(late.elements == [2, 3, 4])
  }

  @Test func shareDisconnectsAfterTheLastSubscriberAndReconnectsFresh() {
    let subject = PublishSubject<Int>()
    var disposals = 0
    let source = subject.asObservable().subscribeOnDisposed { disposals += 1 }
    let shared = source.share(replay: 1)
    let first = Recorder(shared)
    let second = Recorder(shared)
    subject.onNext(1)
    first.dispose()
    #expect(disposals == 0)
    second.dispose()
    #expect(disposals == 1)
    let third = Recorder(shared)
    subject.onNext(2)
    #expect(third.events == [.next(2)])
  }

  @Test func shareForwardsCompletionToEverySubscriber() {
    let subject = PublishSubject<Int>()
    let shared = subject.share()
    let first = Recorder(shared)
    let second = Recorder(shared)
    subject.onNext(1)
    subject.onCompleted()
    #expect(first.events == [.next(1), .completed])
    #expect(second.events == [.next(1), .completed])
  }
}
