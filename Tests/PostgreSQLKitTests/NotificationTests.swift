import Foundation
import PostgreSQLKit
import PostgresTestSupport
import Testing

@Suite(.postgres) struct NotificationTests {
  /// Waits until `count` notifications arrived (a minute at most).
  private func receive(_ count: Int, on listener: PGConnection) throws -> [PGNotification] {
    var received: [PGNotification] = []
    while received.count < count {
      let batch = try listener.waitForNotifications(timeout: .seconds(60))
      guard !batch.isEmpty else { throw TestFailure("no notification within a minute") }
      received += batch
    }
    return received
  }

  @Test func deliversOnlyWhenTheTransactionCommits() throws {
    let (listener, connectionString) = try freshDatabase()
    let sender = try PGConnection(connectionString)
    let marker = try PGConnection(connectionString)
    try listener.listen("events")
    try sender.transaction {
      try sender.notify("events", payload: "inside")
      // Delivery follows commit order: a marker committed now arrives first, and
      // "inside" must not have come before it.
      try marker.notify("events", payload: "marker")
      #expect(try receive(1, on: listener).map(\.payload) == ["marker"])
    }
    let delivered = try receive(1, on: listener)
    #expect(
      delivered == [
        PGNotification(channel: "events", payload: "inside", processID: sender.backendPID)
      ])
  }

  @Test func deliversNothingFromARolledBackTransaction() throws {
    struct Undo: Error {}
    let (listener, connectionString) = try freshDatabase()
    let sender = try PGConnection(connectionString)
    try listener.listen("events")
    #expect(throws: Undo.self) {
      try sender.transaction {
        try sender.notify("events", payload: "rolled back")
        throw Undo()
      }
    }
    try sender.notify("events", payload: "after")
    // Had the rolled-back one been delivered, it would have come first.
    #expect(try receive(1, on: listener).map(\.payload) == ["after"])
  }

  @Test func receivesItsOwnNotificationsAndSaysWhoSent() throws {
    let (db, connectionString) = try freshDatabase()
    let other = try PGConnection(connectionString)
    let channel = "a \"quoted\" channel; DROP TABLE x -- ünïcode"
    try db.listen(channel)
    #expect(db.listeningChannels == [channel])
    try db.notify(channel, payload: "mine")
    try other.notify(channel, payload: "theirs\twith\nspecial 'characters' 🚀")
    try other.notify("not listened to", payload: "ignored")
    let received = try receive(2, on: db)
    #expect(
      received == [
        PGNotification(channel: channel, payload: "mine", processID: db.backendPID),
        PGNotification(
          channel: channel, payload: "theirs\twith\nspecial 'characters' 🚀",
          processID: other.backendPID),
      ])
    // Identical notifications in one transaction collapse; distinct ones are kept.
    try other.transaction {
      for payload in ["p", "p", "q", "p"] { try other.notify(channel, payload: payload) }
    }
    try other.notify(channel)
    #expect(try receive(3, on: db).map(\.payload) == ["p", "q", ""])
    try db.unlisten(channel)
    #expect(db.listeningChannels.isEmpty)
    #expect(try db.pendingNotifications().isEmpty)
  }

  @Test func timesOutWithNothing() throws {
    let (db, _) = try freshDatabase()
    try db.listen("quiet")
    let clock = ContinuousClock()
    let start = clock.now
    #expect(try db.waitForNotifications(timeout: .milliseconds(30)).isEmpty)
    #expect(start.duration(to: clock.now) >= .milliseconds(30))
    #expect(try db.waitForNotifications(timeout: .zero).isEmpty)
    // The connection is still fine for queries.
    #expect(try db.scalarInt64("SELECT 1") == 1)
  }

  @Test func wakesABlockedWaitWhenANotificationArrives() throws {
    let (_, connectionString) = try freshDatabase()
    let listening = Signal()
    let listener = BackgroundThread { () throws -> [PGNotification] in
      let db = try PGConnection(connectionString)
      try db.listen("wake")
      listening.signal()
      return try db.waitForNotifications(timeout: nil)
    }
    try listening.wait()
    let sender = try PGConnection(connectionString)
    try sender.notify("wake", payload: "up")
    #expect(try listener.join().map(\.payload) == ["up"])
  }

  @Test func anotherThreadInterruptsAWaitPromptly() throws {
    let (_, connectionString) = try freshDatabase()
    let interrupter = try PGWaitInterrupter()
    let waiting = Signal()
    let clock = ContinuousClock()
    let listener = BackgroundThread { () throws -> ([PGNotification], Duration) in
      let db = try PGConnection(connectionString)
      try db.listen("never")
      waiting.signal()
      let start = clock.now
      let notifications = try db.waitForNotifications(
        timeout: .seconds(600), interrupter: interrupter)
      return (notifications, start.duration(to: clock.now))
    }
    try waiting.wait()
    interrupter.interrupt()
    let (notifications, waited) = try listener.join()
    #expect(notifications.isEmpty)
    #expect(waited < .seconds(30))
  }

  @Test func anInterruptionBeforeTheWaitIsNotLost() throws {
    let (db, _) = try freshDatabase()
    try db.listen("never")
    let interrupter = try PGWaitInterrupter()
    interrupter.interrupt()
    interrupter.interrupt()
    #expect(try db.waitForNotifications(timeout: .seconds(600), interrupter: interrupter).isEmpty)
    // Consumed: the next wait times out normally.
    #expect(try db.waitForNotifications(timeout: .zero, interrupter: interrupter).isEmpty)
    // Notifications that arrived win over a pending interruption, which stays pending.
    try db.notify("never", payload: "now")
    interrupter.interrupt()
    #expect(
      try db.waitForNotifications(timeout: .seconds(600), interrupter: interrupter).map(\.payload)
        == ["now"])
    #expect(try db.waitForNotifications(timeout: .seconds(600), interrupter: interrupter).isEmpty)
  }

  @Test func aTerminatedListenerFailsAndResetListensAgain() throws {
    let server = try TestPostgresServer.shared()
    let (listener, connectionString) = try freshDatabase()
    let sender = try PGConnection(connectionString)
    try listener.listen("events")
    try listener.listen("other events")
    let oldPID = listener.backendPID
    #expect(
      try server.superuserQuery("SELECT pg_terminate_backend($1)", oldPID).bool(row: 0, column: 0))
    let error = try #require(throws: PGError.self) {
      try listener.waitForNotifications(timeout: .seconds(60))
    }
    #expect(error.kind == .connectionLost)
    #expect(!listener.isConnected)
    try listener.reset()
    #expect(listener.isConnected)
    #expect(listener.backendPID != oldPID)
    #expect(listener.listeningChannels == ["events", "other events"])
    try sender.notify("other events", payload: "after reset")
    #expect(try receive(1, on: listener).map(\.payload) == ["after reset"])
  }

  @Test func refusesAPayloadOf8000Bytes() throws {
    let (db, _) = try freshDatabase()
    try db.notify("big", payload: String(repeating: "x", count: 7_999))
    let error = try #require(throws: PGError.self) {
      try db.notify("big", payload: String(repeating: "x", count: 8_000))
    }
    #expect(error.sqlState == "22023")
  }
}
