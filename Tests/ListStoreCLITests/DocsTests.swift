import Foundation
import Testing

@testable import ListStoreCLI

/// docs/cli.md is the CLI's contract: it must keep up with the command table.
@Suite struct DocsTests {
  /// The package's root folder, from this file's place in it.
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  func document(_ path: String) throws -> String {
    try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
  }

  @Test func cliDocumentNamesEveryCommandAndOption() throws {
    let text = try document("docs/cli.md")
    for command in Commands.all {
      // The command's row in the table, with its arguments and options.
      let row = "| `" + command.usage.dropFirst("liststore ".count) + "`"
      #expect(text.contains(row), "docs/cli.md has no row \(row)")
      for option in command.options {
        #expect(text.contains("--\(option.name)"), "docs/cli.md misses --\(option.name)")
      }
    }
    for option in Commands.parser.globalOptions {
      #expect(text.contains("`--\(option.name) "), "docs/cli.md misses --\(option.name)")
    }
    for words in ["`help [COMMAND]`", "`--version`, `-V`", "`--help`, `-h`", "| 64 |", "| 1 |"] {
      #expect(text.contains(words), "docs/cli.md misses \(words)")
    }
    for variable in ListStoreCommand.environmentVariables {
      #expect(text.contains("`\(variable)`"), "docs/cli.md misses \(variable)")
    }
  }

  @Test func changesetDocumentNamesEveryField() throws {
    let text = try document("docs/changesets.md")
    for field in [
      "deletedSections", "insertedSections", "movedSections", "updatedSections", "deletedItems",
      "insertedItems", "movedItems", "updatedItems",
    ] {
      #expect(text.contains("| `\(field)` |"), "docs/changesets.md misses \(field)")
    }
  }

  /// docs/http.md does not ship with the binary: `serve --help` (and so the manual page)
  /// lists every route of its table itself.
  @Test func serveHelpListsEveryRouteOfTheHTTPContract() throws {
    let serve = try #require(Commands.all.first { $0.path == ["serve"] })
    let help = Commands.parser.commandHelp(serve).components(separatedBy: "\n")
    let table = try document("docs/http.md").components(separatedBy: "\n")
      .filter { $0.hasPrefix("| `GET ") || $0.hasPrefix("| `P") || $0.hasPrefix("| `DELETE ") }
    #expect(table.count >= 15, "\(table.count) routes in docs/http.md")
    for row in table {
      let route = row.dropFirst(3).prefix { $0 != "`" }.split(separator: " ")
      let method = String(route[0])
      let path = route[1].replacingOccurrences(of: "{name}", with: "NAME")
        .replacingOccurrences(of: "{id}", with: "ID")
      let listed = help.contains { line in
        let words = line.split(separator: " ").map { $0.trimmingCharacters(in: [","]) }
        return words.first == method && words.dropFirst().prefix(2).contains(path)
      }
      #expect(listed, "serve --help does not list \(method) \(path)")
    }
  }

  @Test func readmeLinksTheDocsFolder() throws {
    let readme = try document("README.md")
    #expect(readme.contains("(docs/cli.md)"))
    #expect(readme.contains("(docs/changesets.md)"))
    #expect(!readme.contains("spec/"))
  }
}
