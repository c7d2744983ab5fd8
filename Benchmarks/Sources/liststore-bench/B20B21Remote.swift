import Dispatch
import FoundationEssentials
import ListStore
import ListStoreClient
import ListStoreClientTesting
import Observable2D
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// B20: `liststore watch --json` over HTTP against `watch` on the file, for the same write:
/// from just before another process's commit to the line on each watcher's output.
enum RemoteWatchBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      return [
        Row(
          id: "B20", name: "watch over HTTP → event", unit: "ms",
          target: "≤ 1.5 × watch on the file",
          skipped: "no liststore binary: build it with swift build -c release, or pass --cli")
      ]
    }
    let rounds = options.quick ? 40 : 200
    let folder = try ScratchFolder(in: scratch, name: "b20")
    defer { folder.remove() }
    let repository = try Repository(path: folder.database)
    let list = try repository.createList("b20", metadata: SectionMetadata.self, item: String.self)
    let section = try list.appendSection(SectionMetadata(header: "S"))
    try list.appendItems((0..<1_000).map { "item \($0)" }, toSection: 0)
    let server = try ServedDatabase(cli: cli, database: folder.database)
    defer { try? server.stop() }
    let onFile = try Watcher(cli: cli, location: folder.database)
    defer { onFile.stop() }
    let overHTTP = try Watcher(cli: cli, location: "http://127.0.0.1:\(server.port)")
    defer { overHTTP.stop() }

    var file: [Double] = []
    var http: [Double] = []
    for round in 0..<(rounds + 5) {
      let value = "b20-\(round)"
      let start = monotonicNanoseconds()
      try list.appendItem(value, toSectionWithID: section)
      let arrivals = try Watcher.lines([onFile, overHTTP])
      for (watcher, line) in zip([onFile, overHTTP], arrivals.lines) {
        try check(
          line.contains("\"insertedItems\"") && line.contains(value),
          "B20: \(watcher.location) printed \(line), not the insertion of \(value)")
      }
      guard round >= 5 else { continue }  // Warm-up.
      file.append(Double(arrivals.times[0] - start) / 1e6)
      http.append(Double(arrivals.times[1] - start) / 1e6)
    }
    let overHTTPStats = Stats(http)
    let onFileStats = Stats(file)
    let ratio = overHTTPStats.median / onFileStats.median
    return [
      Row(
        id: "B20", name: "`watch --json` over HTTP → event, another process's write", unit: "ms",
        value: overHTTPStats, baseline: onFileStats, ratio: ratio,
        target: "median ≤ 1.5 × watch on the file", pass: ratio <= 1.5,
        note:
          "\(rounds) single-item writes by this process to a 1,000-item list; `liststore serve` "
          + "and both watchers are processes of \(cli); baseline: `watch --json` on the file")
    ]
  }

  /// A `liststore watch LIST --json` process whose lines are read as they come.
  final class Watcher {
    let location: String
    let child: Child
    private var pending: [UInt8] = []

    init(cli: String, location: String) throws {
      self.location = location
      child = try Child.spawn(
        cli, ["--db", location, "watch", "b20", "--json"], captureOutput: true, quiet: true)
      // The snapshot line: it is watching.
      _ = try Self.lines([self])
    }

    func stop() {
      kill(child.pid, SIGTERM)
      _ = try? child.wait()
    }

    /// One line from each watcher, with the moment each one's line was complete.
    static func lines(_ watchers: [Watcher]) throws -> (lines: [String], times: [UInt64]) {
      var lines = [String?](repeating: nil, count: watchers.count)
      var times = [UInt64](repeating: 0, count: watchers.count)
      let deadline = monotonicNanoseconds() + 20_000_000_000
      while lines.contains(where: { $0 == nil }) {
        var descriptors = watchers.enumerated().filter { lines[$0.offset] == nil }.map {
          pollfd(fd: $0.element.child.output ?? -1, events: Int16(POLLIN), revents: 0)
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), 1000)
        try check(monotonicNanoseconds() < deadline, "B20: a watcher printed nothing in 20 s")
        guard ready > 0 else { continue }
        let now = monotonicNanoseconds()
        for (index, watcher) in watchers.enumerated() where lines[index] == nil {
          if let line = try watcher.readLine(polled: descriptors) {
            lines[index] = line
            times[index] = now
          }
        }
      }
      return (lines.map { $0 ?? "" }, times)
    }

    /// A line, if one is complete after reading what `descriptors` say is ready.
    private func readLine(polled descriptors: [pollfd]) throws -> String? {
      if let line = takeLine() { return line }
      guard let fd = child.output,
        descriptors.contains(where: { $0.fd == fd && $0.revents & Int16(POLLIN | POLLHUP) != 0 })
      else { return nil }
      var buffer = [UInt8](repeating: 0, count: 65_536)
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      try check(count > 0, "B20: the watcher of \(location) ended")
      pending += buffer[..<count]
      return takeLine()
    }

    private func takeLine() -> String? {
      guard let newline = pending.firstIndex(of: 0x0A) else { return nil }
      let line = String(decoding: pending[..<newline], as: UTF8.self)
      pending.removeSubrange(...newline)
      return line
    }
  }
}

/// B21: the Swift client's observed array after a server restart: from the moment the
/// server serves again to the moment the array equals a fresh read of the list, with
/// changes made while it was down.
enum ResynchroniseBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let restarts = 20
    let server = try TestServer()
    defer { server.remove() }
    let local = try server.repository.createList(
      "b21", metadata: SectionMetadata.self, item: String.self)
    let section = try local.appendSection(SectionMetadata(header: "S"))
    try local.appendItems((0..<1_000).map { "item \($0)" }, toSection: 0)
    let remote = try RemoteRepository(url: server.url)
    let list = remote.list("b21", metadata: SectionMetadata.self, item: String.self)
    let observation = try Self.observe(list)
    let matched = DispatchSemaphore(value: 0)
    let target = Mutex<[Int64]?>(nil)
    let bag = DisposeBag()
    observation.array.observeNext { event in
      let ids = event.sections.first.map { Array($0.items.ids) } ?? []
      target.withLock { expected in
        if let wanted = expected, wanted == ids {
          expected = nil
          matched.signal()
        }
      }
    }.disposed(by: bag)

    var times: [Double] = []
    for round in 0..<restarts {
      server.stop()
      // Changes while it is down, by another connection to the database.
      for number in 0..<10 {
        try local.appendItem("r\(round)-\(number)", toSectionWithID: section)
      }
      try local.removeItem(at: IndexPath(item: 0, section: 0))
      let expected = Array(try local.sections()[0].items.ids)
      target.withLock { $0 = expected }
      let start = monotonicNanoseconds()
      try server.start()
      try check(
        matched.wait(timeout: .now() + .seconds(30)) == .success,
        "B21: round \(round): the array did not match a fresh read within 30 s")
      times.append(Double(monotonicNanoseconds() - start) / 1e9)
      try check(
        observation.array.sections == (try local.sections()),
        "B21: round \(round): the array differs from a fresh read")
    }
    let stats = Stats(times)
    return [
      Row(
        id: "B21", name: "Swift client: server restart → array matches a fresh read", unit: "s",
        value: stats, target: "≤ 2 s (max over \(restarts) restarts)", pass: stats.max <= 2,
        note: "each restart after 10 insertions and a deletion by another connection; the "
          + "client retries every 0.1–1 s while the server is down")
    ]
  }

  private static func observe(_ list: RemoteList<SectionMetadata, String>) throws
    -> RemoteObservation<SectionMetadata, String>
  {
    let result = Mutex<Result<RemoteObservation<SectionMetadata, String>, ListStoreError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
      do throws(ListStoreError) {
        let observation = try await list.observe()
        result.withLock { $0 = .success(observation) }
      } catch {
        result.withLock { $0 = .failure(error) }
      }
      done.signal()
    }
    done.wait()
    guard let outcome = result.withLock({ $0 }) else { throw BenchError("B21: no observation") }
    return try outcome.get()
  }
}
