import Dispatch
import FoundationEssentials
import ListStore
import ListStorePostgreSQL
import Observable2D
import Synchronization

/// B10: one committed single-item update → the observer's array updated and its event
/// delivered, in-process, on PostgreSQL, against the raw libpq commit of the same update.
/// B2 on PostgreSQL.
enum PostgresObserveBenchmark {
  static let sections = 10
  static let target = "≤ 2 × the raw libpq commit"

  /// What the subscriber saw of the last event (written on whichever thread delivers).
  private final class Delivery: Sendable {
    struct State {
      var events = 0
      var time: UInt64 = 0
      var updated: (id: Int64, value: String)?
    }
    let state = Mutex(State())
    /// Signalled after every event.
    let delivered = DispatchSemaphore(value: 0)

    /// Waits until an event has delivered `value`, for five seconds at most.
    func wait(forValue value: String) -> Bool {
      let deadline = DispatchTime.now() + 5
      while state.withLock({ $0.updated?.value }) != value {
        guard delivered.wait(timeout: deadline) == .success else { return false }
      }
      return true
    }
  }

  /// The figures of one list size.
  private struct Result {
    var size: Int
    var listStore: [Double]
    var floor: [Double]
    /// `pg_stat_statements` per write, when counted.
    var statements: (listStore: StatementCounts, floor: StatementCounts, writes: Int)?
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let sizes =
      options.b10Sizes ?? (options.quick ? [1_000, 10_000, 100_000] : [1_000, 100_000, 1_000_000])
    guard BenchPostgres.unavailableReason == nil else {
      return BenchPostgres.skipped("B10", "PostgreSQL: write → event delivered", target: target)
    }
    let results = try sizes.map { size in
      try measure(size: size, rounds: options.quick ? 100 : 300, options: options)
    }
    var rows: [Row] = []
    let targetIndex = results.lastIndex { $0.size <= 100_000 } ?? results.count - 1
    for (index, result) in results.enumerated() {
      let value = Stats(result.listStore)
      let floor = Stats(result.floor)
      var row = Row(
        id: "B10",
        name: "PostgreSQL: write → event delivered, \(ObserveBenchmark.label(result.size)) items",
        unit: "µs", value: value, baseline: floor, ratio: value.median / floor.median,
        target: index == targetIndex ? target : "",
        note:
          "replaceItem(id:with:) until the subscriber's onNext, against BEGIN; UPDATE items SET "
          + "value = $1 WHERE id = $2; COMMIT through libpq (prepared) on the same database, "
          + "alternating, floor first; "
          + (options.postgresDelay.map { "TCP through a proxy delaying each chunk \($0) µs" }
            ?? (options.postgresOverTCP ? "TCP on 127.0.0.1 with a password" : "Unix socket")))
      if index == targetIndex { row.pass = value.median <= 2 * floor.median }
      if let statements = result.statements {
        let listStore = statements.listStore.perOperation(statements.writes)
        let floor = statements.floor.perOperation(statements.writes)
        row.details["statements per write"] = listStore.total
        row.details["statements per floor commit"] = floor.total
        let serverTime = statements.listStore.milliseconds * 1e3 / Double(statements.writes)
        let floorServerTime = statements.floor.milliseconds * 1e3 / Double(statements.writes)
        let planning = statements.listStore.planningMilliseconds * 1e3 / Double(statements.writes)
        let floorPlanning = statements.floor.planningMilliseconds * 1e3 / Double(statements.writes)
        row.details["server µs per write"] = serverTime
        row.details["server µs per floor commit"] = floorServerTime
        row.details["planning µs per write"] = planning
        row.details["planning µs per floor commit"] = floorPlanning
        row.note +=
          "; statements per write (pg_stat_statements, every connection): "
          + "\(format(listStore.total)) (a raw commit, with the observer reading it: "
          + "\(format(floor.total))), executing for \(format(serverTime)) µs (raw: "
          + "\(format(floorServerTime)) µs), planning for \(format(planning)) µs (raw: "
          + "\(format(floorPlanning)) µs): "
          + listStore.statements.map { "\(format($0.1)) × `\($0.0)`" }.joined(separator: ", ")
      }
      rows.append(row)
    }
    if let first = results.first, let last = results.last, results.count > 1 {
      let small = Stats(first.listStore)
      let large = Stats(last.listStore)
      let ratio = large.median / small.median
      rows.append(
        Row(
          id: "B10",
          name:
            "PostgreSQL: flat, \(ObserveBenchmark.label(last.size)) against \(ObserveBenchmark.label(first.size)) items",
          unit: "µs", value: large, baseline: small, ratio: ratio,
          target: "≤ 1.5 × the \(ObserveBenchmark.label(first.size)) list", pass: ratio <= 1.5,
          note: "the rows above, the largest list against the smallest"))
    }
    return rows
  }

  /// Microseconds per write and per floor commit, `rounds` of each after a warm-up.
  private static func measure(size: Int, rounds: Int, options: Options) throws -> Result {
    let database = try BenchPostgres.makeDatabase(options)
    defer { database.remove() }
    // Both sides over TCP on 127.0.0.1 with a password with --pg-tcp, through a proxy that
    // delays every chunk with --pg-tcp-delay; else over the Unix socket.
    var location = database.connectionString
    if options.postgresOverTCP || options.postgresDelay != nil {
      location = try database.passwordRoleOverTCP()
    }
    if let delay = options.postgresDelay {
      let proxy = try DelayProxy(targetPort: database.server.port, delayMicroseconds: delay)
      location = location.replacing(
        "host=127.0.0.1 port=\(database.server.port) ",
        with: "host=\(proxy.host) port=\(proxy.port) ")
    }
    let repository = try Repository(url: location)
    defer { repository.stopObserving() }
    let list = try Fixtures.makeList(
      repository, name: "b10", sections: sections, perSection: size / sections)
    try database.vacuum()
    let array = try list.observe()
    let delivery = Delivery()
    let subscription = array.subscribe(onNext: { event in
      let time = monotonicNanoseconds()
      delivery.state.withLock { state in
        state.time = time
        state.events += 1
        state.updated = event.changeset.updatedItems.first.map { ($0.id, $0.value) }
      }
      delivery.delivered.signal()
    })
    defer { subscription.dispose() }

    let floor = try RawPostgres(location)
    try floor.prepare("update", "UPDATE items SET value = $1 WHERE id = $2")
    let section = sections / 2
    let id = array.sections[section].items.id(at: size / sections / 2)
    let at = IndexPath(indexes: [section, size / sections / 2])

    /// One raw commit of the update; returns its microseconds.
    func floorCommit(_ round: Int) throws -> Double {
      let value = "\"raw \(round)\""
      let start = monotonicNanoseconds()
      try floor.execute("BEGIN")
      try floor.executePrepared("update", [value, String(id)])
      try floor.execute("COMMIT")
      let time = Double(monotonicNanoseconds() - start) / 1e3
      // Its change reaches the observer too, through LISTEN: wait for it, outside the
      // timing, so that the next write's event is that write's alone, and nothing of
      // the raw commit is still running.
      try check(
        delivery.wait(forValue: "raw \(round)"),
        "B10: the raw commit's change did not reach the observer")
      return time
    }

    /// One write through ListStore, to its event; returns its microseconds.
    func write(_ round: Int) throws -> Double {
      let value = "updated \(round)"
      let events = delivery.state.withLock { $0.events }
      let start = monotonicNanoseconds()
      try list.replaceItem(id: id, with: value)
      let state = delivery.state.withLock { $0 }
      try check(
        state.events == events + 1,
        "B10: \(state.events - events) events before the write returned")
      try check(
        state.updated?.id == id && state.updated?.value == value,
        "B10: unexpected update \(String(describing: state.updated))")
      try check(array[at] == value, "B10: the array does not show the update")
      return Double(state.time - start) / 1e3
    }

    let warmups = 10
    var samples: [Double] = []
    var floors: [Double] = []
    for round in 0..<(warmups + rounds) {
      let floorTime = try floorCommit(round)
      let writeTime = try write(round)
      if round >= warmups {
        floors.append(floorTime)
        samples.append(writeTime)
      }
    }
    var result = Result(size: size, listStore: samples, floor: floors)
    if options.countStatements {
      // Outside the timing: what the server ran for 100 writes, and for 100 raw commits.
      let writes = 100
      try StatementCounts.reset(database)
      for round in 0..<writes { _ = try write(round) }
      let listStore = try StatementCounts.read(database)
      try StatementCounts.reset(database)
      for round in 0..<writes {
        let value = "\"raw \(round)\""
        try floor.execute("BEGIN")
        try floor.executePrepared("update", [value, String(id)])
        try floor.execute("COMMIT")
      }
      repository.synchronizeObservers()
      let raw = try StatementCounts.read(database)
      result.statements = (listStore, raw, writes)
    }
    let total = array.sections.reduce(0) { $0 + $1.items.count }
    try check(total == size, "B10: the observed list has \(total) items, not \(size)")
    return result
  }
}
