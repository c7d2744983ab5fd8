import ReactiveCore
import Testing

@Suite("Events and observers")
struct EventTests {
  @Test func eventAccessorsDescribeTheCase() {
    let next = Event<Int>.next(1)
    let failed = Event<Int>.failed(TestError(code: 2))
    let completed = Event<Int>.completed
    #expect(!next.isTerminal && failed.isTerminal && completed.isTerminal)
    #expect(next.element == 1 && failed.element == nil)
    #expect(failed.error as? TestError == TestError(code: 2) && next.error == nil)
    #expect(next.map { $0 + 1 }.element == 2)
    #expect(completed.map { $0 + 1 }.isTerminal)
    #expect([next.description, completed.description] == ["next(1)", "completed"])
  }

  @Test func observerRoutesEventsToTheClosure() {
    var received: [String] = []
    let observer = AnyObserver<Int> { received.append($0.description) }
    observer.onNext(1)
    observer.send(2)
    observer.onError(TestError(code: 3))
    observer.onCompleted()
    #expect(received == ["next(1)", "next(2)", "failed(TestError(code: 3))", "completed"])
  }

  @Test func observerWrappingASubjectForwardsToIt() {
    let subject = ReplaySubject<Int>.createUnbounded()
    let observer = Observer(subject)
    observer.onNext(1)
    observer.onCompleted()
    #expect(Recorder(subject).events == [.next(1), .completed])
  }
}
