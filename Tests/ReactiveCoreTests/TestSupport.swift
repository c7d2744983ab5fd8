import ReactiveCore

/// An error with an identity, for asserting which failure arrived.
struct TestError: Error, Equatable {
  let code: Int
}

/// An event in a form tests can compare.
enum Recorded<Element: Equatable>: Equatable, CustomStringConvertible {
  case next(Element)
  case failed(TestError)
  case completed

  init(_ event: Event<Element>) {
    switch event {
    case .next(let element): self = .next(element)
    case .failed(let error): self = .failed(error as? TestError ?? TestError(code: -1))
    case .completed: self = .completed
    }
  }

  var description: String {
    switch self {
    case .next(let element): return "next(\(element))"
    case .failed(let error): return "failed(\(error.code))"
    case .completed: return "completed"
    }
  }
}

/// Records every event an observable delivers, on one thread.
final class Recorder<Element: Equatable> {
  private(set) var events: [Recorded<Element>] = []
  private(set) var subscription: (any Disposable)?

  init() {}

  /// Subscribes to `source` and starts recording.
  init(_ source: some ObservableType<Element>) {
    subscription = source.subscribe { [weak self] event in
      self?.events.append(Recorded(event))
    }
  }

  var observer: Observer<Element> {
    Observer { [weak self] event in self?.events.append(Recorded(event)) }
  }

  var elements: [Element] {
    events.compactMap {
      if case .next(let element) = $0 { return element }
      return nil
    }
  }

  func dispose() {
    subscription?.dispose()
  }
}

/// An object whose deallocation tests watch through a weak reference.
final class Token {
  init() {}
}
