extension ObservableType where Element: Sendable {
  /// The elements as an `AsyncSequence`, for `for await` loops.
  ///
  /// The stream subscribes when it is created (read this property where the loop starts) and
  /// buffers elements until the loop takes them. It ends when the observable completes or
  /// fails (use ``throwingValues`` to receive the error). Breaking out of the loop, cancelling
  /// the task or releasing the stream disposes the subscription.
  ///
  /// ```swift
  /// for await count in counter.values {
  ///   print(count)
  /// }
  /// ```
  public var values: AsyncStream<Element> {
    let source = asObservable()
    return AsyncStream { continuation in
      let subscription = source.subscribe(
        onNext: { continuation.yield($0) },
        onError: { _ in continuation.finish() },
        onCompleted: { continuation.finish() })
      continuation.onTermination = { _ in subscription.dispose() }
    }
  }

  /// The elements as a throwing `AsyncSequence`: like ``values``, but a failure of the
  /// observable is thrown from the loop.
  ///
  /// ```swift
  /// do {
  ///   for try await row in rows.throwingValues { print(row) }
  /// } catch {
  ///   print("failed: \(error)")
  /// }
  /// ```
  public var throwingValues: AsyncThrowingStream<Element, any Error> {
    let source = asObservable()
    return AsyncThrowingStream { continuation in
      let subscription = source.subscribe(
        onNext: { continuation.yield($0) },
        onError: { continuation.finish(throwing: $0) },
        onCompleted: { continuation.finish() })
      continuation.onTermination = { _ in subscription.dispose() }
    }
  }
}
