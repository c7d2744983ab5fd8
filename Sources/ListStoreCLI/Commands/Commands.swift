import FoundationEssentials
import ListStore
import ListStoreFormats

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `liststore` command table: every command with its arguments, options, help
/// and the code it runs. Parsing, usage and help are all generated from it.
enum Commands {
  static let database = OptionSpec(
    name: "db", valueName: "PATH",
    help:
      "The database file, a postgresql:// URL, or a server's http(s)://HOST:PORT (default: $LISTSTORE_DB, else "
      + "$XDG_DATA_HOME/liststore/liststore.sqlite, else ~/.local/share/liststore/liststore.sqlite). "
      + "Commands that create a list create it; the others need it to exist.")

  static let token = OptionSpec(
    name: "token", valueName: "TOKEN",
    help:
      "The token a server (--db http://HOST:PORT) requires (default: $LISTSTORE_TOKEN). "
      + "$LISTSTORE_CA_FILE names the authorities to trust for a self-signed https:// server.")

  static let json = OptionSpec(name: "json", valueName: nil, help: "Print JSON instead of text.")

  static let list = ArgumentSpec(name: "LIST", help: "The list's name.")

  static let section = ArgumentSpec(
    name: "SECTION", help: "The section: its index (0 = first) or #ID (quoted: '#42').")

  static let item = ArgumentSpec(
    name: "ITEM", help: "The item: SECTION:ROW (e.g. 0:1) or #ID (quoted: '#42').")

  static let all: [CommandSpec] = RemoteCommands.attached(to: [
    CommandSpec(
      path: ["demo"], abstract: "Build the Cities example in a list and show it.",
      discussion: """
        Creates the list with a section "Cities", footer "That's it", holding Paris and
        Berlin; then appends Copenhagen, and shows it. A list of that name is left as it
        is, and shown ('liststore list rm demo' first builds it again).
        """,
      options: [
        OptionSpec(name: "list", valueName: "NAME", help: "The list to build (default: demo).")
      ],
      database: .writes, run: runDemo),
    CommandSpec(
      path: ["lists"], abstract: "Show the lists, with section and item counts.", options: [json],
      database: .reads, run: runLists),
    CommandSpec(
      path: ["list", "create"], abstract: "Create an empty list.",
      arguments: [ArgumentSpec(name: "NAME", help: "A new, unique, non-empty name.")],
      database: .writes,
      run: { invocation, context in
        let name = invocation.argument("NAME")
        try context.repository().createList(name)
        context.out.line("created list \(quoted(name))")
      }),
    CommandSpec(
      path: ["list", "rm"], abstract: "Delete a list with all its sections and items.",
      arguments: [ArgumentSpec(name: "NAME", help: "The list's name.")],
      run: { invocation, context in
        let name = invocation.argument("NAME")
        try context.repository().deleteList(name)
        context.out.line("removed list \(quoted(name))")
      }),
    CommandSpec(
      path: ["list", "rename"], abstract: "Rename a list.",
      arguments: [
        ArgumentSpec(name: "NAME", help: "The list's name."),
        ArgumentSpec(name: "NEW_NAME", help: "Its new, unique, non-empty name."),
      ],
      run: { invocation, context in
        let (name, newName) = (invocation.argument("NAME"), invocation.argument("NEW_NAME"))
        try context.repository().renameList(name, to: newName)
        context.out.line("renamed list \(quoted(name)) to \(quoted(newName))")
      }),
    CommandSpec(
      path: ["section", "add"],
      abstract: "Add a section (appended unless --at, --before or --after).",
      arguments: [list, ArgumentSpec(name: "HEADER", help: "The section's header.")],
      options: [
        OptionSpec(name: "footer", valueName: "TEXT", help: "The section's footer."),
        OptionSpec(
          name: "at", valueName: "INDEX",
          help: "Insert at this section index (0 = first); #ID: where that section is now."),
        OptionSpec(
          name: "before", valueName: "SECTION", help: "Insert right before this section."),
        OptionSpec(name: "after", valueName: "SECTION", help: "Insert right after this section."),
      ],
      run: runOperation),
    CommandSpec(
      path: ["section", "rm"], abstract: "Delete a section with its items.",
      arguments: [list, section], run: runOperation),
    CommandSpec(
      path: ["section", "move"], abstract: "Move a section.",
      discussion:
        "TO is the section's index after the move; --before or --after name a neighbour instead.",
      arguments: [
        list, section,
        ArgumentSpec(
          name: "TO", help: "Its index after the move (or --before/--after).", isOptional: true),
      ],
      options: [
        OptionSpec(
          name: "before", valueName: "SECTION", help: "Move it right before this section."),
        OptionSpec(name: "after", valueName: "SECTION", help: "Move it right after this section."),
      ],
      run: runOperation),
    CommandSpec(
      path: ["section", "set"], abstract: "Change a section's header or footer.",
      arguments: [list, section],
      options: [
        OptionSpec(name: "header", valueName: "TEXT", help: "The new header."),
        OptionSpec(name: "footer", valueName: "TEXT", help: "The new footer."),
        OptionSpec(name: "no-footer", valueName: nil, help: "Remove the footer."),
      ],
      run: runOperation),
    CommandSpec(
      path: ["item", "add"], abstract: "Add an item (appended unless --at, --before or --after).",
      discussion: """
        With --before or --after (or --at #ID) the new item goes next to a neighbour, which
        must be in SECTION. Named by ids, that costs the same whatever the list's size; an
        index path is found by a scan to its row.
        """,
      arguments: [
        list, section,
        ArgumentSpec(name: "VALUE", help: "The value: a string, or any JSON value with --json."),
      ],
      options: [
        OptionSpec(
          name: "at", valueName: "ROW",
          help: "Insert at this row (0 = first); #ID: right before that item."),
        OptionSpec(name: "before", valueName: "ITEM", help: "Insert right before this item."),
        OptionSpec(name: "after", valueName: "ITEM", help: "Insert right after this item."),
        OptionSpec(name: "json", valueName: nil, help: "Read VALUE as JSON."),
      ],
      run: runOperation),
    CommandSpec(
      path: ["item", "rm"], abstract: "Delete an item.", arguments: [list, item],
      run: runOperation),
    CommandSpec(
      path: ["item", "move"], abstract: "Move an item, within or across sections.",
      discussion: """
        TO is the item's index path after the move; --before or --after name a neighbour
        instead, in any section.
        """,
      arguments: [
        list, item,
        ArgumentSpec(
          name: "TO", help: "Its index path after the move, e.g. 1:0 (or --before/--after).",
          isOptional: true),
      ],
      options: [
        OptionSpec(name: "before", valueName: "ITEM", help: "Move it right before this item."),
        OptionSpec(name: "after", valueName: "ITEM", help: "Move it right after this item."),
      ],
      run: runOperation),
    CommandSpec(
      path: ["item", "set"], abstract: "Change an item's value.",
      arguments: [
        list, item,
        ArgumentSpec(
          name: "VALUE", help: "The new value: a string, or any JSON value with --json."),
      ],
      options: [OptionSpec(name: "json", valueName: nil, help: "Read VALUE as JSON.")],
      run: runOperation),
    CommandSpec(
      path: ["show"], abstract: "Show a list: headers, items, footers.",
      discussion: """
        Items are shown by index path (SECTION:ROW). A string is shown as it is, unless it is
        empty or would read as JSON: then it is shown in double quotes, as a JSON string. Any
        other value is shown as compact JSON. So 0:1  -5 is the number -5, and 0:1  "-5" the
        string "-5"; "true" is a string and true a boolean.
        """,
      arguments: [list], options: [json], database: .reads,
      run: { invocation, context in
        let list = try context.list(invocation.argument("LIST"))
        if invocation.flag("json") {
          try ExportCommand.write(list, context: context)
        } else {
          Rendering.text(list: list.name, sections: try list.storedSections()).forEach(
            context.out.line)
        }
      }),
    WatchCommand.spec,
    CommandSpec(
      path: ["check"], abstract: "Check the database's integrity and ListStore's invariants.",
      discussion: """
        Runs SQLite's integrity check, then checks that every item is in a section and every
        section in a list, that position keys are unique and well formed, that values are
        JSON, that the schema's tables and triggers are there, and that the change log is
        consistent. Prints each problem on standard output and exits 1 when there is any.
        A file too damaged on disk to open is checked by SQLite alone, reading only, and
        the command says what can be done: restore a backup, or recover what SQLite can
        still read with the sqlite3 shell's .recover.
        """,
      options: [ImportCommand.quiet],
      database: .reads,
      run: { invocation, context in
        let repository: Repository
        do {
          repository = try context.repository()
        } catch ListStoreError.damaged(let path, _) {
          // Too damaged to open as a repository: SQLite's own check, reading only.
          try reportCheck(try Repository.checkFile(atPath: path), path: path, context)
          return
        }
        let progress = ProgressLine.start(
          "checking \(repository.path)", unit: "check", total: nil, invocation: invocation,
          context: context)
        var problems: [IntegrityProblem]
        do {
          defer { progress?.finish() }
          problems = try repository.check { done, total in
            progress?.setTotal(total)
            progress?.advance(to: done)
          }
        } catch ListStoreError.damaged(let path, _) {
          problems = try Repository.checkFile(atPath: path)
        }
        try reportCheck(problems, path: repository.path, context)
      }),
    CommandSpec(
      path: ["repair"], abstract: "Rewrite malformed position keys; delete unreachable rows.",
      discussion: """
        Gives every section and item whose position is not a well-formed position key (text
        that another client stored malformed, a BLOB, a number) a new key that keeps it where
        it is, and deletes items of sections that no longer exist and sections of lists that
        no longer exist. One transaction; watchers see the rewritten rows like any other write.
        Run 'liststore check' afterwards to confirm.
        """,
      run: { _, context in
        let repository = try context.repository()
        let report = try repository.repair()
        context.out.line(
          report.isEmpty
            ? "nothing to repair in \(repository.path)" : "repaired \(repository.path): \(report)")
      }),
    CommandSpec(
      path: ["backup"],
      abstract: "Copy the database to a new file, consistently, while others write.",
      discussion:
        "Uses SQLite's online backup API: the copy is one consistent state of the database.",
      arguments: [
        ArgumentSpec(name: "PATH", help: "The new file (it must not exist; its folder must).")
      ],
      options: [ImportCommand.quiet],
      database: .reads,
      run: { invocation, context in
        let path = invocation.argument("PATH")
        let repository = try context.repository()
        do {
          let progress = ProgressLine.start(
            "backing up \(repository.path)", unit: "page", total: nil, invocation: invocation,
            context: context)
          defer { progress?.finish() }
          try repository.backup(to: path) { copied, total in
            progress?.setTotal(total)
            progress?.advance(to: copied)
          }
        }
        context.out.line("backed up \(repository.path) to \(path)")
      }),
    ExportCommand.spec,
    ImportCommand.spec,
    BatchCommand.spec,
    ServeCommand.spec,
    ReplicaCommands.clone,
    ReplicaCommands.sync,
    CountersCommand.screen, CountersCommand.add, CountersCommand.increment,
    CountersCommand.decrement, CountersCommand.remove, CountersCommand.show,
    CompletionCommand.spec, ManCommand.spec,
  ])

  static let parser = ArgumentParser(commands: all, globalOptions: [database, token])

  // MARK: - Runs

  private static func runLists(_ invocation: Invocation, _ context: Context) throws {
    printLists(try context.repository().lists(), invocation, context)
  }

  /// What `lists` prints.
  static func printLists(_ lists: [ListSummary], _ invocation: Invocation, _ context: Context) {
    if invocation.flag("json") {
      context.out.line(Rendering.json(lists: lists))
      return
    }
    if lists.isEmpty {
      context.out.line("no lists yet; create one with 'liststore list create NAME'")
      return
    }
    let width = max(
      4, lists.map { Terminal.displayWidth(of: Rendering.visible($0.name)) }.max() ?? 0)
    let header = "NAME".padding(toLength: width) + "  SECTIONS  ITEMS"
    context.out.line(header)
    for list in lists {
      context.out.line(
        Rendering.visible(list.name).padding(toLength: width) + "  "
          + String(list.sectionCount).leftPadding(toLength: 8) + "  "
          + String(list.itemCount).leftPadding(toLength: 5))
    }
  }

  /// An `item` or `section` command: one operation, one transaction.
  private static func runOperation(_ invocation: Invocation, _ context: Context) throws {
    // The command line is checked before the database is touched.
    let operation = try ListOperation(invocation)
    let list = try context.list(invocation.argument("LIST"))
    context.out.line(try operation.perform(on: list).message)
  }

  private static func runDemo(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.option("list") ?? "demo"
    let repository = try context.repository()
    let built: Bool
    do {
      // One transaction: a demo is built whole or not at all, and of two built at once,
      // one finds the other's.
      built = try repository.write {
        guard (try? repository.listID(named: name)) == nil else { return false }
        let cities = try repository.createList(
          name, metadata: SectionMetadata.self, item: String.self)
        try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
        try cities.appendItems(["Paris", "Berlin"], toSection: 0)
        try cities.appendItem("Copenhagen", toSection: 0)
        return true
      }
    } catch ListStoreError.listExists {
      built = false
    }
    let list = try context.list(name)
    if built {
      context.out.line("Built list \(quoted(name)) in \(repository.path):")
      context.out.line("  a section \"Cities\" with footer \"That's it\" holding Paris and Berlin,")
      context.out.line("  then appended Copenhagen to section 0.")
    } else {
      context.out.line(
        "List \(quoted(name)) is in \(repository.path) already; left as it is "
          + "('liststore list rm \(name)' first builds it again):")
    }
    context.out.line()
    Rendering.text(list: name, sections: try list.storedSections()).forEach(context.out.line)
    context.out.line()
    context.out.line("Next: liststore item add \(name) 0 Rome --at 1")
    context.out.line("      liststore item move \(name) 0:0 0:2")
    context.out.line("      liststore show \(name) --json")
  }

  // MARK: - Helpers

  /// Header and footer as the CLI stores them.
  /// Prints what `check` found, and fails when it found anything: the problems are the
  /// command's output; damage to the file itself comes with what the user can do.
  static func reportCheck(_ problems: [IntegrityProblem], path: String, _ context: Context)
    throws
  {
    guard !problems.isEmpty else {
      context.out.line("ok: \(path) passed every check")
      return
    }
    for problem in problems { context.out.line(Rendering.visible(problem.description)) }
    context.out.flush()
    if problems.contains(where: { $0.check == "sqlite" }) {
      let count = problems.count == 1 ? "the problem" : "the \(problems.count) problems"
      throw CommandError(
        "\(path) is damaged (\(count) listed above): restore a backup (such as one "
          + "'liststore backup' made), or recover what SQLite can still read, as SQL: "
          + "sqlite3 \(path) .recover > recovered.sql")
    }
    throw ListStoreError.integrity(count: problems.count, path: path)
  }

  static func describe(_ error: any Error) -> String {
    if let error = error as? CocoaError {
      if let underlying = error.underlying as? POSIXError {
        return String(cString: strerror(underlying.code.rawValue))
      }
      if error.code == .fileReadNoSuchFile { return "no such file" }
    }
    return "\(error)"
  }
}

extension String {
  /// The text followed by spaces up to `length` terminal cells (wide characters take two).
  func padding(toLength length: Int) -> String {
    self + String(repeating: " ", count: Swift.max(0, length - Terminal.displayWidth(of: self)))
  }

  /// Spaces, then the text, up to `length` terminal cells.
  func leftPadding(toLength length: Int) -> String {
    String(repeating: " ", count: Swift.max(0, length - Terminal.displayWidth(of: self))) + self
  }
}
