import Foundation
import ListStore
import Observable2D
import SQLiteKit
import Testing

/// A list as the tests read it themselves: sections and items with their ids and stored
/// JSON text, in the order of their position keys' bytes. It is written here, with its
/// own query, so that it checks the library's loader and observers rather than trusting
/// them.
public struct ListContents: Equatable, Sendable, CustomStringConvertible {
  /// One item: its id and stored value text.
  public struct Item: Equatable, Sendable {
    /// The item's id.
    public var id: Int64
    /// Its value, as stored.
    public var value: String

    /// Creates an item.
    public init(id: Int64, value: String) {
      self.id = id
      self.value = value
    }
  }

  /// One section: its id, stored metadata text and items.
  public struct Section: Equatable, Sendable {
    /// The section's id.
    public var id: Int64
    /// Its metadata, as stored.
    public var metadata: String
    /// Its items in order.
    public var items: [Item]

    /// Creates a section.
    public init(id: Int64, metadata: String, items: [Item]) {
      self.id = id
      self.metadata = metadata
      self.items = items
    }
  }

  /// The sections in order.
  public var sections: [Section]

  /// Creates contents from sections.
  public init(sections: [Section]) { self.sections = sections }

  /// An observer's array of stored JSON, as contents.
  public init(_ array: [Observable2DArraySection<RawJSON, RawJSON>]) {
    sections = array.map { section in
      Section(
        id: section.id, metadata: section.metadata.text,
        items: section.items.entries.map { Item(id: $0.id, value: $0.value.text) })
    }
  }

  /// One line per section: `#id meta: #id value, #id value`.
  public var description: String {
    sections.map { section in
      "#\(section.id) \(section.metadata): "
        + section.items.map { "#\($0.id) \($0.value)" }.joined(separator: ", ")
    }.joined(separator: "\n")
  }

  /// Reads list `name` through `db`, in one read transaction; `nil` when there is no such
  /// list. Rows are ordered by the bytes of their position keys, as SQLite's BINARY
  /// collation orders text.
  public static func read(list name: String, db: Connection) throws -> ListContents? {
    try db.transaction(.deferred) {
      guard let listID = try db.scalarInt64("SELECT id FROM lists WHERE name = ?", name) else {
        return nil
      }
      return try contents(listID: listID, db: db)
    }
  }

  /// Reads the list with id `listID` through `db`, in one read transaction; `nil` when
  /// there is no such list (an observer follows a list by id, whatever its name).
  public static func read(listID: Int64, db: Connection) throws -> ListContents? {
    try db.transaction(.deferred) {
      guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
        return nil
      }
      return try contents(listID: listID, db: db)
    }
  }

  /// The sections and items of list `listID`, read inside the caller's transaction.
  private static func contents(listID: Int64, db: Connection) throws -> ListContents {
    var sections: [Section] = []
    let sectionRows = try db.prepare(
      "SELECT id, metadata FROM sections WHERE list_id = ? ORDER BY CAST(position AS BLOB)")
    try sectionRows.bind(listID, at: 1)
    try sectionRows.forEachRow { row in
      sections.append(Section(id: row.int64(at: 0), metadata: row.string(at: 1), items: []))
    }
    let itemRows = try db.prepare(
      "SELECT id, value FROM items WHERE section_id = ? ORDER BY CAST(position AS BLOB)")
    for index in sections.indices {
      try itemRows.bind(sections[index].id, at: 1)
      try itemRows.forEachRow { row in
        sections[index].items.append(Item(id: row.int64(at: 0), value: row.string(at: 1)))
      }
    }
    return ListContents(sections: sections)
  }

  /// Reads list `name` of the database at `path` through a connection of its own.
  public static func read(list name: String, path: String) throws -> ListContents? {
    let db = try Connection(path: path, mode: .readOnly)
    defer { db.close() }
    return try read(list: name, db: db)
  }
}

/// The observer's array equals `truth` (the database, read independently), and every
/// changeset it emitted passed the table view's checks, with no error.
public func expectExact(
  _ recorder: ArrayRecorder<RawJSON, RawJSON>, _ truth: ListContents?,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    ListContents(recorder.array.sections) == truth,
    "observer:\n\(ListContents(recorder.array.sections))\ndatabase:\n\(truth?.description ?? "no list")",
    sourceLocation: sourceLocation)
  #expect(recorder.problems.isEmpty, "\(recorder.problems)", sourceLocation: sourceLocation)
  #expect(
    recorder.error == nil, "\(String(describing: recorder.error))", sourceLocation: sourceLocation)
}
