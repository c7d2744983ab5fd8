internal import CLibPQ

extension PGConnection {
  /// Streams rows into a table with `COPY … FROM STDIN`, the fastest way to insert many
  /// rows.
  ///
  /// `body` appends rows to the writer; fields are escaped for COPY's text format, and
  /// `nil` is `NULL`. When `body` throws, the COPY is aborted (nothing is inserted) and
  /// the error is rethrown.
  ///
  /// ```swift
  /// let count = try db.copyIn("COPY items(section_id, value) FROM STDIN") { rows in
  ///   for value in values { try rows.append(["1", value]) }
  /// }
  /// ```
  /// - Parameters:
  ///   - sql: A `COPY table [(columns)] FROM STDIN` statement in text format (the
  ///     default format).
  ///   - body: Appends the rows.
  /// - Returns: The number of rows the server inserted.
  /// - Throws: What `body` throws, or ``PGError`` from the server (a constraint or
  ///   trigger refusing a row, a malformed row, …), which aborts the whole COPY.
  @discardableResult
  public func copyIn(_ sql: String, _ body: (PGCopyWriter) throws -> Void) throws -> Int {
    try checkOpen(sql)
    try sendDeferredBegin()
    let start = pq.PQexec(handle, sql)
    guard let start, pq.PQresultStatus(start) == PGRES_COPY_IN else {
      _ = try checked(start, sql: sql, accepting: [])
      return 0
    }
    pq.PQclear(start)
    let writer = PGCopyWriter(connection: self, sql: sql)
    do {
      try body(writer)
      try writer.flush()
    } catch {
      writer.isFinished = true
      _ = pq.PQputCopyEnd(handle, "the client stopped the COPY")
      drainResults()
      throw error
    }
    writer.isFinished = true
    guard pq.PQputCopyEnd(handle, nil) == 1 else {
      let failure = self.error(from: nil, sql: sql)
      drainResults()
      throw failure
    }
    let result = try checked(pq.PQgetResult(handle), sql: sql, accepting: [PGRES_COMMAND_OK])
    drainResults()
    return result.rowsAffected
  }

  /// Sends a chunk of COPY data.
  func putCopyData(_ bytes: [UInt8], sql: String) throws {
    let status = bytes.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { chars in
        pq.PQputCopyData(handle, chars.baseAddress, Int32(chars.count))
      }
    }
    guard status == 1 else { throw error(from: nil, sql: sql) }
  }
}

/// Appends rows to a running ``PGConnection/copyIn(_:_:)``, in COPY's text format.
///
/// It is lent to the body of `copyIn` and must not be used after it returns.
public final class PGCopyWriter {
  private unowned let connection: PGConnection
  private let sql: String
  private var buffer: [UInt8] = []
  var isFinished = false

  /// How many bytes to gather before sending them.
  private static let chunkSize = 256 * 1024

  /// How many rows were appended.
  public private(set) var rowCount = 0

  init(connection: PGConnection, sql: String) {
    self.connection = connection
    self.sql = sql
    buffer.reserveCapacity(Self.chunkSize + 4096)
  }

  /// Appends one row.
  /// - Parameter fields: The row's values, in the COPY statement's column order; `nil`
  ///   is `NULL`, and `""` an empty string.
  /// - Throws: ``PGError``: `.misuse` for a value containing a NUL character (the
  ///   server's text cannot hold one) or a writer used after its COPY ended; the
  ///   connection's error when sending fails.
  public func append(_ fields: [String?]) throws {
    guard !isFinished else {
      throw PGError(kind: .misuse, message: "the COPY has already ended", sql: sql)
    }
    let rowStart = buffer.count
    for (index, field) in fields.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: "\t")) }
      guard let field else {
        buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
        continue
      }
      guard Self.appendEscaped(field, to: &buffer) else {
        buffer.removeSubrange(rowStart...)
        throw PGError(
          kind: .misuse, message: "field \(index) of a COPY row contains a NUL character",
          sql: sql)
      }
    }
    buffer.append(UInt8(ascii: "\n"))
    rowCount += 1
    if buffer.count >= Self.chunkSize { try flush() }
  }

  /// Sends what is buffered.
  func flush() throws {
    guard !buffer.isEmpty else { return }
    try connection.putCopyData(buffer, sql: sql)
    buffer.removeAll(keepingCapacity: true)
  }

  /// Appends `text` escaped for COPY's text format: backslash, tab, newline and
  /// carriage return become `\\`, `\t`, `\n` and `\r`.
  /// - Returns: `false` when `text` contains a NUL character.
  static func appendEscaped(_ text: String, to buffer: inout [UInt8]) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
      // Copies runs of ordinary bytes whole; only the four escaped bytes (and NUL)
      // stop a run, and all of them sort at or below the backslash.
      var runStart = 0
      for (index, byte) in bytes.enumerated() where byte <= UInt8(ascii: "\\") {
        let escaped: UInt8
        switch byte {
        case 0: return false
        case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
        case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
        case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
        case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
        default: continue
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(escaped)
        runStart = index + 1
      }
      buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
      return true
    }
  }
}
