import Foundation
import TestSupport
import Testing

/// The built `liststore` binary, run as a process: standard output, standard error,
/// exit status and the database afterwards.
@Suite struct CLITests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("cli.sqlite") }

  @discardableResult
  func cli(_ arguments: String..., input: String? = nil) throws -> ProcessResult {
    try liststore(arguments, database: db, input: input)
  }

  @Test func demoBuildsTheSeedExample() throws {
    defer { folder.remove() }
    let result = try cli("demo")
    expectSuccess(result)
    #expect(result.stdout.contains("0:2  Copenhagen"))
    let shown = try cli("show", "demo", "--json")
    expectSuccess(shown)
    #expect(
      shown.stdout == """
        {"list":"demo","sections":[{"id":1,"header":"Cities","footer":"That's it","items":[{"id":1,"value":"Paris"},{"id":2,"value":"Berlin"},{"id":3,"value":"Copenhagen"}]}]}

        """)
    // Running it again rebuilds the list rather than failing.
    expectSuccess(try cli("demo"))
    #expect(
      try cli("show", "demo").lines == [
        "demo", "  [0] Cities", "      0:0  Paris", "      0:1  Berlin", "      0:2  Copenhagen",
        "      -- That's it",
      ])
  }

  @Test func showLinesValuesUpPastTheTenthRowAndListsPastLongNames() throws {
    defer { folder.remove() }
    expectSuccess(try cli("list", "create", "a-list-with-a-rather-long-name"))
    expectSuccess(try cli("section", "add", "a-list-with-a-rather-long-name", "S"))
    expectSuccess(try cli("list", "create", "short"))
    expectSuccess(try cli("section", "add", "short", "T"))
    for row in 0..<11 {
      expectSuccess(try cli("item", "add", "short", "0", "v\(row)"))
    }
    let shown = try cli("show", "short").lines
    #expect(shown[2] == "      0:0   v0")
    #expect(shown[12] == "      0:10  v10")
    let columns = Set(
      shown.dropFirst(2).map { $0.firstRange(of: "v")?.lowerBound.utf16Offset(in: $0) })
    #expect(columns.count == 1, "values start in one column: \(shown)")
    #expect(
      try cli("lists").lines == [
        "NAME                            SECTIONS  ITEMS",
        "a-list-with-a-rather-long-name         1      0",
        "short                                  1     11",
      ])
  }

  @Test func addsMovesAndShowsItemsAsTheReadmeSays() throws {
    defer { folder.remove() }
    expectSuccess(try cli("list", "create", "groceries"))
    expectSuccess(try cli("section", "add", "groceries", "Fruit", "--footer", "fresh"))
    expectSuccess(try cli("section", "add", "groceries", "Dairy"))
    expectSuccess(try cli("item", "add", "groceries", "0", "apples"))
    expectSuccess(try cli("item", "add", "groceries", "0", "pears"))
    expectSuccess(try cli("item", "add", "groceries", "0", "figs", "--at", "0"))
    expectSuccess(
      try cli("item", "add", "groceries", "1", #"{"name":"milk","litres":2}"#, "--json"))
    expectSuccess(try cli("item", "move", "groceries", "0:2", "1:0"))
    expectSuccess(try cli("item", "set", "groceries", "0:0", "dates"))
    expectSuccess(try cli("item", "rm", "groceries", "0:1"))
    expectSuccess(try cli("section", "set", "groceries", "1", "--footer", "cold"))
    let shown = try cli("show", "groceries", "--json")
    expectSuccess(shown)
    #expect(
      shown.stdout == """
        {"list":"groceries","sections":[{"id":1,"header":"Fruit","footer":"fresh","items":[{"id":3,"value":"dates"}]},\
        {"id":2,"header":"Dairy","footer":"cold","items":[{"id":2,"value":"pears"},{"id":4,"value":{"name":"milk","litres":2}}]}]}

        """)
    #expect(
      try cli("show", "groceries").lines == [
        "groceries", "  [0] Fruit", "      0:0  dates", "      -- fresh", "  [1] Dairy",
        "      1:0  pears",
        #"      1:1  {"name":"milk","litres":2}"#, "      -- cold",
      ])
    #expect(
      try cli("lists", "--json").stdout == #"[{"id":1,"name":"groceries","sections":2,"items":3}]"#
        + "\n")
    #expect(try cli("lists").lines == ["NAME       SECTIONS  ITEMS", "groceries         2      3"])
    expectSuccess(try cli("section", "move", "groceries", "1", "0"))
    expectSuccess(try cli("section", "set", "groceries", "0", "--header", "Milk", "--no-footer"))
    expectSuccess(try cli("section", "rm", "groceries", "1"))
    #expect(
      try cli("export", "groceries").stdout
        == #"{"list":"groceries","sections":[{"id":2,"header":"Milk","footer":null,"items":[{"id":2,"value":"pears"},{"id":4,"value":{"name":"milk","litres":2}}]}]}"#
        + "\n")
    expectSuccess(try cli("list", "rename", "groceries", "shopping"))
    expectSuccess(try cli("list", "rm", "shopping"))
    #expect(try cli("lists", "--json").stdout == "[]\n")
  }

  @Test func jsonValuesOfEveryKindRoundTrip() throws {
    defer { folder.remove() }
    try cli("list", "create", "j")
    try cli("section", "add", "j", "S")
    let values = [
      "null", "true", "-12.5e3", "[1,[2,{}]]", #"{"a":"\"quoted\"","b":null}"#, #""\u00e9\n""#,
    ]
    for value in values { expectSuccess(try cli("item", "add", "j", "0", value, "--json")) }
    // Pretty-printed input is stored compactly, so watch and export stay one line.
    expectSuccess(try cli("item", "add", "j", "0", "{\n  \"k\": [1,\n 2]\n}", "--json"))
    let shown = try cli("show", "j", "--json")
    let object = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
    let items =
      ((object?["sections"] as? [[String: Any]])?.first?["items"] as? [[String: Any]]) ?? []
    #expect(items.count == values.count + 1)
    #expect(shown.lines.count == 1)
    #expect(shown.stdout.contains(#"{"k":[1,2]}"#))
    #expect(items[5]["value"] as? String == "é\n")
  }

  @Test func namesAndValuesAreStoredVerbatim() throws {
    defer { folder.remove() }
    let name = "O'Brien's \"list\"; DROP TABLE lists; -- ünïcödé 🚀"
    expectSuccess(try cli("list", "create", name))
    expectSuccess(try cli("section", "add", name, "--footer", "日本", "--", "--; '\""))
    expectSuccess(try cli("item", "add", name, "0", "--", "-x; DELETE FROM items; --"))
    let shown = try cli("show", name, "--json")
    expectSuccess(shown)
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
    #expect(object["list"] as? String == name)
    let section = try #require((object["sections"] as? [[String: Any]])?.first)
    #expect(section["header"] as? String == "--; '\"")
    #expect(section["footer"] as? String == "日本")
    #expect(
      (section["items"] as? [[String: Any]])?.first?["value"] as? String
        == "-x; DELETE FROM items; --")
  }

  @Test func helpIsGeneratedForTheToolAndEveryCommand() throws {
    defer { folder.remove() }
    let help = try liststore(["--help"], database: nil)
    expectSuccess(help)
    #expect(help.stdout.contains("USAGE: liststore"))
    let commands = help.lines.drop { $0 != "COMMANDS:" }.dropFirst().prefix { !$0.isEmpty }
      .map { $0.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ")[0] }
    #expect(commands.contains("item move") && commands.contains("show") && commands.count >= 15)
    for command in commands {
      let result = try liststore(
        command.split(separator: " ").map(String.init) + ["--help"], database: nil)
      expectSuccess(result)
      #expect(result.stdout.contains("USAGE: liststore \(command)"), "\(command)")
    }
    expectSuccess(try liststore(["-h"], database: nil))
    #expect(
      try liststore(["item", "--help"], database: nil).stdout.contains(
        "liststore item add LIST SECTION VALUE"))
    #expect(try liststore([], database: nil).stdout.contains("COMMANDS:"))
    #expect(try liststore(["--version"], database: nil).stdout.hasPrefix("liststore "))
    // Help never creates the database.
    #expect(!FileManager.default.fileExists(atPath: db))
  }

  @Test(arguments: [
    (["shwo", "x"], "did you mean 'show'?"),
    (["item", "ad", "x"], "did you mean 'item add'?"),
    // Other tools' words, and capitals.
    (["ls"], "unknown command 'ls'; did you mean 'lists'?"),
    (["item", "delete", "l", "0:0"], "did you mean 'item rm'?"),
    (["section", "remove", "l", "0"], "did you mean 'section rm'?"),
    (["item", "update", "l", "0:0", "x"], "did you mean 'item set'?"),
    (["item", "mv", "l", "0:0", "0:1"], "did you mean 'item move'?"),
    (["list", "new", "x"], "did you mean 'list create'?"),
    (["dump", "x"], "did you mean 'export'?"),
    (["SHOW", "x"], "did you mean 'show'?"),
    (["show", "x", "--JSON"], "did you mean '--json'?"),
    (["import", "x", "--silent"], "did you mean '--quiet'?"),
    (["serve", "--port", "8042"], "did you mean '--listen'?"),
    (["item"], "item needs a subcommand"),
    (["show"], "missing LIST"),
    (["item", "add", "l", "0"], "missing VALUE"),
    (["item", "add", "l", "zero", "v"], "SECTION must be a zero-based index"),
    (["item", "add", "l", "-1", "v"], "SECTION must be a zero-based index"),
    (["item", "add", "l", "0", "v", "--at"], "option --at needs a value"),
    (["item", "add", "l", "0", "v", "--at", "x"], "--at must be a zero-based index"),
    (["item", "add", "l", "0", "v", "--jsn"], "did you mean '--json'?"),
    (["item", "rm", "l", "0-1"], "ITEM must be SECTION:ROW with two zero-based numbers"),
    (["item", "rm", "l", "#x"], "or an id like #42"),
    (["item", "move", "l", "0:1"], "missing TO (or --before or --after)"),
    (["item", "move", "l", "0:1", "1:0", "--after", "#2"], "give TO or --after, not both"),
    (["item", "add", "l", "0", "v", "--at", "1", "--before", "#2"], "cannot be used together"),
    (["item", "add", "l", "0", "v", "--before", "2"], "--before must be SECTION:ROW"),
    (["section", "move", "l", "#1", "--before", "x"], "--before must be a zero-based index"),
    (["item", "move", "l", "0:1", "1"], "TO must be SECTION:ROW"),
    (["show", "l", "extra"], "unexpected argument \"extra\""),
    (["show", "l", "--json=yes"], "option --json takes no value"),
    (["section", "set", "l", "0"], "nothing to change"),
    (["--db"], "option --db needs a value"),
    (["item", "add", "l", "0", "v", "--at", "1", "--at", "2"], "option --at is given twice"),
    (["item", "add", "l", "0", "v", "--at=1", "--at", "1"], "option --at is given twice"),
    (["lists", "--db", "other.sqlite"], "option --db is given twice"),
  ])
  func malformedCommandLinesExitWith64(arguments: [String], message: String) throws {
    defer { folder.remove() }
    let result = try liststore(arguments, database: db)
    #expect(result.status == 64, "\(result)")
    #expect(result.stdout.isEmpty)
    let lines = result.stderr.split(separator: "\n")
    #expect(lines.first?.hasPrefix("error: ") == true, "\(result)")
    #expect(result.stderr.contains(message), "\(result)")
    #expect(lines.last?.hasPrefix("See 'liststore") == true, "\(result)")
    #expect(!FileManager.default.fileExists(atPath: db))
  }

  @Test func usageErrorsShowTheCommandsUsage() throws {
    defer { folder.remove() }
    let result = try cli("item", "add", "l")
    #expect(
      result.stderr == """
        error: missing SECTION VALUE (quote an id, like '#42': the shell reads # as a comment)
        Usage: liststore item add LIST SECTION VALUE [--at ROW] [--before ITEM] [--after ITEM] [--json]
        See 'liststore item add --help'.

        """)
  }

  /// Both engines store `--json` values as the same compact text, so an export
  /// imported back with `--replace` finds nothing to write.
  @Test(arguments: TestEngine.tested)
  func jsonValuesAreStoredCompactAndAnExportImportsBackUnchanged(engine: TestEngine) throws {
    defer { folder.remove() }
    let database = try engine.makeDatabase()
    defer { database.remove() }
    func cli(_ arguments: String...) throws -> ProcessResult {
      try liststore(arguments, database: database.location)
    }
    expectSuccess(try cli("list", "create", "l"))
    expectSuccess(try cli("section", "add", "l", "Fruit"))
    expectSuccess(try cli("item", "add", "l", "0", #"{"name": "kiwi", "count": 3}"#, "--json"))
    expectSuccess(try cli("item", "add", "l", "0", " [ 1.50 , \"a  b\" ]\n", "--json"))
    #expect(
      try cli("show", "l").lines == [
        "l", "  [0] Fruit", #"      0:0  {"name":"kiwi","count":3}"#, #"      0:1  [1.50,"a  b"]"#,
      ])
    let file = database.folder.file("l.json")
    try Data(try cli("export", "l").stdout.utf8).write(to: URL(fileURLWithPath: file))
    let before = try database.fingerprint()
    let again = try cli("import", "l", file, "--replace")
    expectSuccess(again)
    #expect(again.stdout == "\"l\" already matches \(file); nothing was written\n")
    #expect(try database.fingerprint() == before)
  }

  @Test(arguments: TestEngine.tested)
  func badInputFailsWithOneErrorLineAndChangesNothing(engine: TestEngine) throws {
    defer { folder.remove() }
    let database = try engine.makeDatabase()
    defer { database.remove() }
    let db = database.location
    func cli(_ arguments: String...) throws -> ProcessResult {
      try liststore(arguments, database: db)
    }
    _ = try cli("demo")
    _ = try cli("list", "create", "empty")
    let exported = folder.file("demo.json")
    try cli("export", "demo").stdout.write(toFile: exported, atomically: true, encoding: .utf8)
    let before = try database.fingerprint()
    let cases: [([String], String)] = [
      (["show", "nope"], "no list named \"nope\""),
      (["item", "add", "nope", "0", "x"], "no list named \"nope\""),
      (["section", "rm", "demo", "3"], "section 3 does not exist: the list has 1 section"),
      (["section", "move", "demo", "0", "1"], "section index 1 is out of range"),
      (["item", "add", "demo", "1", "x"], "section 1 does not exist"),
      (["item", "add", "empty", "0", "x"], "section 0 does not exist: the list has 0 sections"),
      (["item", "rm", "demo", "0:3"], "item 0:3 does not exist: section 0 has 3 items"),
      (["item", "set", "demo", "2:0", "x"], "section 2 does not exist"),
      (["item", "add", "demo", "0", "{bad", "--json"], "invalid JSON"),
      (["item", "set", "demo", "0:0", "[1,", "--json"], "invalid JSON"),
      (
        ["item", "add", "demo", "0", "x", "--at", "4"],
        "row 4 is out of range for section 0: use a row from 0 to 3"
      ),
      (
        ["item", "move", "demo", "0:0", "0:3"],
        "row 3 is out of range for section 0: use a row from 0 to 2"
      ),
      (["item", "move", "demo", "0:0", "1:0"], "section 1 does not exist"),
      (["list", "create", "demo"], "a list named \"demo\" already exists"),
      (["list", "create", ""], "a list name cannot be empty"),
      (["list", "rename", "demo", " "], "a list name cannot be empty"),
      (["import", "new", folder.file("missing.json")], "cannot read"),
      (
        ["import", "demo", exported],
        "a list named \"demo\" already exists; choose another name, or make it equal to the "
          + "file with --replace"
      ),
    ]
    for (arguments, message) in cases {
      expectFailure(try liststore(arguments, database: db), containing: message)
      #expect(try database.fingerprint() == before, "\(arguments) changed the database")
    }
  }

  @Test(arguments: [
    (
      "LISTSTORE_BUSY_TIMEOUT", "soon",
      "must be a number of seconds from 0 to 1000000, not \"soon\""
    ),
    ("LISTSTORE_BUSY_TIMEOUT", "-1", "must be a number of seconds"),
    ("LISTSTORE_PROGRESS_DELAY", "nan", "must be a number of seconds from 0 to 3600, not \"nan\""),
    ("LISTSTORE_PROGRESS_DELAY", "1e9", "must be a number of seconds"),
    ("LISTSTORE_MAX_PAGE_COUNT", "0", "must be a positive number of pages, not \"0\""),
  ])
  func mistypedSettingsInTheEnvironmentAreErrors(name: String, value: String, message: String)
    throws
  {
    defer { folder.remove() }
    expectSuccess(try liststore(["list", "create", "kept"], database: db))
    expectSuccess(try liststore(["section", "add", "kept", "S"], database: db))
    let before = try liststore(["show", "kept", "--json"], database: db).stdout
    let result = try liststore(
      ["item", "add", "kept", "0", "x"], database: db, environment: [name: value])
    expectFailure(result, containing: "error: \(name) \(message)")
    #expect(try liststore(["show", "kept", "--json"], database: db).stdout == before)
    // Empty is unset: the default.
    expectSuccess(try liststore(["lists"], database: db, environment: [name: ""]))
  }

  @Test func databasePathProblemsAreReported() throws {
    defer { folder.remove() }
    let blocker = folder.file("file")
    _ = FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8))
    expectFailure(
      try liststore(["list", "create", "x"], database: blocker + "/db.sqlite"),
      containing: "cannot create the folder")
    expectFailure(
      try liststore(["lists"], database: blocker + "/db.sqlite"),
      containing: "there is no ListStore database at \(blocker)/db.sqlite")

    let text = folder.file("text.sqlite")
    let content = Data("not a database, only text, long enough for a header".utf8)
    try content.write(to: URL(fileURLWithPath: text))
    expectFailure(try liststore(["lists"], database: text), containing: "is not a SQLite database")
    #expect(fileBytes(text) == content)

    try cli("demo")
    let newer = try liststore(["list", "create", "x"], database: db)
    expectSuccess(newer)
    _ = try run("/usr/bin/sqlite3", [db, "PRAGMA user_version = 999"])
    let before = try #require(fileBytes(db))
    expectFailure(
      try cli("show", "demo"), containing: "has schema version 999, newer than this program's")
    #expect(fileBytes(db) == before)
  }

  @Test func readOnlyDatabasesCanBeShownButNotChanged() throws {
    defer { folder.remove() }
    try cli("demo")
    chmod(db, 0o444)
    let before = try #require(fileBytes(db))
    expectSuccess(try cli("show", "demo"))
    expectFailure(try cli("item", "add", "demo", "0", "Rome"), containing: "is read-only")
    expectFailure(try cli("list", "create", "x"), containing: "is read-only")
    #expect(fileBytes(db) == before)
  }

  @Test func defaultDatabasePathFollowsTheEnvironment() throws {
    defer { folder.remove() }
    let explicit = folder.file("env/explicit.sqlite")
    expectSuccess(
      try liststore(
        ["list", "create", "a"], database: nil, environment: ["LISTSTORE_DB": explicit]))
    #expect(FileManager.default.fileExists(atPath: explicit))
    let xdg = folder.file("xdg")
    expectSuccess(
      try liststore(
        ["list", "create", "b"], database: nil,
        environment: ["LISTSTORE_DB": "", "XDG_DATA_HOME": xdg]))
    #expect(FileManager.default.fileExists(atPath: xdg + "/liststore/liststore.sqlite"))
    let home = folder.file("home")
    expectSuccess(
      try liststore(
        ["list", "create", "c"], database: nil,
        environment: ["LISTSTORE_DB": "", "XDG_DATA_HOME": "", "HOME": home]))
    #expect(
      FileManager.default.fileExists(atPath: home + "/.local/share/liststore/liststore.sqlite"))
    // --db wins over the environment.
    expectSuccess(
      try liststore(["list", "create", "d"], database: db, environment: ["LISTSTORE_DB": explicit]))
    #expect(FileManager.default.fileExists(atPath: db))
  }

  @Test func importRestoresWhatExportWrote() throws {
    defer { folder.remove() }
    try cli("demo")
    try cli("section", "add", "demo", "Numbers", "--at", "0")
    try cli("item", "add", "demo", "0", "[1,2,{\"x\":null}]", "--json")
    let exported = try cli("export", "demo").stdout
    let file = folder.file("demo.json")
    try Data(exported.utf8).write(to: URL(fileURLWithPath: file))
    let imported = try cli("import", "copy", file)
    expectSuccess(imported)
    #expect(imported.stdout == "imported \"copy\": 2 sections, 4 items\n")
    let copy = try cli("export", "copy").stdout
    // The same content under new ids and the new name.
    func stripped(_ text: String) -> String {
      text.replacingOccurrences(of: #""id":[0-9]+"#, with: "", options: .regularExpression)
        .replacingOccurrences(of: "\"copy\"", with: "\"demo\"")
    }
    #expect(stripped(copy) == stripped(exported))
    // From standard input too.
    expectSuccess(try cli("import", "piped", "-", input: exported))
    #expect(
      stripped(
        try cli("export", "piped").stdout.replacingOccurrences(of: "\"piped\"", with: "\"demo\""))
        == stripped(exported))
  }

  @Test(arguments: [
    ("", "standard input:1:1: no JSON value"),
    (
      "{\"list\":\"x\",\"sections\":[{\"header\":\"A\",\"items\":[{\"value\":1}",
      "standard input:1:47: the array is not closed"
    ),
    ("[]", "the top level: expected an object like {\"sections\""),
    ("{\"list\":\"x\"}", "missing \"sections\""),
    ("{\"sections\":[{\"header\":5}]}", "sections[0].header: expected a string; got the number 5"),
    (
      "{\"sections\":[{\"header\":\"A\",\"items\":[{\"id\":\"one\",\"value\":1}]}]}",
      "sections[0].items[0].id: expected an integer id (1 or more); got a string"
    ),
    ("{\"sections\":[{\"footer\":\"only\"}]}", "sections[0]: missing \"header\""),
    (
      "{\"sections\":[{\"header\":\"A\",\"items\":[{\"id\":1,\"value\":1},{\"id\":1,\"value\":2}]}]}",
      "repeats item id 1"
    ),
    (
      "{\"sections\":[{\"id\":3,\"header\":\"A\"},{\"id\":3,\"header\":\"B\"}]}",
      "repeats section id 3"
    ),
  ])
  func malformedImportFilesAreRefused(content: String, message: String) throws {
    defer { folder.remove() }
    try cli("demo")
    let before = try #require(fileBytes(db))
    expectFailure(try cli("import", "bad", "-", input: content), containing: message)
    #expect(fileBytes(db) == before)
  }
}
