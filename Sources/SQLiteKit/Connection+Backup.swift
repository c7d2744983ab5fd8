internal import CSQLite

extension Connection {
  /// Copies the main database into the file at `path` with SQLite's online backup
  /// API, a few pages at a time, all inside one read transaction of this connection:
  /// the copy is the one consistent state that transaction sees. In WAL mode writers
  /// on other connections go on committing meanwhile. (Without that transaction,
  /// SQLite would notice commits by other processes to a WAL database too late and
  /// mix pages of different states.)
  ///
  /// - Parameters:
  ///   - path: The file to write; it is created or overwritten.
  ///   - pagesPerStep: How many pages to copy while holding the read lock.
  ///   - progress: Called after each step with the pages copied and the total.
  /// - Throws: ``SQLiteError`` when the target cannot be written or the copy fails.
  public func backup(
    to path: String, pagesPerStep: Int32 = 256,
    progress: (_ copied: Int, _ total: Int) -> Void = { _, _ in }
  ) throws {
    let target = try Connection(path: path, mode: .readWriteCreate)
    try execute("BEGIN DEFERRED TRANSACTION")
    defer { _ = sqlite3_exec(handle, "COMMIT TRANSACTION", nil, nil, nil) }
    // Start the read transaction now, so that every step reads the same snapshot.
    _ = try scalarInt64("SELECT count(*) FROM sqlite_schema")
    guard let backup = sqlite3_backup_init(target.handle, "main", handle, "main") else {
      throw target.lastError(sqlite3_errcode(target.handle))
    }
    var status: Int32 = SQLITE_OK
    repeat {
      status = sqlite3_backup_step(backup, pagesPerStep)
      let total = Int(sqlite3_backup_pagecount(backup))
      progress(total - Int(sqlite3_backup_remaining(backup)), total)
      if status == SQLITE_BUSY || status == SQLITE_LOCKED { sqlite3_sleep(10) }
    } while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED
    let finish = sqlite3_backup_finish(backup)
    guard status == SQLITE_DONE, finish == SQLITE_OK else {
      throw target.lastError(status == SQLITE_DONE ? finish : status)
    }
    target.close()
  }
}
