import CLibPQBench
import CSQLiteBench
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `liststore-bench [--quick] [--json FILE] [--only B1,B3] [--cli PATH]`: the benchmarks
/// of issues 7 (B1–B7, SQLite), 11 (B8–B10, PostgreSQL) and later ones (B11–B22), each
/// beside its baseline; see BENCHMARKS.md.
enum Main {
  static let usage =
    "usage: liststore-bench [--quick] [--json FILE] [--only B1,B3,...] [--cli PATH] "
    + "[--b1-items N] [--b2-sizes 1000,1000000] [--b2-rounds N] [--b9-items N] [--b10-sizes 1000,1000000] "
    + "[--b19-rounds N] [--pg-tcp] [--pg-tcp-delay MICROSECONDS] "
    + "[--pg-statements]"

  static let benchmarks: [(id: String, run: @Sendable (Options, String) throws -> [Row])] = [
    ("B1", InsertBenchmark.run),
    ("B2", ObserveBenchmark.run),
    ("B3", CrossProcessBenchmark.run),
    ("B4", LoadBenchmark.run),
    ("B5", DiffBenchmark.run),
    ("B6", ReactiveBenchmark.run),
    ("B7", CLIBenchmark.run),
    ("B8", PostgresCrossProcessBenchmark.run),
    ("B9", PostgresInsertBenchmark.run),
    ("B10", PostgresObserveBenchmark.run),
    ("B11", ImportBenchmark.run),
    ("B12", ExportBenchmark.run),
    ("B13", ReplaceBenchmark.run),
    ("B14", LargeLogBenchmark.run),
    ("B15", ObserverMemoryBenchmark.run),
    ("B16", ServerLatencyBenchmark.run),
    ("B17", ServerFanOutBenchmark.run),
    ("B17B", ManyStreamsBenchmark.run),
    ("B18", ServerBatchBenchmark.run),
    ("B19", DerivedBenchmark.run),
    ("B20", RemoteWatchBenchmark.run),
    ("B21", ResynchroniseBenchmark.run),
    ("B22", BatchByIndexBenchmark.run),
    ("B27", AttackedHealthBenchmark.run),
  ]

  static func main(_ arguments: [String]) -> Int32 {
    // Hidden modes: the children of B3, B4, B8 and B15.
    do {
      switch arguments.first {
      case "--writer":
        try CrossProcessBenchmark.writerMain(Array(arguments.dropFirst()))
        return 0
      case "--load-child":
        try LoadBenchmark.childMain(Array(arguments.dropFirst()))
        return 0
      case "--pg-writer":
        try PostgresCrossProcessBenchmark.writerMain(Array(arguments.dropFirst()))
        return 0
      case "--fanout-floor":
        try FanOutFloor.main(Array(arguments.dropFirst()))
        return 0
      case "--b15-observer":
        try ObserverMemoryBenchmark.observerMain(Array(arguments.dropFirst()))
        return 0
      default: break
      }
    } catch {
      printError("error: \(error)\n")
      return 1
    }
    guard let options = parse(arguments) else {
      printError(usage + "\n")
      return 64
    }
    return run(options)
  }

  static func parse(_ arguments: [String]) -> Options? {
    var options = Options()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--quick": options.quick = true
      case "--json":
        guard let path = rest.popFirst() else { return nil }
        options.jsonPath = path
      case "--cli":
        guard let path = rest.popFirst() else { return nil }
        options.cliPath = path
      case "--b1-items":
        guard let count = rest.popFirst().flatMap({ Int($0) }), count >= 10 else { return nil }
        options.b1Items = count
      case "--b2-sizes":
        guard let list = rest.popFirst() else { return nil }
        let sizes = list.split(separator: ",").compactMap { Int($0) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 10 }) else { return nil }
        options.b2Sizes = sizes
      case "--b2-rounds":
        guard let text = rest.popFirst(), let count = Int(text), count > 0 else { return nil }
        options.b2Rounds = count
      case "--b19-rounds":
        guard let text = rest.popFirst(), let count = Int(text), count > 0 else { return nil }
        options.b19Rounds = count
      case "--b9-items":
        guard let count = rest.popFirst().flatMap({ Int($0) }), count >= 10 else { return nil }
        options.b9Items = count
      case "--b10-sizes":
        guard let list = rest.popFirst() else { return nil }
        let sizes = list.split(separator: ",").compactMap { Int($0) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 10 }) else { return nil }
        options.b10Sizes = sizes
      case "--pg-statements": options.countStatements = true
      case "--pg-tcp": options.postgresOverTCP = true
      case "--pg-tcp-delay":
        guard let text = rest.popFirst(), let delay = Int(text), delay >= 0 else { return nil }
        options.postgresDelay = delay
      case "--only":
        guard let list = rest.popFirst() else { return nil }
        let ids = Set(list.split(separator: ",").map { $0.uppercased() })
        guard ids.isSubset(of: benchmarks.map(\.id)) else { return nil }
        options.only = ids
      default: return nil
      }
    }
    return options
  }

  static func run(_ options: Options) -> Int32 {
    let started = monotonicNanoseconds()
    let loadAtStart = Report.loadAverage()
    let scratch: String
    do {
      scratch = try makeScratchFolder()
    } catch {
      printError("error: \(error)\n")
      return 1
    }
    defer { rmdir(scratch) }
    var rows: [Row] = []
    for benchmark in benchmarks where options.only?.contains(benchmark.id) ?? true {
      printError("\(benchmark.id)…")
      let start = monotonicNanoseconds()
      do {
        rows += try benchmark.run(options, scratch)
      } catch {
        rows.append(
          Row(id: benchmark.id, name: "failed to run", unit: "", target: "", error: "\(error)"))
      }
      printError(" \(format(Double(monotonicNanoseconds() - start) / 1e9)) s\n")
    }
    var machine = Report.currentMachine(sqlite: String(cString: sqlite3_libversion()))
    let libpq = Int(PQlibVersion())
    machine.libpq = "\(libpq / 10_000).\(libpq % 10_000)"
    machine.loadAverage = [loadAtStart, Report.loadAverage()]
    let report = Report(
      mode: options.quick ? "quick" : "full", commit: commit(), machine: machine,
      seconds: Double(monotonicNanoseconds() - started) / 1e9, rows: rows)
    print(report.table)
    let jsonPath = options.jsonPath ?? defaultJSONPath(quick: options.quick)
    do {
      try report.write(to: jsonPath)
      print(
        "\nJSON: \(jsonPath) (\(report.mode) run, \(format(report.seconds)) s; load average "
          + "\(machine.loadAverage.joined(separator: " → ")))")
    } catch {
      printError("error: \(error)\n")
      return 1
    }
    return rows.contains { $0.error != nil } ? 1 : 0
  }

  /// `Benchmarks/.build/liststore-bench-{quick,full}.json` beside the build, else in the
  /// current folder.
  static func defaultJSONPath(quick: Bool) -> String {
    let name = "liststore-bench-\(quick ? "quick" : "full").json"
    let me = executablePath()
    guard let range = me.firstRange(of: "/Benchmarks/.build/") else { return name }
    return me[..<range.upperBound] + name
  }

  /// The commit of the root package being measured, if `git` can tell.
  static func commit() -> String? {
    let me = executablePath()
    guard let range = me.firstRange(of: "/Benchmarks/.build/"), isExecutable("/usr/bin/git") else {
      return nil
    }
    let root = String(me[..<range.lowerBound])
    guard let head = try? output(of: "/usr/bin/git", ["-C", root, "rev-parse", "HEAD"]) else {
      return nil
    }
    let dirty = (try? output(of: "/usr/bin/git", ["-C", root, "status", "--porcelain"])) ?? ""
    return trimmed(head) + (dirty.isEmpty ? "" : "-dirty")
  }
}

exit(Main.main(Array(CommandLine.arguments.dropFirst())))
