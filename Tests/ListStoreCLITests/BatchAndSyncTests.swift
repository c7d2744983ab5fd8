import Foundation
import PostgresTestSupport
import TestSupport
import Testing

/// Ids on the command line (`#42`), `liststore batch`, and `import` as a stream and with
/// `--replace`, each run as a real process.
@Suite struct BatchAndSyncTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("sync.sqlite") }

  @discardableResult
  func cli(_ arguments: String..., input: String? = nil) throws -> ProcessResult {
    try liststore(arguments, database: db, input: input)
  }

  func json(_ list: String) throws -> String {
    let result = try cli("show", list, "--json")
    expectSuccess(result)
    return result.stdout
  }

  // MARK: Ids

  @Test func everyItemAndSectionCommandTakesIds() throws {
    defer { folder.remove() }
    try cli("demo")  // Section 1: Paris 1, Berlin 2, Copenhagen 3.
    let steps: [([String], String)] = [
      (["item", "add", "demo", "0", "Rome", "--after", "#1"], "added item (id 4) after item #1"),
      (["item", "add", "demo", "#1", "Oslo", "--at", "#2"], "added item (id 5) before item #2"),
      (["item", "add", "demo", "#1", "Bonn"], "added item (id 6) to section #1"),
      (
        ["item", "add", "demo", "#1", "Lyon", "--at", "0"],
        "added item (id 7) at row 0 of section #1"
      ),
      (["item", "move", "demo", "#7", "--after", "#6"], "moved item #7 after item #6"),
      (["item", "move", "demo", "#6", "--before", "0:0"], "moved item #6 before item 0:0"),
      (["item", "move", "demo", "#3", "0:0"], "moved item #3 to 0:0"),
      (["item", "set", "demo", "#4", "Roma"], "set item #4"),
      (["item", "rm", "demo", "#5"], "removed item #5"),
      (
        ["section", "add", "demo", "Towns", "--before", "#1"], "added section 0 (id 2) to \"demo\""
      ),
      (
        ["section", "add", "demo", "Villages", "--after", "#1"],
        "added section 2 (id 3) to \"demo\""
      ),
      (["section", "move", "demo", "#2", "--after", "#3"], "moved section #2 after section #3"),
      (["section", "move", "demo", "#3", "0"], "moved section #3 to 0"),
      (["section", "set", "demo", "#2", "--footer", "small"], "set section #2"),
      (["item", "add", "demo", "#2", "Ely"], "added item (id 8) to section #2"),
      (["section", "rm", "demo", "#3"], "removed section #3"),
    ]
    for (arguments, output) in steps {
      let result = try liststore(arguments, database: db)
      expectSuccess(result)
      #expect(result.stdout == output + "\n", "\(arguments)")
    }
    #expect(
      try json("demo") == """
        {"list":"demo","sections":[{"id":1,"header":"Cities","footer":"That's it","items":[\
        {"id":3,"value":"Copenhagen"},{"id":6,"value":"Bonn"},{"id":1,"value":"Paris"},\
        {"id":4,"value":"Roma"},{"id":2,"value":"Berlin"},{"id":7,"value":"Lyon"}]},\
        {"id":2,"header":"Towns","footer":"small","items":[{"id":8,"value":"Ely"}]}]}

        """)
  }

  @Test func idsThatDoNotFitFailAndChangeNothing() throws {
    defer { folder.remove() }
    try cli("demo")
    try cli("section", "add", "demo", "Towns")
    let before = try #require(fileBytes(db))
    for (arguments, message) in [
      (["item", "rm", "demo", "#99"], #"no item with id 99 in "demo""#),
      (["item", "set", "demo", "#99", "x"], "no item with id 99"),
      (["item", "move", "demo", "#1", "--after", "#99"], "no item with id 99"),
      (["item", "add", "demo", "1", "x", "--after", "#1"], "item #1 is not in section 1"),
      (["item", "add", "demo", "#9", "x"], "no section with id 9"),
      (["section", "rm", "demo", "#9"], "no section with id 9"),
      (["section", "move", "demo", "#1", "--before", "#9"], "no section with id 9"),
      (["section", "set", "demo", "#9", "--header", "x"], "no section with id 9"),
    ] {
      expectFailure(try liststore(arguments, database: db), containing: message)
      #expect(fileBytes(db) == before, "\(arguments) changed the database")
    }
  }

  // MARK: Batch

  @Test func aBatchIsOneTransactionAndOneChangeset() throws {
    defer { folder.remove() }
    try cli("demo")
    let watch = try WatchProcess(database: db, list: "demo", maxEvents: 1)
    let operations = """
      {"op": "item add", "section": 0, "value": "Rome", "at": 0}

      {"op": "item add", "section": "#1", "value": {"name": "Oslo"}, "after": "#2"}
      {"op": "item move", "item": "#3", "to": "0:0"}
      {"op": "item set", "item": "0:2", "value": "Paris, France"}
      {"op": "item rm", "item": "#2"}
      {"op": "section add", "header": "Towns", "footer": "small"}
      {"op": "section set", "section": 1, "footer": null}
      {"op": "section move", "section": "#2", "before": "#1"}

      """
    let file = folder.file("ops.jsonl")
    try Data(operations.utf8).write(to: URL(fileURLWithPath: file))
    let result = try cli("batch", "demo", file)
    expectSuccess(result)
    #expect(result.stdout == "applied 8 operations to \"demo\"\n")
    #expect(
      try json("demo") == """
        {"list":"demo","sections":[{"id":2,"header":"Towns","footer":null,"items":[]},\
        {"id":1,"header":"Cities","footer":"That's it","items":[{"id":3,"value":"Copenhagen"},\
        {"id":4,"value":"Rome"},{"id":1,"value":"Paris, France"},{"id":5,"value":{"name":"Oslo"}}]}]}

        """)
    // The watcher saw the whole batch as one changeset.
    let lines = try watch.finish()
    #expect(lines.count == 2, "\(lines)")
    #expect(lines.last?.hasPrefix("{\"changes\":") == true)
    // The same from standard input.
    expectSuccess(try cli("batch", "demo", input: ##"{"op": "item rm", "item": "#4"}"##))
    expectSuccess(try cli("batch", "demo", "-", input: ##"{"op": "item rm", "item": "#5"}"##))
  }

  /// A batch whose standard input is still being written holds no lock: another writer
  /// goes on (it once waited for the input, and failed after its busy timeout), and the
  /// batch applies what it read, in one transaction, once the input ends.
  @Test func aBatchReadingStandardInputHoldsNoLock() throws {
    defer { folder.remove() }
    try cli("demo")
    let batch = Process()
    batch.executableURL = URL(fileURLWithPath: liststoreBinary)
    batch.arguments = ["--db", db, "batch", "demo", "-"]
    let input = Pipe()
    let output = Pipe()
    batch.standardInput = input
    batch.standardOutput = output
    batch.standardError = output
    try batch.run()
    input.fileHandleForWriting.write(
      Data(#"{"op": "item add", "section": 0, "value": "Rome"}"#.utf8))
    input.fileHandleForWriting.write(Data("\n".utf8))
    // The batch has read that line (the pipe is empty again), and its input is still
    // open: another writer is not held back.
    #expect(
      pollUntil {
        var unread: Int32 = -1
        let asked = withUnsafeMutablePointer(to: &unread) {
          ioctl(input.fileHandleForWriting.fileDescriptor, UInt(FIONREAD), $0)
        }
        return asked == 0 && unread == 0
      })
    let other = try liststore(
      ["item", "add", "demo", "0", "Oslo"], database: db,
      environment: ["LISTSTORE_BUSY_TIMEOUT": "2"])
    expectSuccess(other)
    #expect(batch.isRunning)
    input.fileHandleForWriting.write(Data(#"{"op": "item rm", "item": "0:0"}"#.utf8))
    try input.fileHandleForWriting.close()
    batch.waitUntilExit()
    let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(batch.terminationStatus == 0, "\(said)")
    #expect(said == "applied 2 operations to \"demo\"\n")
    let shown = try cli("show", "demo")
    #expect(shown.stdout.contains("Oslo") && shown.stdout.contains("Rome"), "\(shown.stdout)")
    #expect(!shown.stdout.contains("Paris"), "\(shown.stdout)")
  }

  @Test(arguments: [
    (#"{"op": "item rm", "item": "0:9"}"#, "line 2 (nothing was applied): item 0:9 does not exist"),
    (
      #"{"op": "item add", "section": 0, "value": x}"#,
      "line 2, column 43 (nothing was applied): unexpected 'x'"
    ),
    (
      #"{"op": "itme add", "section": 0, "value": 1}"#,
      "unknown operation \"itme add\"; did you mean 'item add'?"
    ),
    (
      #"{"op": "item add", "section": 0, "vaule": 1}"#,
      "\"item add\" takes no \"vaule\"; did you mean 'value'?"
    ),
    (#"{"op": "item add", "value": 1}"#, "\"item add\" needs \"section\""),
    (
      ##"{"op": "item move", "item": "#1"}"##, "\"item move\" needs \"to\", \"before\" or \"after\""
    ),
    (#"{"op": "item rm", "item": 3}"#, "\"item\" must be an item: \"SECTION:ROW\""),
    (#"{"op": "section rm", "section": "first"}"#, "\"section\" must be a section"),
    (#"["item rm"]"#, "expected an operation, an object like"),
  ])
  func aBadLineRollsBackEverythingAndIsNamed(line: String, message: String) throws {
    defer { folder.remove() }
    try cli("demo")
    let before = try #require(fileBytes(db))
    let result = try cli(
      "batch", "demo",
      input: #"{"op": "item add", "section": 0, "value": "kept?"}"# + "\n" + line
        + "\n")
    expectFailure(result, containing: message)
    #expect(fileBytes(db) == before)
  }

  // MARK: Import

  @Test func anExportEditedByHandAndImportedBackWritesOnlyTheEditedRows() throws {
    defer { folder.remove() }
    try cli("demo")
    try cli("section", "add", "demo", "Towns")
    for town in ["Ely", "Rye", "Ayr"] { try cli("item", "add", "demo", "1", town) }
    let exported = try cli("export", "demo").stdout
    // By hand: Berlin changed, Copenhagen deleted, a new item without an id, Ayr moved
    // to the front of its section, and the second section's footer set.
    var edited = exported.replacingOccurrences(of: #""value":"Berlin""#, with: #""value":"Bern""#)
    edited = edited.replacingOccurrences(of: #",{"id":3,"value":"Copenhagen"}"#, with: "")
    edited = edited.replacingOccurrences(
      of: #"{"id":1,"value":"Paris"}"#, with: #"{"value":"Lima"},{"id":1,"value":"Paris"}"#)
    edited = edited.replacingOccurrences(
      of: #"[{"id":4,"value":"Ely"},{"id":5,"value":"Rye"},{"id":6,"value":"Ayr"}]"#,
      with: #"[{"id":6,"value":"Ayr"},{"id":4,"value":"Ely"},{"id":5,"value":"Rye"}]"#)
    edited = edited.replacingOccurrences(
      of: #""header":"Towns","footer":null"#, with: #""header":"Towns","footer":"small""#)
    // Pretty-printed, as an editor may leave it: white space does not count as a change.
    edited = edited.replacingOccurrences(of: ",{", with: ",\n  {")
    let file = folder.file("demo.json")
    try Data(edited.utf8).write(to: URL(fileURLWithPath: file))

    let watch = try WatchProcess(database: db, list: "demo", maxEvents: 1)
    let result = try cli("import", "demo", file, "--replace")
    expectSuccess(result)
    #expect(
      result.stdout
        == "replaced \"demo\" from \(file): 1 section changed, 1 item added, 1 item removed, "
        + "1 item moved, 1 item changed\n")
    let lines = try watch.finish()
    #expect(
      lines.last == """
        {"changes":{"updatedSections":[{"index":1,"id":2,"header":"Towns","footer":"small"}],\
        "deletedItems":[{"at":[0,2],"id":3}],"insertedItems":[{"at":[0,0],"id":7,"value":"Lima"}],\
        "movedItems":[{"from":[1,2],"to":[1,0],"id":6,"value":"Ayr"}],\
        "updatedItems":[{"at":[0,1],"id":2,"value":"Bern"}]}}
        """)
    // An export imported back writes nothing, and so does the edited file again: its
    // Lima without an id pairs with the Lima the first import added.
    let current = folder.file("current.json")
    try Data(try cli("export", "demo").stdout.utf8).write(to: URL(fileURLWithPath: current))
    let same = try cli("import", "demo", current, "--replace")
    expectSuccess(same)
    #expect(same.stdout == "\"demo\" already matches \(current); nothing was written\n")
    let again = try cli("import", "demo", file, "--replace")
    #expect(again.stdout == "\"demo\" already matches \(file); nothing was written\n")
  }

  @Test func replaceCreatesAMissingListAndABadFileChangesNothing() throws {
    defer { folder.remove() }
    let created = try cli(
      "import", "fresh", "-", "--replace", input: #"{"sections":[{"header":"A","items":[1,2]}]}"#)
    expectSuccess(created)
    #expect(
      created.stdout == "replaced \"fresh\" from standard input: 1 section added, 2 items added\n")
    let before = try #require(fileBytes(db))
    for (content, message) in [
      (#"{"sections":[{"header":"A","items":[1,2,]}]}"#, "standard input:1:41: a ','"),
      (
        #"{"sections":[{"header":"A","items":[{"id":9,"value":1},{"id":9,"value":2}]}]}"#,
        "repeats item id 9"
      ),
      (#"{"sections":[{"items":[1]}]}"#, "sections[0]: missing \"header\""),
    ] {
      expectFailure(
        try cli("import", "fresh", "-", "--replace", input: content), containing: message)
      #expect(fileBytes(db) == before)
    }
  }

  @Test func aLargeFileIsStreamedAndABadOneLeavesNoDatabase() throws {
    defer { folder.remove() }
    var text = #"{"list":"big","sections":["#
    for section in 0..<4 {
      if section > 0 { text += "," }
      text += #"{"header":"S\#(section)","items":["#
      text += (0..<5000).map { #"{"id":\#(section * 5000 + $0 + 1),"value":"item \#($0)"}"# }
        .joined(separator: ",")
      text += "]}"
    }
    text += "]}"
    // Into a database that does not exist yet, from standard input (kept in a temporary
    // file for the second pass).
    let imported = try cli("import", "big", "-", input: text)
    expectSuccess(imported)
    #expect(imported.stdout == "imported \"big\": 4 sections, 20000 items\n")
    let exported = try cli("export", "big").stdout
    var expected = #"{"list":"big","sections":["#
    for section in 0..<4 {
      if section > 0 { expected += "," }
      expected += #"{"header":"S\#(section)","footer":null,"items":["#
      expected += (0..<5000).map { #"{"value":"item \#($0)"}"# }.joined(separator: ",") + "]}"
    }
    expected += "]}\n"
    #expect(
      exported.replacingOccurrences(of: #""id":[0-9]+,"#, with: "", options: .regularExpression)
        == expected)

    // A file cut short by its last byte creates nothing at a new path.
    let fresh = folder.file("new/fresh.sqlite")
    let result = try liststore(
      ["import", "big", "-"], database: fresh, input: String(text.dropLast()))
    expectFailure(result, containing: "cannot import: standard input:1:1: the object is not closed")
    #expect(!FileManager.default.fileExists(atPath: fresh))
    #expect(!FileManager.default.fileExists(atPath: folder.file("new")))
  }
}

/// `liststore watch LIST --json --max-events N` as a process, its snapshot line read
/// before the test goes on.
final class WatchProcess {
  let process = Process()
  let output = Pipe()
  private var received = Data()

  init(database: String, list: String, maxEvents: Int) throws {
    process.executableURL = URL(fileURLWithPath: liststoreBinary)
    process.arguments = [
      "--db", database, "watch", list, "--json", "--max-events", "\(maxEvents)", "--timeout", "60",
    ]
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    // The snapshot is printed once the watch is subscribed: nothing after it is missed.
    while !received.contains(0x0A) {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      received += chunk
    }
  }

  /// Waits for the watch to end; returns every line it printed.
  func finish() throws -> [String] {
    received += output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
  }

  deinit { if process.isRunning { process.terminate() } }
}
