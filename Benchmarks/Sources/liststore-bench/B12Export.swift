import FoundationEssentials
import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// B12: `liststore export` of a 1M-item list against the `sqlite3` shell printing the
/// same rows as JSON, and the exporting process's peak memory.
enum ExportBenchmark {
  /// The shell's query: the list as one JSON object, sections and items in order, built
  /// with `json_group_array`/`json_object` over the ordered rows.
  static func shellQuery(list: String) -> String {
    """
    SELECT json_object('list', l.name, 'sections', (
      SELECT json_group_array(json_object('id', s.id, 'metadata', json(s.metadata), 'items', (
        SELECT json_group_array(json_object('id', i.id, 'value', json(i.value)))
        FROM (SELECT id, value FROM items WHERE section_id = s.id ORDER BY position) i)))
      FROM (SELECT id, metadata FROM sections WHERE list_id = l.id ORDER BY position) s))
    FROM lists l WHERE l.name = '\(list)'
    """
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B12 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    guard let shell = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first(where: isExecutable)
    else { throw BenchError("B12 needs the sqlite3 shell (apt-get install sqlite3)") }
    let count = options.quick ? 100_000 : 1_000_000
    let runs = options.quick ? 3 : 5
    let folder = try ScratchFolder(in: scratch, name: "b12")
    defer { folder.remove() }
    let path = folder.database
    do {
      let repository = try Repository(path: path)
      try Fixtures.makeList(repository, name: "b12", sections: 10, perSection: count / 10)
    }
    // Both print every item, in the same order.
    let exported = try output(of: cli, ["--db", path, "export", "b12"])
    let printed = try output(of: shell, [path, shellQuery(list: "b12")])
    func values(_ text: String) -> [Substring] {
      text.split(separator: "\"value\":").dropFirst().map { $0.prefix { $0 != "}" } }
    }
    let ours = values(exported)
    try check(ours.count == count, "B12: export printed \(ours.count) items, not \(count)")
    try check(ours == values(printed), "B12: export and the shell print different items")

    var peaks: [Double] = []
    let times = try sideBySide(
      warmups: 1, runs: runs,
      subject: {
        let (time, peak) = try timedWithPeak(
          cli, ["--db", path, "export", "b12"], report: folder.path + "/time.txt")
        peaks.append(Double(peak))
        return time
      },
      baseline: { try wallTime(shell, [path, shellQuery(list: "b12")]) })
    let time = Stats(times.subject).scaled(by: 1e3)
    let floor = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / floor.median
    let peak = Stats(Array(peaks.suffix(runs))).scaled(by: 1e-6)
    let label = ObserveBenchmark.label(count)
    let megabytes = format(Double(exported.utf8.count) / 1e6)
    return [
      Row(
        id: "B12", name: "`liststore export` of \(label) items", unit: "ms", value: time,
        baseline: floor, ratio: ratio, target: "≤ 1.5 × the sqlite3 shell", pass: ratio <= 1.5,
        note:
          "output to /dev/null, spawn to exit; baseline: `sqlite3` printing the list with "
          + "json_group_array/json_object over the same ordered rows (\(megabytes) MB of JSON)"
      ),
      Row(
        id: "B12", name: "`liststore export` of \(label) items: peak RSS", unit: "MB",
        value: peak, target: "≤ 200 MB", pass: peak.max <= 200,
        note: "maximum resident set of the process (GNU time's %M), start-up included"),
    ]
  }
}
