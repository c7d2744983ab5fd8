public import SQLiteKit

/// What can go wrong in a ListStore operation, as values with messages that say what
/// happened and what to do.
///
/// Errors from a failed write leave the database as it was: every write is one
/// transaction that rolls back on any error.
public enum ListStoreError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No list has this name.
  case listNotFound(name: String)
  /// A list with this name exists already.
  case listExists(name: String)
  /// A list name was empty (or only white space).
  case emptyName
  /// A new list's name held a character a name may not — a control character (NUL, a
  /// line break, a tab…) or one that turns the direction of the text (U+202A–U+202E,
  /// U+2066–U+2069) — began or ended with white space, or had more than
  /// ``maximumListNameLength`` characters.
  case invalidName(String)
  /// A section index is outside `0..<count`.
  case sectionOutOfRange(index: Int, count: Int)
  /// An item's row is outside `0..<count` of its section.
  case itemOutOfRange(section: Int, row: Int, count: Int)
  /// An insertion or move target row is outside `0...limit`.
  case insertionOutOfRange(section: Int, row: Int, limit: Int)
  /// A section insertion or move target index is outside `0...limit`.
  case sectionInsertionOutOfRange(index: Int, limit: Int)
  /// An index path did not have exactly two indexes (section, row).
  case invalidIndexPath(String)
  /// No section has this id in the list.
  case sectionNotFound(id: Int64)
  /// No item has this id in the list.
  case itemNotFound(id: Int64)
  /// The state given to ``StoredList/replace(with:performDiff:)`` names the same section
  /// or item id twice; `kind` is `"section"` or `"item"`.
  case duplicateID(kind: String, id: Int64)
  /// A value or metadata was not valid JSON.
  case invalidJSON(String)
  /// A stored value could not be decoded into the requested Swift type.
  case decodingFailed(String)
  /// A stored row of a list could not be decoded into the list's Swift types; the
  /// value says which row, what it holds, and why.
  case undecodable(UndecodableRow)
  /// A value could not be encoded as JSON.
  case encodingFailed(String)
  /// An import file did not have the shape `export` writes.
  case invalidImport(String)
  /// No database file exists at the path, and the caller asked not to create one.
  case databaseNotFound(path: String)
  /// The file exists but is not a SQLite database.
  case notADatabase(path: String)
  /// The file is a SQLite database that ListStore did not create.
  case notAListStoreDatabase(path: String)
  /// The database was written by a newer ListStore.
  case schemaTooNew(path: String, version: Int, supported: Int)
  /// The database cannot be written (read-only file, folder or medium).
  case readOnly(path: String)
  /// The database's folder does not exist and cannot be created.
  case cannotCreateFolder(path: String, reason: String)
  /// The database file cannot be opened.
  case cannotOpen(path: String, reason: String)
  /// The disk (or the database's size limit) is full.
  case diskFull(path: String)
  /// The database file is damaged: SQLite found it malformed (`detail`, in SQLite's
  /// words). ``Repository/checkFile(atPath:)`` says where.
  case damaged(path: String, detail: String)
  /// The database can be read, but other connections' changes to it cannot be
  /// followed, for the reason given (a file opened immutable, for one).
  case cannotObserve(path: String, reason: String)
  /// Another connection held the write lock for longer than the busy timeout.
  case busy(path: String, timeout: Duration)
  /// Rows carry position keys that ListStore cannot order between.
  case malformedPosition(String)
  /// `check()` found problems.
  case integrity(count: Int, path: String)
  /// Any other SQLite failure.
  case sqlite(SQLiteError)
  /// The database server cannot be reached (PostgreSQL).
  case serverUnreachable(location: String, reason: String)
  /// The server refused the credentials (PostgreSQL).
  case authenticationFailed(location: String)
  /// The server refused an operation for lack of privileges (PostgreSQL).
  case permissionDenied(location: String, detail: String)
  /// The connection to the server was lost while working (PostgreSQL).
  case connectionLost(location: String)
  /// Any other failure of the database server (PostgreSQL), in its words.
  case server(location: String, message: String)
  /// The operation does not apply to this kind of database; the text says what to use.
  case notSupported(String)

  /// One sentence: what went wrong, and what to do about it.
  public var description: String {
    switch self {
    case .listNotFound(let name):
      "no list named \(quoted(name)); see 'liststore lists' for the lists there are"
    case .listExists(let name):
      "a list named \(quoted(name)) already exists; choose another name or remove it first"
    case .emptyName:
      "a list name cannot be empty"
    case .invalidName(let name):
      if name.count > maximumListNameLength {
        "a list name has at most \(maximumListNameLength) characters; this one has \(name.count)"
      } else if name.first?.isWhitespace == true || name.last?.isWhitespace == true {
        "the list name \(quoted(name)) begins or ends with white space, which no one would "
          + "see; write it without"
      } else {
        "the list name \(quoted(name)) holds a control character or one that turns the "
          + "text's direction; a name is text on one line, without either"
      }
    case .sectionOutOfRange(let index, let count):
      "section \(index) does not exist: the list has \(count) section\(count == 1 ? "" : "s")"
        + (count > 0 ? " (0…\(count - 1))" : "")
    case .itemOutOfRange(let section, let row, let count):
      "item \(section):\(row) does not exist: section \(section) has \(count) item\(count == 1 ? "" : "s")"
        + (count > 0 ? " (rows 0…\(count - 1))" : "")
    case .insertionOutOfRange(let section, let row, let limit):
      "row \(row) is out of range for section \(section): use a row from 0 to \(limit)"
    case .sectionInsertionOutOfRange(let index, let limit):
      "section index \(index) is out of range: use an index from 0 to \(limit)"
    case .invalidIndexPath(let path):
      "invalid index path \(path): give a section and a row"
    case .sectionNotFound(let id):
      "no section with id \(id) in this list"
    case .itemNotFound(let id):
      "no item with id \(id) in this list"
    case .duplicateID(let kind, let id):
      "the new state holds \(kind) id \(id) more than once; a row can be in one place only "
        + "(give new rows the id 0)"
    case .invalidJSON(let detail):
      "invalid JSON: \(detail)"
    case .decodingFailed(let detail):
      "cannot decode a stored value: \(detail)"
    case .undecodable(let row):
      "cannot decode \(row)"
    case .encodingFailed(let detail):
      "cannot encode the value as JSON: \(detail)"
    case .invalidImport(let detail):
      "cannot import: \(detail)"
    case .databaseNotFound(let path):
      "there is no ListStore database at \(path); check the path, or create one there "
        + "by creating a list: 'liststore list create NAME'"
    case .notADatabase(let path):
      "\(path) is not a SQLite database; choose another file with --db"
    case .notAListStoreDatabase(let path):
      "\(path) is a SQLite database, but not a ListStore one; choose another file with --db"
    case .schemaTooNew(let path, let version, let supported):
      "\(path) has schema version \(version), newer than this program's \(supported); "
        + "upgrade liststore to open it"
    case .readOnly(let path):
      "\(path) is read-only; nothing was changed"
    case .cannotCreateFolder(let path, let reason):
      "cannot create the folder \(path): \(reason)"
    case .cannotOpen(let path, let reason):
      "cannot open \(path): \(reason)"
    case .diskFull(let path):
      "the disk holding \(path) is full; nothing was changed"
    case .damaged(let path, let detail):
      "\(path) is damaged (\(detail)); 'liststore check' says where; restore a backup, or "
        + "recover what SQLite can still read, as SQL: sqlite3 \(path) .recover > recovered.sql"
    case .cannotObserve(let path, let reason):
      "cannot watch \(path) for changes: \(reason)"
    case .busy(let path, let timeout):
      "\(path) stayed locked by another writer for more than \(timeout); try again"
    case .malformedPosition(let detail):
      "\(detail); run 'liststore check' to find the damaged rows"
    case .integrity(let count, let path):
      "\(path) failed \(count) check\(count == 1 ? "" : "s"); 'liststore repair' fixes what it "
        + "can of what is named above (see 'liststore repair --help'), or restore a backup"
    case .sqlite(let error):
      error.description
    case .serverUnreachable(let location, let reason):
      isHTTP(location)
        ? "cannot reach the server at \(location): \(reason); check that it runs ('liststore "
          + "serve') and the host and port"
        : "cannot reach the database server for \(location): \(reason); check that it runs "
          + "and the host and port"
    case .authenticationFailed(let location):
      isHTTP(location)
        ? "\(location) needs a token it knows: give it with --token TOKEN or LISTSTORE_TOKEN "
          + "(in Swift, RemoteRepository(url:token:)); the server's --tokens file lists them"
        : "the server refused the credentials for \(location); check the user name and "
          + "password in the location (or in ~/.pgpass)"
    case .permissionDenied(let location, let detail):
      "permission denied on \(location): \(detail); ask the database's owner for the privilege"
    case .connectionLost(let location):
      "lost the connection to the server for \(location); nothing of the interrupted work was kept"
    case .server(let location, let message):
      "\(location): \(message)"
    case .notSupported(let detail):
      detail
    }
  }
}

/// The most characters a new list's name has.
public let maximumListNameLength = 128

/// Checks a name for a new list: not empty, at most ``maximumListNameLength`` characters,
/// without white space at either end, control characters (C0, DEL, C1) or characters
/// that turn the direction of the text (U+202A–U+202E, U+2066–U+2069), which would make
/// one name look like another in a terminal or a page.
/// - Parameter name: The name.
/// - Throws: ``ListStoreError/emptyName``, ``ListStoreError/invalidName(_:)``.
package func checkListName(_ name: String) throws(ListStoreError) {
  guard !name.allSatisfy(\.isWhitespace) else { throw .emptyName }
  if name.count > maximumListNameLength || name.first?.isWhitespace == true
    || name.last?.isWhitespace == true
  {
    throw .invalidName(name)
  }
  for scalar in name.unicodeScalars {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069:
      throw .invalidName(name)
    default: continue
    }
  }
}

/// Whether a location is a server of `liststore serve` rather than a database.
private func isHTTP(_ location: String) -> Bool {
  location.hasPrefix("http://") || location.hasPrefix("https://")
}

/// `"name"` with quotes and escapes, for messages.
package func quoted(_ text: String) -> String {
  text.debugDescription
}

extension ListStoreError {
  /// Maps any error met while reading the database at `path` to the error users see.
  init(reading error: any Error, path: String, busyTimeout: Duration) {
    switch error {
    case let error as ListStoreError: self = error
    case let error as SQLiteError: self.init(error, path: path, busyTimeout: busyTimeout)
    default: self = .sqlite(SQLiteError(code: .error, message: "\(error)"))
    }
  }

  /// Whether the failure may pass by itself (the database locked or busy, a disk
  /// full or unreadable for a moment), so that the operation is worth retrying.
  package var isTransient: Bool {
    switch self {
    case .busy, .diskFull, .cannotOpen, .serverUnreachable, .connectionLost: true
    case .sqlite(let error):
      [.busy, .locked, .ioError, .full, .cannotOpen, .interrupt, .noMemory].contains {
        $0 ~= error.code
      }
    default: false
    }
  }
}
