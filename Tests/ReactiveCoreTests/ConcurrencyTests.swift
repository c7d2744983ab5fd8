import Dispatch
import ReactiveCore
import Synchronization
import Testing

/// Counts and checks order of deliveries from many threads without data races.
private final class Tally: Sendable {
  let count = Atomic(0)
  let concurrentCalls = Atomic(0)
  let overlaps = Atomic(0)

  func record() {
    if concurrentCalls.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
      overlaps.add(1, ordering: .relaxed)
    }
    count.add(1, ordering: .relaxed)
    concurrentCalls.subtract(1, ordering: .acquiringAndReleasing)
  }
}

@Suite("Threading")
struct ConcurrencyTests {
  @Test func concurrentSendersLoseNoEventAndNeverOverlapObservers() async {
    let subject = PublishSubject<Int>()
    let tally = Tally()
    let sums = Locked(0)
    let subscription = subject.map { $0 * 2 }.subscribe(onNext: { value in
      tally.record()
      sums.withLock { $0 += value }
    })
    let senders = 8
    let perSender = 20_000
    await withTaskGroup(of: Void.self) { group in
      for sender in 0..<senders {
        group.addTask {
          for value in 0..<perSender { subject.onNext(sender + value) }
        }
      }
    }
    subscription.dispose()
    let expectedSum = (0..<senders).reduce(0) { total, sender in
      total + (0..<perSender).reduce(0) { $0 + 2 * (sender + $1) }
    }
    #expect(tally.count.load(ordering: .relaxed) == senders * perSender)
    #expect(tally.overlaps.load(ordering: .relaxed) == 0)
    #expect(sums.withLock { $0 } == expectedSum)
  }

  @Test func eachSendersEventsArriveInTheOrderItSentThem() async {
    let subject = PublishSubject<(sender: Int, value: Int)>()
    let lastBySender = Locked([Int](repeating: -1, count: 4))
    let outOfOrder = Atomic(0)
    let subscription = subject.subscribe(onNext: { event in
      lastBySender.withLock { last in
        if event.value <= last[event.sender] { outOfOrder.add(1, ordering: .relaxed) }
        last[event.sender] = event.value
      }
    })
    await withTaskGroup(of: Void.self) { group in
      for sender in 0..<4 {
        group.addTask { for value in 0..<20_000 { subject.onNext((sender: sender, value: value)) } }
      }
    }
    subscription.dispose()
    #expect(outOfOrder.load(ordering: .relaxed) == 0)
    #expect(lastBySender.withLock { $0 } == [19_999, 19_999, 19_999, 19_999])
  }

  @Test func scanOverConcurrentSendsCountsEveryEvent() async {
    let subject = PublishSubject<Void>()
    let last = Atomic(0)
    let subscription = subject.scan(0) { count, _ in count + 1 }.subscribe(onNext: {
      last.store($0, ordering: .relaxed)
    })
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask { for _ in 0..<25_000 { subject.onNext(()) } }
      }
    }
    subscription.dispose()
    #expect(last.load(ordering: .relaxed) == 100_000)
  }

  @Test func subscribingAndDisposingWhileOthersSendDoesNotCrash() async {
    let subject = PublishSubject<Int>()
    let received = Atomic(0)
    let keeper = subject.subscribe(onNext: { _ in received.add(1, ordering: .relaxed) })
    await withTaskGroup(of: Void.self) { group in
      group.addTask { for value in 0..<50_000 { subject.onNext(value) } }
      group.addTask {
        for _ in 0..<2_000 {
          let subscription = subject.subscribe(onNext: { _ in })
          subscription.dispose()
        }
      }
    }
    keeper.dispose()
    #expect(received.load(ordering: .relaxed) == 50_000)
  }

  @Test func propertyValueIsConsistentAfterConcurrentSets() async {
    let property = Property(0)
    let lastSeen = Atomic(-1)
    let subscription = property.subscribe(onNext: { lastSeen.store($0, ordering: .relaxed) })
    await withTaskGroup(of: Void.self) { group in
      for sender in 0..<4 {
        group.addTask { for value in 0..<5_000 { property.value = sender * 10_000 + value } }
      }
    }
    subscription.dispose()
    #expect(lastSeen.load(ordering: .relaxed) == property.value)
  }

  @Test func mergeSerializesSourcesThatSendOnDifferentThreads() async {
    let a = PublishSubject<Int>()
    let b = PublishSubject<Int>()
    let tally = Tally()
    let subscription = Observable.merge(a.asObservable(), b.asObservable())
      .scan(0, accumulator: +)
      .subscribe(onNext: { _ in tally.record() })
    await withTaskGroup(of: Void.self) { group in
      group.addTask { for value in 0..<20_000 { a.onNext(value) } }
      group.addTask { for value in 0..<20_000 { b.onNext(value) } }
    }
    subscription.dispose()
    #expect(tally.count.load(ordering: .relaxed) == 40_000)
    #expect(tally.overlaps.load(ordering: .relaxed) == 0)
  }

  @Test func createMayEmitFromAnotherThread() async {
    let source = Observable<Int> { observer in
      let producer = Task.detached {
        for value in 1...3 { observer.onNext(value) }
        observer.onCompleted()
      }
      return Disposables.create { producer.cancel() }
    }
    var collected: [Int] = []
    for await value in source.values { collected.append(value) }
    #expect(collected == [1, 2, 3])
  }

  @Test func observeOnDeliversInOrderOnTheQueue() async {
    let queue = DispatchQueue(label: "observe-on", attributes: .concurrent)
    let key = DispatchSpecificKey<Int>()
    queue.setSpecific(key: key, value: 42)
    let received = Locked<[Int]>([])
    let onQueue = Atomic(true)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      _ = Observable.from(0..<1_000).observe(on: queue).subscribe(
        onNext: { value in
          if DispatchQueue.getSpecific(key: key) != 42 { onQueue.store(false, ordering: .relaxed) }
          received.withLock { $0.append(value) }
        },
        onCompleted: { continuation.resume() })
    }
    #expect(received.withLock { $0 } == Array(0..<1_000))
    let allOnQueue = onQueue.load(ordering: .relaxed)
    #expect(allOnQueue)
  }

  @Test func observeOnStopsDeliveringAfterDispose() async {
    let queue = DispatchQueue(label: "observe-on-dispose")
    let subject = PublishSubject<Int>()
    let received = Locked<[Int]>([])
    let subscription = subject.observe(on: queue).subscribe(onNext: { value in
      received.withLock { $0.append(value) }
    })
    queue.suspend()
    subject.onNext(1)
    subscription.dispose()
    subject.onNext(2)
    queue.resume()
    await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    #expect(received.withLock { $0 } == [])
  }
}
