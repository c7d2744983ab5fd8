import CSQLiteBench
import ListStore
import Observable2D

/// B4: `observe()` of a big list (time to the first full array, peak memory) against an
/// ordered scan of the same rows into plain structs. Each load runs in a child process
/// (this executable's hidden `--load-child` mode), so that its peak RSS is its own.
enum LoadBenchmark {
  /// One item row as the baseline keeps it.
  struct PlainItem {
    var id: Int64
    var position: String
    var value: String
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let size = options.quick ? 100_000 : 1_000_000
    let runs = options.quick ? 3 : 5
    let folder = try ScratchFolder(in: scratch, name: "b4")
    defer { folder.remove() }
    let path = folder.database
    do {
      let repository = try Repository(path: path)
      try Fixtures.makeList(repository, name: "b4", sections: 10, perSection: size / 10)
    }
    let me = executablePath()
    var peaks: (observe: [Double], scan: [Double]) = ([], [])
    func load(_ mode: String) throws -> Double {
      let fields = try output(of: me, ["--load-child", mode, path, "b4"])
        .split(whereSeparator: { $0 == " " || $0 == "\n" })
      guard fields.count == 3, let time = Double(fields[0]), let peak = Double(fields[1]),
        let items = Int(fields[2])
      else { throw BenchError("B4: the \(mode) child printed \(fields)") }
      try check(items == size, "B4: the \(mode) child loaded \(items) items, not \(size)")
      if mode == "observe" {
        peaks.observe.append(peak / 1e6)
      } else {
        peaks.scan.append(peak / 1e6)
      }
      return time
    }
    let times = try sideBySide(
      warmups: 1, runs: runs, subject: { try load("observe") }, baseline: { try load("scan") })
    let time = Stats(times.subject).scaled(by: 1e3)
    let scan = Stats(times.baseline).scaled(by: 1e3)
    let memory = Stats(Array(peaks.observe.suffix(runs)))
    let scanMemory = Stats(Array(peaks.scan.suffix(runs)))
    let label = ObserveBenchmark.label(size)
    return [
      Row(
        id: "B4", name: "observe() of \(label) items: first full array", unit: "ms", value: time,
        baseline: scan, ratio: time.median / scan.median, target: "≤ 1.5 × ordered C-API scan",
        pass: time.median <= 1.5 * scan.median,
        note: "each load in its own child process; String items of 27–33 bytes"),
      Row(
        id: "B4", name: "observe() of \(label) items: peak RSS", unit: "MB", value: memory,
        baseline: scanMemory, ratio: memory.max / scanMemory.max, target: "≤ 400 MB",
        pass: memory.max <= 400,
        note: "VmHWM of the child process, its start-up included"),
    ]
  }

  /// The child: `--load-child observe|scan DB LIST`; prints `seconds peak-bytes items`.
  static func childMain(_ arguments: [String]) throws {
    guard arguments.count == 3 else { throw BenchError("usage: --load-child MODE DB LIST") }
    let (mode, path, name) = (arguments[0], arguments[1], arguments[2])
    var items = 0
    let time: Double
    switch mode {
    case "observe":
      let repository = try Repository(path: path)
      let list = try repository.list(name, metadata: SectionMetadata.self, item: String.self)
      var array: Observable2DArray<SectionMetadata, String>?
      time = try seconds { array = try list.observe() }
      items = array?.sections.reduce(0) { $0 + $1.items.count } ?? 0
    case "scan":
      var sections: [(id: Int64, items: [PlainItem])] = []
      time = try seconds { sections = try scan(path: path, list: name) }
      items = sections.reduce(0) { $0 + $1.items.count }
    default:
      throw BenchError("unknown load mode \(mode)")
    }
    print(time, peakResidentBytes(), items)
  }

  /// Every section's items in order, read with one ordered join over the C API.
  static func scan(path: String, list: String) throws -> [(id: Int64, items: [PlainItem])] {
    let db = try RawDatabase(path: path, readOnly: true)
    let statement = try db.prepare(
      """
      SELECT s.id, i.id, i.position, i.value
      FROM lists l JOIN sections s ON s.list_id = l.id LEFT JOIN items i ON i.section_id = s.id
      WHERE l.name = ? ORDER BY s.position, i.position
      """)
    defer { sqlite3_finalize(statement) }
    sqlite3_bind_text(statement, 1, list, -1, bench_sqlite_transient())
    var sections: [(id: Int64, items: [PlainItem])] = []
    while true {
      let status = sqlite3_step(statement)
      guard status == SQLITE_ROW else {
        guard status == SQLITE_DONE else { throw BenchError("scan: \(db.message)") }
        break
      }
      let section = sqlite3_column_int64(statement, 0)
      if sections.last?.id != section { sections.append((section, [])) }
      if sqlite3_column_type(statement, 1) != SQLITE_NULL {
        sections[sections.count - 1].items.append(
          PlainItem(
            id: sqlite3_column_int64(statement, 1), position: columnText(statement, 2),
            value: columnText(statement, 3)))
      }
    }
    return sections
  }
}
