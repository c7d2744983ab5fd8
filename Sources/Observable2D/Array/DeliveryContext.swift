#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Whether the current thread is delivering events of an observable 2D array (that is,
/// running an observer's callback), kept per thread.
///
/// A mutation waits for its event to be delivered by whichever thread is delivering,
/// except on a thread that is itself delivering: there, waiting could wait for itself
/// or, across two arrays, for a thread that waits for it.
@usableFromInline
enum DeliveryContext {
  /// The thread-specific slot holding the current thread's delivery depth.
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    // Only fails when the process is out of keys (PTHREAD_KEYS_MAX), a programming error.
    precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
    return key
  }()

  /// Whether the current thread is inside a delivery.
  @usableFromInline
  static var isDelivering: Bool { pthread_getspecific(key) != nil }

  /// Marks the current thread as delivering, one level deeper; returns the depth to give
  /// ``leave(_:)`` when the delivery ends.
  @usableFromInline
  static func enter() -> Int {
    let depth = Int(bitPattern: pthread_getspecific(key))
    pthread_setspecific(key, UnsafeRawPointer(bitPattern: depth + 1))
    return depth
  }

  /// Ends a delivery begun with ``enter()``, which returned `depth`.
  @usableFromInline
  static func leave(_ depth: Int) {
    pthread_setspecific(key, UnsafeRawPointer(bitPattern: depth))
  }
}
