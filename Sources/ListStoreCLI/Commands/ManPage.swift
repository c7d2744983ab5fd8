import ListStore

/// `liststore man`: the manual page, in roff (man(7)), generated from the command table
/// that `--help` shows.
enum ManCommand {
  static let spec = CommandSpec(
    path: ["man"], abstract: "Print the manual page (roff): liststore man | man -l -",
    discussion: """
      The same commands, arguments and options as --help, as one manual page. Read it
      with 'liststore man | man -l -', or install it:
        liststore man > ~/.local/share/man/man1/liststore.1
      """,
    database: .reads,
    run: { _, context in
      context.out.line(
        ManPage.render(
          Commands.parser, version: ListStoreCommand.version,
          overview: ListStoreCommand.overview))
    })
}

/// A manual page for a command table.
enum ManPage {
  /// The page, in roff.
  static func render(_ parser: ArgumentParser, version: String, overview: String) -> String {
    var page = [
      #".TH LISTSTORE 1 "" "liststore \#(version)" "User Commands""#,
      ".SH NAME",
      #"liststore \- sectioned lists in SQLite or PostgreSQL that programs can watch"#,
      ".SH SYNOPSIS",
      #".B liststore"#,
      #"[\fB\-\-db\fR \fIPATH\fR] \fIcommand\fR [\fIarguments\fR] [\fIoptions\fR]"#,
      ".SH DESCRIPTION",
    ]
    // The overview's first line is the NAME line's.
    page += paragraphs(overview.split(separator: "\n").dropFirst().joined(separator: "\n"))
    page.append(".SH COMMANDS")
    for command in parser.commands {
      page.append(".TP")
      page.append(
        ([#"\fBliststore "# + escape(command.name) + #"\fR"#]
          + command.arguments.map { argument in
            argument.isOptional
              ? "[" + #"\fI"# + escape(argument.name) + #"\fR"# + "]"
              : #"\fI"# + escape(argument.name) + #"\fR"#
          }).joined(separator: " "))
      page.append(escape(command.abstract))
      page.append(".RS")
      if !command.discussion.isEmpty { page += paragraphs(command.discussion) }
      for argument in command.arguments {
        page += [".TP", #"\fI"# + escape(argument.name) + #"\fR"#, escape(argument.help)]
      }
      for option in command.options {
        page += [".TP", optionUsage(option), escape(option.help)]
      }
      page.append(".RE")
    }
    page.append(".SH OPTIONS")
    for option in parser.globalOptions {
      page += [".TP", optionUsage(option), escape(option.help)]
    }
    page += [
      ".TP", #"\fB\-\-help\fR, \fB\-h\fR"#,
      "Show help: for the tool, a group of commands, or one command (also "
        + #"\fBliststore help\fR \fIcommand\fR)."#,
      ".TP", #"\fB\-\-version\fR, \fB\-V\fR"#, "Print the version.",
      ".SH ENVIRONMENT",
      ".TP", ".B LISTSTORE_DB",
      "The database when there is no --db: a SQLite file, or a postgresql:// URL or libpq "
        + "keyword string.",
      ".TP", ".B XDG_DATA_HOME",
      "Where the default database is: $XDG_DATA_HOME/liststore/liststore.sqlite "
        + "(~/.local/share/liststore/liststore.sqlite when it is unset).",
      ".TP", ".B LISTSTORE_BUSY_TIMEOUT",
      "Seconds a write waits for another writer's lock (default 10).",
      ".TP", ".B LISTSTORE_PROGRESS_DELAY",
      "Seconds of work after which a long command shows its progress line (default 1; 0 "
        + "shows it at once).",
      ".TP", ".B LISTSTORE_LIBPQ",
      "The libpq library to load for PostgreSQL locations (default libpq.so.5).",
      ".SH EXIT STATUS",
      ".TP", ".B 0", "Success.",
      ".TP", ".B 1",
      "The command could not be carried out (an unknown list, a row that does not exist, "
        + "invalid JSON, a database that cannot be opened or written, problems found by "
        + #"\fBcheck\fR); one "# + #"\fBerror:\fR"# + " line on standard error says why.",
      ".TP", ".B 64", "A wrong command line; the usage follows the error.",
      ".SH SEE ALSO",
      #"\fBsqlite3\fR(1), \fBpsql\fR(1)"#,
    ]
    return page.joined(separator: "\n")
  }

  private static func optionUsage(_ option: OptionSpec) -> String {
    #"\fB\-\-"# + escape(option.name) + #"\fR"#
      + (option.valueName.map { #" \fI"# + escape($0) + #"\fR"# } ?? "")
  }

  /// Text as roff paragraphs: lines that start with spaces (examples) kept as they are,
  /// other lines filled.
  private static func paragraphs(_ text: String) -> [String] {
    var lines: [String] = []
    var inExample = false
    var startsParagraph = true
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.trimmingPrefix(while: { $0 == " " }).isEmpty {
        if inExample {
          lines += [".fi", ".RE"]
          inExample = false
        }
        startsParagraph = true
        continue
      }
      let isExample = line.hasPrefix("  ")
      if isExample != inExample {
        lines += isExample ? [".RS", ".nf"] : [".fi", ".RE"]
        inExample = isExample
        startsParagraph = !isExample
      }
      if startsParagraph && !isExample {
        lines.append(".PP")
        startsParagraph = false
      }
      lines.append(escape(isExample ? String(line.dropFirst(2)) : String(line)))
    }
    if inExample { lines += [".fi", ".RE"] }
    return lines
  }

  /// `text` with roff's special characters escaped: backslashes, and a `.` or `'` that
  /// starts a line (it would be read as a request).
  static func escape(_ text: String) -> String {
    var escaped = text.replacing("\\", with: "\\e").replacing("-", with: "\\-")
    if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
    // Characters beyond ASCII by their code point, which groff reads in any locale.
    guard escaped.unicodeScalars.contains(where: { !$0.isASCII }) else { return escaped }
    return escaped.unicodeScalars.map { scalar in
      guard !scalar.isASCII else { return String(scalar) }
      let hex = String(scalar.value, radix: 16, uppercase: true)
      return "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
    }.joined()
  }
}
