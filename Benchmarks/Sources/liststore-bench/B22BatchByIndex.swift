import FoundationEssentials
import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// B22: `liststore batch` of `item add` lines that name their section by index
/// (`"section": 0`) against the same lines naming it by id (`"section": "#1"`), into a
/// section that already holds many items. A batch costs the same whichever way it
/// names rows: the index is resolved once per line, never by reading the section.
enum BatchByIndexBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B22 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let existing = options.quick ? 20_000 : 60_000
    let lines = options.quick ? 5_000 : 20_000
    let runs = options.quick ? 2 : 3
    let folder = try ScratchFolder(in: scratch, name: "b22")
    let template = folder.path + "/template.sqlite"
    let byIndex = folder.path + "/by-index.jsonl"
    let byID = folder.path + "/by-id.jsonl"
    defer {
      for file in [byIndex, byID] { unlink(file) }
      removeDatabase(template)
      folder.remove()
    }
    do {
      let repository = try Repository(path: template)
      let list = try repository.createList("b22", metadata: SectionMetadata.self, item: String.self)
      let section = try list.appendSection(SectionMetadata(header: "S"))
      try check(section == 1, "B22: the section's id is \(section), not 1")
      try list.appendItems((0..<existing).map(Fixtures.text), toSection: 0)
    }
    try writeLines(byIndex, count: lines, section: "0")
    try writeLines(byID, count: lines, section: "\"#1\"")

    func batch(_ file: String) throws -> Double {
      removeDatabase(folder.database)
      for suffix in ["", "-wal"] where access(template + suffix, F_OK) == 0 {
        try FileManager.default.copyItem(
          atPath: template + suffix, toPath: folder.database + suffix)
      }
      let time = try wallTime(cli, ["--db", folder.database, "batch", "b22", file])
      let list = try Repository(path: folder.database).list(
        "b22", metadata: RawJSON.self, item: RawJSON.self)
      try check(
        try list.numberOfItems(inSection: 0) == existing + lines, "B22: the batch lost items")
      return time
    }
    let times = try sideBySide(
      warmups: 1, runs: runs, subject: { try batch(byIndex) }, baseline: { try batch(byID) })
    let time = Stats(times.subject).scaled(by: 1e3)
    let floor = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / floor.median
    return [
      Row(
        id: "B22",
        name: "`liststore batch` of \(lines) adds by section index into \(existing) items",
        unit: "ms", value: time, baseline: floor, ratio: ratio, target: "≤ 1.3 × by id",
        pass: ratio <= 1.3,
        note:
          "`{\"op\":\"item add\",\"section\":0,…}` lines, spawn to exit; baseline: the same "
          + "lines with `\"section\":\"#1\"`, into a copy of the same database")
    ]
  }

  /// Writes `count` `item add` lines naming their section as `section`.
  static func writeLines(_ path: String, count: Int, section: String) throws {
    guard let file = fopen(path, "w") else { throw BenchError("cannot write \(path)") }
    defer { fclose(file) }
    for n in 0..<count {
      fputs(
        #"{"op":"item add","section":\#(section),"value":"\#(Fixtures.text(n))"}"# + "\n", file)
    }
  }
}
