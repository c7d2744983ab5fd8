import ListStoreFormats
import Testing

@testable import ListStoreCLI

/// The generic parser on a small table of its own, independent of liststore's commands.
@Suite struct ArgumentParserTests {
  static let parser = ArgumentParser(
    commands: [
      CommandSpec(
        path: ["greet"], abstract: "Say hello.",
        arguments: [ArgumentSpec(name: "NAME", help: "Who.")],
        options: [
          OptionSpec(name: "times", valueName: "N", help: "How often."),
          OptionSpec(name: "loud", valueName: nil, help: "Shout."),
        ], run: { _, _ in }),
      CommandSpec(
        path: ["pair", "make"], abstract: "Make a pair.",
        arguments: [ArgumentSpec(name: "A:B", help: "Pair.")], run: { _, _ in }),
      CommandSpec(path: ["pair", "drop"], abstract: "Drop a pair.", run: { _, _ in }),
    ],
    globalOptions: [OptionSpec(name: "db", valueName: "PATH", help: "File.")])

  func invocation(_ words: [String]) throws -> (Invocation, [String: String]) {
    guard case .run(let invocation, let globals) = try Self.parser.parse(words) else {
      Issue.record("\(words) did not parse to a command")
      throw UsageError(message: "not a command", command: nil)
    }
    return (invocation, globals)
  }

  @Test func parsesArgumentsOptionsAndFlagsInAnyOrder() throws {
    for words in [
      ["greet", "Ann", "--times", "3", "--loud"], ["greet", "--loud", "--times=3", "Ann"],
      ["--db", "x", "greet", "--times", "3", "Ann", "--loud"],
      ["greet", "--times", "3", "--db=x", "--loud", "Ann"],
    ] {
      let (parsed, globals) = try invocation(words)
      #expect(parsed.command.name == "greet")
      #expect(parsed.argument("NAME") == "Ann")
      #expect(try parsed.indexOption("times") == 3)
      #expect(parsed.flag("loud"))
      #expect(globals["db"] == (words.contains { $0.contains("db") } ? "x" : nil))
    }
  }

  @Test func doubleDashEndsOptionsAndNegativeNumbersAreValues() throws {
    #expect(try invocation(["greet", "--", "--loud"]).0.argument("NAME") == "--loud")
    #expect(try invocation(["greet", "-5"]).0.argument("NAME") == "-5")
    #expect(try invocation(["pair", "make", "1:2"]).0.indexPath("A:B") == (1, 2))
  }

  @Test(arguments: [
    (["greet"], "missing NAME"),
    (["greet", "a", "b"], "unexpected argument \"b\" (quote values that contain spaces)"),
    (["greet", "a", "--tims", "2"], "unknown option --tims for 'greet'; did you mean '--times'?"),
    (
      ["greet", "a", "-x"], "unknown option -x for 'greet' (put -- before values that start with -)"
    ),
    (["greet", "a", "--times"], "option --times needs a value (--times N)"),
    (["greet", "a", "--loud=1"], "option --loud takes no value"),
    (["gret"], "unknown command 'gret'; did you mean 'greet'?"),
    (["pair"], "pair needs a subcommand: make, drop"),
    (["pair", "mkae"], "unknown command 'pair mkae'; did you mean 'pair make'?"),
    (["--db"], "option --db needs a value (--db PATH)"),
  ])
  func reportsUsageErrors(words: [String], message: String) {
    #expect(throws: UsageError.self) { try Self.parser.parse(words) }
    do {
      _ = try Self.parser.parse(words)
    } catch {
      #expect(error.message == message)
    }
  }

  @Test func typedAccessorsRejectMalformedValues() throws {
    let (times, _) = try invocation(["greet", "a", "--times", "many"])
    #expect(throws: UsageError.self) { try times.indexOption("times") }
    let (pair, _) = try invocation(["pair", "make", "1:"])
    #expect(throws: UsageError.self) { try pair.indexPath("A:B") }
  }

  @Test func helpComesFromTheTable() throws {
    guard case .commandHelp(let command) = try Self.parser.parse(["greet", "--help"]) else {
      Issue.record("no help")
      return
    }
    let help = Self.parser.commandHelp(command)
    #expect(help.contains("USAGE: liststore greet NAME [--times N] [--loud]"))
    #expect(help.contains("  --times N  How often."))
    guard case .help(let group) = try Self.parser.parse(["pair", "-h"]) else {
      Issue.record("no group help")
      return
    }
    #expect(group == ["pair"])
    #expect(Self.parser.groupHelp("pair").contains("liststore pair make A:B"))
  }

  @Test(arguments: [
    ("show", "shwo", 2), ("", "abc", 3), ("kitten", "sitting", 3), ("same", "same", 0),
  ])
  func editDistanceCountsEdits(a: String, b: String, distance: Int) {
    #expect(editDistance(a, b) == distance)
    #expect(editDistance(b, a) == distance)
  }
}
