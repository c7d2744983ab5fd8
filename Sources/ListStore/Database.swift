import Synchronization

/// A value bound to a statement parameter, whatever the engine.
@usableFromInline
package enum SQLValue: Sendable, Hashable {
  case integer(Int64)
  case real(Double)
  case text(String)
  case null
}

/// A Swift value that can be bound to a statement parameter.
package protocol SQLBindable {
  /// The value as a parameter.
  var sqlValue: SQLValue { get }
}

extension Int64: SQLBindable {
  package var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
  package var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Double: SQLBindable {
  package var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
  package var sqlValue: SQLValue { .text(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
  package var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// How a transaction is begun.
@usableFromInline
package enum TransactionMode: Sendable {
  /// One consistent state of the database to read from.
  case read
  /// A write, ordered with every other writer's: SQLite's `BEGIN IMMEDIATE`, or
  /// PostgreSQL's transaction-scoped lock that makes the change log's order the order
  /// of commits.
  case write
}

/// The SQL that differs between engines. Everything else ListStore runs is written
/// once, with `?` placeholders, for both.
///
/// A class, made once per engine: a connection hands it out on every statement that
/// needs it, and a reference costs less to hand out than a copy of every text.
@usableFromInline
package final class SQLDialect: Sendable {
  /// Which engine.
  package enum Engine: Sendable { case sqlite, postgresql }

  package let engine: Engine
  /// The expression that stores a bound JSON parameter that may need checking and
  /// compacting (values ListStore did not encode itself).
  package let checkedJSONParameter: String
  /// One row, two columns: the seq of the last log entry ever written (0 for none),
  /// and how far the log was pruned.
  package let lastSeqAndHorizon: String
  /// The type of a `position` value as text (`'text'` where only text is possible).
  package let positionType: String

  /// The writes that store a JSON parameter, built once: single writes run them often,
  /// and building their text on every call cost more than some of the statements.
  package let insertSection: JSONParameterSQL
  package let setMetadata: JSONParameterSQL
  package let insertItem: JSONParameterSQL
  package let setValue: JSONParameterSQL

  /// The query of a page of the change log (``ChangeLog/page(after:lists:db:)``), for one
  /// list (`$1` its id), for several (`$1` as ``listIDsParameter(_:)`` makes it), and for
  /// every list.
  package let changeLogPage: (single: String, many: String, all: String)
  /// How several list ids are bound as one parameter.
  private let listIDsText: @Sendable ([Int64]) -> String

  /// A list's items with their section's id (`$1` the list): `ordered` by section and
  /// position; `grouped`, which may cost less, by section and then position within each
  /// section, in an order of sections of the engine's choice.
  @usableFromInline package let listItems: (ordered: String, grouped: String)
  /// Every section of a list (`?`) with its items, in order, one row per item (a section
  /// without items: one row with `NULL`s).
  package let listSnapshot: String
  /// The number of items of a list (`?`).
  package let listItemCount: String
  /// Every list's id and name, with its numbers of sections and items, by name.
  package let listsWithCounts: String

  /// Creates the dialect of an engine.
  /// - Parameters:
  ///   - engine: Which engine.
  ///   - checkedJSONParameter: See ``checkedJSONParameter``.
  ///   - lastSeqAndHorizon: See ``lastSeqAndHorizon``.
  ///   - positionType: See ``positionType``.
  ///   - manyListsMembership: The test that an expression is one of the list ids bound,
  ///     as ``listIDsParameter(_:)`` makes them, to `$1`.
  ///   - listIDsText: The text of that parameter for some ids.
  ///   - pageShape: How the query of a page of the log is best shaped for the engine.
  ///   - ordersJoins: Whether the engine returns a join in its outer table's order, so that
  ///     a list's items come grouped by section without an `ORDER BY`.
  ///   - itemsOfSection: How `FROM sections s` joins each section's items as `i` (`JOIN`
  ///     or, with `left`, `LEFT JOIN`), so that the engine reads only the list's items
  ///     whatever it guesses of their number.
  package init(
    engine: Engine, checkedJSONParameter: String, lastSeqAndHorizon: String, positionType: String,
    manyListsMembership: String, listIDsText: @escaping @Sendable ([Int64]) -> String,
    pageShape: ChangeLogPageShape, ordersJoins: Bool, itemsOfSection: (_ left: Bool) -> String
  ) {
    self.engine = engine
    self.listIDsText = listIDsText
    changeLogPage = (
      ChangeLog.pageQuery(membership: "= $1", shape: pageShape),
      ChangeLog.pageQuery(membership: manyListsMembership, shape: pageShape),
      ChangeLog.allListsPageQuery
    )
    let items = """
      SELECT s.id, i.id, i.position, i.value FROM sections s \(itemsOfSection(false))
      WHERE s.list_id = $1
      """
    listItems = (
      items + " ORDER BY s.position, i.position",
      ordersJoins ? items + " ORDER BY s.position, i.position" : items
    )
    listSnapshot = """
      SELECT s.id, s.position, s.metadata, i.id, i.position, i.value
      FROM sections s \(itemsOfSection(true))
      WHERE s.list_id = ? ORDER BY s.position, i.position
      """
    listItemCount = "SELECT count(*) FROM sections s \(itemsOfSection(false)) WHERE s.list_id = ?"
    listsWithCounts = """
      SELECT l.id, l.name,
        (SELECT count(*) FROM sections s WHERE s.list_id = l.id),
        (SELECT count(*) FROM sections s \(itemsOfSection(false)) WHERE s.list_id = l.id)
      FROM lists l ORDER BY l.name
      """
    self.checkedJSONParameter = checkedJSONParameter
    self.lastSeqAndHorizon = lastSeqAndHorizon
    self.positionType = positionType
    func sql(_ text: (String) -> String) -> JSONParameterSQL {
      JSONParameterSQL(canonical: text("?"), checked: text(checkedJSONParameter))
    }
    insertSection = sql { "INSERT INTO sections(list_id, position, metadata) VALUES (?, ?, \($0))" }
    setMetadata = sql { "UPDATE sections SET metadata = \($0) WHERE id = ? AND list_id = ?" }
    insertItem = sql { "INSERT INTO items(section_id, position, value) VALUES (?, ?, \($0))" }
    setValue = sql {
      """
      UPDATE items SET value = \($0)
      WHERE id = ?
      AND EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id AND s.list_id = ?)
      """
    }
  }
}

extension SQLDialect {
  /// Several list ids as one parameter, for ``changeLogPage``'s query of several lists.
  package func listIDsParameter(_ ids: [Int64]) -> SQLValue { .text(listIDsText(ids)) }
}

/// One statement that stores a JSON parameter, in its two texts: for text ListStore
/// encoded itself (compact, valid JSON: bound as it is), and for text to check and
/// compact as it is written (``SQLDialect/checkedJSONParameter``).
@usableFromInline
package struct JSONParameterSQL: Sendable {
  /// The text binding the JSON as it is.
  package let canonical: String
  /// The text checking the JSON.
  package let checked: String

  /// The text for JSON that is canonical or not.
  package subscript(canonical isCanonical: Bool) -> String {
    isCanonical ? canonical : checked
  }
}

/// A connection to a ListStore database, whatever its engine: what the repository, the
/// change feed and the observers need. One thread at a time.
@usableFromInline
package protocol DatabaseConnection: AnyObject {
  /// The engine's SQL where it differs.
  var dialect: SQLDialect { get }
  /// A statement for `sql` (with `?` placeholders), prepared once and kept.
  func cached(_ sql: String) throws -> any DatabaseStatement
  /// A statement for `sql`, prepared for this use only.
  func prepared(_ sql: String) throws -> any DatabaseStatement
  /// Runs SQL without parameters, possibly several statements.
  func execute(_ sql: String) throws
  /// Begins a transaction.
  func begin(_ mode: TransactionMode) throws
  /// Commits the transaction under way.
  func commit() throws
  /// Rolls back the transaction under way, if any; never fails.
  func rollback()
  /// Runs `body` in a savepoint inside the transaction under way: undone alone when it
  /// throws.
  func savepoint<Result>(_ body: () throws -> Result) throws -> Result
  /// Whether a transaction is under way.
  var isInTransaction: Bool { get }
  /// Runs `sql`, an `INSERT` of one row whose table has an `id` column, with `values`
  /// bound in order, and returns the new row's id (SQLite: the connection's last rowid;
  /// other engines: `RETURNING id`).
  func insert(_ sql: String, _ values: [SQLValue]) throws -> Int64
  /// Appends items at the end of a section — after every row already there, with the
  /// given ascending keys — as fast as the engine can, returning their ids in order.
  /// `checkingJSON`: whether the values may not be JSON text yet and must be checked
  /// (and, where the engine does so, normalized) as a single-row insert would.
  func appendItems(sectionID: Int64, keys: [String], values: [String], checkingJSON: Bool)
    throws -> [Int64]
  /// Rows this connection has read so far (for tests and benchmarks).
  var rowsRead: Int { get }
}

/// A prepared statement: bind parameters, step through rows, read columns.
@usableFromInline
package protocol DatabaseStatement: AnyObject {
  func bind(_ value: SQLValue, at index: Int32) throws
  /// Advances to the next row; `false` when done.
  func step() throws -> Bool
  /// Makes it ready to run again (keeping bindings).
  func reset()
  func int64(at index: Int32) -> Int64
  func optionalInt64(at index: Int32) -> Int64?
  func double(at index: Int32) -> Double
  func string(at index: Int32) -> String
  func optionalString(at index: Int32) -> String?
  func isNull(at index: Int32) -> Bool
  /// How many rows the last run of this statement inserted, updated or deleted (not
  /// counting what triggers did).
  var rowsChanged: Int { get }
  /// Calls `body` with the column's UTF-8 bytes, valid only during the call.
  func withUTF8<R>(at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows
    -> R
  /// Steps through the remaining rows, calling `body` with each one's column 0 as an
  /// integer and the UTF-8 bytes of its column 1 (valid only during the call).
  func forEachIntegerAndText(_ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void)
    throws
}

extension DatabaseStatement {
  @inlinable
  package func bind(_ value: Int64, at index: Int32) throws { try bind(.integer(value), at: index) }
  @inlinable
  package func bind(_ value: String, at index: Int32) throws { try bind(.text(value), at: index) }

  /// Binds `values` to the parameters, in order.
  package func bind(_ values: [any SQLBindable]) throws {
    for (offset, value) in values.enumerated() { try bind(value.sqlValue, at: Int32(offset + 1)) }
  }

  package func int(at index: Int32) -> Int { Int(int64(at: index)) }

  package func forEachIntegerAndText(
    _ body: (Int64, UnsafeBufferPointer<UInt8>) throws -> Void
  ) throws {
    while try step() {
      let integer = int64(at: 0)
      try withUTF8(at: 1) { try body(integer, $0) }
    }
  }

  /// Runs it to completion, ignoring rows, then resets it.
  package func run() throws {
    defer { reset() }
    while try step() {}
  }

  /// Steps through every row, calling `body` on each, then resets it.
  @inlinable
  package func forEachRow(_ body: (any DatabaseStatement) throws -> Void) throws {
    defer { reset() }
    while try step() { try body(self) }
  }
}

extension DatabaseConnection {
  /// Runs `body` in a transaction: committed when it returns, rolled back when it (or
  /// the commit) throws; inside another transaction, a savepoint.
  @discardableResult
  package func transaction<Result>(_ mode: TransactionMode, _ body: () throws -> Result) throws
    -> Result
  {
    if isInTransaction { return try savepoint(body) }
    try begin(mode)
    do {
      let result = try body()
      try commit()
      return result
    } catch {
      rollback()
      throw error
    }
  }

  /// Runs one statement with parameters, ignoring any rows it returns.
  /// - Returns: How many rows it inserted, updated or deleted.
  @discardableResult
  package func run(_ sql: String, _ values: any SQLBindable...) throws -> Int {
    let statement = try cached(sql)
    try statement.bind(values)
    try statement.run()
    return statement.rowsChanged
  }

  /// The first column of the first row, or `nil` when there is no row or it is `NULL`.
  package func scalarInt64(_ sql: String, _ values: any SQLBindable...) throws -> Int64? {
    let statement = try cached(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    return statement.optionalInt64(at: 0)
  }

  /// The first column of the first row as text, or `nil`.
  package func scalarText(_ sql: String, _ values: any SQLBindable...) throws -> String? {
    let statement = try cached(sql)
    try statement.bind(values)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    return statement.optionalString(at: 0)
  }
}

/// What a connection is for, when the change feed opens one of its own.
package enum ConnectionRole: Sendable {
  /// The feed's reads of the log and of the rows it names.
  case feed
  /// The feed's record of where this process has read (a short write now and then,
  /// that must never wait long for another writer).
  case bookkeeping
}

/// Whether the change feed can hear of other writers' commits.
public enum FeedConnectionStatus: Sendable, Hashable {
  /// Connected: commits arrive as they happen.
  case connected
  /// The connection to the server was lost; retrying. The string says why.
  case disconnected(String)
}

/// Something that tells the change feed when others may have committed; cancelled
/// when the feed goes away.
package protocol ChangeWatch: Sendable {
  /// Stops watching; no callback runs after this returns (unless called from one).
  func cancel()
  /// Says that this process is about to commit a write: a watch that would only hear of
  /// it (the commit brings this process's observers up to date itself) may rest a while.
  func noteOwnCommit()
}

extension ChangeWatch {
  package func noteOwnCommit() {}
}

/// One storage engine: where a repository's data lives and how to reach it. The
/// repository, the change feed and the observers are written once against this and
/// ``DatabaseConnection``; SQLite and PostgreSQL each implement it once.
package protocol StorageEngine: Sendable {
  /// Where the database is, for messages: a file path, or a URL without its password.
  var location: String { get }
  /// The engine's SQL where it differs.
  var dialect: SQLDialect { get }
  /// Opens the database — creating and migrating it as allowed — and returns the
  /// repository's own connection and whether it can write.
  func openRepository(
    busyTimeout: Duration, readOnly: Bool, createIfMissing: Bool, maximumPageCount: Int?
  ) throws(ListStoreError) -> (connection: any DatabaseConnection, isReadOnly: Bool)
  /// Opens another connection to the (already opened) database.
  func openConnection(for role: ConnectionRole, busyTimeout: Duration, readOnly: Bool)
    throws(ListStoreError) -> any DatabaseConnection
  /// Starts watching for commits by others: `onChange` is called, on a thread of the
  /// watch's own, with a connection it may use there to check the log cheaply; `status`
  /// hears when the engine loses or regains its connection. `nil` when it cannot watch.
  func watch(
    onChange: @escaping @Sendable (any DatabaseConnection) -> Void,
    status: @escaping @Sendable (FeedConnectionStatus) -> Void
  ) -> (any ChangeWatch)?
  /// The error users should see for `error`, met on this database.
  func userError(_ error: any Error, busyTimeout: Duration) -> ListStoreError
  /// Whether `error` comes from the engine (rather than from a caller's closure).
  func isEngineError(_ error: any Error) -> Bool
  /// Of the readers recorded with these process ids (SQLite) or server sessions
  /// (PostgreSQL), those that are certainly gone.
  func goneReaders(_ ids: [Int64], db: any DatabaseConnection) throws -> Set<Int64>
  /// The id this process records as its reader's (a process id, or a server session).
  func readerProcessID(db: any DatabaseConnection) throws -> Int64
}
