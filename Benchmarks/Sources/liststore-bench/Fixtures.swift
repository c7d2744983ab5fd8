import CSQLiteBench
import ListStore

#if canImport(Glibc)
  import Glibc
#endif

/// The small `Codable` model of B1: encoded by `JSONEncoder` as
/// `{"count":12,"name":"item 12 of a benchmark list"}` (the library sorts keys).
struct Entry: Codable, Hashable, Sendable {
  var name: String
  var count: Int
}

enum Fixtures {
  /// The value of item `n`: long enough (27+ bytes) that Swift stores it on the heap,
  /// like most real strings.
  static func text(_ n: Int) -> String {
    "item \(n) of a benchmark list"
  }

  /// The position key of the `n`-th row appended to an empty parent, as ListStore's
  /// `PositionKey` makes it: base-62 integers whose first letter gives their length
  /// (`a0` … `az`, `b00` … `bzz`, `c000` …).
  static func positionKey(_ n: Int) -> String {
    let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    var rest = n
    var width = 1
    var span = 62
    while rest >= span {
      rest -= span
      width += 1
      span *= 62
    }
    var key = [UInt8](repeating: digits[0], count: width + 1)
    key[0] = UInt8(ascii: "a") + UInt8(width - 1)
    for index in stride(from: width, to: 0, by: -1) {
      key[index] = digits[rest % 62]
      rest /= 62
    }
    return String(decoding: key, as: UTF8.self)
  }

  /// `text` as a JSON string literal (benchmark values need no escaping).
  static func quoted(_ text: String) -> String {
    "\"" + text + "\""
  }

  /// The JSON text ListStore stores for an ``Entry``.
  static func json(_ entry: Entry) -> String {
    "{\"count\":" + String(entry.count) + ",\"name\":\"" + entry.name + "\"}"
  }

  /// Creates the list `name` with `sections` sections of `perSection` string items
  /// (`text(0)`, `text(1)`, …) through the typed repository, then prunes the change
  /// log so that the first measured writes do not pay for the set-up's entries.
  @discardableResult
  static func makeList(
    _ repository: Repository, name: String, sections: Int, perSection: Int
  ) throws -> StoredList<SectionMetadata, String> {
    let list = try repository.createList(name, metadata: SectionMetadata.self, item: String.self)
    var next = 0
    for section in 0..<sections {
      try list.appendSection(SectionMetadata(header: "Section \(section)"))
      try list.appendItems((next..<next + perSection).map(text), toSection: section)
      next += perSection
    }
    try repository.pruneChangeLog()
    return list
  }
}

/// A bare SQLite connection for the baselines: the C API and nothing else.
final class RawDatabase {
  let handle: OpaquePointer

  init(path: String, readOnly: Bool = false) throws {
    var db: OpaquePointer?
    let flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    let status = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
    guard status == SQLITE_OK, let db else {
      sqlite3_close_v2(db)
      throw BenchError("cannot open \(path): \(String(cString: sqlite3_errstr(status)))")
    }
    handle = db
    sqlite3_busy_timeout(db, 10_000)
  }

  deinit { sqlite3_close_v2(handle) }

  /// Runs SQL without results.
  func execute(_ sql: String) throws {
    var message: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
      defer { sqlite3_free(message) }
      throw BenchError("\(sql): \(message.map { String(cString: $0) } ?? "error")")
    }
  }

  /// Compiles one statement; the caller finalizes it.
  func prepare(_ sql: String) throws -> OpaquePointer {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(handle)))")
    }
    return statement
  }

  /// The error message of the last failed call.
  var message: String { String(cString: sqlite3_errmsg(handle)) }
}

/// The text of column `index` of the current row of `statement`.
func columnText(_ statement: OpaquePointer, _ index: Int32) -> String {
  guard let text = sqlite3_column_text(statement, index) else { return "" }
  return String(
    decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, index))),
    as: UTF8.self)
}
