import ReactiveCore
import Testing

@Suite("Single-source operators")
struct TransformingOperatorTests {
  @Test func mapTransformsElementsAndForwardsCompletion() {
    let subject = PublishSubject<Int>()
    let recorder = Recorder(subject.map { "#\($0)" })
    subject.onNext(1)
    subject.onNext(2)
    subject.onCompleted()
    #expect(recorder.events == [.next("#1"), .next("#2"), .completed])
  }

  @Test func mapForwardsFailure() {
    let subject = PublishSubject<Int>()
    let recorder = Recorder(subject.map { $0 * 2 })
    subject.onNext(1)
    subject.onError(TestError(code: 3))
    subject.onNext(2)
    #expect(recorder.events == [.next(2), .failed(TestError(code: 3))])
  }

  @Test func filterKeepsMatchingElements() {
    let recorder = Recorder(Observable.from(1...6).filter { $0.isMultiple(of: 2) })
    #expect(recorder.events == [.next(2), .next(4), .next(6), .completed])
  }

  @Test func compactMapDropsNils() {
    let recorder = Recorder(Observable.of("1", "x", "3").compactMap { Int($0) })
    #expect(recorder.events == [.next(1), .next(3), .completed])
  }

  @Test func scanEmitsRunningTotalsWithoutTheSeed() {
    let recorder = Recorder(Observable.of(1, 2, 3).scan(10, accumulator: +))
    #expect(recorder.events == [.next(11), .next(13), .next(16), .completed])
  }

  @Test func scanStartsFromTheSeedForEachSubscription() {
    let subject = PublishSubject<Int>()
    let sums = subject.scan(0, accumulator: +)
    let first = Recorder(sums)
    subject.onNext(5)
    let second = Recorder(sums)
    subject.onNext(1)
    #expect(first.elements == [5, 6])
    #expect(second.elements == [1])
  }

  @Test func scanIntoMutatesTheAccumulatorInPlace() {
    let recorder = Recorder(
      Observable.of(1, 2, 3).scan(into: [Int]()) { list, element in list.append(element) })
    #expect(recorder.events == [.next([1]), .next([1, 2]), .next([1, 2, 3]), .completed])
  }

  @Test func scanForwardsFailure() {
    let subject = PublishSubject<Int>()
    let recorder = Recorder(subject.scan(0, accumulator: +))
    subject.onNext(1)
    subject.onError(TestError(code: 1))
    #expect(recorder.events == [.next(1), .failed(TestError(code: 1))])
  }

  @Test func startWithEmitsPrefixBeforeTheSource() {
    let subject = PublishSubject<Int>()
    let recorder = Recorder(subject.startWith(0, 1))
    subject.onNext(2)
    subject.onCompleted()
    #expect(recorder.events == [.next(0), .next(1), .next(2), .completed])
  }

  @Test func distinctUntilChangedDropsConsecutiveDuplicates() {
    let recorder = Recorder(Observable.of(1, 1, 2, 2, 1, 3, 3).distinctUntilChanged())
    #expect(recorder.events == [.next(1), .next(2), .next(1), .next(3), .completed])
  }

  @Test func distinctUntilChangedByKeyAndByComparer() {
    let words = Observable.of("apple", "avocado", "banana", "blueberry", "cherry")
    #expect(
      Recorder(words.distinctUntilChanged(by: \.first)).elements == ["apple", "banana", "cherry"])
    let byLength = words.distinctUntilChanged { $0.count == $1.count }
    #expect(Recorder(byLength).elements == ["apple", "avocado", "banana", "blueberry", "cherry"])
    let numbers = Observable.of(1, 2, 5, 6)
    #expect(Recorder(numbers.distinctUntilChanged { abs($0 - $1) <= 1 }).elements == [1, 5])
  }

  @Test func takeCompletesAfterCountAndDisposesUpstream() {
    let subject = PublishSubject<Int>()
    var upstreamDisposed = false
    let source = subject.asObservable().subscribeOnDisposed { upstreamDisposed = true }
    let recorder = Recorder(source.take(2))
    subject.onNext(1)
    #expect(!upstreamDisposed)
    subject.onNext(2)
    subject.onNext(3)
    #expect(recorder.events == [.next(1), .next(2), .completed])
    #expect(upstreamDisposed)
  }

  @Test func takeFromASynchronousSourceStopsAtCount() {
    #expect(
      Recorder(Observable.from(1...10).take(3)).events == [
        .next(1), .next(2), .next(3), .completed,
      ])
  }

  @Test func takeZeroCompletesWithoutSubscribing() {
    var subscribed = false
    let source = Observable<Int> { _ in
      subscribed = true
      return Disposables.create()
    }
    #expect(Recorder(source.take(0)).events == [.completed])
    #expect(!subscribed)
  }

  @Test func takeForwardsEarlyCompletionAndFailure() {
    #expect(Recorder(Observable.of(1).take(3)).events == [.next(1), .completed])
    let failing = Observable<Int>.error(TestError(code: 4)).take(3)
    #expect(Recorder(failing).events == [.failed(TestError(code: 4))])
  }

  @Test func skipDropsTheFirstElements() {
    #expect(Recorder(Observable.from(1...5).skip(3)).events == [.next(4), .next(5), .completed])
    #expect(Recorder(Observable.of(1).skip(3)).events == [.completed])
  }

  @Test func disposingAChainStopsDeliveryAndUnsubscribesFromTheSubject() {
    let subject = PublishSubject<Int>()
    var upstreamDisposed = false
    let source = subject.asObservable().subscribeOnDisposed { upstreamDisposed = true }
    let recorder = Recorder(source.map { $0 + 1 }.filter { _ in true }.scan(0, accumulator: +))
    subject.onNext(1)
    recorder.dispose()
    subject.onNext(2)
    #expect(recorder.events == [.next(2)])
    #expect(upstreamDisposed)
  }
}

extension Observable {
  /// Wraps the observable so a test sees when its subscription is disposed.
  func subscribeOnDisposed(_ onDisposed: @escaping () -> Void) -> Observable<Element> {
    let source = self
    return Observable { observer in
      let subscription = source.subscribe(observer)
      let callback = UncheckedCallback(onDisposed)
      return Disposables.create {
        subscription.dispose()
        callback.call()
      }
    }
  }
}

/// Lets a single-threaded test hand a non-`Sendable` callback to a disposable.
struct UncheckedCallback: @unchecked Sendable {
  let call: () -> Void

  init(_ call: @escaping () -> Void) {
    self.call = call
  }
}
