import CSQLiteBench
import FoundationEssentials
import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// B11: `liststore import` of a file of 1M items in 10 sections (the form `export`
/// writes), against `StoredList.appendItems(bySection:)` of the same items in the same
/// run; and the importing process's peak memory against the file's size.
enum ImportBenchmark {
  static let sections = 10

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B11 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let count = options.quick ? 100_000 : 1_000_000
    let runs = options.quick ? 2 : 3
    let perSection = count / sections
    let folder = try ScratchFolder(in: scratch, name: "b11")
    let file = folder.path + "/import.json"
    defer {
      unlink(file)
      folder.remove()
    }
    let size = try writeFile(file, perSection: perSection)
    let path = folder.database
    let strings = (0..<perSection).map(Fixtures.text)
    var peaks: [Double] = []

    let rates = try sideBySide(
      warmups: 1, runs: runs,
      subject: {
        try freshDatabase(path)
        let (time, peak) = try timedWithPeak(
          cli, ["--db", path, "import", "b11", file], report: folder.path + "/time.txt")
        peaks.append(Double(peak))
        let list = try Repository(path: path).list(
          "b11", metadata: RawJSON.self, item: RawJSON.self)
        try check(
          try list.numberOfSections() == sections
            && list.numberOfItems(inSection: sections - 1) == perSection,
          "B11: the import lost items")
        return Double(count) / time
      },
      baseline: {
        // B1's subject: the typed API, one transaction for all sections.
        try freshDatabase(path)
        let repository = try Repository(path: path)
        let list = try repository.createList(
          "b11", metadata: SectionMetadata.self, item: String.self)
        for section in 0..<sections {
          try list.appendSection(SectionMetadata(header: "S\(section)"))
        }
        let batches = Dictionary(uniqueKeysWithValues: (0..<sections).map { ($0, strings) })
        let time = try seconds { try list.appendItems(bySection: batches) }
        return Double(count) / time
      })
    removeDatabase(path)
    let rate = Stats(rates.subject).scaled(by: 1e-6)
    let floor = Stats(rates.baseline).scaled(by: 1e-6)
    let ratio = rate.median / floor.median
    let peak = Stats(Array(peaks.suffix(runs))).scaled(by: 1e-6)
    let fileMB = Double(size) / 1e6
    let label = ObserveBenchmark.label(count)
    return [
      Row(
        id: "B11", name: "`liststore import` of \(label) items (\(sections) sections)",
        unit: "M rows/s", value: rate, baseline: floor, ratio: ratio,
        target: "≥ 0.8 × appendItems(bySection:)", pass: ratio >= 0.8,
        note:
          "a \(format(fileMB)) MB file as `export` writes it, spawn to exit, into an empty "
          + "database; baseline: B1's appendItems(bySection:) of the same strings"),
      Row(
        id: "B11", name: "`liststore import` of \(label) items: peak RSS", unit: "MB",
        value: peak, ratio: peak.max / fileMB, target: "≤ 2 × the file (\(format(fileMB)) MB)",
        pass: peak.max <= 2 * fileMB,
        note: "maximum resident set of the process (GNU time's %M), start-up included"),
    ]
  }

  /// Writes the import file, a section at a time; returns its size in bytes.
  static func writeFile(_ path: String, perSection: Int) throws -> Int {
    guard let file = fopen(path, "w") else { throw BenchError("cannot write \(path)") }
    defer { fclose(file) }
    var size = 0
    func put(_ text: String) {
      fputs(text, file)
      size += text.utf8.count
    }
    put(#"{"list":"b11","sections":["#)
    var id = 0
    for section in 0..<sections {
      put(
        (section == 0 ? "" : ",")
          + #"{"id":\#(section + 1),"header":"S\#(section)","footer":null,"items":["#)
      var chunk = ""
      for row in 0..<perSection {
        id += 1
        chunk += (row == 0 ? "" : ",") + #"{"id":\#(id),"value":"\#(Fixtures.text(row))"}"#
        if chunk.utf8.count > 1 << 16 {
          put(chunk)
          chunk = ""
        }
      }
      put(chunk + "]}")
    }
    put("]}\n")
    return size
  }

  /// An empty, migrated database at `path` (the CLI writes into it as into any).
  static func freshDatabase(_ path: String) throws {
    removeDatabase(path)
    _ = try Repository(path: path)
  }
}

/// Runs a program to its end under GNU time; returns the wall time from just before the
/// spawn to just after the wait, and the program's peak resident set in bytes.
///
/// GNU time forks (not vfork) and waits for its child, so the peak is the program's
/// own; `ru_maxrss` of a child spawned from here would start at this process's.
/// GNU time writes its report to `report`, which is deleted afterwards.
func timedWithPeak(_ path: String, _ arguments: [String], report: String) throws -> (Double, Int) {
  guard isExecutable("/usr/bin/time") else {
    throw BenchError("peak memory needs GNU time (apt-get install time)")
  }
  defer { unlink(report) }
  let time = try wallTime("/usr/bin/time", ["-f", "%M", "-o", report, path] + arguments)
  let text = String(decoding: FileManager.default.contents(atPath: report) ?? Data(), as: UTF8.self)
  guard let kilobytes = Int(trimmed(text.split(separator: "\n").last ?? ""))
  else { throw BenchError("GNU time (/usr/bin/time) reported no peak memory for \(path)") }
  return (time, kilobytes * 1024)
}
