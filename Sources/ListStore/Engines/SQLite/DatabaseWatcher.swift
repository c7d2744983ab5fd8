import Dispatch
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Calls `onChange` soon after any process writes the database file, without polling
/// the data: on Linux, inotify reports writes to the database and its WAL file; a
/// slow timer covers file systems without inotify. Callers confirm a real commit
/// cheaply (SQLite's `PRAGMA data_version`) before reading anything.
///
/// While this process commits, the kernel watch is taken away (``noteOwnCommit()``): the
/// kernel would otherwise make an event of each of the commit's writes to the WAL (two for
/// every page it writes), and the commits already bring this process's observers up to
/// date with what others committed too (each reads the log inside its transaction).
/// The watch comes back once this process has not committed for ``ownCommitQuietTime``,
/// with one `onChange` for whatever others committed meanwhile.
final class DatabaseWatcher: Sendable {
  private let queue: DispatchQueue
  /// What this watcher's queue is marked with (``queueKey``).
  private let mark: Int
  /// Dispatch sources may be cancelled from any thread; nothing else touches them
  /// after `init`, which is what makes the watcher `Sendable`.
  private nonisolated(unsafe) let sources: [any DispatchSourceProtocol]
  /// The inotify watch, when there is one.
  private let kernelWatch: KernelWatch?
  private let onChange: @Sendable () -> Void

  /// How long this process must not commit before the kernel watch comes back.
  static let ownCommitQuietTime: Duration = .milliseconds(2)

  /// Starts watching.
  /// - Parameters:
  ///   - path: The database file.
  ///   - fallbackInterval: How often to call `onChange` anyway.
  ///   - onChange: Called on a private serial queue.
  init(
    path: String, fallbackInterval: Duration = .milliseconds(250),
    onChange: @escaping @Sendable () -> Void
  ) {
    let queue = DispatchQueue(label: "liststore.watcher")
    // Each watcher's own mark: a callback of another watcher is not this one's.
    let mark = Self.nextMark.add(1, ordering: .relaxed).newValue
    queue.setSpecific(key: Self.queueKey, value: mark)
    self.mark = mark
    self.queue = queue
    self.onChange = onChange
    var sources: [any DispatchSourceProtocol] = []
    var kernelWatch: KernelWatch?

    #if canImport(Glibc)
      let folder = SQLiteMigrator.parentFolder(of: path)
      let name = String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...])
      let watched = Set([name, name + "-wal"])
      let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
      if descriptor >= 0, let watch = KernelWatch(descriptor: descriptor, folder: folder) {
        kernelWatch = watch
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        // A burst of writes (a busy writer commits every few dozen microseconds, each
        // commit several writes to the WAL) is handled once: the check runs a moment
        // after the first event, and until then the source is suspended, so that the
        // burst's other events wake no thread (the kernel queues and merges them; the
        // resumed source reads them). The watcher then neither competes with the writer
        // for the database's locks nor for the processor on every commit.
        // Suspended and resumed only by these handlers, which run on `queue`, one at a time.
        let suspendable = UncheckedSendableBox(source)
        source.setEventHandler {
          guard Self.drain(descriptor, matching: watched) else { return }
          suspendable.value.suspend()
          queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
            suspendable.value.resume()
            // Cancelled meanwhile: `cancel()` promised no callback after it returned.
            guard !suspendable.value.isCancelled else { return }
            onChange()
          }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        sources.append(source)
      } else if descriptor >= 0 {
        close(descriptor)
      }
    #endif
    self.kernelWatch = kernelWatch

    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(
      deadline: .now() + Self.dispatchInterval(fallbackInterval),
      repeating: Self.dispatchInterval(fallbackInterval))
    timer.setEventHandler(handler: onChange)
    timer.resume()
    sources.append(timer)
    self.sources = sources
  }

  deinit { cancel() }

  /// Marks each watcher's queue with a number of its own, so that `cancel()` knows when it
  /// runs on its own queue (and not on another watcher's).
  private static let queueKey = DispatchSpecificKey<Int>()
  private static let nextMark = Atomic<Int>(0)

  /// `duration` as Dispatch counts it.
  private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
    .nanoseconds(
      Int(duration.components.seconds) * 1_000_000_000
        + Int(duration.components.attoseconds / 1_000_000_000))
  }

  /// Stops watching; `onChange` is not called any more once this returns (unless it
  /// is called from `onChange` itself).
  func cancel() {
    for source in sources { source.cancel() }
    kernelWatch?.cancel()
    // Wait for a handler that may be running, unless this is that handler.
    if !runsOnItsQueue { queue.sync {} }
  }

  /// Whether the caller runs on this watcher's queue (in one of its callbacks).
  var runsOnItsQueue: Bool { DispatchQueue.getSpecific(key: Self.queueKey) == mark }

  /// Whether the kernel watch is there (not paused by this process's commits, nor
  /// missing), for tests.
  var isWatchingKernel: Bool { kernelWatch?.isWatching ?? false }

  /// Says that this process is about to commit: the kernel watch is taken away until it
  /// has not committed for ``ownCommitQuietTime``. Cheap when it is away already.
  func noteOwnCommit() {
    guard let kernelWatch, kernelWatch.pause() else { return }
    scheduleResume(after: Self.ownCommitQuietTime)
  }

  /// Brings the kernel watch back once this process has been quiet long enough, then
  /// checks for what others committed while it was away.
  private func scheduleResume(after delay: Duration) {
    queue.asyncAfter(deadline: .now() + Self.dispatchInterval(delay)) { [weak self] in
      guard let self, let kernelWatch else { return }
      let quiet = kernelWatch.sinceLastPause()
      if quiet < Self.ownCommitQuietTime {
        scheduleResume(after: Self.ownCommitQuietTime - quiet)
      } else if kernelWatch.resume() {
        onChange()
      }
      // Else cancelled, or the folder cannot be watched any more (it was removed, say):
      // the timer still calls `onChange`.
    }
  }

  #if canImport(Glibc)
    /// Reads every pending inotify event; whether any concerns one of `names`.
    private static func drain(_ descriptor: Int32, matching names: Set<String>) -> Bool {
      var relevant = false
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return relevant }
        var offset = 0
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= count {
          let (length, name) = buffer.withUnsafeBytes { bytes -> (Int, String) in
            let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameLength = Int(event.len)
            let start = offset + header
            let nameBytes = bytes[start..<min(start + nameLength, count)].prefix { $0 != 0 }
            return (nameLength, String(decoding: nameBytes, as: UTF8.self))
          }
          // Events dropped because the queue overflowed may have named the database.
          let overflowed = buffer.withUnsafeBytes { bytes in
            bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self).mask
              & UInt32(IN_Q_OVERFLOW) != 0
          }
          if overflowed || names.contains(name) { relevant = true }
          offset += header + length
        }
      }
    }
  #endif
}

/// The inotify watch on the database's folder, which this process's own commits take
/// away for a while (``DatabaseWatcher/noteOwnCommit()``).
private final class KernelWatch: Sendable {
  private let descriptor: Int32
  private let folder: String
  /// The watch descriptor while watching, `nil` while paused or cancelled.
  let state = Locked<(watch: Int32?, cancelled: Bool)>((nil, false))
  /// Whether the watch is away: read without the lock by every commit.
  private let paused = Atomic<Bool>(false)
  /// When this process last paused the watch or committed while it was paused.
  private let lastCommit = Atomic<UInt64>(0)

  #if canImport(Glibc)
    private static let mask = UInt32(
      IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)
  #endif

  /// Watches `folder` through the inotify instance `descriptor`; `nil` when it cannot.
  init?(descriptor: Int32, folder: String) {
    self.descriptor = descriptor
    self.folder = folder.isEmpty ? "." : folder
    #if canImport(Glibc)
      let watch = inotify_add_watch(descriptor, self.folder, Self.mask)
      guard watch >= 0 else { return nil }
      state.withLock { $0.watch = watch }
    #else
      return nil
    #endif
  }

  /// Whether the watch is there.
  var isWatching: Bool { state.withLock { $0.watch != nil } }

  /// Takes the watch away; whether it was there (the caller then schedules its return).
  func pause() -> Bool {
    lastCommit.store(Self.now(), ordering: .relaxed)
    guard !paused.load(ordering: .relaxed) else { return false }
    return state.withLock { state in
      guard let watch = state.watch, !state.cancelled else { return false }
      #if canImport(Glibc)
        inotify_rm_watch(descriptor, watch)
      #endif
      state.watch = nil
      paused.store(true, ordering: .relaxed)
      return true
    }
  }

  /// How long ago this process last committed while the watch was away.
  func sinceLastPause() -> Duration {
    .nanoseconds(Int64(bitPattern: Self.now() &- lastCommit.load(ordering: .relaxed)))
  }

  /// Watches again; whether it could.
  func resume() -> Bool {
    state.withLock { state in
      guard !state.cancelled else { return false }
      #if canImport(Glibc)
        let watch = inotify_add_watch(descriptor, folder, Self.mask)
        guard watch >= 0 else { return false }
        state.watch = watch
        paused.store(false, ordering: .relaxed)
        return true
      #else
        return false
      #endif
    }
  }

  /// Stops for good: no pause or resume does anything afterwards.
  func cancel() {
    state.withLock { $0.cancelled = true }
  }

  private static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }
}
