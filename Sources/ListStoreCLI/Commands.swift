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
      "The database file (default: $LISTSTORE_DB, else $XDG_DATA_HOME/liststore/liststore.sqlite). "
      + "Commands that write create it; commands that only read need it to exist.")

  static let json = OptionSpec(name: "json", valueName: nil, help: "Print JSON instead of text.")

  static let list = ArgumentSpec(name: "LIST", help: "The list's name.")

  static let all: [CommandSpec] = [
    CommandSpec(
      path: ["demo"], abstract: "Build the Cities example in a list and show it.",
      discussion: """
        Creates the list (replacing an earlier one of that name) with a section "Cities",
        footer "That's it", holding Paris and Berlin; then appends Copenhagen, and shows it.
        """,
      options: [
        OptionSpec(name: "list", valueName: "NAME", help: "The list to build (default: demo).")
      ],
      run: runDemo),
    CommandSpec(
      path: ["lists"], abstract: "Show the lists, with section and item counts.", options: [json],
      database: .reads, run: runLists),
    CommandSpec(
      path: ["list", "create"], abstract: "Create an empty list.",
      arguments: [ArgumentSpec(name: "NAME", help: "A new, unique, non-empty name.")],
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
      path: ["section", "add"], abstract: "Add a section (appended unless --at).",
      arguments: [list, ArgumentSpec(name: "HEADER", help: "The section's header.")],
      options: [
        OptionSpec(name: "footer", valueName: "TEXT", help: "The section's footer."),
        OptionSpec(
          name: "at", valueName: "INDEX", help: "Insert at this section index (0 = first)."),
      ],
      run: { invocation, context in
        let at = try invocation.indexOption("at")
        let list = try context.list(invocation.argument("LIST"))
        let metadata = try metadataJSON(
          header: invocation.argument("HEADER"), footer: invocation.option("footer"))
        let sectionID: Int64
        if let at {
          sectionID = try list.insert(section: metadata, at: at)
        } else {
          sectionID = try list.appendSection(metadata)
        }
        let index = try at ?? (list.numberOfSections() - 1)
        context.out.line("added section \(index) (id \(sectionID)) to \(quoted(list.name))")
      }),
    CommandSpec(
      path: ["section", "rm"], abstract: "Delete a section with its items.",
      arguments: [list, ArgumentSpec(name: "INDEX", help: "The section's index.")],
      run: { invocation, context in
        let index = try invocation.index("INDEX")
        try context.list(invocation.argument("LIST")).removeSection(at: index)
        context.out.line("removed section \(index)")
      }),
    CommandSpec(
      path: ["section", "move"], abstract: "Move a section.",
      arguments: [
        list, ArgumentSpec(name: "FROM", help: "The section's index."),
        ArgumentSpec(name: "TO", help: "Its index after the move."),
      ],
      run: { invocation, context in
        let (from, to) = (try invocation.index("FROM"), try invocation.index("TO"))
        try context.list(invocation.argument("LIST")).moveSection(from: from, to: to)
        context.out.line("moved section \(from) to \(to)")
      }),
    CommandSpec(
      path: ["section", "set"], abstract: "Change a section's header or footer.",
      arguments: [list, ArgumentSpec(name: "INDEX", help: "The section's index.")],
      options: [
        OptionSpec(name: "header", valueName: "TEXT", help: "The new header."),
        OptionSpec(name: "footer", valueName: "TEXT", help: "The new footer."),
        OptionSpec(name: "no-footer", valueName: nil, help: "Remove the footer."),
      ],
      run: runSectionSet),
    CommandSpec(
      path: ["item", "add"], abstract: "Add an item (appended unless --at).",
      arguments: [
        list, ArgumentSpec(name: "SECTION", help: "The section's index."),
        ArgumentSpec(name: "VALUE", help: "The value: a string, or any JSON value with --json."),
      ],
      options: [
        OptionSpec(name: "at", valueName: "ROW", help: "Insert at this row (0 = first)."),
        OptionSpec(name: "json", valueName: nil, help: "Read VALUE as JSON."),
      ],
      run: { invocation, context in
        let section = try invocation.index("SECTION")
        let row = try invocation.indexOption("at")
        let value = try itemValue(invocation)
        let list = try context.list(invocation.argument("LIST"))
        if let row {
          let id = try list.insert(item: value, at: IndexPath(indexes: [section, row]))
          context.out.line("added item \(section):\(row) (id \(id))")
          return
        }
        let id = try list.appendItem(value, toSection: section)
        // Its row, unless another writer added after it meanwhile (then it is unknown
        // without reading the section, and the message says only the section).
        let last = try list.numberOfItems(inSection: section) - 1
        if last >= 0, try list.itemID(at: IndexPath(indexes: [section, last])) == id {
          context.out.line("added item \(section):\(last) (id \(id))")
        } else {
          context.out.line("added item (id \(id)) to section \(section)")
        }
      }),
    CommandSpec(
      path: ["item", "rm"], abstract: "Delete an item.",
      arguments: [
        list, ArgumentSpec(name: "SECTION:ROW", help: "The item's index path, e.g. 0:1."),
      ],
      run: { invocation, context in
        let path = try invocation.indexPath("SECTION:ROW")
        try context.list(invocation.argument("LIST")).removeItem(
          at: IndexPath(indexes: [path.section, path.row]))
        context.out.line("removed item \(path.section):\(path.row)")
      }),
    CommandSpec(
      path: ["item", "move"], abstract: "Move an item, within or across sections.",
      discussion: "The target is the item's index path after the move.",
      arguments: [
        list, ArgumentSpec(name: "FROM", help: "The item's index path, e.g. 0:1."),
        ArgumentSpec(name: "TO", help: "Its index path after the move, e.g. 1:0."),
      ],
      run: { invocation, context in
        let from = try invocation.indexPath("FROM")
        let to = try invocation.indexPath("TO")
        try context.list(invocation.argument("LIST")).moveItem(
          from: IndexPath(indexes: [from.section, from.row]),
          to: IndexPath(indexes: [to.section, to.row]))
        context.out.line("moved item \(from.section):\(from.row) to \(to.section):\(to.row)")
      }),
    CommandSpec(
      path: ["item", "set"], abstract: "Change an item's value.",
      arguments: [
        list, ArgumentSpec(name: "SECTION:ROW", help: "The item's index path, e.g. 0:1."),
        ArgumentSpec(
          name: "VALUE", help: "The new value: a string, or any JSON value with --json."),
      ],
      options: [OptionSpec(name: "json", valueName: nil, help: "Read VALUE as JSON.")],
      run: { invocation, context in
        let path = try invocation.indexPath("SECTION:ROW")
        let value = try itemValue(invocation)
        try context.list(invocation.argument("LIST")).replaceItem(
          at: IndexPath(indexes: [path.section, path.row]), with: value)
        context.out.line("set item \(path.section):\(path.row)")
      }),
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
        let sections = try list.storedSections()
        if invocation.flag("json") {
          context.out.line(Rendering.json(list: list.name, sections: sections))
        } else {
          Rendering.text(list: list.name, sections: sections).forEach(context.out.line)
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
        """,
      database: .reads,
      run: { _, context in
        let repository = try context.repository()
        let problems = try repository.check()
        guard problems.isEmpty else {
          // The problems are the command's output, printed even though it then fails.
          for problem in problems { context.out.line(Rendering.visible(problem.description)) }
          context.out.flush()
          throw ListStoreError.integrity(count: problems.count, path: repository.path)
        }
        context.out.line("ok: \(repository.path) passed every check")
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
      database: .reads,
      run: { invocation, context in
        let path = invocation.argument("PATH")
        let repository = try context.repository()
        let showProgress = isatty(STDERR_FILENO) == 1
        try repository.backup(to: path) { copied, total in
          guard showProgress, total > 0 else { return }
          let line = "\rbacking up: \(copied * 100 / total)% of \(total) pages"
          _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        if showProgress { _ = "\n".withCString { write(STDERR_FILENO, $0, 1) } }
        context.out.line("backed up \(repository.path) to \(path)")
      }),
    CommandSpec(
      path: ["export"], abstract: "Print a list as JSON, as 'show --json' does.", arguments: [list],
      database: .reads,
      run: { invocation, context in
        let list = try context.list(invocation.argument("LIST"))
        context.out.line(Rendering.json(list: list.name, sections: try list.storedSections()))
      }),
    CommandSpec(
      path: ["import"], abstract: "Create a list from a JSON file ('export' output, or by hand).",
      discussion: """
        The file is {"sections": [...]}. A section has "header" (and "footer") or "metadata",
        and "items": plain JSON values, or {"value": ...} / {"id": ..., "value": ...} objects.
        Values are stored as the file writes them. The file's ids and list name are ignored:
        the new rows get new ids. Errors name the line and column, or the place, such as
        sections[2].items[5]. See docs/cli.md for the whole format.
        """,
      arguments: [
        ArgumentSpec(name: "LIST", help: "The new list's name."),
        ArgumentSpec(name: "FILE", help: "The JSON file, or - for standard input."),
      ],
      run: runImport),
    CountersCommand.screen, CountersCommand.add, CountersCommand.increment,
    CountersCommand.decrement, CountersCommand.remove, CountersCommand.show,
  ]

  static let parser = ArgumentParser(commands: all, globalOptions: [database])

  // MARK: - Runs

  private static func runLists(_ invocation: Invocation, _ context: Context) throws {
    let lists = try context.repository().lists()
    if invocation.flag("json") {
      let objects = lists.map {
        "{\"id\":\($0.id),\"name\":\(JSONText.quote($0.name)),\"sections\":\($0.sectionCount),\"items\":\($0.itemCount)}"
      }
      context.out.line("[" + objects.joined(separator: ",") + "]")
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

  private static func runSectionSet(_ invocation: Invocation, _ context: Context) throws {
    let index = try invocation.index("INDEX")
    let header = invocation.option("header")
    let footer = invocation.option("footer")
    let removeFooter = invocation.flag("no-footer")
    guard header != nil || footer != nil || removeFooter else {
      throw UsageError(
        message: "nothing to change: give --header, --footer or --no-footer",
        command: ["section", "set"])
    }
    guard !(footer != nil && removeFooter) else {
      throw UsageError(
        message: "--footer and --no-footer cannot be used together", command: ["section", "set"])
    }
    let list = try context.list(invocation.argument("LIST"))
    try list.updateMetadataJSON(forSectionAt: index) { old in
      let titles = Rendering.titles(ofMetadata: old)
      let newFooter = removeFooter ? nil : (footer ?? titles.footer)
      return try metadataJSON(header: header ?? titles.header ?? "", footer: newFooter).text
    }
    context.out.line("set section \(index)")
  }

  private static func runImport(_ invocation: Invocation, _ context: Context) throws {
    let file = invocation.argument("FILE")
    let bytes: [UInt8]
    do {
      bytes =
        try file == "-"
        ? readStandardInput() : [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
    } catch {
      throw ListStoreError.invalidImport("cannot read \(file): \(describe(error))")
    }
    let contents = try ImportFile.parse(bytes, name: file).sections
    let name = invocation.argument("LIST")
    _ = try context.repository().createList(name, contents: contents)
    let items = contents.reduce(0) { $0 + $1.items.count }
    context.out.line(
      "imported \(quoted(name)): \(Rendering.counted(contents.count, "section")), "
        + Rendering.counted(items, "item"))
  }

  private static func runDemo(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.option("list") ?? "demo"
    let repository = try context.repository()
    // Rebuild the demo list from scratch, so the demo can run again.
    if (try? repository.listID(named: name)) != nil { try repository.deleteList(name) }
    let cities = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
    try cities.appendSection(SectionMetadata(header: "Cities", footer: "That's it"))
    try cities.appendItems(["Paris", "Berlin"], toSection: 0)
    context.out.line("Built list \(quoted(name)) in \(repository.path):")
    context.out.line("  a section \"Cities\" with footer \"That's it\" holding Paris and Berlin,")
    try cities.appendItem("Copenhagen", toSection: 0)
    context.out.line("  then appended Copenhagen to section 0.")
    context.out.line()
    Rendering.text(list: name, sections: try cities.storedSections()).forEach(context.out.line)
    context.out.line()
    context.out.line("Next: liststore item add \(name) 0 Rome --at 1")
    context.out.line("      liststore item move \(name) 0:0 0:2")
    context.out.line("      liststore show \(name) --json")
  }

  // MARK: - Helpers

  /// Header and footer as the CLI stores them.
  static func metadataJSON(header: String, footer: String?) throws(ListStoreError) -> RawJSON {
    Rendering.metadataJSON(header: header, footer: footer)
  }

  /// VALUE as JSON text: a string unless --json, then checked to be JSON.
  private static func itemValue(_ invocation: Invocation) throws -> RawJSON {
    let text = invocation.argument("VALUE")
    guard invocation.flag("json") else { return RawJSON(JSONText.quote(text)) }
    let bytes = Array(text.utf8)
    do {
      _ = try JSONSyntax.parse(bytes)
    } catch  where error.isNumberOutOfRange {
      throw CommandError("cannot store \(text.debugDescription): \(error.message)")
    } catch {
      throw ListStoreError.invalidJSON(
        "\(text.debugDescription) at \(error.place(in: bytes)): \(error.message) (leave out --json "
          + "to store it as a string)")
    }
    return RawJSON(text)
  }

  private static func readStandardInput() throws -> [UInt8] {
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count < 0 { throw ListStoreError.invalidImport("cannot read standard input") }
      if count == 0 { return data }
      data.append(contentsOf: buffer[0..<count])
    }
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
