import ListStore
import ListStoreFormats

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `export` and `show --json`: the list as one JSON object, written to standard output as
/// its rows are read, so that a list of any size is printed in bounded memory.
enum ExportCommand {
  static let spec = CommandSpec(
    path: ["export"], abstract: "Print a list as JSON, as 'show --json' does.",
    discussion: """
      The object is written as the rows are read, in one consistent read of the list. On a
      terminal, a list that takes more than a second shows a progress line on standard
      error (none with --quiet).
      """,
    arguments: [Commands.list], options: [ImportCommand.quiet], database: .reads,
    run: { invocation, context in
      let list = try context.list(invocation.argument("LIST"))
      let progress = ProgressLine.start(
        "exporting \(quoted(list.name))", unit: "item", total: nil, invocation: invocation,
        context: context)
      defer { progress?.finish() }
      if let progress { progress.setTotal(try list.totalItemCount()) }
      try write(list, context: context, progress: progress)
    })

  /// Writes the `show --json` object of `list` to standard output as it is read.
  static func write(
    _ list: StoredList<RawJSON, RawJSON>, context: Context, progress: ProgressLine? = nil
  ) throws {
    context.out.flush()
    var output = ByteOutput(descriptor: STDOUT_FILENO)
    output.append("{\"list\":" + JSONText.quote(list.name) + ",\"sections\":[")
    var firstSection = true
    var firstItem = true
    var items = 0
    try list.forEachStoredRow(
      section: { id, metadata in
        if !firstSection { output.append(UInt8(ascii: ",")) }
        firstSection = false
        firstItem = true
        output.append(
          "{" + Rendering.sectionFields(id: id, metadata: String(decoding: metadata, as: UTF8.self))
            + ",\"items\":[")
      },
      item: { id, value in
        output.append(firstItem ? "{\"id\":" : ",{\"id\":")
        firstItem = false
        output.append(String(id))
        output.append(",\"value\":")
        output.appendSingleLine(value)
        output.append(UInt8(ascii: "}"))
        items += 1
        if items & 0xFFF == 0 { progress?.advance(to: items) }
      },
      endSection: { output.append("]}") })
    output.append("]}\n")
    output.flush()
  }
}

/// Bytes for a file descriptor, written a large chunk at a time.
struct ByteOutput {
  let descriptor: Int32
  private var buffer: [UInt8] = []
  private var broken = false
  static let chunk = 1 << 18

  init(descriptor: Int32) {
    self.descriptor = descriptor
    buffer.reserveCapacity(Self.chunk + 4096)
  }

  mutating func append(_ byte: UInt8) {
    buffer.append(byte)
  }

  mutating func append(_ text: String) {
    var text = text
    text.withUTF8 { buffer.append(contentsOf: $0) }
    if buffer.count >= Self.chunk { flush() }
  }

  /// Appends bytes as they are.
  mutating func appendRaw(_ bytes: UnsafeBufferPointer<UInt8>) {
    buffer.append(contentsOf: bytes)
    if buffer.count >= Self.chunk { flush() }
  }

  /// Appends JSON text, without the line breaks (and white space) outside its strings
  /// when it has any, so that it fits on one line.
  mutating func appendSingleLine(_ json: UnsafeBufferPointer<UInt8>) {
    let base = UnsafeRawPointer(json.baseAddress)
    if base.map({ memchr($0, 0x0A, json.count) == nil && memchr($0, 0x0D, json.count) == nil })
      ?? true
    {
      buffer.append(contentsOf: json)
    } else {
      JSONText.appendWithoutWhiteSpace(json, to: &buffer)
    }
    if buffer.count >= Self.chunk { flush() }
  }

  /// Writes what is buffered; a closed pipe (nobody reading any more) ends the writing.
  mutating func flush() {
    defer { buffer.removeAll(keepingCapacity: true) }
    guard !broken else { return }
    buffer.withUnsafeBytes { bytes in
      var offset = 0
      while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else {
          broken = true
          return
        }
        offset += written
      }
    }
  }
}
