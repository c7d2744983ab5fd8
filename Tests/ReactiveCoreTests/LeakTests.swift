import ReactiveCore
import Testing

@Suite("Memory: no retain cycles")
struct LeakTests {
  @Test func disposedChainReleasesItsClosuresAndCapturedObjects() {
    let subject = PublishSubject<Int>()
    weak var captured: Token?
    var subscription: (any Disposable)?
    do {
      let token = Token()
      captured = token
      subscription = subject.map { [token] in ($0, token) }.scan(0) { $0 + $1.0 }
        .subscribe(onNext: { [token] _ in _ = token })
    }
    subject.onNext(1)
    #expect(captured != nil)
    subscription?.dispose()
    #expect(captured == nil)
    #expect(subscription != nil)  // the disposable is still held, yet keeps nothing alive
  }

  @Test func completedChainReleasesItsClosures() {
    let subject = PublishSubject<Int>()
    weak var captured: Token?
    var subscription: (any Disposable)?
    do {
      let token = Token()
      captured = token
      subscription = subject.filter { [token] _ in
        _ = token
        return true
      }.subscribe(onNext: { _ in })
    }
    subject.onCompleted()
    #expect(captured == nil)
    #expect(subscription?.isDisposed == true)
  }

  @Test func subjectIsFreedWhileItsSubscriptionIsStillHeld() {
    weak var weakSubject: PublishSubject<Int>?
    weak var captured: Token?
    var subscription: (any Disposable)?
    do {
      let subject = PublishSubject<Int>()
      let token = Token()
      weakSubject = subject
      captured = token
      subscription = subject.subscribe(onNext: { [token] _ in _ = token })
    }
    #expect(weakSubject == nil)
    #expect(captured == nil)
    subscription?.dispose()
  }

  @Test func replacedDisposeBagFreesTheOldBindingsAndTheirSubjects() {
    final class ViewModel {
      let output = PublishSubject<String>()
    }
    weak var weakViewModel: ViewModel?
    weak var captured: Token?
    var bag = DisposeBag()
    let label = Property("")
    do {
      let viewModel = ViewModel()
      let token = Token()
      weakViewModel = viewModel
      captured = token
      viewModel.output.map { [token] text in
        _ = token
        return text
      }.bind(to: label).disposed(by: bag)
      viewModel.output.onNext("hello")
    }
    #expect(label.value == "hello")
    bag = DisposeBag()
    #expect(weakViewModel == nil)
    #expect(captured == nil)
  }

  @Test func multiSourceOperatorsReleaseEverythingWhenDisposed() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    weak var captured: Token?
    var subscriptions: [any Disposable] = []
    do {
      let token = Token()
      captured = token
      let tagged = a.map { [token] value in
        _ = token
        return value
      }
      subscriptions = [
        Observable.merge(tagged, b.asObservable()).subscribe(onNext: { _ in }),
        Observable.combineLatest(tagged, b).subscribe(onNext: { _ in }),
        tagged.withLatestFrom(b).subscribe(onNext: { _ in }),
        b.flatMapLatest { _ in tagged }.subscribe(onNext: { _ in }),
        tagged.share(replay: 1).subscribe(onNext: { _ in }),
      ]
    }
    a.onNext(1)
    b.onNext(2)
    #expect(captured != nil)
    for subscription in subscriptions { subscription.dispose() }
    #expect(captured == nil)
  }

  @Test func multiSourceSinksReleaseStateEvenWhenTheirDisposableIsKept() {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    weak var captured: Token?
    var subscriptions: [any Disposable] = []
    do {
      let token = Token()
      captured = token
      subscriptions = [
        Observable.combineLatest(a, b) { [token] x, y in
          _ = token
          return x + y
        }.subscribe { _ in },
        a.withLatestFrom(b) { [token] x, y in
          _ = token
          return x + y
        }.subscribe { _ in },
        b.flatMapLatest { [token] _ in
          _ = token
          return a
        }.subscribe { _ in },
      ]
    }
    a.onNext(1)
    b.onNext(2)
    #expect(captured != nil)
    for subscription in subscriptions { subscription.dispose() }
    #expect(captured == nil)
  }

  @Test func createReleasesTheObserverWhenTheProducerDropsItOnDispose() {
    weak var captured: Token?
    var subscription: (any Disposable)?
    do {
      let token = Token()
      captured = token
      let holder = ObserverHolder()
      let source = Observable<Int> { observer in
        holder.observer = observer
        return Disposables.create { holder.observer = nil }
      }
      subscription = source.subscribe(onNext: { [token] _ in _ = token })
      holder.observer?.onNext(1)
    }
    #expect(captured != nil)
    subscription?.dispose()
    #expect(captured == nil)
  }
}

/// Keeps an observer for a producer, as a timer or a callback registry would.
private final class ObserverHolder: @unchecked Sendable {
  var observer: Observer<Int>?
}
