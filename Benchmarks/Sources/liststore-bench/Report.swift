import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// The results of one run: the table printed, and the JSON written.
struct Report: Encodable {
  var mode: String
  var commit: String?
  var machine: Machine
  var seconds: Double
  var rows: [Row]

  struct Machine: Encodable {
    var cpu: String
    var cores: Int
    var sqlite: String
    /// libpq's version (the server's is the same major version, from Debian's packages).
    var libpq: String = ""
    /// `/proc/loadavg` when the run started and when it ended: other work on the
    /// machine shows here.
    var loadAverage: [String] = []
  }

  /// The table, as Markdown, ratios first, with each row's note below it.
  var table: String {
    var lines = [
      "| # | measurement | ratio | target | result | ListStore median (min – max) "
        + "| baseline median (min – max) |",
      "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    var notes: [String] = []
    for row in rows {
      let result =
        row.error != nil
        ? "ERROR"
        : row.skipped != nil ? "SKIPPED" : row.pass.map { $0 ? "PASS" : "MISS" } ?? "—"
      lines.append(
        "| \(row.id) | \(row.name) | \(row.ratio.map { format($0) + " ×" } ?? "—") | "
          + "\(row.target.isEmpty ? "—" : row.target) | \(result) | "
          + "\(figure(row.value, row.unit)) | \(figure(row.baseline, row.unit)) |")
      if let error = row.error {
        notes.append("* \(row.id) \(row.name): **error**: \(error)")
      } else if let skipped = row.skipped {
        notes.append("* \(row.id) \(row.name): **skipped**: \(skipped)")
      } else if !row.note.isEmpty {
        notes.append("* \(row.id) \(row.name): \(row.note)")
      }
    }
    return (lines + [""] + notes).joined(separator: "\n")
  }

  private func figure(_ stats: Stats?, _ unit: String) -> String {
    guard let stats else { return "—" }
    return "\(format(stats.median)) \(unit) (\(format(stats.min)) – \(format(stats.max)))"
  }

  /// Writes the JSON to `path`.
  func write(to path: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    let data = try encoder.encode(self)
    guard let file = fopen(path, "w") else {
      throw BenchError("cannot write \(path): \(errnoText())")
    }
    defer { fclose(file) }
    let written = data.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    try check(written == data.count, "cannot write \(path): \(errnoText())")
  }

  /// The first three fields of `/proc/loadavg`.
  static func loadAverage() -> String {
    guard let file = fopen("/proc/loadavg", "r") else { return "" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 128)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
    let text = String(
      decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return text.split(separator: " ").prefix(3).joined(separator: " ")
  }

  /// The machine this runs on: CPU model and online cores.
  static func currentMachine(sqlite: String) -> Machine {
    var cpu = "unknown"
    if let file = fopen("/proc/cpuinfo", "r") {
      defer { fclose(file) }
      var line: UnsafeMutablePointer<CChar>?
      var capacity = 0
      defer { free(line) }
      while getline(&line, &capacity, file) > 0, let line {
        let text = String(cString: line)
        if text.hasPrefix("model name"), let colon = text.firstIndex(of: ":") {
          cpu = trimmed(text[text.index(after: colon)...])
          break
        }
      }
    }
    return Machine(cpu: cpu, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), sqlite: sqlite)
  }
}
