import Foundation
import ListStore
import Synchronization
import TestSupport
import Testing

/// Random and malformed input never crashes anything and changes nothing it should not.
@Suite struct HostileInputTests {
  static let words = [
    "list", "lists", "create", "rm", "rename", "section", "add", "move", "set", "item", "show",
    "export",
    "import", "demo", "check", "backup", "watch", "counters", "inc", "dec", "help", "--json",
    "--at",
    "--footer", "--header", "--no-footer", "--db", "--max-events", "--timeout", "--list", "--help",
    "-h",
    "--", "-", "--at=3", "--json=1", "--bogus", "-x", "demo", "nope", "0", "1", "2", "-1", "3.5",
    "99999999999999999999", "0:0", "0:1", "1:0", "0:", ":0", "x:y", "", "   ",
    "'; DROP TABLE lists; --",
    "\u{1F680}", "é", "{\"a\":1}", "[1,", "null", "\u{7}bell", "\u{1B}[2J", "Ünïcödé-名前",
  ]

  /// Seeded random command lines: every run exits 0, 1 or 64, and every failure says
  /// `error: …` first.
  @Test func randomCommandLinesNeverCrashTheCLI() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("fuzz.sqlite")
    _ = try liststore(["demo"], database: db)
    let seed = testSeed(81)
    let total = scaled(2000)
    let problems = Mutex<[String]>([])
    let counts = Mutex<[Int32: Int]>([:])
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
      var random = SeededGenerator(seed: seed &+ UInt64(worker))
      for _ in 0..<(total / 4) {
        var arguments = (0..<Int.random(in: 0...6, using: &random)).map { _ in
          Self.words.randomElement(using: &random) ?? ""
        }
        // Keep long-running commands short; everything else goes as drawn.
        if arguments.contains("watch") { arguments += ["--timeout", "0.05"] }
        let useDB = Int.random(in: 0..<8, using: &random) != 0
        do {
          let result = try run(
            liststoreBinary, (useDB ? ["--db", db] : []) + arguments,
            environment: ["LISTSTORE_DB": folder.file("default.sqlite")],
            workingDirectory: folder.path)
          counts.withLock { $0[result.status, default: 0] += 1 }
          let firstError = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
          let fine: Bool
          switch result.status {
          case 0: fine = result.stderr.isEmpty || result.stderr.hasPrefix("liststore: ")
          case 1, 64:
            fine = firstError.hasPrefix("error: ") && !result.stderr.contains("Fatal error")
          default: fine = false
          }
          if !fine { problems.withLock { $0.append("\(arguments): \(result)") } }
        } catch {
          problems.withLock { $0.append("\(arguments): \(error)") }
        }
      }
    }
    #expect(
      problems.withLock { $0 }.isEmpty, "seed \(seed): \(problems.withLock { Array($0.prefix(5)) })"
    )
    let seen = counts.withLock { $0 }
    #expect(
      seen[0, default: 0] > 0 && seen[1, default: 0] > 0 && seen[64, default: 0] > 0, "\(seen)")
    #expect(try Repository(path: db).check().isEmpty)
  }

  /// Truncated, deeply nested, oversized, mistyped and duplicated import files: each is
  /// refused with one error line and the database stays byte for byte the same, or,
  /// when it is valid after all, imported whole.
  @Test func malformedImportFilesAreRefusedAndChangeNothing() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("import.sqlite")
    _ = try liststore(["demo"], database: db)
    let valid = try liststore(["export", "demo"], database: db).stdout
    var random = SeededGenerator(seed: testSeed(82))
    var files: [(String, Data)] = []
    for cut in (0..<40).map({ _ in Int.random(in: 0..<(valid.utf8.count - 2), using: &random) }) {
      files.append(("truncated at \(cut)", Data(valid.utf8.prefix(cut))))
    }
    let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    files.append(
      (
        "deeply nested",
        Data("{\"sections\":[{\"header\":\"A\",\"items\":[{\"value\":\(deep)}]}]}".utf8)
      ))
    let nested = String(repeating: "[", count: 3000) + String(repeating: "]", count: 3000)
    files.append(
      (
        "nested past SQLite's JSON depth",
        Data("{\"sections\":[{\"header\":\"A\",\"items\":[{\"value\":\(nested)}]}]}".utf8)
      ))
    files.append(
      (
        "a huge string",
        Data(
          "{\"sections\":[{\"header\":\"A\",\"items\":[{\"value\":\"\(String(repeating: "é", count: 3_000_000))\"}]}]}"
            .utf8)
      ))
    files.append(
      (
        "a huge header",
        Data("{\"sections\":[{\"header\":\"\(String(repeating: "x", count: 2_000_000))\"}]}".utf8)
      ))
    for (name, text) in [
      ("wrong type of sections", #"{"sections":{"header":"A"}}"#),
      ("wrong type of items", #"{"sections":[{"header":"A","items":"x"}]}"#),
      ("number as header", #"{"sections":[{"header":1}]}"#),
      ("id as a string", #"{"sections":[{"header":"A","items":[{"id":"1","value":1}]}]}"#),
      (
        "duplicate item ids",
        #"{"sections":[{"header":"A","items":[{"id":1,"value":1},{"id":1,"value":2}]}]}"#
      ),
      ("duplicate section ids", #"{"sections":[{"id":2,"header":"A"},{"id":2,"header":"B"}]}"#),
      ("an array", "[]"), ("null", "null"), ("empty", ""),
      ("a BOM and garbage", "\u{FEFF}{garbage"),
      ("invalid UTF-8", "{\"sections\":[{\"header\":\"\u{FFFD}\"}]}"),
    ] {
      files.append((name, Data(text.utf8)))
    }
    var bytes = [UInt8](Data("{\"sections\":[{\"header\":\"".utf8))
    bytes += [0xC3, 0x28, 0xFF, 0xFE, 0x00]
    bytes += Array("\"}]}".utf8)
    files.append(("invalid UTF-8 bytes", Data(bytes)))
    for index in 0..<10 {
      files.append(
        (
          "random bytes \(index)",
          Data(
            (0..<Int.random(in: 1...5000, using: &random)).map { _ in
              UInt8.random(in: 0...255, using: &random)
            })
        ))
    }

    for (index, (name, content)) in files.enumerated() {
      let file = folder.file("import-\(index).json")
      try content.write(to: URL(fileURLWithPath: file))
      let before = try #require(fileBytes(db))
      let result = try liststore(["import", "imported \(index)", file], database: db)
      switch result.status {
      case 0:
        let exported = try liststore(["export", "imported \(index)"], database: db)
        #expect(exported.status == 0, "\(name): imported, then \(exported)")
      case 1:
        #expect(
          result.stderr.hasPrefix("error: cannot import")
            || result.stderr.hasPrefix("error: invalid JSON"),
          "\(name): \(result.stderr.prefix(300))")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(name)")
        #expect(fileBytes(db) == before, "\(name) changed the database")
      default:
        Issue.record("\(name): \(result.status) \(result.stderr.prefix(300))")
      }
    }
    #expect(try Repository(path: db).check().isEmpty)
  }

  /// Random bytes given as the database: refused with one error line, left as they were.
  @Test func randomBytesAsTheDatabaseAreRefusedAndLeftAlone() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    var random = SeededGenerator(seed: testSeed(83))
    for index in 0..<scaled(30) {
      let path = folder.file("random-\(index).sqlite")
      var bytes = (0..<Int.random(in: 1...70_000, using: &random)).map { _ in
        UInt8.random(in: 0...255, using: &random)
      }
      // Every third file: a valid header, then garbage.
      if index % 3 == 0 { bytes = Array("SQLite format 3\0".utf8) + bytes }
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      for arguments in [
        ["lists"], ["list", "create", "x"], ["watch", "x", "--timeout", "0"], ["check"],
      ] {
        let result = try liststore(arguments, database: path)
        #expect(result.status == 1, "\(index) \(arguments): \(result)")
        #expect(
          result.stderr.hasPrefix("error: ") && result.stderr.split(separator: "\n").count == 1,
          "\(result)")
      }
      #expect(fileBytes(path) == Data(bytes), "file \(index) was changed")
      #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }
  }

  /// Names and values made of SQL, quotes, control characters (no NUL) and long
  /// non-ASCII text come back exactly as given.
  @Test func hostileTextRoundTripsVerbatim() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let db = folder.file("text.sqlite")
    var random = SeededGenerator(seed: testSeed(84))
    let pieces = [
      "'", "\"", "\\", ";", "--", "/*", "*/", "DROP TABLE lists", "%", "_", "\t", "\n", "\r",
      "\u{1}", "\u{1F}",
      "\u{7F}", "\u{85}", "\u{2028}", "é", "名", "🚀", "👩‍👩‍👧", "\u{301}", "{", "}", "[", "]", ":", ",",
      " ",
    ]
    func text(_ length: Int) -> String {
      (0..<length).map { _ in pieces.randomElement(using: &random) ?? "" }.joined()
    }
    // A name is one line without control characters or white space at its end;
    // values and headers hold anything.
    func oneLine(_ length: Int) -> String {
      var name = String(
        text(length).unicodeScalars.filter { !(0x00...0x1F ~= $0.value || 0x7F...0x9F ~= $0.value) }
          .map(Character.init))
      while name.last?.isWhitespace == true { name.removeLast() }
      return name
    }
    #expect(try liststore(["list", "create", "--", "a\tb"], database: db).status == 1)
    // Through the CLI.
    for round in 0..<scaled(12) {
      let name = "n\(round)" + oneLine(Int.random(in: 1...20, using: &random))
      let header = text(Int.random(in: 0...30, using: &random))
      let value = text(Int.random(in: 0...200, using: &random)) + (round == 0 ? text(3000) : "")
      #expect(try liststore(["list", "create", "--", name], database: db).status == 0)
      #expect(try liststore(["section", "add", "--", name, header], database: db).status == 0)
      #expect(try liststore(["item", "add", "--", name, "0", value], database: db).status == 0)
      let shown = try liststore(["show", name, "--json"], database: db)
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
      let section = (object["sections"] as? [[String: Any]])?.first
      #expect(object["list"] as? String == name)
      #expect(section?["header"] as? String == header)
      #expect((section?["items"] as? [[String: Any]])?.first?["value"] as? String == value)
    }
    // Through the repository, many more.
    let repository = try Repository(path: db)
    let list = try repository.createList("texts", metadata: String.self, item: String.self)
    try list.appendSection("S")
    var values: [String] = []
    for _ in 0..<scaled(300) {
      let value = text(Int.random(in: 0...100, using: &random))
      values.append(value)
      try list.appendItem(value, toSection: 0)
    }
    let stored = try repository.list("texts", metadata: String.self, item: String.self).observe()
      .sections[0].items
    #expect(Array(stored) == values)
  }
}
