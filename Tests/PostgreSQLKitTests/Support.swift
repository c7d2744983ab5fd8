import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Synchronization
import Testing

/// A fresh database on the shared server, and a connection to it.
func freshDatabase() throws -> (connection: PGConnection, connectionString: String) {
  let connectionString = try TestPostgresServer.shared().makeDatabase()
  return (try PGConnection(connectionString), connectionString)
}
