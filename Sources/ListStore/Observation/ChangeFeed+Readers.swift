import Dispatch
import ReactiveCore
import SQLiteKit
import Synchronization

extension ChangeFeed {
  // MARK: - Reader positions for pruning

  /// Records, for pruning in every process, that an observer starts reading at `seq`;
  /// `deferred`: only once ``writePendingReaderRecord()`` is called (the caller is in a
  /// write transaction that the record's write would wait for).
  func noteReader(at seq: Int64, deferred: Bool) {
    guard !readOnly else { return }
    readerRecord.withLock { record in
      let seq = min(seq, record.seq < 0 ? seq : record.seq)
      if deferred {
        record.pendingSeq = min(seq, record.pendingSeq ?? seq)
        readerPending.store(true, ordering: .releasing)
      } else {
        record.update(seq: seq, force: true, engine: engine, busyTimeout: busyTimeout)
      }
    }
  }

  /// Writes the record an observer registered inside a write transaction left pending.
  func writePendingReaderRecord() {
    guard readerPending.exchange(false, ordering: .acquiringAndReleasing) else { return }
    readerRecord.withLock { record in
      guard let seq = record.pendingSeq else { return }
      record.pendingSeq = nil
      record.update(seq: seq, force: true, engine: engine, busyTimeout: busyTimeout)
    }
  }

  /// Tells other processes' pruning how far this process's observers have read, at
  /// most once a second (it is a write). Never runs under the state lock, so a writer
  /// in another process delays only this bookkeeping, never this process's writes.
  func updateReader() {
    let seq = processedSeq.load(ordering: .acquiring)
    guard seq >= 0, !readOnly else { return }
    readerRecord.withLock {
      $0.update(seq: seq, force: false, engine: engine, busyTimeout: busyTimeout)
    }
  }

  /// Starts the timer that keeps the reader record alive, unless it runs.
  func startHeartbeat() {
    guard !readOnly else { return }
    heartbeat.withLock { timer in
      guard timer == nil else { return }
      let made = DispatchSource.makeTimerSource(queue: .global())
      let interval = Self.heartbeatInterval.dispatchInterval
      made.schedule(deadline: .now() + interval, repeating: interval)
      made.setEventHandler { [weak self] in self?.beatHeart() }
      made.resume()
      timer = made
    }
  }

  /// Tells other processes that this one still reads (its record's heartbeat), or, when
  /// its observers are all gone, removes its record so that it no longer holds pruning
  /// back. What the heartbeat timer runs.
  func beatHeart() {
    let anyone = state.withLock { _ in !liveObservers().isEmpty }
    guard anyone else {
      giveUpReaderRecord()
      return
    }
    let processed = processedSeq.load(ordering: .acquiring)
    readerRecord.withLock { record in
      record.update(
        seq: record.seq >= 0 ? record.seq : processed, force: true, engine: engine,
        busyTimeout: busyTimeout)
    }
  }

  /// Removes the reader record, unless an observer registered (or began to) since the
  /// caller found none: registrations write the record under the same lock.
  func giveUpReaderRecord() {
    readerRecord.withLock { record in
      guard observerCount.load(ordering: .sequentiallyConsistent) == 0,
        registering.load(ordering: .sequentiallyConsistent) == 0
      else { return }
      record.unregister()
    }
  }
}

/// This process's row in `change_log_readers`, written through a connection of its
/// own that never waits long for the write lock: the row is a hint for pruning, and
/// pruning past a reader only makes that reader reload.
struct ReaderRecord {
  /// Opened on first use.
  var connection: (any DatabaseConnection)?
  var id: Int64?
  var process: Int64 = 0
  var seq: Int64 = -1
  var updated = ContinuousClock.now
  /// A position to record once the write transaction it waited for ended.
  var pendingSeq: Int64?

  mutating func update(
    seq: Int64, force: Bool, engine: any StorageEngine, busyTimeout: Duration
  ) {
    guard seq >= 0 else { return }
    let now = ContinuousClock.now
    guard force || (seq != self.seq && (id == nil || now - updated > .seconds(1))) else { return }
    do {
      if connection == nil {
        let opened = try engine.openConnection(
          for: .bookkeeping, busyTimeout: busyTimeout, readOnly: false)
        process = try engine.readerProcessID(db: opened)
        connection = opened
      }
      guard let connection else { return }
      try connection.transaction(.write) {
        if let id {
          try ChangeLog.updateReader(id, seq: seq, process: process, db: connection)
        } else {
          id = try ChangeLog.registerReader(at: seq, process: process, db: connection)
        }
      }
      self.seq = seq
      updated = now
    } catch {
      // A read-only database or a busy writer: observing still works; pruning may
      // then outrun this process, which reloads if it falls behind.
    }
  }

  mutating func unregister() {
    guard let id, let connection else { return }
    if (try? ChangeLog.unregisterReader(id, db: connection)) != nil {
      self.id = nil
      seq = -1
    }
  }
}
