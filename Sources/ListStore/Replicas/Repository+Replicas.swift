// A server's records of the replicas that sync with it (docs/replicas.md).
extension Repository {
  /// How many ids each origin has: replica `r` gives its rows ids from `r * originSpan`
  /// up, and the server's own (origin 0) stay below `originSpan`, 2^40.
  public static let originSpan: Int64 = 1 << 40

  /// Registers a new replica: a record that the server keeps for it from now on, whose
  /// number is the origin of the ids the replica gives its rows.
  /// - Returns: The replica's number, from 1; never given twice.
  /// - Throws: ``ListStoreError`` when the record cannot be written.
  package func registerReplica() throws(ListStoreError) -> Int64 {
    try write { db in
      // Numbers are never given twice: the next above every record (none is ever deleted).
      let next = try db.scalarInt64("SELECT coalesce(max(id), 0) + 1 FROM replicas") ?? 1
      guard next < Int64.max / Repository.originSpan else {
        throw ListStoreError.notSupported(
          "no replica can be registered: all \(next - 1) numbers are given")
      }
      try db.run("INSERT INTO replicas(id) VALUES (?)", next)
      return next
    }
  }
}

extension Repository {
  /// How long the change log keeps every entry, in seconds (0: what observers need).
  /// - Throws: ``ListStoreError`` when the database cannot be read.
  package func changeLogRetention() throws(ListStoreError) -> Double {
    try read { db in
      try db.scalarDouble("SELECT retain_seconds FROM change_log_horizon WHERE id = 1") ?? 0
    }
  }

  /// Keeps every entry of the change log for `seconds` from when the log reached it,
  /// whatever its readers — so that a replica away for that long resumes from its
  /// position — for every process that prunes this database; 0 keeps what live
  /// observers have not read, as a plain file does. Writes only when it differs.
  /// - Parameter seconds: How long, from 0.
  /// - Throws: ``ListStoreError`` when the database cannot be written.
  package func setChangeLogRetention(seconds: Double) throws(ListStoreError) {
    guard try changeLogRetention() != seconds else { return }
    try write { db in
      _ = try db.run("UPDATE change_log_horizon SET retain_seconds = ? WHERE id = 1", seconds)
    }
  }
}
