import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `liststore watch`: prints a list, then every committed change to it, by any
/// process or SQLite client, until interrupted, N changesets were printed, or the
/// timeout passed.
enum WatchCommand {
  static let spec = CommandSpec(
    path: ["watch"],
    abstract: "Show a list, then every change to it as it is committed.",
    discussion: """
      Changes by any process or SQLite client appear within milliseconds. With --json, the
      first line is {"snapshot": <show --json>} and each later line {"changes": <changeset>},
      one per batch of commits; replaying them onto the snapshot gives what 'show --json'
      prints. Without --json, a terminal shows the list redrawn in place, with a line saying
      what changed; a list taller than the terminal scrolls with Up/Down (or k/j),
      PgUp/PgDn, Home/End, and the bottom line says which lines are shown. Ctrl-L redraws,
      q quits. Without --json and without a terminal, the list is printed again after each
      change. Stops on q or Ctrl-C, SIGTERM, after --max-events changesets, after --timeout
      seconds, or when the list is deleted.
      """,
    arguments: [ArgumentSpec(name: "LIST", help: "The list's name.")],
    options: [
      OptionSpec(name: "json", valueName: nil, help: "Print one JSON object per line."),
      OptionSpec(name: "max-events", valueName: "N", help: "Stop after N changesets."),
      OptionSpec(name: "timeout", valueName: "SECONDS", help: "Stop after this many seconds."),
    ],
    database: .reads, run: run)

  /// How a watch ended.
  private enum Ending: @unchecked Sendable {
    case signal, maxEvents, timeout, listDeleted
    // An error the events failed with; read once the watch ended, by the thread that ends it.
    case failed(any Error)
  }

  private static func run(_ invocation: Invocation, _ context: Context) throws {
    let (maxEvents, timeout) = try limits(invocation)
    let list = try context.list(invocation.argument("LIST"))
    let array = try list.observe()
    let repository = try context.repository()
    try watch(
      name: list.name, array: array, maxEvents: maxEvents, timeout: timeout, invocation, context,
      onConnection: { handler in
        try repository.onConnectionStatusChange { status in
          switch status {
          case .disconnected(let reason): handler(reason)
          case .connected: handler(nil)
          }
        }
      },
      stop: { repository.stopObserving() },
      failure: { ListStoreError.decodingFailed("\($0)") })
  }

  /// `watch` against a server: its change stream, which reconnects by itself and resumes
  /// where it was; a lost connection is said as a local database server's is.
  static func runRemote(_ invocation: Invocation, _ context: Context) throws {
    let (maxEvents, timeout) = try limits(invocation)
    let name = invocation.argument("LIST")
    let observation = try context.remote().list(name, metadata: RawJSON.self, item: RawJSON.self)
      .observeNow()
    let bag = DisposeBag()
    try watch(
      name: name, array: observation.array, maxEvents: maxEvents, timeout: timeout, invocation,
      context,
      onConnection: { handler in
        observation.states.observeNext { state in
          switch state {
          case .offline(let reason, _): handler(reason)
          case .online: handler(nil)
          default: break
          }
        }.disposed(by: bag)
      },
      stop: { observation.stop() },
      failure: { error in CommandError("\(error)") })
    withExtendedLifetime((observation, bag)) {}
  }

  /// `--max-events` and `--timeout`.
  private static func limits(_ invocation: Invocation) throws -> (Int?, Double?) {
    let maxEvents = try invocation.countOption("max-events")
    var timeout: Double?
    if let text = invocation.option("timeout") {
      guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
        throw UsageError(
          message:
            "--timeout must be a number of seconds, like 5 or 0.5; got \(text.debugDescription)",
          command: ["watch"])
      }
      timeout = seconds
    }
    return (maxEvents, timeout)
  }

  /// Prints `array` (the list `name` observed), then its events, until the watch ends.
  /// - Parameters:
  ///   - name: The list's name.
  ///   - array: The list, observed.
  ///   - maxEvents: `--max-events`.
  ///   - timeout: `--timeout`.
  ///   - invocation: The command line.
  ///   - context: Where to print.
  ///   - onConnection: Registers a handler told of a lost connection (its reason) and of
  ///     its return (`nil`).
  ///   - stop: Ends the deliveries, before the end is printed.
  ///   - failure: The error to end with when the events fail with an error.
  /// - Throws: What `failure` makes, or an error of the screen.
  private static func watch(
    name: String, array: Observable2DArray<RawJSON, RawJSON>, maxEvents: Int?, timeout: Double?,
    _ invocation: Invocation, _ context: Context,
    onConnection: (@escaping @Sendable (String?) -> Void) throws -> Void,
    stop: () throws -> Void, failure: (any Error) -> any Error
  ) throws {
    let json = invocation.flag("json")
    let out = context.out
    // The screen needs keys as well as a terminal to draw on.
    let interactive =
      !json && Terminal.isTerminal(STDOUT_FILENO) && Terminal.isTerminal(STDIN_FILENO)
    let screen = interactive ? try WatchScreenLoop(name: name) : nil
    let printer: any WatchPrinter
    if json {
      printer = JSONPrinter(name: name, out: out)
    } else if let screen {
      printer = screen
    } else {
      printer = TextPrinter(name: name, out: out)
    }

    let ended = DispatchSemaphore(value: 0)
    let ending = Locked<Ending?>(nil)
    let finish: @Sendable (Ending) -> Void = { reason in
      let first = ending.withLock { current -> Bool in
        guard current == nil else { return false }
        current = reason
        return true
      }
      if first {
        ended.signal()
        screen?.waker.wake()
      }
    }
    let printed = Locked(0)
    // Events are delivered one at a time; the lock orders them with the final flush.
    let printLock = Locked<Void>(())
    // A server connection that breaks (PostgreSQL): said once while it lasts, and again
    // when it is back (the status line of the screen; else a line on standard error,
    // between whole lines of the list). The watch goes on and catches up meanwhile.
    let disconnected = Atomic<Bool>(false)
    try onConnection { lost in
      if lost != nil {
        guard !disconnected.exchange(true, ordering: .relaxed) else { return }
      } else {
        guard disconnected.exchange(false, ordering: .relaxed) else { return }
      }
      if let screen { return screen.connection(lost: lost) }
      // Under the lock that prints (and flushes) the list's lines: between two of them.
      printLock.withLock { _ in
        // Straight to the file descriptor: this runs on the feed's thread.
        let line =
          "liststore: "
          + (lost.map { "\($0); reconnecting, changes will follow" }
            ?? "connected again; changes made meanwhile follow") + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
      }
    }
    let bag = DisposeBag()
    if maxEvents == 0 {
      finish(.maxEvents)
    }
    // The snapshot and the events after it, with neither gap nor duplicate: changes
    // may arrive from other processes at any moment.
    array.subscribe(
      initial: { sections in
        printLock.withLock { _ in
          printer.start(sections)
          out.flush()
        }
      },
      onNext: { event in
        let count = printed.withLock { count -> Int in
          count += 1
          return count
        }
        if let maxEvents, count > maxEvents { return }
        printLock.withLock { _ in
          printer.print(event)
          out.flush()
        }
        if let maxEvents, count >= maxEvents { finish(.maxEvents) }
      }
    ).disposed(by: bag)
    array.subscribe(
      onError: { error in finish(.failed(error)) },
      onCompleted: { finish(.listDeleted) }
    ).disposed(by: bag)

    let timedOut: Bool
    if let screen {
      // The screen's loop handles keys, resizes and signals itself.
      let deadline = timeout.map { ContinuousClock.now + .nanoseconds(Int(min($0, 1e9) * 1e9)) }
      timedOut = try screen.run(deadline: deadline) { ending.withLock { $0 } != nil }
    } else {
      let signals = SignalWatcher(signals: [SIGINT, SIGTERM, SIGHUP]) { finish(.signal) }
      if let timeout {
        timedOut =
          ended.wait(timeout: .now() + .nanoseconds(Int(min(timeout, 1e9) * 1e9))) == .timedOut
      } else {
        ended.wait()
        timedOut = false
      }
      signals.cancel()
    }
    // A key or a signal that ended the screen is a stop like a signal; what stopping
    // itself ends (a remote observation completes its array) comes too late to count.
    let reason = timedOut ? .timeout : (ending.withLock { $0 } ?? .signal)
    // No more deliveries from the feed's threads while this one prints and exits.
    try stop()
    printLock.withLock { _ in
      printer.end()
      out.flush()
    }
    withExtendedLifetime((array, bag)) {}
    switch reason {
    case .listDeleted:
      context.err.line("liststore: the list \(quoted(name)) was deleted")
    case .failed(let error):
      throw failure(error)
    case .signal, .maxEvents, .timeout:
      break
    }
  }
}

/// Receives SIGINT, SIGTERM and SIGHUP on a queue instead of dying from them.
final class SignalWatcher: Sendable {
  private nonisolated(unsafe) let sources: [any DispatchSourceSignal]
  private let signals: [Int32]

  init(signals: [Int32], handler: @escaping @Sendable () -> Void) {
    self.signals = signals
    let queue = DispatchQueue(label: "liststore.signals")
    sources = signals.map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler(handler: handler)
      source.resume()
      return source
    }
  }

  /// Stops watching and restores the default actions.
  func cancel() {
    for source in sources { source.cancel() }
    for number in signals { signal(number, SIG_DFL) }
  }
}

/// How `watch` shows the list and its changes.
protocol WatchPrinter {
  func start(_ sections: [Observable2DArraySection<RawJSON, RawJSON>])
  func print(_ event: Observable2DArrayEvent<RawJSON, RawJSON>)
  func end()
}

extension WatchPrinter {
  static func stored(_ sections: [Observable2DArraySection<RawJSON, RawJSON>]) -> [StoredSection] {
    Rendering.stored(sections)
  }

  func end() {}
}

/// `--json`: the snapshot line, then one line per changeset.
struct JSONPrinter: WatchPrinter {
  let name: String
  let out: Output

  func start(_ sections: [Observable2DArraySection<RawJSON, RawJSON>]) {
    out.line("{\"snapshot\":" + Rendering.json(list: name, sections: Self.stored(sections)) + "}")
  }

  func print(_ event: Observable2DArrayEvent<RawJSON, RawJSON>) {
    out.line(Rendering.json(changes: event.changeset))
  }
}

/// Text to a pipe or file: the list, then for each change a summary and the list again.
struct TextPrinter: WatchPrinter {
  let name: String
  let out: Output

  func start(_ sections: [Observable2DArraySection<RawJSON, RawJSON>]) {
    Rendering.text(list: name, sections: Self.stored(sections)).forEach(out.line)
  }

  func print(_ event: Observable2DArrayEvent<RawJSON, RawJSON>) {
    out.line()
    out.line("-- " + Rendering.summary(of: event.changeset))
    Rendering.text(list: name, sections: Self.stored(event.sections)).forEach(out.line)
  }
}

extension Rendering {
  /// "2 items inserted, 1 moved" — what a changeset did, briefly.
  static func summary(of changes: Changeset<RawJSON, RawJSON>) -> String {
    let counts: [(Int, String, String)] = [
      (changes.insertedSections.count, "section", "added"),
      (changes.deletedSections.count, "section", "removed"),
      (changes.movedSections.count, "section", "moved"),
      (changes.updatedSections.count, "section", "changed"),
      (changes.insertedItems.count, "item", "added"),
      (changes.deletedItems.count, "item", "removed"),
      (changes.movedItems.count, "item", "moved"), (changes.updatedItems.count, "item", "changed"),
    ]
    return counts.filter { $0.0 > 0 }.map { count, noun, verb in
      "\(counted(count, noun)) \(verb)"
    }
    .joined(separator: ", ")
  }

}
