extension ObservableType {
  /// Shares one subscription to this observable among all subscribers, replaying the latest
  /// `replay` elements to each new one (RxSwift `share(replay:)`).
  ///
  /// The first subscriber connects to this observable; when the last one disposes, the
  /// connection is disposed, and a later subscriber connects anew with an empty buffer. After
  /// this observable ends, subscribers that arrive while others are still subscribed receive
  /// the buffered elements and the terminal event.
  ///
  /// - Parameter replay: How many of the latest elements a new subscriber receives first.
  /// - Returns: The shared observable.
  public func share(replay: Int = 0) -> Observable<Element> {
    precondition(replay >= 0, "share(replay:) needs a count of zero or more")
    let connection = ShareConnection(source: asObservable(), replay: replay)
    return Observable(trusted: { connection.subscribe($0) })
  }
}

/// The ref-counted connection behind `share(replay:)`.
///
/// `@unchecked Sendable`: its state is only touched under its mutex; `source` is immutable and
/// only subscribed, which an observable allows from any thread.
final class ShareConnection<Element>: @unchecked Sendable {
  private struct State {
    var subject: SubjectCore<Element>?
    var subscriberCount = 0
    var connection: (any Disposable)?
    // Bumped on each disconnect, so that a connection that finishes subscribing after the
    // subscribers left is disposed instead of stored.
    var generation = 0
  }

  private let source: Observable<Element>
  private let replay: Int
  private let state = Locked(UncheckedSendable(State()))

  init(source: Observable<Element>, replay: Int) {
    self.source = source
    self.replay = replay
  }

  func subscribe(_ observer: Observer<Element>) -> any Disposable {
    let (subject, generation, connects) = state.withLock {
      state -> UncheckedSendable<(SubjectCore<Element>, Int, Bool)> in
      let subject = state.value.subject ?? SubjectCore(replayCount: replay)
      state.value.subject = subject
      state.value.subscriberCount += 1
      return UncheckedSendable((subject, state.value.generation, state.value.subscriberCount == 1))
    }.value
    let subscription = subject.subscribe(observer)
    if connects {
      let connection = source.subscribe(Observer(subject.on))
      let stored = state.withLock { state -> Bool in
        guard state.value.generation == generation else { return false }
        state.value.connection = connection
        return true
      }
      if !stored { connection.dispose() }
    }
    return AnonymousDisposable { [self] in
      subscription.dispose()
      disconnectIfLast()
    }
  }

  private func disconnectIfLast() {
    let connection = state.withLock { state -> (any Disposable)? in
      state.value.subscriberCount -= 1
      guard state.value.subscriberCount == 0 else { return nil }
      state.value.subject = nil
      state.value.generation += 1
      defer { state.value.connection = nil }
      return state.value.connection
    }
    connection?.dispose()
  }
}
