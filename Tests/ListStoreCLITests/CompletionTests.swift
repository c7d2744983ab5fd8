import Foundation
import TestSupport
import Testing

@testable import ListStoreCLI

/// `liststore completion SHELL` and `liststore man`: generated from the command table,
/// completing from the database, and loaded by the real shells.
@Suite struct CompletionTests {
  let folder = TemporaryDirectory()
  var db: String { folder.file("lists.sqlite") }

  /// `liststore __complete WORDS…` on a database with the lists "demo" and "groceries".
  func complete(_ words: String...) throws -> [String] {
    let result = try liststore(
      ["__complete"] + words, database: nil, environment: ["LISTSTORE_DB": db])
    #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
    return result.stdout.split(separator: "\n").map(String.init)
  }

  func makeLists() throws {
    expectSuccess(try liststore(["demo"], database: db))
    expectSuccess(try liststore(["list", "create", "groceries"], database: db))
    expectSuccess(try liststore(["section", "add", "groceries", "Fruit"], database: db))
    for value in ["apples", "pears"] {
      expectSuccess(try liststore(["item", "add", "groceries", "0", value], database: db))
    }
  }

  @Test func completesCommandsOptionsListsAndIdsFromTheTableAndTheDatabase() throws {
    defer { folder.remove() }
    try makeLists()
    let table = Commands.parser.commands
    #expect(
      try complete("") == ["help"]
        + table.map { $0.path[0] }.reduce(into: []) { words, word in
          if !words.contains(word) { words.append(word) }
        })
    #expect(try complete("it") == ["item"])
    #expect(try complete("item", "") == ["add", "rm", "move", "set"])
    #expect(try complete("show", "") == ["demo", "groceries"])
    #expect(try complete("show", "g") == ["groceries"])
    #expect(try complete("--db", db, "show", "d") == ["demo"])
    #expect(try complete("item", "rm", "groceries", "#") == ["#4", "#5"])
    // Words as the shell passes them, quoted or escaped.
    #expect(try complete("item", "rm", "groceries", "'#") == ["#4", "#5"])
    #expect(try complete("item", "rm", "'groceries'", "\"#4") == ["#4"])
    #expect(try complete("item", "rm", "gro\\ceries", "\\#") == ["#4", "#5"])
    #expect(try complete("section", "rm", "groceries", "") == ["#2"])
    #expect(try complete("item", "add", "groceries", "0", "x", "--after", "") == ["#4", "#5"])
    #expect(try complete("item", "add", "groceries", "0", "x", "--a") == ["--at", "--after"])
    #expect(try complete("counters", "--list", "") == ["demo", "groceries"])
    #expect(try complete("completion", "") == ["bash", "zsh", "fish"])
    // Free text, and values after the last argument: nothing.
    #expect(try complete("list", "create", "").isEmpty)
    #expect(try complete("item", "set", "groceries", "0:0", "").isEmpty)
    // No database: commands still complete, lists do not, and nothing is created.
    let missing = folder.file("missing/lists.sqlite")
    #expect(try complete("--db", missing, "show", "").isEmpty)
    #expect(try complete("--db", missing, "sh") == ["show"])
    #expect(!FileManager.default.fileExists(atPath: folder.file("missing")))
  }

  /// Item ids come from the list's first items only: completing costs the same for a
  /// list of any size.
  @Test func itemIdsAreTheFirstHundred() throws {
    defer { folder.remove() }
    let items = (0..<250).map { "\($0)" }.joined(separator: ",")
    expectSuccess(
      try liststore(
        ["import", "big", "-"], database: db,
        input: "{\"sections\":[{\"header\":\"S\",\"items\":[" + items + "]}]}"))
    let ids = try complete("item", "rm", "big", "#")
    #expect(ids == (1...100).map { "#\($0)" })
  }

  /// Runs `script` with `shell`'s path, with `liststore` first on `PATH` and the test's
  /// database as `$LISTSTORE_DB`.
  func inShell(_ shell: String, _ arguments: [String]) throws -> ProcessResult {
    let binaries = URL(fileURLWithPath: liststoreBinary).deletingLastPathComponent().path
    return try run(
      shell, arguments,
      environment: [
        "PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        "LISTSTORE_DB": db, "HOME": folder.path, "XDG_CONFIG_HOME": folder.path,
      ])
  }

  @Test(.installed("bash"))
  func bashLoadsTheScriptAndCompletesListNamesAndIds() throws {
    defer { folder.remove() }
    try makeLists()
    let result = try inShell(
      "/usr/bin/env",
      [
        "bash", "--norc", "--noprofile", "-c",
        """
        source <(liststore completion bash) || exit 1
        complete -p liststore || exit 1
        COMP_WORDS=(liststore show gr); COMP_CWORD=2; _liststore; printf '%s\\n' "${COMPREPLY[@]}"
        COMP_WORDS=(liststore item rm groceries '#'); COMP_CWORD=4; _liststore; printf '%s\\n' "${COMPREPLY[@]}"
        """,
      ])
    expectSuccess(result)
    #expect(
      result.lines == ["complete -o default -F _liststore liststore", "groceries", "\\#4", "\\#5"])
  }

  @Test(.installed("zsh"))
  func zshLoadsTheScriptIntoItsCompletionSystemAndCompletesListNames() throws {
    defer { folder.remove() }
    try makeLists()
    // The completion system registers the function; a stand-in for compadd (which only
    // works inside a completion) shows what the function offers.
    let result = try inShell(
      "/usr/bin/env",
      [
        "zsh", "-f", "-c",
        """
        autoload -Uz compinit && compinit -u -D || exit 1
        source <(liststore completion zsh) || exit 1
        print -r -- $_comps[liststore]
        compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
        words=(liststore show gr); CURRENT=3; _liststore
        words=(liststore item rm groceries '#'); CURRENT=5; _liststore
        """,
      ])
    expectSuccess(result)
    #expect(result.lines == ["_liststore", "groceries", "#4", "#5"])
    // Without the completion system, the script says how to start it.
    let bare = try inShell(
      "/usr/bin/env", ["zsh", "-f", "-c", "source <(liststore completion zsh)"])
    #expect(bare.stderr.contains("run 'autoload -Uz compinit && compinit' first"), "\(bare)")
  }

  @Test(.installed("fish"))
  func fishLoadsTheScriptAndCompletesListNames() throws {
    defer { folder.remove() }
    try makeLists()
    let result = try inShell(
      "/usr/bin/env",
      [
        "fish", "--no-config", "-c",
        """
        liststore completion fish | source; or exit 1
        complete -C 'liststore show gr'
        complete -C 'liststore item rm groceries \\#'
        """,
      ])
    expectSuccess(result)
    #expect(result.lines == ["groceries", "#4", "#5"])
  }

  @Test func anUnknownShellIsAUsageError() throws {
    defer { folder.remove() }
    let result = try liststore(["completion", "tcsh"], database: db)
    #expect(result.status == 64)
    #expect(
      result.stderr.hasPrefix(#"error: unknown shell "tcsh"; completion knows bash, zsh and fish"#))
  }

  /// The manual page holds every command and option of the table.
  @Test func theManualPageHasEveryCommandAndOption() throws {
    defer { folder.remove() }
    let page = try liststore(["man"], database: db)
    expectSuccess(page)
    for command in Commands.parser.commands {
      #expect(page.stdout.contains(#"\fBliststore "# + ManPage.escape(command.name) + #"\fR"#))
      for option in command.options {
        #expect(page.stdout.contains(#"\fB\-\-"# + ManPage.escape(option.name)), "\(option.name)")
      }
    }
  }

  /// man's formatter reads the page without a warning.
  @Test(.installed("groff", package: "groff-base"))
  func theManualPageFormatsCleanly() throws {
    defer { folder.remove() }
    let page = try liststore(["man"], database: db)
    let formatted = try run(
      "/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-P-cbou"], input: page.stdout)
    #expect(formatted.status == 0 && formatted.stderr.isEmpty, "\(formatted.stderr)")
    #expect(formatted.stdout.contains("liststore item add"))
    #expect(formatted.stdout.contains("EXIT STATUS"))
  }
}
