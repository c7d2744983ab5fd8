import CLibPQBench
import FoundationEssentials
import ListStore
import ListStorePostgreSQL
import ListStorePostgreSQLTesting
import PostgreSQLKit

#if canImport(Glibc)
  import Glibc
#endif

/// The throwaway PostgreSQL server of B8–B10, started by the harness itself through
/// `ListStorePostgreSQLTesting` (the product users' tests use), and the databases on it.
enum BenchPostgres {
  /// Why the PostgreSQL benchmarks cannot run here (the server programs are missing),
  /// naming the install command; `nil` when they can.
  static var unavailableReason: String? { TestPostgresServer.unavailableReason }

  /// The rows of a benchmark that is skipped, saying why.
  static func skipped(_ id: String, _ name: String, target: String) -> [Row] {
    [Row(id: id, name: name, unit: "", target: target, skipped: unavailableReason ?? "")]
  }

  /// The server options: TCP on 127.0.0.1 with passwords (for B8) besides the Unix
  /// socket, and `pg_stat_statements` (planning counted too) when statements are counted.
  static func options(countingStatements: Bool) -> TestPostgresServer.Options {
    TestPostgresServer.Options(
      acceptsPasswordsOverTCP: true,
      settings: countingStatements
        ? [
          "shared_preload_libraries": "'pg_stat_statements'",
          "pg_stat_statements.track_planning": "on",
        ] : [:])
  }

  /// The server of this run, started on first use and stopped when the process exits.
  static func server(_ options: Options) throws -> TestPostgresServer {
    try TestPostgresServer.shared(Self.options(countingStatements: options.countStatements))
  }

  /// A fresh ListStore database (cloned from the migrated template), dropped by
  /// ``Database/remove()``.
  static func makeDatabase(_ options: Options) throws -> Database {
    let server = try server(options)
    let made = try server.makeListStoreDatabase()
    return Database(server: server, name: made.name, connectionString: made.connectionString)
  }

  /// One database of the run.
  struct Database {
    let server: TestPostgresServer
    let name: String
    /// Over the Unix socket, as the superuser.
    let connectionString: String

    /// Drops it, ending its sessions.
    func remove() { try? server.dropDatabase(name) }

    /// `VACUUM ANALYZE` of every table, so that autovacuum has nothing to do after a
    /// bulk load while the measurement runs, and the planner knows the sizes.
    func vacuum() throws {
      try PGConnection(connectionString).execute("VACUUM ANALYZE")
    }

    /// A role with a password and ListStore's rights on the tables, and the connection
    /// string that reaches the database with it over TCP on 127.0.0.1 (password checked
    /// with SCRAM).
    func passwordRoleOverTCP() throws -> String {
      var generator = SystemRandomNumberGenerator()
      let password = "bench-" + String(generator.next(), radix: 36)
      let role = try server.createRole("bench", password: password)
      let quoted = PGConnection.quoteIdentifier(role)
      try PGConnection(connectionString).execute(
        """
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(quoted);
        GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO \(quoted);
        """)
      return server.tcpConnectionString(database: name, user: role, password: password)
    }
  }
}

/// A bare libpq connection for the baselines: the C API and nothing else.
final class RawPostgres {
  let connection: OpaquePointer

  init(_ connectionString: String) throws {
    guard let connection = PQconnectdb(connectionString) else {
      throw BenchError("libpq could not allocate a connection")
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = String(cString: PQerrorMessage(connection))
      PQfinish(connection)
      throw BenchError("cannot connect: \(message)")
    }
    self.connection = connection
  }

  deinit { PQfinish(connection) }

  /// The error message of the last failed call.
  var message: String { trimmed(String(cString: PQerrorMessage(connection))) }

  /// Runs SQL with `PQexec`, expecting no rows or some.
  func execute(_ sql: String) throws {
    let result = PQexec(connection, sql)
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      throw BenchError("\(sql): \(message)")
    }
  }

  /// Prepares `sql` as the statement `name`.
  func prepare(_ name: String, _ sql: String) throws {
    let result = PQprepare(connection, name, sql, 0, nil)
    defer { PQclear(result) }
    guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchError("\(sql): \(message)") }
  }

  /// Runs the prepared statement `name` with text parameters.
  func executePrepared(_ name: String, _ parameters: [String]) throws {
    let copies = parameters.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    let values = copies.map { UnsafePointer($0) }
    let result = values.withUnsafeBufferPointer { values in
      PQexecPrepared(connection, name, Int32(parameters.count), values.baseAddress, nil, nil, 0)
    }
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      throw BenchError("\(name): \(message)")
    }
  }

  /// `COPY … FROM STDIN` of `rows` (COPY's text format: tab-separated fields, one line
  /// per row), sent in chunks of 256 kB.
  /// - Returns: The number of rows the server inserted.
  func copy(_ sql: String, rows: (inout [UInt8]) -> Bool) throws -> Int {
    let start = PQexec(connection, sql)
    let started = PQresultStatus(start) == PGRES_COPY_IN
    PQclear(start)
    guard started else { throw BenchError("\(sql): \(message)") }
    var buffer: [UInt8] = []
    buffer.reserveCapacity(300_000)
    var more = true
    while more {
      more = rows(&buffer)
      if buffer.count >= 256 * 1024 || !more {
        let sent = buffer.withUnsafeBufferPointer { bytes in
          bytes.withMemoryRebound(to: CChar.self) {
            PQputCopyData(connection, $0.baseAddress, Int32($0.count))
          }
        }
        guard sent == 1 else { throw BenchError("COPY: \(message)") }
        buffer.removeAll(keepingCapacity: true)
      }
    }
    guard PQputCopyEnd(connection, nil) == 1 else { throw BenchError("COPY: \(message)") }
    var inserted = -1
    while let result = PQgetResult(connection) {
      defer { PQclear(result) }
      guard PQresultStatus(result) == PGRES_COMMAND_OK else {
        throw BenchError("COPY: \(message)")
      }
      inserted = Int(String(cString: PQcmdTuples(result))) ?? -1
    }
    return inserted
  }
}

/// Statements the server ran, from `pg_stat_statements` (loaded with `--pg-statements`):
/// what a benchmark's work costs in round trips, counted by the server for every
/// connection.
struct StatementCounts {
  /// Calls per normalized statement text.
  var calls: [String: Int]
  /// Milliseconds the server spent executing them (planning excluded).
  var milliseconds: Double
  /// Milliseconds the server spent planning them.
  var planningMilliseconds: Double

  /// Resets the counters (`pg_stat_statements_reset()`); creates the extension in the
  /// database first.
  static func reset(_ database: BenchPostgres.Database) throws {
    let db = try PGConnection(database.connectionString)
    try db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    try db.execute("SELECT pg_stat_statements_reset()")
  }

  /// The counters of the database's statements since the last reset.
  static func read(_ database: BenchPostgres.Database) throws -> StatementCounts {
    let db = try PGConnection(database.connectionString)
    let result = try db.query(
      """
      SELECT query, calls, total_exec_time, total_plan_time FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%'
      """)
    var calls: [String: Int] = [:]
    var milliseconds = 0.0
    var planning = 0.0
    for row in 0..<result.rowCount {
      calls[result.string(row: row, column: 0), default: 0] += try result.int(row: row, column: 1)
      milliseconds += try result.double(row: row, column: 2)
      planning += try result.double(row: row, column: 3)
    }
    return StatementCounts(calls: calls, milliseconds: milliseconds, planningMilliseconds: planning)
  }

  /// Statements per operation, `operations` having run, with the statements that ran at
  /// least once per operation, most frequent first.
  func perOperation(_ operations: Int) -> (total: Double, statements: [(String, Double)]) {
    let total = Double(calls.values.reduce(0, +)) / Double(operations)
    var frequent: [(String, Double)] = []
    for (sql, count) in calls where count >= operations / 2 {
      frequent.append((oneLine(sql), Double(count) / Double(operations)))
    }
    frequent.sort { left, right in left.1 != right.1 ? left.1 > right.1 : left.0 < right.0 }
    return (total, frequent)
  }

  private func oneLine(_ sql: String) -> String {
    let words = sql.split(whereSeparator: { $0.isWhitespace })
    let line = words.joined(separator: " ")
    return line.count > 90 ? String(line.prefix(87)) + "…" : line
  }
}
