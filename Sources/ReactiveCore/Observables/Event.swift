/// One thing an observable can tell its observers: an element, a failure or completion.
///
/// A subscription receives zero or more `next` events followed by at most one terminal event
/// (`failed` or `completed`); nothing is delivered after a terminal event.
public enum Event<Element> {
  /// An element.
  case next(Element)
  /// The sequence ended with an error; no further events follow.
  case failed(any Error)
  /// The sequence ended normally; no further events follow.
  case completed

  /// Whether this event ends the sequence (`failed` or `completed`).
  @inlinable
  public var isTerminal: Bool {
    if case .next = self { return false }
    return true
  }

  /// The element of a `next` event, or `nil`.
  @inlinable
  public var element: Element? {
    if case .next(let element) = self { return element }
    return nil
  }

  /// The error of a `failed` event, or `nil`.
  @inlinable
  public var error: (any Error)? {
    if case .failed(let error) = self { return error }
    return nil
  }

  /// Transforms the element of a `next` event and passes terminal events through.
  ///
  /// - Parameter transform: The function applied to the element.
  /// - Returns: The event with its element transformed.
  @inlinable
  public func map<Result>(_ transform: (Element) throws -> Result) rethrows -> Event<Result> {
    switch self {
    case .next(let element): return .next(try transform(element))
    case .failed(let error): return .failed(error)
    case .completed: return .completed
    }
  }
}

extension Event: Sendable where Element: Sendable {}

extension Event: CustomStringConvertible {
  /// A text such as `next(1)`, `failed(SomeError)` or `completed`.
  public var description: String {
    switch self {
    case .next(let element): return "next(\(element))"
    case .failed(let error): return "failed(\(error))"
    case .completed: return "completed"
    }
  }
}
