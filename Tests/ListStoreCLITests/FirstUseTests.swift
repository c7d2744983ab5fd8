import Foundation
import TestSupport
import Testing

@testable import ListStoreCLI

/// What a new user runs into first: mistyped database paths, misleading errors, help,
/// and output that must say exactly what is stored.
@Suite struct FirstUseTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("first.sqlite") }

  @discardableResult
  func cli(_ arguments: String..., input: String? = nil) throws -> ProcessResult {
    try liststore(arguments, database: db, input: input)
  }

  /// Everything under the test's folder, as relative paths.
  func contents() -> [String] {
    (FileManager.default.subpaths(atPath: folder.path) ?? []).sorted()
  }

  // MARK: - Missing databases

  @Test(arguments: [
    ["show", "x"], ["show", "x", "--json"], ["lists"], ["lists", "--json"], ["watch", "x"],
    ["watch", "x", "--json", "--timeout", "0"], ["export", "x"], ["check"],
    ["backup", "copy.sqlite"],
  ])
  func readCommandsAtAMissingPathCreateNothing(arguments: [String]) throws {
    defer { folder.remove() }
    let path = folder.file("mistyped/folder/db.sqlite")
    let result = try liststore(arguments, database: path)
    expectFailure(
      result, containing: "there is no ListStore database at \(path)", "liststore list create")
    #expect(contents().isEmpty, "\(arguments) left \(contents())")
    // Also in a folder that exists: no file, no -wal, no -shm.
    let beside = folder.file("db.sqlite")
    expectFailure(try liststore(arguments, database: beside), containing: "no ListStore database")
    #expect(contents().isEmpty, "\(arguments) left \(contents())")
  }

  @Test func writeCommandsCreateTheFileAndItsFolders() throws {
    defer { folder.remove() }
    let path = folder.file("new/folder/db.sqlite")
    expectSuccess(try liststore(["list", "create", "a"], database: path))
    #expect(FileManager.default.fileExists(atPath: path))
    #expect(try liststore(["lists"], database: path).lines.last?.hasPrefix("a ") == true)
  }

  // MARK: - Errors that say what is wrong

  /// Without libpq (`$LISTSTORE_LIBPQ` names a file that does not exist), a PostgreSQL
  /// location fails with an error that says to install it, before any connection is
  /// tried; SQLite works as ever.
  @Test func postgreSQLWithoutLibpqSaysToInstallIt() throws {
    defer { folder.remove() }
    let missing = ["LISTSTORE_LIBPQ": folder.file("no/libpq.so.5")]
    let result = try liststore(
      ["lists"], database: "postgresql://nobody:secret@127.0.0.1:1/none", environment: missing)
    expectFailure(
      result, containing: "PostgreSQL needs libpq: install libpq5 (apt install libpq5)",
      folder.file("no/libpq.so.5"))
    #expect(!result.stderr.contains("secret"), "\(result)")
    expectSuccess(try liststore(["demo"], database: db, environment: missing))
  }

  @Test func aDirectoryIsNotADatabase() throws {
    defer { folder.remove() }
    let directory = folder.file("folder")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for arguments in [["lists"], ["list", "create", "a"]] {
      expectFailure(
        try liststore(arguments, database: directory), containing: "\(directory)",
        "it is a directory")
    }
    #expect(contents() == ["folder"])
  }

  @Test func aSystemFileIsNotADatabase() throws {
    defer { folder.remove() }
    for path in ["/proc/version", "/dev/null"]
    where FileManager.default.fileExists(atPath: path) {
      for arguments in [["lists"], ["list", "create", "a"]] {
        let result = try liststore(arguments, database: path)
        expectFailure(result, containing: path)
        #expect(!result.stderr.contains("read-only"), "\(result)")
        #expect(
          result.stderr.contains("is not a SQLite database")
            || result.stderr.contains("cannot hold a database"), "\(result)")
      }
    }
  }

  @Test func anUnreadableFileSaysPermissionDenied() throws {
    defer { folder.remove() }
    expectSuccess(try cli("demo"))
    chmod(folder.path, 0o755)
    chmod(db, 0o000)
    // Root reads any file: run as nobody then.
    let result = try liststoreUnprivileged(["lists"], database: db)
    expectFailure(result, containing: db, "permission denied")
    chmod(db, 0o644)
  }

  @Test func backupIntoAMissingFolderSaysSo() throws {
    defer { folder.remove() }
    expectSuccess(try cli("demo"))
    let target = folder.file("no/such/folder/copy.sqlite")
    expectFailure(
      try cli("backup", target),
      containing: "the folder \(folder.file("no/such/folder")) does not exist")
    #expect(
      contents()
        == ["first.sqlite", "first.sqlite-shm", "first.sqlite-wal"].filter {
          FileManager.default.fileExists(atPath: folder.file($0))
        })
  }

  @Test func backupIntoAFolderAsksForAFileName() throws {
    defer { folder.remove() }
    expectSuccess(try cli("demo"))
    let before = contents()
    expectFailure(
      try cli("backup", folder.path),
      containing: "\(folder.path): it is a folder; name a new file in it, such as "
        + "\(folder.path)/backup.sqlite")
    #expect(contents() == before)
  }

  @Test func aNumberOutOfRangeIsCalledThat() throws {
    defer { folder.remove() }
    expectSuccess(try cli("demo"))
    let before = try #require(fileBytes(db))
    for value in ["1e400", "-1e309", "[1, 2e999]"] {
      let result = try cli("item", "add", "demo", "0", value, "--json")
      expectFailure(result, containing: "is valid JSON but out of range")
      #expect(!result.stderr.contains("not a JSON value"))
    }
    expectFailure(
      try cli("item", "set", "demo", "0:0", "{\"a\": 1e400}", "--json"),
      containing: "the number 1e400 is valid JSON but out of range")
    #expect(fileBytes(db) == before)
    // Syntax errors name the column.
    expectFailure(
      try cli("item", "add", "demo", "0", "[1, 2,]", "--json"),
      containing: "invalid JSON", "at column 7", "no trailing comma")
  }

  // MARK: - Round trips

  @Test func exportThenImportKeepsValuesByteForByte() throws {
    defer { folder.remove() }
    try cli("list", "create", "l")
    try cli("section", "add", "l", "S")
    let values = [
      #"{"name":"kiwi","count":3}"#, #"{"z":1,"a":{"y":[1.50,2E3,-0],"b":"\u00e9"}}"#,
      #"[3,2,1]"#, "1.0", "100000000000000000000",
    ]
    for value in values { expectSuccess(try cli("item", "add", "l", "0", value, "--json")) }
    let exported = try cli("export", "l").stdout
    for value in values { #expect(exported.contains(#""value":"# + value + "}"), "\(value)") }
    expectSuccess(try cli("import", "copy", "-", input: exported))
    let again = try cli("export", "copy").stdout
    // The same bytes but for the ids and the name.
    func stripped(_ text: String) -> String {
      text.replacingOccurrences(of: #""id":[0-9]+,"#, with: "", options: .regularExpression)
        .replacingOccurrences(of: #"{"list":"copy""#, with: #"{"list":"l""#)
    }
    #expect(stripped(again) == stripped(exported))
    #expect(again != exported)
  }

  // MARK: - Help and the command line

  @Test func helpCommandMatchesHelpOption() throws {
    defer { folder.remove() }
    for words in [[], ["item"], ["item", "add"], ["show"], ["counters"], ["counters", "inc"]] {
      let viaCommand = try liststore(["help"] + words, database: nil)
      let viaOption = try liststore(words + ["--help"], database: nil)
      expectSuccess(viaCommand)
      #expect(viaCommand.stdout == viaOption.stdout, "help \(words)")
    }
    // `help help` is help itself.
    let helpHelp = try liststore(["help", "help"], database: nil)
    expectSuccess(helpHelp)
    #expect(helpHelp.stdout == (try liststore(["--help"], database: nil)).stdout)
    let unknown = try liststore(["help", "shwo"], database: nil)
    #expect(unknown.status == 64)
    #expect(unknown.stderr.contains("did you mean 'show'?"))
    #expect(unknown.stdout.isEmpty)
    #expect(contents().isEmpty)
  }

  @Test func versionIsListedAndHasAShortForm() throws {
    defer { folder.remove() }
    let help = try liststore(["--help"], database: nil)
    #expect(help.lines.contains { $0.hasPrefix("  --version") && $0.contains("-V") })
    #expect(help.lines.contains { $0.contains("liststore help <command>") })
    for flag in ["-V", "--version"] {
      let result = try liststore([flag], database: nil)
      expectSuccess(result)
      #expect(result.stdout == "liststore \(ListStoreCommand.version)\n")
    }
  }

  // MARK: - Output that says what is stored

  @Test func countsAreSingularForOne() throws {
    defer { folder.remove() }
    let result = try cli(
      "import", "one", "-", input: #"{"sections":[{"header":"A","items":["x"]}]}"#)
    expectSuccess(result)
    #expect(result.stdout == "imported \"one\": 1 section, 1 item\n")
    let two = try cli(
      "import", "two", "-", input: #"{"sections":[{"header":"A","items":[]},{"header":"B"}]}"#)
    #expect(two.stdout == "imported \"two\": 2 sections, 0 items\n")
  }

  @Test func itemAddReportsTheIndexPathAndId() throws {
    defer { folder.remove() }
    try cli("demo")
    #expect(try cli("item", "add", "demo", "0", "Rome").stdout == "added item 0:3 (id 4)\n")
    #expect(
      try cli("item", "add", "demo", "0", "Oslo", "--at", "1").stdout == "added item 0:1 (id 5)\n")
    try cli("section", "add", "demo", "Empty")
    #expect(try cli("item", "add", "demo", "1", "Lund").stdout == "added item 1:0 (id 6)\n")
  }

  @Test func showTellsStringsFromOtherValues() throws {
    defer { folder.remove() }
    try cli("list", "create", "v")
    try cli("section", "add", "v", "Values")
    try cli("item", "add", "v", "0", "--", "-5")
    try cli("item", "add", "v", "0", "-5", "--json")
    try cli("item", "add", "v", "0", "true")
    try cli("item", "add", "v", "0", "true", "--json")
    try cli("item", "add", "v", "0", "null", "--json")
    try cli("item", "add", "v", "0", "")
    try cli("item", "add", "v", "0", "plain text")
    try cli("item", "add", "v", "0", "\"quoted\"")
    try cli("item", "add", "v", "0", "{\"a\": [1, \"x\"]}", "--json")
    try cli("item", "add", "v", "0", "[not json")
    #expect(
      try cli("show", "v").lines == [
        "v", "  [0] Values",
        #"      0:0  "-5""#,
        "      0:1  -5",
        #"      0:2  "true""#,
        "      0:3  true",
        "      0:4  null",
        #"      0:5  """#,
        "      0:6  plain text",
        #"      0:7  "\"quoted\"""#,
        #"      0:8  {"a":[1,"x"]}"#,
        "      0:9  [not json",
      ])
    #expect(try cli("show", "--help").stdout.contains(#""-5" the"#))
  }

  @Test func listsTableAlignsWideCharacters() throws {
    defer { folder.remove() }
    for name in ["日本語", "🚀x", "abc"] { try cli("list", "create", name) }
    try cli("section", "add", "日本語", "S")
    try cli("item", "add", "日本語", "0", "a")
    // Names in display width: 日本語 takes six cells, 🚀x three.
    #expect(
      try cli("lists").lines == [
        "NAME    SECTIONS  ITEMS",
        "abc            0      0",
        "日本語         1      1",
        "🚀x            0      0",
      ])
  }
}

@Suite struct WrappedHintTests {
  @Test func countersScreenWrapsItsHintToTheWidth() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let harness = try CountersScreenTests.Harness(path: folder.file("hint.sqlite"))
    for columns in [80, 40, 24, 12] {
      harness.size = TerminalSize(rows: 10, columns: columns)
      harness.model.update(size: harness.size)
      let lines = harness.lines
      #expect(lines.count == 10, "\(columns) columns: \(lines)")
      // The screen leaves the last column free; no line of the hint may be cut.
      let hintLines = lines.drop { !$0.hasPrefix("↑/↓") }
      for line in hintLines {
        #expect(Terminal.displayWidth(of: line) <= columns - 1, "\(columns): \(line)")
      }
      let hint = hintLines.joined(separator: "   ")
      #expect(
        hint.contains("+ - change") && hint.contains("d delete") && hint.hasSuffix("q quit"),
        "\(columns): \(lines)")
    }
  }
}
