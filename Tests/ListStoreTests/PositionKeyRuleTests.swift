import Foundation
import PostgreSQLKit
import PostgresTestSupport
import SQLiteKit
import TestSupport
import Testing

@testable import ListStore

/// The rule of what a position key is stands in six places that released migrations keep
/// as they are: `PositionKey.isValid` (the source), the four SQLite triggers that check an
/// inserted or moved section or item (migration 3), and PostgreSQL's
/// `liststore_is_position_key` (its migration 1). They agree on the same keys: random ones
/// near the rule's edges, malformed ones, and well-formed ones.
@Suite struct PositionKeyRuleTests {
  /// Keys near every edge of the rule: head letters and the lengths they give, trailing
  /// zeros, characters outside the alphabet, composed and decomposed accents, the empty
  /// key, the reserved smallest key, and keys `PositionKey` makes itself.
  static func keys(count: Int, seed: UInt64) -> [String] {
    var random = SeededGenerator(seed: seed)
    let heads = Array("aAbBcCyYzZ")
    let characters = Array("0129AZazbyBY~ -é\u{301}\u{0}")
    var keys: Set<String> = ["", "a", "a0", "a00", "Z", "A00000000000000000000000000", "a1", "b01"]
    var made: String?
    while keys.count < count {
      var key = ""
      switch Int.random(in: 0..<4, using: &random) {
      case 0:
        // A head letter and about as many digits as it asks for.
        key.append(heads.randomElement(using: &random) ?? "a")
        key += String(
          repeating: "0", count: Int.random(in: 0...27, using: &random))
        for _ in 0..<Int.random(in: 0...3, using: &random) {
          key.append(Array("019AZaz").randomElement(using: &random) ?? "1")
        }
      case 1:
        for _ in 0..<Int.random(in: 0...5, using: &random) {
          key.append(characters.randomElement(using: &random) ?? "0")
        }
      case 2:
        // A well-formed key, then perhaps one character changed.
        made = try? PositionKey.between(made, nil)
        key = made ?? "a0"
        if Bool.random(using: &random), !key.isEmpty {
          var scalars = Array(key)
          scalars[Int.random(in: 0..<scalars.count, using: &random)] =
            characters.randomElement(using: &random) ?? "~"
          key = String(scalars)
        }
      default:
        key = (try? PositionKey.between(nil, made)) ?? "a0"
        key += String(repeating: "0", count: Int.random(in: 0...1, using: &random))
      }
      keys.insert(key)
    }
    return keys.sorted()
  }

  /// SQLite: each of the four triggers accepts a key exactly when `PositionKey` does.
  @Test func theSQLiteTriggersAgreeWithPositionKey() throws {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let repository = try Repository(path: folder.file("db.sqlite"))
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    let section = try list.appendSection(RawJSON("null"))
    let item = try list.appendItem(RawJSON("1"), toSection: 0)
    let db = try Connection(path: repository.path)
    let statements: [(rule: String, sql: String)] = [
      ("sections insert", "INSERT INTO sections(list_id, position) VALUES (\(list.id), ?)"),
      ("sections update", "UPDATE sections SET position = ? WHERE id = \(section)"),
      (
        "items insert", "INSERT INTO items(section_id, position, value) VALUES (\(section), ?, '1')"
      ),
      ("items update", "UPDATE items SET position = ? WHERE id = \(item)"),
    ]
    var disagreements: [String] = []
    let keys = Self.keys(count: scaled(3_000), seed: testSeed(0x90_51))
    for key in keys {
      let valid = PositionKey.isValid(key)
      for statement in statements {
        var accepted = true
        try db.execute("SAVEPOINT k")
        do {
          try db.run(statement.sql, key)
        } catch let error as SQLiteError
          where error.message.contains("position must be a position key")
        {
          accepted = false
        } catch let error as SQLiteError where error.message.contains("UNIQUE") {
          // The key is taken in that parent: the rule's check came first and passed.
        }
        try db.execute("ROLLBACK TO k; RELEASE k")
        if accepted != valid {
          disagreements.append(
            "\(key.debugDescription): \(statement.rule) \(accepted ? "accepts" : "refuses")")
        }
      }
    }
    #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
    #expect(keys.filter(PositionKey.isValid).count > keys.count / 5)
    #expect(keys.filter { !PositionKey.isValid($0) }.count > keys.count / 5)
  }

  /// PostgreSQL: `liststore_is_position_key`, and the trigger that calls it, accept a key
  /// exactly when `PositionKey` does.
  @Test(.postgres) func thePostgreSQLFunctionAgreesWithPositionKey() throws {
    let database = try TestEngine.postgresql.makeDatabase()
    defer { database.remove() }
    let repository = try database.openRepository()
    let list = try repository.createList("l", metadata: RawJSON.self, item: RawJSON.self)
    let section = try list.appendSection(RawJSON("null"))
    let db = try PGConnection(database.location)
    // PostgreSQL text holds no NUL: those keys cannot reach it at all.
    let keys = Self.keys(count: scaled(3_000), seed: testSeed(0x90_52)).filter {
      !$0.contains("\u{0}")
    }
    var disagreements: [String] = []
    try db.execute("BEGIN")
    defer { try? db.execute("ROLLBACK") }
    for key in keys {
      let valid = PositionKey.isValid(key)
      let function = try db.query("SELECT coalesce(liststore_is_position_key($1), false)", key)
      let accepts = function.string(row: 0, column: 0) == "t"
      if accepts != valid {
        disagreements.append("\(key.debugDescription): the function says \(accepts)")
      }
      var accepted = true
      do {
        try db.execute("SAVEPOINT k")
        try db.run(
          "INSERT INTO items(section_id, position, value) VALUES ($1, $2, '1')", section, key)
      } catch let error as PGError where error.message.contains("must be a position key") {
        accepted = false
      }
      try db.execute("ROLLBACK TO k; RELEASE k")
      if accepted != valid {
        disagreements.append("\(key.debugDescription): the trigger says \(accepted)")
      }
    }
    #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
  }
}
