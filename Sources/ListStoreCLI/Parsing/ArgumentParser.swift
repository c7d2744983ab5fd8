/// A small declarative command-line parser: commands declare their positional
/// arguments and options once, and parsing, usage lines and help are all generated
/// from that declaration, so they cannot drift apart.

import ListStoreFormats

/// A positional argument of a command.
struct ArgumentSpec: Sendable {
  /// The placeholder shown in usage, e.g. `LIST` or `ITEM`.
  var name: String
  /// One line of help.
  var help: String
  /// Whether it may be left out (only the last arguments may be).
  var isOptional = false

  /// The placeholder as usage shows it: `TO`, or `[TO]` when it may be left out.
  var usage: String { isOptional ? "[\(name)]" : name }
}

/// An option of a command: a flag (`--json`) or an option with a value (`--at ROW`).
struct OptionSpec: Sendable {
  /// The long name without dashes, e.g. `at`.
  var name: String
  /// The value placeholder, e.g. `ROW`; `nil` for a flag.
  var valueName: String?
  /// One line of help.
  var help: String

  var usage: String { valueName.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// How a command uses the database file.
enum DatabaseUse: Sendable {
  /// It only reads: a missing file is an error, and nothing is created (a mistyped `--db`
  /// leaves no folders or empty database behind).
  case reads
  /// It may create a list: a missing file and its folders are created.
  case writes
  /// It changes lists that must exist already: a missing file is an error, as for
  /// `reads`, so that a mistyped `--db` leaves nothing behind.
  case changes
}

/// One command of the table: `item add`, `show`, …
struct CommandSpec: Sendable {
  /// The words that name it, e.g. `["item", "add"]`.
  var path: [String]
  /// One line saying what it does.
  var abstract: String
  /// More explanation shown by `--help`, if any.
  var discussion: String = ""
  var arguments: [ArgumentSpec] = []
  var options: [OptionSpec] = []
  /// Whether it may create the database.
  var database: DatabaseUse = .changes
  /// Runs the parsed command.
  var run: @Sendable (Invocation, Context) throws -> Void
  /// Runs it against a server (`--db http://…`); `nil` for a command that needs the
  /// database itself.
  var remote: (@Sendable (Invocation, Context) throws -> Void)? = nil

  var name: String { path.joined(separator: " ") }

  var usage: String {
    var parts = ["liststore", name] + arguments.map(\.usage)
    parts += options.map { "[\($0.usage)]" }
    return parts.joined(separator: " ")
  }
}

/// A wrong command line: printed as `error: …` with the usage, status 64.
struct UsageError: Error, Equatable {
  var message: String
  /// The command whose usage to show, if one was recognised.
  var command: [String]?
}

/// A parsed command line: which command, and the values given for its arguments
/// and options, with typed accessors that report malformed values as usage errors.
struct Invocation {
  var command: CommandSpec
  var arguments: [String: String] = [:]
  var options: [String: String] = [:]
  var flags: Set<String> = []

  /// The value of a declared positional argument.
  func argument(_ name: String) -> String { arguments[name] ?? "" }

  func flag(_ name: String) -> Bool { flags.contains(name) }

  func option(_ name: String) -> String? { options[name] }

  /// A non-negative integer argument.
  func index(_ name: String) throws(UsageError) -> Int {
    try Self.parseIndex(argument(name), name: name, command: command.path)
  }

  /// A non-negative integer option, if given.
  func indexOption(_ name: String) throws(UsageError) -> Int? {
    guard let text = options[name] else { return nil }
    return try Self.parseIndex(text, name: "--\(name)", command: command.path)
  }

  /// A count option (`--max-events N`): a whole number, 0 or more, if given.
  func countOption(_ name: String) throws(UsageError) -> Int? {
    guard let text = options[name] else { return nil }
    guard let value = Int(text), value >= 0, !text.hasPrefix("+") else {
      throw UsageError(
        message: "--\(name) must be a whole number, 0 or more; got \(text.debugDescription)"
          + Self.tooLarge(text), command: command.path)
    }
    return value
  }

  /// What to add to a message about `text` when a number in it does not fit: what the
  /// largest is; nothing otherwise.
  static func tooLarge(_ text: String) -> String {
    let runs = text.split { !$0.isASCII || !$0.isNumber }
    guard runs.contains(where: { Int($0) == nil }) else { return "" }
    return " (a number there is too large: the largest is \(Int.max))"
  }

  /// A `SECTION:ROW` argument.
  func indexPath(_ name: String) throws(UsageError) -> (section: Int, row: Int) {
    let text = argument(name)
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let section = Int(parts[0]), let row = Int(parts[1]), section >= 0,
      row >= 0
    else {
      throw UsageError(
        message:
          "\(name) must be SECTION:ROW with two zero-based numbers, like 0:1; got \(text.debugDescription)"
          + Self.tooLarge(text), command: command.path)
    }
    return (section, row)
  }

  /// Whether an argument with this placeholder accepts `#ID`.
  static func takesIDs(_ name: String) -> Bool {
    ["SECTION", "ITEM"].contains(name)
  }

  /// The id of `#42`, if `text` is one.
  static func parseID(_ text: String) -> Int64? { parseRowID(text) }

  /// A section named by its index or `#ID`.
  func section(_ name: String) throws(UsageError) -> SectionAddress {
    try Self.section(argument(name), name: name, command: command.path)
  }

  /// A section option (`--before`, `--after`), if given.
  func sectionOption(_ name: String) throws(UsageError) -> SectionAddress? {
    guard let text = options[name] else { return nil }
    return try Self.section(text, name: "--\(name)", command: command.path)
  }

  static func section(_ text: String, name: String, command: [String]) throws(UsageError)
    -> SectionAddress
  {
    if let id = parseID(text) { return .id(id) }
    guard let index = Int(text), index >= 0, !text.hasPrefix("+") else {
      throw UsageError(
        message: "\(name) must be a zero-based index (0, 1, 2, …) or an id like #42; got "
          + text.debugDescription + tooLarge(text), command: command)
    }
    return .index(index)
  }

  /// An item named by `SECTION:ROW` or `#ID`.
  func item(_ name: String) throws(UsageError) -> ItemAddress {
    try Self.item(argument(name), name: name, command: command.path)
  }

  /// An item option (`--before`, `--after`), if given.
  func itemOption(_ name: String) throws(UsageError) -> ItemAddress? {
    guard let text = options[name] else { return nil }
    return try Self.item(text, name: "--\(name)", command: command.path)
  }

  static func item(_ text: String, name: String, command: [String]) throws(UsageError)
    -> ItemAddress
  {
    if let id = parseID(text) { return .id(id) }
    if let path = parsePath(text) { return .path(section: path.section, row: path.row) }
    throw UsageError(
      message: "\(name) must be SECTION:ROW with two zero-based numbers, like 0:1, or an id "
        + "like #42; got \(text.debugDescription)" + tooLarge(text), command: command)
  }

  /// `0:1` as (0, 1).
  static func parsePath(_ text: String) -> (section: Int, row: Int)? { parseIndexPath(text) }

  /// `--at`: a row (or section index), or `#ID` for the place of that item or section.
  func placeOption(_ name: String) throws(UsageError) -> Place? {
    guard let text = options[name] else { return nil }
    if let id = Self.parseID(text) { return .id(id) }
    return .index(try Self.parseIndex(text, name: "--\(name)", command: command.path))
  }

  private static func parseIndex(_ text: String, name: String, command: [String]) throws(UsageError)
    -> Int
  {
    guard let value = Int(text), value >= 0 else {
      throw UsageError(
        message: "\(name) must be a zero-based index (0, 1, 2, …); got \(text.debugDescription)"
          + tooLarge(text), command: command)
    }
    return value
  }
}

/// Where `--at` puts something: at an index, or where the row with an id is now.
enum Place: Equatable, Sendable {
  case index(Int)
  case id(Int64)
}

/// Parses command lines against a table of commands and renders their help.
struct ArgumentParser {
  var commands: [CommandSpec]
  /// Options accepted before or after any command, e.g. `--db PATH`.
  var globalOptions: [OptionSpec]

  /// What a command line asks for.
  enum Request {
    /// Print the tool's help, or a group's (`liststore item --help`).
    case help(group: [String])
    /// Print a command's help.
    case commandHelp(CommandSpec)
    /// Print the version.
    case version
    /// Run a command.
    case run(Invocation, globals: [String: String])
  }

  func parse(_ words: [String]) throws(UsageError) -> Request {
    var globals: [String: String] = [:]
    var rest: [String] = []
    var wantsHelp = false
    var wantsVersion = false
    var index = 0
    var afterTerminator = false
    // First pass: global options and help, anywhere before `--`.
    while index < words.count {
      let word = words[index]
      index += 1
      if afterTerminator {
        rest.append(word)
        continue
      }
      if word == "--" {
        afterTerminator = true
        rest.append(word)
        continue
      }
      if word == "-h" || word == "--help" {
        wantsHelp = true
        continue
      }
      if (word == "--version" || word == "-V") && rest.isEmpty {
        wantsVersion = true
        continue
      }
      if let (name, inline) = Self.splitOption(word),
        let spec = globalOptions.first(where: { $0.name == name })
      {
        let value: String
        if spec.valueName == nil {
          value = ""
        } else if let inline {
          value = inline
        } else if index < words.count {
          value = words[index]
          index += 1
        } else {
          throw UsageError(message: "option --\(name) needs a value (\(spec.usage))", command: nil)
        }
        if spec.valueName != nil, globals[name] != nil {
          throw UsageError(message: "option --\(name) is given twice; give it once", command: nil)
        }
        globals[name] = value
        continue
      }
      rest.append(word)
    }
    if wantsVersion && rest.isEmpty { return .version }
    // `help [COMMAND]` is `[COMMAND] --help`.
    if rest.first == "help", !commands.contains(where: { $0.path.first == "help" }) {
      rest.removeFirst()
      wantsHelp = true
      // `help help` is help itself.
      while rest.first == "help" { rest.removeFirst() }
    }

    // Resolve the command: the longest declared path that prefixes the words.
    let leading = rest.prefix { !$0.hasPrefix("-") }
    guard let first = leading.first else {
      if wantsHelp || rest.isEmpty { return .help(group: []) }
      throw UsageError(
        message: "unknown option \(rest[0]); options come after a command", command: nil)
    }
    let matches = commands.filter { Array(leading.prefix($0.path.count)) == $0.path }
    guard let command = matches.max(by: { $0.path.count < $1.path.count }) else {
      let group = commands.filter { $0.path.first == first && $0.path.count > 1 }
      if !group.isEmpty {
        if wantsHelp || leading.count == 1 {
          if wantsHelp { return .help(group: [first]) }
          throw UsageError(
            message: "\(first) needs a subcommand: "
              + group.map { $0.path[1] }.joined(separator: ", "), command: [first])
        }
        let candidates = group.map { $0.path[1] }
        throw UsageError(
          message: "unknown command '\(first) \(leading[1])'"
            + suggestion(leading[1], among: candidates, prefix: "\(first) "),
          command: [first])
      }
      let names = Set(commands.map { $0.path[0] })
      throw UsageError(
        message: "unknown command '\(first)'" + suggestion(first, among: Array(names), prefix: ""),
        command: nil)
    }
    if wantsHelp { return .commandHelp(command) }

    var invocation = Invocation(command: command)
    var positionals: [String] = []
    var words = rest.dropFirst(command.path.count)[...]
    var optionsEnded = false
    while let word = words.popFirst() {
      if optionsEnded || word == "-" || !word.hasPrefix("-") || Self.isNegativeNumber(word) {
        positionals.append(word)
        continue
      }
      if word == "--" {
        optionsEnded = true
        continue
      }
      guard let (name, inline) = Self.splitOption(word),
        let spec = command.options.first(where: { $0.name == name })
      else {
        let known = command.options.map { "--" + $0.name }
        let option = word.split(separator: "=").first.map(String.init) ?? word
        var hint = suggestion(option, among: known, prefix: "")
        // Options other tools have for what an option of another name does here.
        let elsewhere = ["--port": "--listen", "--host": "--listen", "--bind": "--listen"]
        if hint.isEmpty, let meant = elsewhere[option], known.contains(meant) {
          hint = "; did you mean '\(meant)'?"
        }
        throw UsageError(
          message: "unknown option \(option) for '\(command.name)'"
            + (hint.isEmpty ? " (put -- before values that start with -)" : hint),
          command: command.path)
      }
      if spec.valueName == nil {
        if inline != nil {
          throw UsageError(message: "option --\(name) takes no value", command: command.path)
        }
        invocation.flags.insert(name)
      } else if let value = inline ?? words.popFirst() {
        guard invocation.options.updateValue(value, forKey: name) == nil else {
          throw UsageError(
            message: "option --\(name) is given twice; give it once", command: command.path)
        }
      } else {
        throw UsageError(
          message: "option --\(name) needs a value (\(spec.usage))", command: command.path)
      }
    }
    let required = command.arguments.filter { !$0.isOptional }.count
    if positionals.count < required {
      let missing = command.arguments[positionals.count..<required].map(\.name)
      var message = "missing \(missing.joined(separator: " "))"
      if missing.contains(where: { Invocation.takesIDs($0) }) {
        // `#42` unquoted is a comment to the shell, which then drops it.
        message += " (quote an id, like '#42': the shell reads # as a comment)"
      }
      throw UsageError(message: message, command: command.path)
    }
    if positionals.count > command.arguments.count {
      let extra = positionals[command.arguments.count]
      throw UsageError(
        message: "unexpected argument \(extra.debugDescription) (quote values that contain spaces)",
        command: command.path)
    }
    for (spec, value) in zip(command.arguments, positionals) {
      invocation.arguments[spec.name] = value
    }
    return .run(invocation, globals: globals)
  }

  /// `--name=value` → (`name`, `value`); `--name` → (`name`, nil); else nil.
  private static func splitOption(_ word: String) -> (String, String?)? {
    guard word.hasPrefix("--"), word.count > 2 else { return nil }
    let body = word.dropFirst(2)
    if let equals = body.firstIndex(of: "=") {
      return (String(body[..<equals]), String(body[body.index(after: equals)...]))
    }
    return (String(body), nil)
  }

  /// `-1`, `-12.5e3`: values, not options.
  private static func isNegativeNumber(_ word: String) -> Bool {
    word.count > 1 && word.hasPrefix("-") && word.dropFirst().first?.isNumber == true
  }

  /// `; did you mean 'show'?` for the closest candidate within a small edit distance.
  func suggestion(_ word: String, among candidates: [String], prefix: String) -> String {
    ListStoreFormats.suggestion(for: word, among: candidates, prefix: prefix)
  }

  // MARK: - Help

  func toolHelp(overview: String, footer: String) -> String {
    var lines = [
      overview, "", "USAGE: liststore [--db PATH] <command> [<arguments>] [<options>]", "",
      "COMMANDS:",
    ]
    let width = (commands.map { $0.name.count }.max() ?? 0) + 2
    for command in commands {
      lines.append("  " + pad(command.name, width) + command.abstract)
    }
    lines += ["", "GLOBAL OPTIONS:"] + optionLines(globalOptions + helpOptions + [versionOption])
    lines += ["", footer]
    return lines.joined(separator: "\n")
  }

  func groupHelp(_ group: String) -> String {
    let members = commands.filter { $0.path.first == group }
    var lines = ["USAGE:"] + members.map { "  " + $0.usage } + ["", "COMMANDS:"]
    let width = (members.map { $0.name.count }.max() ?? 0) + 2
    lines += members.map { "  " + pad($0.name, width) + $0.abstract }
    lines += ["", "See 'liststore \(group) <command> --help' for one command."]
    return lines.joined(separator: "\n")
  }

  func commandHelp(_ command: CommandSpec) -> String {
    var lines = [command.abstract, "", "USAGE: " + command.usage]
    if !command.discussion.isEmpty { lines += ["", command.discussion] }
    if !command.arguments.isEmpty {
      lines += ["", "ARGUMENTS:"]
      let width = (command.arguments.map { $0.usage.count }.max() ?? 0) + 2
      lines += command.arguments.map { "  " + pad($0.usage, width) + $0.help }
    }
    lines += ["", "OPTIONS:"] + optionLines(command.options + helpOptions)
    lines += ["", "GLOBAL OPTIONS:"] + optionLines(globalOptions)
    return lines.joined(separator: "\n")
  }

  private var helpOptions: [OptionSpec] {
    [
      OptionSpec(
        name: "help", valueName: nil, help: "Show help (also -h, or 'liststore help ...').")
    ]
  }

  private var versionOption: OptionSpec {
    OptionSpec(name: "version", valueName: nil, help: "Print the version (also -V).")
  }

  /// Help is wrapped to this many columns.
  static let helpWidth = 80

  private func optionLines(_ options: [OptionSpec]) -> [String] {
    let width = (options.map { $0.usage.count }.max() ?? 0) + 2
    return options.flatMap { option in
      // Long help continues under itself.
      let lines = Rendering.wrap(
        option.help.split(separator: " ").map(String.init),
        width: max(20, Self.helpWidth - 2 - width))
      return lines.enumerated().map { index, line in
        "  " + (index == 0 ? pad(option.usage, width) : String(repeating: " ", count: width))
          + line
      }
    }
  }

  private func pad(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(width - Terminal.displayWidth(of: text), 1))
  }
}
