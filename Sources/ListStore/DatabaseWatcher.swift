import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Calls `onChange` soon after any process writes the database file, without polling
/// the data: on Linux, inotify reports writes to the database and its WAL file; a
/// slow timer covers file systems without inotify. Callers confirm a real commit
/// cheaply (SQLite's `PRAGMA data_version`) before reading anything.
final class DatabaseWatcher: Sendable {
  private let queue: DispatchQueue
  /// Dispatch sources may be cancelled from any thread; nothing else touches them
  /// after `init`, which is what makes the watcher `Sendable`.
  private nonisolated(unsafe) let sources: [any DispatchSourceProtocol]

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
    queue.setSpecific(key: Self.queueKey, value: ())
    self.queue = queue
    var sources: [any DispatchSourceProtocol] = []

    #if canImport(Glibc)
      let folder = Migrator.parentFolder(of: path)
      let name = String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...])
      let watched = Set([name, name + "-wal"])
      let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
      let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)
      if descriptor >= 0, inotify_add_watch(descriptor, folder.isEmpty ? "." : folder, mask) >= 0 {
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

    let timer = DispatchSource.makeTimerSource(queue: queue)
    let nanoseconds =
      Int(fallbackInterval.components.seconds) * 1_000_000_000
      + Int(fallbackInterval.components.attoseconds / 1_000_000_000)
    timer.schedule(
      deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
    timer.setEventHandler(handler: onChange)
    timer.resume()
    sources.append(timer)
    self.sources = sources
  }

  deinit { cancel() }

  /// Marks the watcher's queue, so that `cancel()` knows when it runs on it.
  private static let queueKey = DispatchSpecificKey<Void>()

  /// Stops watching; `onChange` is not called any more once this returns (unless it
  /// is called from `onChange` itself).
  func cancel() {
    for source in sources { source.cancel() }
    // Wait for a handler that may be running, unless this is that handler.
    if DispatchQueue.getSpecific(key: Self.queueKey) == nil { queue.sync {} }
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
