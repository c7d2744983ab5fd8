internal import CLibEvent
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One libevent `event_base` and the thread that runs it. libevent's objects belong to
/// that thread: other threads hand it work with ``execute(_:)``, which queues a closure
/// and wakes the loop through a pipe.
final class EventLoop: @unchecked Sendable {
  let ev: LibEventFunctions
  let base: OpaquePointer
  private let wakeRead: Int32
  private let wakeWrite: Int32
  private var wakeEvent: OpaquePointer?
  private var tickEvent: OpaquePointer?
  private let tasks = Locked<[@Sendable () -> Void]>([])
  /// Runs once a second on the loop's thread (keep-alives, deadlines, idle feeds).
  var onTick: (() -> Void)?

  init(_ ev: LibEventFunctions) throws(ServerError) {
    self.ev = ev
    guard let base = ev.event_base_new() else { throw ServerError("libevent cannot start a loop") }
    self.base = base
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else {
      ev.event_base_free(base)
      throw ServerError("cannot make a pipe: \(String(cString: strerror(errno)))")
    }
    for fd in fds {
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    wakeRead = fds[0]
    wakeWrite = fds[1]
    let context = Unmanaged.passUnretained(self).toOpaque()
    wakeEvent = ev.event_new(
      base, wakeRead, Int16(LISTSTORE_EV_READ | LISTSTORE_EV_PERSIST),
      { fd, _, context in
        guard let context else { return }
        var drain = [UInt8](repeating: 0, count: 256)
        while read(fd, &drain, drain.count) > 0 {}
        Unmanaged<EventLoop>.fromOpaque(context).takeUnretainedValue().runTasks()
      }, context)
    tickEvent = ev.event_new(
      base, -1, Int16(LISTSTORE_EV_PERSIST),
      { _, _, context in
        guard let context else { return }
        Unmanaged<EventLoop>.fromOpaque(context).takeUnretainedValue().onTick?()
      }, context)
    if let wakeEvent { _ = ev.event_add(wakeEvent, nil) }
    var second = timeval(tv_sec: 1, tv_usec: 0)
    if let tickEvent { _ = ev.event_add(tickEvent, &second) }
  }

  deinit {
    if let wakeEvent { ev.event_free(wakeEvent) }
    if let tickEvent { ev.event_free(tickEvent) }
    ev.event_base_free(base)
    close(wakeRead)
    close(wakeWrite)
  }

  /// Runs `task` on the loop's thread, after the tasks queued before it.
  func execute(_ task: @escaping @Sendable () -> Void) {
    let wasEmpty = tasks.withLock { tasks in
      tasks.append(task)
      return tasks.count == 1
    }
    if wasEmpty {
      var byte: UInt8 = 1
      _ = write(wakeWrite, &byte, 1)
    }
  }

  /// Runs the tasks queued so far. Those they queue run on the loop's next pass, after
  /// it has served the sockets that are ready (their ``execute(_:)`` wakes it again), so
  /// that tasks that queue more work (a fan-out in slices) do not hold up the others.
  /// - Returns: Whether there were any.
  @discardableResult
  private func runTasks() -> Bool {
    let batch = tasks.withLock { tasks in
      defer { tasks = [] }
      return tasks
    }
    for task in batch { task() }
    return !batch.isEmpty
  }

  /// Runs `task` once on the loop's thread after `milliseconds` (call it there).
  func after(milliseconds: Int, _ task: @escaping () -> Void) {
    let timer = OneShot(task)
    let context = Unmanaged.passRetained(timer).toOpaque()
    guard
      let event = ev.event_new(
        base, -1, 0,
        { _, _, context in
          guard let context else { return }
          let timer = Unmanaged<OneShot>.fromOpaque(context).takeRetainedValue()
          timer.fire()
        }, context)
    else {
      Unmanaged<OneShot>.fromOpaque(context).release()
      return
    }
    timer.event = event
    timer.ev = ev
    var interval = timeval(
      tv_sec: milliseconds / 1000, tv_usec: Int((milliseconds % 1000) * 1000))
    _ = ev.event_add(event, &interval)
  }

  /// A task that runs once, and frees its event then.
  private final class OneShot {
    let task: () -> Void
    var event: OpaquePointer?
    var ev: LibEventFunctions?

    init(_ task: @escaping () -> Void) { self.task = task }

    func fire() {
      if let event, let ev { ev.event_free(event) }
      task()
    }
  }

  /// Runs the loop on the calling thread until ``stop()``.
  func run() {
    _ = ev.event_base_dispatch(base)
    // What the last tasks queued, and what those queue in turn.
    while runTasks() {}
  }

  /// Ends ``run()`` once the tasks queued so far ran.
  func stop() {
    execute { [self] in _ = ev.event_base_loopbreak(base) }
  }
}
