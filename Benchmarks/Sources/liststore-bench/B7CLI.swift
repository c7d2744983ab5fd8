import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// B7: `liststore item add` as a whole process, against the `sqlite3` shell doing the
/// equivalent INSERT on the same file.
enum CLIBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = locateCLI(options) else {
      throw BenchError(
        "B7 needs the release CLI: run `swift build -c release` in the root package, "
          + "or pass --cli PATH")
    }
    guard let shell = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first(where: isExecutable)
    else { throw BenchError("B7 needs the sqlite3 shell (apt-get install sqlite3)") }
    let folder = try ScratchFolder(in: scratch, name: "b7")
    defer { folder.remove() }
    let path = folder.database
    let perSection = 10_000
    let sectionID: Int64
    do {
      let repository = try Repository(path: path)
      let list = try Fixtures.makeList(
        repository, name: "b7", sections: 10, perSection: perSection)
      sectionID = try list.sectionID(at: 1)
    }
    let runs = options.quick ? 10 : 60
    // The CLI appends to section 0; the shell to section 1, with the next integer key.
    var shellRows = perSection
    let times = try sideBySide(
      warmups: 3, runs: runs,
      subject: {
        try wallTime(cli, ["--db", path, "item", "add", "b7", "0", "benchmark item"])
      },
      baseline: {
        defer { shellRows += 1 }
        return try wallTime(
          shell,
          [
            path,
            "INSERT INTO items(section_id, position, value) VALUES (\(sectionID), "
              + "'\(Fixtures.positionKey(shellRows))', '\"benchmark item\"')",
          ])
      })
    let added = try Repository(path: path).list(
      "b7", metadata: SectionMetadata.self, item: String.self)
    let counts = (try added.numberOfItems(inSection: 0), try added.numberOfItems(inSection: 1))
    try check(
      counts.0 == counts.1,
      "B7: the CLI and the shell did not add the same number of items")
    let time = Stats(times.subject).scaled(by: 1e3)
    let baseline = Stats(times.baseline).scaled(by: 1e3)
    let ratio = time.median / baseline.median
    let libraries = (try? output(of: "/usr/bin/ldd", [cli])) ?? ""
    let foundation =
      libraries.contains("libFoundation.so")
      ? "links full Foundation (libFoundation.so)"
      : libraries.contains("libFoundationEssentials.so")
        ? "links FoundationEssentials only, not full Foundation" : "no Foundation library linked"
    return [
      Row(
        id: "B7", name: "`liststore item add` on 100k items, spawn to exit", unit: "ms",
        value: time, baseline: baseline, ratio: ratio, target: "≤ 2 × the sqlite3 shell",
        pass: ratio <= 2, note: "\(cli): \(foundation)")
    ]
  }

  /// `--cli`, else the root package's `.build/release/liststore` (found from this
  /// executable's path), else `liststore` beside this executable, else one under the
  /// current folder.
  static func locateCLI(_ options: Options) -> String? {
    if let path = options.cliPath { return path }
    let me = executablePath()
    var candidates: [String] = []
    if let range = me.firstRange(of: "/Benchmarks/.build/") {
      candidates.append(me[..<range.lowerBound] + "/.build/release/liststore")
    }
    if let slash = me.lastIndex(of: "/") { candidates.append(me[..<slash] + "/liststore") }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    if getcwd(&buffer, buffer.count) != nil {
      let folder = String(
        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      candidates.append(folder + "/.build/release/liststore")
      candidates.append(folder + "/../.build/release/liststore")
    }
    return candidates.first(where: isExecutable)
  }
}
