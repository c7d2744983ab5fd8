/// An error from PostgreSQL or from libpq: what kind of failure it is, the server's
/// SQLSTATE and texts, and the SQL that failed, as plain values that never refer to a
/// live connection.
///
/// ``kind`` sorts failures into the situations a program words for its users (the
/// server cannot be reached, the password is wrong, the database does not exist, …);
/// ``sqlState`` keeps the server's exact code for anything finer.
///
/// ```swift
/// do {
///   try db.run("INSERT INTO lists(name) VALUES ($1)", name)
/// } catch let error as PGError where error.kind == .uniqueViolation {
///   print("a list named \(name) exists already")
/// }
/// ```
///
/// No text in an error ever holds a password: connection strings are redacted with
/// ``PGConnection/redactingPassword(in:)`` and the password itself is scrubbed from
/// libpq's messages; parameter values are never recorded.
public struct PGError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The situation behind an error, in the terms a user would be told about it.
  public enum Kind: String, Sendable, Equatable, CaseIterable {
    /// No server answered: connection refused, no such host, no socket file, or the
    /// connection timed out; also a server that is starting up or shutting down (57P03).
    case serverUnreachable
    /// The server refused the credentials, or has no `pg_hba.conf` entry that lets the
    /// role in (28P01, 28000).
    case authenticationFailed
    /// The database named in the connection string does not exist (3D000).
    case databaseMissing
    /// The role lacks a privilege the statement needs (42501).
    case permissionDenied
    /// The server has no connection slot left (53300).
    case tooManyConnections
    /// The connection broke: the server closed it, was shut down, or terminated this
    /// session (57P01, 57P02, class 08, or libpq reporting the connection bad).
    case connectionLost
    /// The statement was canceled, by a cancel request or `statement_timeout` (57014).
    case queryCanceled
    /// A concurrent transaction made this one impossible to serialize (40001); run the
    /// whole transaction again.
    case serializationFailure
    /// The transaction was chosen as a deadlock victim (40P01); run it again.
    case deadlockDetected
    /// A unique or primary-key constraint refused a duplicate (23505).
    case uniqueViolation
    /// A foreign-key constraint refused a reference or a deletion (23503).
    case foreignKeyViolation
    /// A `NOT NULL` constraint refused a null (23502).
    case notNullViolation
    /// A `CHECK` constraint refused a value (23514).
    case checkViolation
    /// A PL/pgSQL function or trigger refused the change with `RAISE EXCEPTION` (P0001).
    case raisedException
    /// A statement ran in a transaction that an earlier error had already aborted
    /// (25P02), or a transaction body swallowed such an error and could not commit.
    case transactionAborted
    /// A write was attempted in a read-only transaction or on a standby (25006).
    case readOnly
    /// The server ran out of disk space (53100).
    case diskFull
    /// The SQL has a syntax error (42601).
    case syntaxError
    /// A table, column, function or other object the SQL names does not exist (42P01,
    /// 42703, 42883, 42704).
    case undefinedObject
    /// The connection string cannot be parsed.
    case invalidConnectionString
    /// libpq itself cannot be loaded (it is not installed, or is not libpq), so no
    /// connection can be opened.
    case libraryMissing
    /// A value read from a result is not of the requested type (or is `NULL`).
    case unexpectedValue
    /// The library was used in a way it does not support, such as a closed connection
    /// or a text value containing a NUL character.
    case misuse
    /// Anything else; ``PGError/sqlState`` tells more when the server sent a code.
    case other
  }

  /// What kind of failure this is.
  public var kind: Kind
  /// The five-character SQLSTATE the server reported, such as `23505`; `nil` for
  /// failures detected by libpq or this library.
  public var sqlState: String?
  /// The primary message, such as `duplicate key value violates unique constraint "t_x_key"`.
  public var message: String
  /// The server's optional detail, such as `Key (x)=(a) already exists.`.
  public var detail: String?
  /// The server's optional hint about what to do.
  public var hint: String?
  /// The SQL that failed, when there was one; parameter values are never recorded.
  public var sql: String?

  /// Creates an error value.
  /// - Parameters:
  ///   - kind: What kind of failure it is.
  ///   - sqlState: The SQLSTATE, if the server sent one.
  ///   - message: The primary message.
  ///   - detail: The server's detail, if any.
  ///   - hint: The server's hint, if any.
  ///   - sql: The statement that failed, if any.
  public init(
    kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil,
    hint: String? = nil, sql: String? = nil
  ) {
    self.kind = kind
    self.sqlState = sqlState
    self.message = message
    self.detail = detail
    self.hint = hint
    self.sql = sql
  }

  /// Whether running the same transaction again may succeed: a serialization failure
  /// or a deadlock.
  public var isTransient: Bool { kind == .serializationFailure || kind == .deadlockDetected }

  /// `PostgreSQL error 23505 (uniqueViolation): duplicate key … — Key (x)=(a) already
  /// exists. — while executing `INSERT …``.
  public var description: String {
    var text = "PostgreSQL error"
    if let sqlState { text += " " + sqlState }
    text += " (\(kind.rawValue)): \(message)"
    if let detail { text += " — " + detail }
    if let hint { text += " (hint: \(hint))" }
    if let sql { text += " — while executing `\(sql)`" }
    return text
  }

  /// The kind of failure a SQLSTATE stands for.
  /// - Parameter sqlState: A five-character SQLSTATE.
  /// - Returns: Its kind; `.other` for codes with no kind of their own.
  public static func kind(forSQLState sqlState: String) -> Kind {
    switch sqlState {
    case "28P01", "28000": return .authenticationFailed
    case "3D000": return .databaseMissing
    case "42501": return .permissionDenied
    case "53300": return .tooManyConnections
    case "57P01", "57P02": return .connectionLost
    case "57P03": return .serverUnreachable
    case "57014": return .queryCanceled
    case "40001": return .serializationFailure
    case "40P01": return .deadlockDetected
    case "23505": return .uniqueViolation
    case "23503": return .foreignKeyViolation
    case "23502": return .notNullViolation
    case "23514": return .checkViolation
    case "P0001": return .raisedException
    case "25P02": return .transactionAborted
    case "25006": return .readOnly
    case "53100": return .diskFull
    case "42601": return .syntaxError
    case "42P01", "42703", "42883", "42704": return .undefinedObject
    case "08001", "08004": return .serverUnreachable
    default: return sqlState.hasPrefix("08") ? .connectionLost : .other
    }
  }

  /// The kind of a failure to connect, from libpq's message (which carries no SQLSTATE).
  ///
  /// libpq and the server word these messages in English unless the process or the
  /// server chose another language for messages; then the kind falls back to `.other`
  /// for what cannot be recognised.
  /// - Parameter message: libpq's error message for the connection.
  /// - Returns: The kind.
  static func kind(forConnectionFailure message: String) -> Kind {
    // Each entry: the kind, and alternatives of which one must occur whole; an
    // alternative is a list of fragments that must all occur.
    let patterns: [(Kind, [[String]])] = [
      (.databaseMissing, [["database \"", "\" does not exist"]]),
      (
        .tooManyConnections,
        [
          ["too many clients already"], ["too many connections for"],
          ["remaining connection slots are reserved"],
        ]
      ),
      (
        .authenticationFailed,
        [
          ["password authentication failed"], ["authentication failed for user"],
          ["no pg_hba.conf entry"], ["no password supplied"], ["role \"", "\" does not exist"],
          ["is not permitted to log in"],
        ]
      ),
      (.permissionDenied, [["permission denied for database"]]),
      (
        .serverUnreachable,
        [
          ["Connection refused"], ["No such file or directory"],
          ["could not translate host name"], ["Name or service not known"],
          ["No route to host"], ["Network is unreachable"], ["timeout expired"],
          ["Connection timed out"], ["Temporary failure in name resolution"],
          ["the database system is starting up"], ["the database system is shutting down"],
          ["the database system is in recovery mode"], ["could not connect to server"],
        ]
      ),
      (.connectionLost, [["server closed the connection unexpectedly"], ["connection reset"]]),
    ]
    for (kind, alternatives) in patterns
    where alternatives.contains(where: { $0.allSatisfy(message.contains) }) {
      return kind
    }
    return .other
  }
}
