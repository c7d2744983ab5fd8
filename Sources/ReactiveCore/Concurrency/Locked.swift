#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value behind a mutual-exclusion lock: `withLock` is the only way to reach it.
///
/// It plays the part of `Synchronization.Mutex`, over a `pthread_mutex_t`, for one
/// reason: ThreadSanitizer understands pthread mutexes, while on Linux `Mutex` hands a
/// contended lock over in the kernel (a priority-inheriting futex), where the sanitizer
/// cannot see it and reports races that are not there. The project's concurrency code
/// is checked with ThreadSanitizer, so its locks must be visible to it.
///
/// The value lives in memory of its own, reached through a pointer, rather than in a
/// stored property: an in-out access to a class's property is a "Swift access" that
/// the sanitizer tracks by address, and for an empty value (`Locked<Void>`) that
/// address is shared with the object's other fields.
///
/// `@unchecked Sendable`: `storage` is only read or written between
/// `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`; the instance owns both
/// for its lifetime.
@usableFromInline
package final class Locked<Value>: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
  @usableFromInline let storage: UnsafeMutablePointer<Value>

  /// Creates a lock around `value`.
  @inlinable
  package init(_ value: Value) {
    storage = UnsafeMutablePointer.allocate(capacity: 1)
    storage.initialize(to: value)
    mutex = UnsafeMutablePointer.allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    // Fails only for invalid attributes (none are given) or lack of memory.
    precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    storage.deinitialize(count: 1)
    storage.deallocate()
  }

  /// Runs `body` with the value while holding the lock. Not reentrant: calling
  /// `withLock` on the same lock from inside `body` deadlocks.
  /// - Parameter body: Reads or changes the value.
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws; the lock is released either way.
  @inlinable
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&storage.pointee)
  }

  /// Runs `body` with the value while holding the lock, if the lock is free now;
  /// returns `nil` without waiting when another thread holds it.
  /// - Parameter body: Reads or changes the value.
  /// - Returns: What `body` returns, or `nil` when the lock was taken.
  /// - Throws: What `body` throws; the lock is released either way.
  @inlinable
  package func withLockIfAvailable<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result? {
    guard pthread_mutex_trylock(mutex) == 0 else { return nil }
    defer { pthread_mutex_unlock(mutex) }
    return try body(&storage.pointee)
  }
}
