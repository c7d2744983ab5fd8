import Foundation
import ListStore
import TestSupport
import Testing

/// Errors say what to do: the option or variable to set, the list a row was looked for in,
/// the name that was probably meant; and a command that changed nothing says so.
@Suite struct ErrorAdviceTests {
  /// A database with the demo list and a server on it that wants tokens.
  final class Served {
    let folder = TemporaryDirectory()
    let server: ServerProcess
    var database: String { folder.file("lists.sqlite") }

    init() throws {
      try Data("READER read\nWRITER write\n".utf8).write(
        to: URL(fileURLWithPath: folder.file("tokens.txt")))
      expectSuccess(try liststore(["demo"], database: folder.file("lists.sqlite")))
      server = try ServerProcess(
        location: folder.file("lists.sqlite"), arguments: ["--tokens", folder.file("tokens.txt")])
    }

    func remove() {
      server.stop()
      folder.remove()
    }
  }

  @Test func aServerThatWantsATokenNamesTheOptionAndTheVariable() throws {
    let served = try Served()
    defer { served.remove() }
    let without = try liststore(["show", "demo"], database: served.server.base)
    expectFailure(without, containing: "--token", "LISTSTORE_TOKEN")
    let unknown = try liststore(
      ["show", "demo"], database: served.server.base, environment: ["LISTSTORE_TOKEN": "NOPE"])
    expectFailure(unknown, containing: "--token", "LISTSTORE_TOKEN")
    let known = try liststore(
      ["--token", "READER", "show", "demo"], database: served.server.base)
    expectSuccess(known)
  }

  @Test func theAPIPrefixInTheAddressIsTheClientsToAdd() throws {
    let served = try Served()
    defer { served.remove() }
    for suffix in ["/v1", "/v1/", "/"] {
      let shown = try liststore(
        ["--token", "READER", "show", "demo"], database: served.server.base + suffix)
      expectSuccess(shown)
      #expect(shown.stdout.contains("Copenhagen"), "\(suffix): \(shown)")
    }
  }

  /// A mistyped address is refused, saying what to write, rather than made into a new
  /// database in a folder of its name.
  @Test func aMistypedAddressIsRefusedAndNothingIsMade() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let cases = [
      ("postgresql:/lists", "postgresql://"), ("postgres:/lists", "postgres://"),
      ("mysql://x/y", "mysql"), ("https//localhost:8041", "https://"),
      ("localhost:8041", "write http://localhost:8041"),
      ("[::1]:8041/v1", "write http://[::1]:8041"),
    ]
    for (location, advice) in cases {
      for (arguments, environment) in [
        (["--db", location, "demo"], [String: String]()),
        (["list", "create", "x"], ["LISTSTORE_DB": location]),
      ] {
        let result = try run(
          liststoreBinary, arguments, environment: environment, workingDirectory: folder.path)
        #expect(result.status == 64, "\(location): \(result)")
        for text in [advice, environment.isEmpty ? "--db" : "LISTSTORE_DB", "./\(location)"] {
          #expect(result.stderr.contains(text), "\(location): \(result.stderr)")
        }
      }
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
    // A file of such a name, asked for as one, is one.
    let file = try run(
      liststoreBinary, ["--db", "./odd:1", "demo"], workingDirectory: folder.path)
    expectSuccess(file)
    #expect(FileManager.default.fileExists(atPath: folder.file("odd:1")))
    for location in ["host=/tmp dbname=x", "lists.sqlite", "/tmp/a:b/lists.sqlite"] {
      #expect(Repository.locationProblem(location) == nil, "\(location)")
    }
  }

  /// The address of a list, pasted as the server's, says which the server's is.
  @Test func aListsAddressAsTheServersSaysWhichIsTheServers() throws {
    let served = try Served()
    defer { served.remove() }
    for path in ["/v1/lists/demo", "/lists/demo"] {
      let shown = try liststore(
        ["--token", "READER", "show", "demo"], database: served.server.base + path)
      expectFailure(shown, containing: "the address of a list", "like \(served.server.base)")
    }
  }

  @Test func aMissingTokensFileIsSaidToBeMissing() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let result = try liststore(
      ["serve", "--tokens", folder.file("nosuch.txt")], database: folder.file("lists.sqlite"))
    expectFailure(result, containing: "nosuch.txt", "there is no such file")
  }

  @Test func aPortInUseNamesListenAndTheOtherServer() throws {
    let served = try Served()
    defer { served.remove() }
    let second = try liststore(
      ["serve", "--listen", "127.0.0.1:\(served.server.port)"], database: served.database)
    expectFailure(second, containing: "--listen", "another server")
  }

  @Test func aMissingRowNamesItsListAndHowToSeeTheIds() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo", "--list", "my list"], database: database))
    let before = try Data(contentsOf: URL(fileURLWithPath: database))
    expectFailure(
      try liststore(["item", "rm", "my list", "#999"], database: database),
      containing: #"no item with id 999 in "my list""#, #"'liststore show 'my list' --json'"#)
    expectFailure(
      try liststore(["section", "rm", "my list", "#99"], database: database),
      containing: #"no section with id 99 in "my list""#)
    #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == before)
  }

  @Test func aMistypedListNameGetsTheNearestOne() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["list", "create", "groceries"], database: database))
    expectFailure(
      try liststore(["show", "grocerie"], database: database),
      containing: "did you mean 'groceries'?")
    expectFailure(
      try liststore(["item", "add", "Groceries", "0", "x"], database: database),
      containing: "did you mean 'groceries'?")
    // Nothing near: the plain sentence, and no synonym of a command ("list" is not "lists").
    let far = try liststore(["show", "list"], database: database)
    expectFailure(far, containing: "see 'liststore lists'")
    #expect(!far.stderr.contains("did you mean"), "\(far)")
  }

  @Test func aMoveToWhereTheRowIsSaysNothingMovedAndWritesNothing() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let database = folder.file("lists.sqlite")
    expectSuccess(try liststore(["demo"], database: database))
    expectSuccess(try liststore(["section", "add", "demo", "More"], database: database))
    let log = "SELECT count(*) FROM changes"
    let before = try run("/usr/bin/sqlite3", [database, log]).stdout
    for arguments in [
      ["item", "move", "demo", "0:0", "--before", "0:0"],
      ["item", "move", "demo", "0:0", "--before", "0:1"],
      ["item", "move", "demo", "0:1", "--after", "0:0"],
      ["item", "move", "demo", "0:0", "0:0"],
      ["item", "move", "demo", "#1", "0:0"],
      ["section", "move", "demo", "0", "0"],
      ["section", "move", "demo", "0", "--before", "1"],
    ] {
      let result = try liststore(arguments, database: database)
      expectSuccess(result)
      #expect(
        result.stdout.hasSuffix("is there already; nothing moved\n"), "\(arguments) \(result)")
    }
    #expect(try run("/usr/bin/sqlite3", [database, log]).stdout == before)
    let moved = try liststore(["item", "move", "demo", "0:0", "0:1"], database: database)
    #expect(moved.stdout == "moved item 0:0 to 0:1\n", "\(moved)")
  }
}
