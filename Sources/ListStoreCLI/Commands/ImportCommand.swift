import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `liststore import`: a list from a JSON file, read as a stream; with `--replace`, an
/// existing list made equal to the file with the fewest row writes.
enum ImportCommand {
  static let quiet = OptionSpec(
    name: "quiet", valueName: nil,
    help: "Show no progress line (shown on a terminal when the work takes over a second).")

  static let spec = CommandSpec(
    path: ["import"], abstract: "Create a list from a JSON file ('export' output, or by hand).",
    discussion: """
      The file is {"sections": [...]}. A section has "header" (and "footer") or "metadata",
      and "items": plain JSON values, or {"value": ...} / {"id": ..., "value": ...} objects.
      Values are stored as the file writes them. Without --replace the file's ids and list
      name are ignored: the new rows get new ids. Errors name the line and column, or the
      place, such as sections[2].items[5]. See docs/cli.md for the whole format.

      With --replace, LIST (created if missing) is made equal to the file in one
      transaction, with the fewest row writes: sections and items whose "id" is one of the
      list's rows are kept, moved or changed in place. A section without an id takes the
      list's first section with the same header and footer that no id claims; an item
      without an id, the first item of its section with the same value that no id claims.
      What is left over is added; rows the file leaves out are removed. So a file written
      by 'export' or by hand, edited, and imported back writes only the edited rows, and
      'watch' sees only them.
      """,
    arguments: [
      ArgumentSpec(name: "LIST", help: "The new list's name (with --replace, any list)."),
      ArgumentSpec(name: "FILE", help: "The JSON file, or - for standard input."),
    ],
    options: [
      OptionSpec(
        name: "replace", valueName: nil,
        help: "Make LIST equal to the file, writing only what differs."),
      quiet,
    ],
    database: .writes, run: run)

  /// An open input: a file, or standard input.
  struct Input {
    var descriptor: Int32
    /// Its size, when it is a regular file.
    var size: Int?
    var isRegularFile: Bool
    var ownsDescriptor: Bool

    /// Opens `path` (`-`: standard input); `failure` makes the error from the reason.
    static func open(_ path: String, failure: (String) -> any Error) throws -> Input {
      if path == "-" {
        // Standard input may be a file itself (`< FILE`).
        var info = stat()
        let regular = fstat(STDIN_FILENO, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        return Input(
          descriptor: STDIN_FILENO, size: regular ? Int(info.st_size) : nil,
          isRegularFile: regular, ownsDescriptor: false)
      }
      let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
      guard descriptor >= 0 else {
        throw failure(errno == ENOENT ? "no such file" : String(cString: strerror(errno)))
      }
      var info = stat()
      if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
        _ = Glibc.close(descriptor)
        throw failure("it is a directory")
      }
      let regular = fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
      return Input(
        descriptor: descriptor, size: regular ? Int(info.st_size) : nil, isRegularFile: regular,
        ownsDescriptor: true)
    }

    func close() {
      if ownsDescriptor { _ = Glibc.close(descriptor) }
    }

    /// This input, or, when it is not a regular file (standard input, a pipe), all of it
    /// copied first into a temporary file: a command reads it inside its write
    /// transaction, which must not wait for a slow or interactive writer of the input,
    /// since every other writer of the database would wait with it. When it returns a
    /// copy, the caller closes `self` (whether or not this throws).
    /// - Parameter progress: Told of the lines copied so far, after each read.
    /// - Returns: The input to read, a regular file.
    /// - Throws: ``ListStoreError/invalidImport(_:)`` when it cannot be read or copied.
    func spooled(progress: ((Int) -> Void)? = nil) throws -> Input {
      guard !isRegularFile else { return self }
      let spool = try ImportCommand.temporaryFile()
      var total = 0
      var lines = 0
      var chunk = [UInt8](repeating: 0, count: 1 << 16)
      while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else {
          _ = Glibc.close(spool)
          throw ListStoreError.invalidImport(
            "cannot read standard input: \(String(cString: strerror(errno)))")
        }
        if count == 0 { break }
        if let progress {
          lines += chunk[..<count].reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
          progress(lines)
        }
        var written = 0
        while written < count {
          let done = chunk.withUnsafeBytes {
            write(spool, $0.baseAddress.map { $0 + written }, count - written)
          }
          if done < 0 && errno == EINTR { continue }
          guard done > 0 else {
            _ = Glibc.close(spool)
            throw ListStoreError.invalidImport(
              "cannot keep a copy of standard input: \(String(cString: strerror(errno)))")
          }
          written += done
        }
        total += count
      }
      guard lseek(spool, 0, SEEK_SET) == 0 else {
        _ = Glibc.close(spool)
        throw ListStoreError.invalidImport(
          "cannot read standard input again: \(String(cString: strerror(errno)))")
      }
      return Input(descriptor: spool, size: total, isRegularFile: true, ownsDescriptor: true)
    }
  }

  private static func run(_ invocation: Invocation, _ context: Context) throws {
    let name = invocation.argument("LIST")
    let path = invocation.argument("FILE")
    var input = try Input.open(path) { ListStoreError.invalidImport("cannot read \(path): \($0)") }
    defer { input.close() }
    let progress = ProgressLine.start(
      "importing \(quoted(name))", unit: "item", total: nil, invocation: invocation,
      context: context)
    defer { progress?.finish() }
    let size = input.size
    let report: ((Int, Int) -> Void)? = progress.map { progress in
      { items, bytes in
        if let size {
          progress.advance(to: items, share: bytes, of: size)
        } else {
          progress.advance(to: items)
        }
      }
    }

    if invocation.flag("replace") {
      var sink = CollectingSink()
      var reader = ImportReader(stream: JSONStream(descriptor: input.descriptor), name: path)
      reader.progress = report
      try reader.read(into: &sink)
      try replace(name, with: sink.sections, path: path, context: context)
      return
    }

    // Read inside the write transaction: standard input is kept in a temporary file
    // first, so that the transaction never waits for it.
    if !input.isRegularFile {
      let spooled = try input.spooled()
      input.close()
      input = spooled
    }
    // A file that turns out bad must not leave a new database behind: where the import
    // would create one, the file is checked first, in a pass that writes nothing.
    if !databaseExists(context) {
      var check = CountingSink()
      var reader = ImportReader(stream: JSONStream(descriptor: input.descriptor), name: path)
      try reader.read(into: &check)
      guard lseek(input.descriptor, 0, SEEK_SET) == 0 else {
        throw ListStoreError.invalidImport(
          "cannot read \(path) again: \(String(cString: strerror(errno)))")
      }
      progress?.setTotal(reader.items)
    }
    var counts = (sections: 0, items: 0)
    do {
      _ = try context.repository().createList(name) { writer in
        var sink = WritingSink(writer: writer)
        var reader = ImportReader(stream: JSONStream(descriptor: input.descriptor), name: path)
        reader.progress = report
        try reader.read(into: &sink)
        try sink.flush()
        counts = (reader.sections, reader.items)
      }
    } catch ListStoreError.listExists {
      throw CommandError(
        "a list named \(quoted(name)) already exists; choose another name, or make it equal "
          + "to the file with --replace (which writes only what differs)")
    }
    context.out.line(
      "imported \(quoted(name)): \(Rendering.counted(counts.sections, "section")), "
        + Rendering.counted(counts.items, "item"))
  }

  /// Makes list `name` (created if missing) equal to `sections`, in one transaction.
  private static func replace(
    _ name: String, with sections: [Observable2DArraySection<RawJSON, RawJSON>], path: String,
    context: Context
  ) throws {
    let changeset = try context.repository().replaceContents(ofList: name, with: sections)
    context.out.line(summary(of: changeset, list: name, file: path))
  }

  /// `replaced "groceries" from FILE: 1 item added, 2 items changed`.
  static func summary(of changeset: Changeset<RawJSON, RawJSON>, list: String, file: String)
    -> String
  {
    summary(
      sections: [
        "added": changeset.insertedSections.count, "removed": changeset.deletedSections.count,
        "moved": changeset.movedSections.count, "changed": changeset.updatedSections.count,
      ],
      items: [
        "added": changeset.insertedItems.count
          + changeset.insertedSections.reduce(0) { $0 + $1.items.count },
        "removed": changeset.deletedItems.count, "moved": changeset.movedItems.count,
        "changed": changeset.updatedItems.count,
      ], list: list, file: file)
  }

  /// The summary of a replace from its counts of sections and items, by what happened to
  /// them (`added`, `removed`, `moved`, `changed`): a server answers them.
  static func summary(sections: [String: Int], items: [String: Int], list: String, file: String)
    -> String
  {
    let verbs = ["added", "removed", "moved", "changed"]
    let parts =
      (verbs.map { (sections[$0] ?? 0, "section", $0) } + verbs.map { (items[$0] ?? 0, "item", $0) })
      .filter { $0.0 > 0 }.map { Rendering.counted($0.0, $0.1) + " " + $0.2 }
    let source = file == "-" ? "standard input" : file
    guard !parts.isEmpty else {
      return "\(quoted(list)) already matches \(source); nothing was written"
    }
    return "replaced \(quoted(list)) from \(source): " + parts.joined(separator: ", ")
  }

  /// Whether the database the command works on is there already (a server's always is).
  static func databaseExists(_ context: Context) -> Bool {
    Repository.isPostgreSQLLocation(context.databasePath)
      || access(context.databasePath, F_OK) == 0
  }

  /// A new temporary file, already unlinked: gone when closed.
  static func temporaryFile() throws -> Int32 {
    let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    var template = Array((folder + "/liststore-import-XXXXXX").utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { buffer in
      buffer.baseAddress.map { mkstemp($0) } ?? -1
    }
    guard descriptor >= 0 else {
      throw ListStoreError.invalidImport(
        "cannot keep standard input in \(folder): \(String(cString: strerror(errno)))")
    }
    template.withUnsafeBufferPointer { buffer in
      if let base = buffer.baseAddress { unlink(base) }
    }
    return descriptor
  }
}

/// Counts what it is given: the checking pass.
struct CountingSink: ImportSink {
  mutating func beginSection(id: Int64?, metadata: String?) {}
  mutating func item(_ value: ArraySlice<UInt8>, id: Int64?) {}
  mutating func endSection(metadata: String) {}
}

/// Writes what it is given into a new list, a batch of items at a time.
struct WritingSink: ImportSink {
  let writer: ListWriter
  private var sectionID: Int64 = 0
  private var provisional: String?
  private var values: [String] = []
  static let batch = 4096

  init(writer: ListWriter) { self.writer = writer }

  mutating func beginSection(id: Int64?, metadata: String?) throws {
    // Metadata given after the items is set when the section ends.
    provisional = metadata
    sectionID = try writer.appendSection(metadata: metadata ?? "null")
  }

  mutating func item(_ value: ArraySlice<UInt8>, id: Int64?) throws {
    values.append(String(decoding: value, as: UTF8.self))
    if values.count >= Self.batch { try flush() }
  }

  mutating func endSection(metadata: String) throws {
    try flush()
    if provisional != metadata { try writer.setMetadata(metadata, sectionID: sectionID) }
  }

  mutating func flush() throws {
    guard !values.isEmpty else { return }
    try writer.appendItems(values, sectionID: sectionID)
    values.removeAll(keepingCapacity: true)
  }
}
