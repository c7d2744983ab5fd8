internal import CSQLite

/// A SQLite result code, primary or extended.
///
/// Extended codes carry their primary code in the low byte, so a pattern on a
/// primary code matches every extended code of its family:
///
/// ```swift
/// switch error.code {
/// case .busy: retryLater()  // also matches SQLITE_BUSY_SNAPSHOT
/// case .constraintUnique: reportDuplicate()
/// default: throw error
/// }
/// ```
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The numeric code as SQLite reports it (extended when available).
  public let rawValue: Int32

  /// Creates a result code from its numeric value.
  /// - Parameter rawValue: A SQLite result code.
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// The primary code of this (possibly extended) code.
  public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

  /// Whether this is a primary code, with no extended information.
  public var isPrimary: Bool { rawValue & ~0xFF == 0 }

  /// SQLite's English description of the code.
  public var description: String { String(cString: sqlite3_errstr(rawValue)) }

  /// Matches `code` against `pattern`: equal codes match, and a primary pattern
  /// matches every extended code of its family.
  /// - Parameters:
  ///   - pattern: The code written in the `case` pattern.
  ///   - code: The code being matched.
  /// - Returns: Whether `code` belongs to `pattern`.
  public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
    pattern.isPrimary ? pattern == code.primary : pattern == code
  }

  /// Generic error (`SQLITE_ERROR`).
  public static let error = ResultCode(rawValue: SQLITE_ERROR)
  /// Internal logic error in SQLite (`SQLITE_INTERNAL`).
  public static let `internal` = ResultCode(rawValue: SQLITE_INTERNAL)
  /// Access permission denied (`SQLITE_PERM`).
  public static let permission = ResultCode(rawValue: SQLITE_PERM)
  /// Callback routine requested an abort (`SQLITE_ABORT`).
  public static let abort = ResultCode(rawValue: SQLITE_ABORT)
  /// The database file is locked (`SQLITE_BUSY`).
  public static let busy = ResultCode(rawValue: SQLITE_BUSY)
  /// A table in the database is locked (`SQLITE_LOCKED`).
  public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
  /// Out of memory (`SQLITE_NOMEM`).
  public static let noMemory = ResultCode(rawValue: SQLITE_NOMEM)
  /// Attempt to write a read-only database (`SQLITE_READONLY`).
  public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
  /// Operation interrupted (`SQLITE_INTERRUPT`).
  public static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
  /// Disk I/O error (`SQLITE_IOERR`).
  public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
  /// The database disk image is malformed (`SQLITE_CORRUPT`).
  public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
  /// Insertion failed because the database is full (`SQLITE_FULL`).
  public static let full = ResultCode(rawValue: SQLITE_FULL)
  /// Unable to open the database file (`SQLITE_CANTOPEN`).
  public static let cannotOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
  /// The database schema changed (`SQLITE_SCHEMA`).
  public static let schema = ResultCode(rawValue: SQLITE_SCHEMA)
  /// String or BLOB exceeds size limit (`SQLITE_TOOBIG`).
  public static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
  /// Abort due to constraint violation (`SQLITE_CONSTRAINT`).
  public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
  /// A UNIQUE constraint failed (`SQLITE_CONSTRAINT_UNIQUE`).
  public static let constraintUnique = ResultCode(rawValue: SQLITE_CONSTRAINT | 8 << 8)
  /// A FOREIGN KEY constraint failed (`SQLITE_CONSTRAINT_FOREIGNKEY`).
  public static let constraintForeignKey = ResultCode(rawValue: SQLITE_CONSTRAINT | 3 << 8)
  /// A CHECK constraint failed (`SQLITE_CONSTRAINT_CHECK`).
  public static let constraintCheck = ResultCode(rawValue: SQLITE_CONSTRAINT | 1 << 8)
  /// Data type mismatch (`SQLITE_MISMATCH`).
  public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
  /// Library used incorrectly (`SQLITE_MISUSE`).
  public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
  /// Bind or column index out of range (`SQLITE_RANGE`).
  public static let range = ResultCode(rawValue: SQLITE_RANGE)
  /// The file is not a database (`SQLITE_NOTADB`).
  public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)
  /// `sqlite3_step` has another row ready (`SQLITE_ROW`).
  public static let row = ResultCode(rawValue: SQLITE_ROW)
  /// `sqlite3_step` has finished executing (`SQLITE_DONE`).
  public static let done = ResultCode(rawValue: SQLITE_DONE)
}

/// An error reported by SQLite: its result code (extended when SQLite gave one),
/// its message, and the SQL that failed, as plain values that never refer to a live
/// connection.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The result code, extended when SQLite reported one.
  public var code: ResultCode
  /// SQLite's message, such as `UNIQUE constraint failed: lists.name`.
  public var message: String
  /// The SQL statement that failed, when there was one.
  public var sql: String?

  /// Creates an error value.
  /// - Parameters:
  ///   - code: The (extended) result code.
  ///   - message: A human-readable message; defaults to SQLite's text for the code.
  ///   - sql: The statement that failed, if any.
  public init(code: ResultCode, message: String? = nil, sql: String? = nil) {
    self.code = code
    self.message = message ?? code.description
    self.sql = sql
  }

  /// The primary result code, e.g. `.constraint` for `.constraintUnique`.
  public var primaryCode: ResultCode { code.primary }

  /// The extended result code (equal to `code`).
  public var extendedCode: ResultCode { code }

  /// `SQLite error 19 (constraint): UNIQUE constraint failed: lists.name`.
  public var description: String {
    var text = "SQLite error \(code.rawValue): \(message)"
    if let sql { text += " — while executing `\(sql)`" }
    return text
  }
}
