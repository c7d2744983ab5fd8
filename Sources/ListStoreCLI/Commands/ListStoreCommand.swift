import ListStore
import ListStoreFormats

/// The `liststore` program: parses a command line, runs the command, prints its
/// output or one `error:` line, and returns the exit status (0, 1 or 64).
public enum ListStoreCommand {
  /// The program's version.
  public static let version = "0.1.0"

  /// The environment variables `liststore` reads: the database path
  /// (`LISTSTORE_DB`, `XDG_DATA_HOME`, `HOME`), `LISTSTORE_BUSY_TIMEOUT` (seconds a
  /// write waits for another writer), `LISTSTORE_MAX_PAGE_COUNT` (a size limit, for
  /// tests), `LISTSTORE_PROGRESS_DELAY` (seconds before a progress line appears), and for
  /// a server, `LISTSTORE_TOKEN` and `LISTSTORE_CA_FILE` (authorities to trust).
  public static let environmentVariables = [
    "LISTSTORE_DB", "XDG_DATA_HOME", "HOME", "LISTSTORE_BUSY_TIMEOUT", "LISTSTORE_MAX_PAGE_COUNT",
    "LISTSTORE_PROGRESS_DELAY", "LISTSTORE_TOKEN", "LISTSTORE_CA_FILE",
  ]

  /// Runs one command line.
  /// - Parameters:
  ///   - arguments: The arguments after the program name.
  ///   - environment: The environment (for `LISTSTORE_DB`, `XDG_DATA_HOME`, `HOME`).
  /// - Returns: The exit status: 0 on success, 1 when the command failed, 64 for a
  ///   wrong command line.
  public static func main(arguments: [String], environment: [String: String]) -> Int32 {
    let out = Output.standardOutput()
    let err = Output.standardError()
    defer {
      out.flush()
      err.flush()
    }
    let parser = Commands.parser
    // The completion scripts' question (hidden from help): what completes the last word.
    if arguments.first == "__complete" {
      complete(Array(arguments.dropFirst()), parser: parser, environment: environment, out: out)
      return 0
    }
    let request: ArgumentParser.Request
    do {
      request = try parser.parse(arguments)
    } catch {
      report(error, parser: parser, to: err)
      return 64
    }
    switch request {
    case .version:
      out.line("liststore \(version)")
      return 0
    case .help(let group):
      out.line(
        group.isEmpty
          ? parser.toolHelp(overview: overview, footer: footer) : parser.groupHelp(group[0]))
      return 0
    case .commandHelp(let command):
      out.line(parser.commandHelp(command))
      return 0
    case .run(let invocation, let globals):
      if let path = globals["db"], path.isEmpty {
        report(UsageError(message: "--db needs a file path", command: nil), parser: parser, to: err)
        return 64
      }
      let context = Context(
        environment: environment, databasePath: globals["db"],
        databaseUse: invocation.command.database, out: out, err: err, token: globals["token"])
      do {
        try context.checkEnvironment()
        if context.isRemote {
          guard let remote = invocation.command.remote else {
            throw CommandError(
              "'liststore \(invocation.command.name)' works on the database itself, not "
                + "through a server: run it where the database is, with --db naming the file "
                + "or a postgresql:// URL")
          }
          try remote(invocation, context)
        } else {
          try invocation.command.run(invocation, context)
        }
        return 0
      } catch let error as UsageError {
        out.discard()
        report(error, parser: parser, to: err)
        return 64
      } catch let error as ListStoreError {
        out.discard()
        let token = globals["token"] ?? environment["LISTSTORE_TOKEN"]
        let message = ErrorExplanations.explain(
          error, in: invocation, token: token.flatMap { $0.isEmpty ? nil : $0 }
        ) { (try? context.listNames()) ?? [] }
        err.line("error: \(message)")
        return 1
      } catch let error as CommandError {
        out.discard()
        err.line("error: \(error)")
        return error.status
      } catch {
        out.discard()
        err.line("error: \(error)")
        return 1
      }
    }
  }

  /// Prints the candidates for the last of `words`, one per line; nothing when there
  /// are none, or when the database cannot be read (completion never fails loudly).
  private static func complete(
    _ words: [String], parser: ArgumentParser, environment: [String: String], out: Output
  ) {
    var database: String?
    for (index, word) in words.dropLast().enumerated() {
      if word == "--db", index + 1 < words.count - 1 { database = words[index + 1] }
      if word.hasPrefix("--db=") { database = String(word.dropFirst("--db=".count)) }
    }
    let context = Context(
      environment: environment, databasePath: database, databaseUse: .reads, out: out, err: out)
    let source = (try? context.repository()).map { CompletionSource(repository: $0) }
    for candidate in Completer(parser: parser, source: source).candidates(words) {
      out.line(candidate)
    }
  }

  private static func report(_ error: UsageError, parser: ArgumentParser, to err: Output) {
    err.line("error: \(error.message)")
    if let path = error.command, let command = parser.commands.first(where: { $0.path == path }) {
      err.line("Usage: \(command.usage)")
      err.line("See 'liststore \(command.name) --help'.")
    } else if let group = error.command, !group.isEmpty {
      err.line("See 'liststore \(group.joined(separator: " ")) --help'.")
    } else {
      err.line("See 'liststore --help'.")
    }
  }

  static let overview = """
    liststore — sectioned lists in SQLite or PostgreSQL that programs can watch.

    A list holds ordered sections (a header and a footer) of ordered items (a string
    or any JSON value). Items are addressed as SECTION:ROW, both zero-based, or by id
    as '#42' (quoted: the shell reads # as a comment); sections by index or '#ID'.
    """

  static let footer = """
    Start with 'liststore demo', then 'liststore show demo'.
    See 'liststore help <command>' (or 'liststore <command> --help') for one command.
    """
}
