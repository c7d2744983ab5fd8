import FoundationEssentials
public import ListStore
import ListStoreFormats
public import Observable2D

/// A list on a ListStore server: read and written with `async` calls that fail with the
/// ``ListStoreError`` cases a local `StoredList` throws, and observed into the same
/// `Observable2DArray` (``observe()``).
///
/// Sections and items are named by id, as the server's API names them: ids are stable
/// while other clients write, where an index may have moved on by the time a request
/// arrives. Each call is one request, and one transaction on the server.
public final class RemoteList<Metadata: Codable & Sendable, Item: Codable & Sendable>: Sendable {
  /// The section type.
  public typealias Section = Observable2DArraySection<Metadata, Item>

  /// The server.
  public let repository: RemoteRepository
  /// The list's name.
  public let name: String

  init(repository: RemoteRepository, name: String) {
    self.repository = repository
    self.name = name
  }

  // MARK: Reading

  /// The whole list: its sections with their metadata and items, and their ids.
  ///
  /// - Returns: The sections.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, ``ListStoreError/decodingFailed(_:)``
  ///   for a value that does not decode as `Item` (or `Metadata`), or a transport error.
  public func sections() async throws(ListStoreError) -> [Section] {
    try await repository.background { () throws(ListStoreError) in
      try Self.decoded(try self.snapshotNow().sections)
    }
  }

  /// The list as the server has it now, undecoded, with its `seq`.
  package func snapshotNow() throws(ListStoreError) -> WireFormat.Snapshot {
    let response = try repository.send("GET", path, expecting: [200])
    do {
      return try WireFormat.snapshot(response.body)
    } catch {
      throw .server(location: repository.location, message: error.description)
    }
  }

  // MARK: Sections

  /// Appends a section.
  ///
  /// - Parameter metadata: Its metadata.
  /// - Returns: Its id.
  /// - Throws: ``ListStoreError/listNotFound(name:)``, or a transport error.
  @discardableResult
  public func appendSection(_ metadata: Metadata) async throws(ListStoreError) -> Int64 {
    try await created(path + "/sections", ["metadata": try Self.json(metadata)])
  }

  /// Inserts a section at an index.
  ///
  /// - Parameters:
  ///   - metadata: Its metadata.
  ///   - index: Where it goes, `0 ... numberOfSections`.
  /// - Returns: Its id.
  /// - Throws: ``ListStoreError/sectionInsertionOutOfRange(index:limit:)``, or as
  ///   ``appendSection(_:)``.
  @discardableResult
  public func insert(section metadata: Metadata, at index: Int) async throws(ListStoreError)
    -> Int64
  {
    try await created(path + "/sections?at=\(index)", ["metadata": try Self.json(metadata)])
  }

  /// Replaces a section's metadata.
  ///
  /// - Parameters:
  ///   - metadata: The new metadata.
  ///   - id: The section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``, or a transport error.
  public func setMetadata(_ metadata: Metadata, forSectionWithID id: Int64)
    async throws(ListStoreError)
  {
    try await changed("PATCH", path + "/sections/\(id)", ["metadata": try Self.json(metadata)])
  }

  /// Moves a section.
  ///
  /// - Parameters:
  ///   - id: The section's id.
  ///   - index: Its index after the move.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``,
  ///   ``ListStoreError/sectionOutOfRange(index:count:)``, or a transport error.
  public func moveSection(id: Int64, to index: Int) async throws(ListStoreError) {
    try await changed("PATCH", path + "/sections/\(id)", ["at": "\(index)"])
  }

  /// Removes a section with its items.
  ///
  /// - Parameter id: The section's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``, or a transport error.
  public func removeSection(id: Int64) async throws(ListStoreError) {
    try await changed("DELETE", path + "/sections/\(id)", nil)
  }

  // MARK: Items

  /// Appends an item to a section.
  ///
  /// - Parameters:
  ///   - item: The item.
  ///   - section: The section's id.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/sectionNotFound(id:)``, or a transport error.
  @discardableResult
  public func appendItem(_ item: Item, toSectionWithID section: Int64)
    async throws(ListStoreError) -> Int64
  {
    try await created(path + "/sections/\(section)/items", ["value": try Self.json(item)])
  }

  /// Inserts an item at a row of a section.
  ///
  /// - Parameters:
  ///   - item: The item.
  ///   - row: Its row, `0 ... numberOfItems`.
  ///   - section: The section's id.
  /// - Returns: The item's id.
  /// - Throws: ``ListStoreError/insertionOutOfRange(section:row:limit:)``, or as
  ///   ``appendItem(_:toSectionWithID:)``.
  @discardableResult
  public func insert(item: Item, atRow row: Int, inSectionWithID section: Int64)
    async throws(ListStoreError) -> Int64
  {
    try await created(
      path + "/sections/\(section)/items?at=\(row)", ["value": try Self.json(item)])
  }

  /// Inserts an item right before another, in its section.
  ///
  /// - Parameters:
  ///   - item: The item.
  ///   - neighbor: The id of the item it goes before.
  /// - Returns: The new item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  @discardableResult
  public func insert(item: Item, before neighbor: Int64) async throws(ListStoreError) -> Int64 {
    try await created(path + "/items?before=\(neighbor)", ["value": try Self.json(item)])
  }

  /// Inserts an item right after another, in its section.
  ///
  /// - Parameters:
  ///   - item: The item.
  ///   - neighbor: The id of the item it goes after.
  /// - Returns: The new item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  @discardableResult
  public func insert(item: Item, after neighbor: Int64) async throws(ListStoreError) -> Int64 {
    try await created(path + "/items?after=\(neighbor)", ["value": try Self.json(item)])
  }

  /// Replaces an item's value; it keeps its id and place.
  ///
  /// - Parameters:
  ///   - id: The item's id.
  ///   - item: The new value.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  public func replaceItem(id: Int64, with item: Item) async throws(ListStoreError) {
    try await changed("PATCH", path + "/items/\(id)", ["value": try Self.json(item)])
  }

  /// Moves an item to a row of a section (counted without the item).
  ///
  /// - Parameters:
  ///   - id: The item's id.
  ///   - section: The id of the section it goes to.
  ///   - row: Its row there after the move.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, ``ListStoreError/sectionNotFound(id:)``,
  ///   ``ListStoreError/insertionOutOfRange(section:row:limit:)``, or a transport error.
  public func moveItem(id: Int64, toSectionWithID section: Int64, row: Int)
    async throws(ListStoreError)
  {
    try await changed("PATCH", path + "/items/\(id)", ["section": "\(section)", "at": "\(row)"])
  }

  /// Moves an item right before another (into that one's section).
  ///
  /// - Parameters:
  ///   - id: The item's id.
  ///   - neighbor: The id of the item it goes before.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  public func moveItem(id: Int64, before neighbor: Int64) async throws(ListStoreError) {
    try await changed("PATCH", path + "/items/\(id)", ["before": "\(neighbor)"])
  }

  /// Moves an item right after another (into that one's section).
  ///
  /// - Parameters:
  ///   - id: The item's id.
  ///   - neighbor: The id of the item it goes after.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  public func moveItem(id: Int64, after neighbor: Int64) async throws(ListStoreError) {
    try await changed("PATCH", path + "/items/\(id)", ["after": "\(neighbor)"])
  }

  /// Removes an item.
  ///
  /// - Parameter id: The item's id.
  /// - Throws: ``ListStoreError/itemNotFound(id:)``, or a transport error.
  public func removeItem(id: Int64) async throws(ListStoreError) {
    try await changed("DELETE", path + "/items/\(id)", nil)
  }

  // MARK: Requests

  var path: String { RemoteRepository.listPath(name) }

  /// POSTs an object of `fields` (JSON texts) to `path` and returns the `id` it created.
  private func created(_ path: String, _ fields: [String: String]) async throws(ListStoreError)
    -> Int64
  {
    let body = Self.object(fields)
    return try await repository.background { () throws(ListStoreError) in
      let response = try self.repository.send("POST", path, body: body, expecting: [201])
      guard let id = WireFormat.number("id", in: response.body) else {
        throw .server(
          location: self.repository.location, message: "the answer names no id of what was made")
      }
      return id
    }
  }

  /// Sends `method` to `path` with an object of `fields` (JSON texts), if any.
  private func changed(_ method: String, _ path: String, _ fields: [String: String]?)
    async throws(ListStoreError)
  {
    let body = fields.map(Self.object)
    try await repository.background { () throws(ListStoreError) in
      _ = try self.repository.send(method, path, body: body, expecting: [200, 204])
    }
  }

  private static func object(_ fields: [String: String]) -> [UInt8] {
    Array(
      ("{"
        + fields.sorted { $0.key < $1.key }.map { JSONText.quote($0.key) + ":" + $0.value }
        .joined(separator: ",") + "}").utf8)
  }

  /// A value as the JSON text the store keeps.
  static func json<Value: Encodable>(_ value: Value) throws(ListStoreError) -> String {
    if let raw = value as? RawJSON { return raw.text }
    return try ValueCoder.encode(value)
  }

  /// A value read from the JSON text the server sent.
  static func value<Value: Decodable>(_ type: Value.Type, from raw: RawJSON) throws(ListStoreError)
    -> Value
  {
    if let raw = raw as? Value { return raw }
    return try ValueCoder.decode(type, from: raw.text)
  }

  /// The sections decoded as `Metadata` and `Item`.
  static func decoded(_ sections: [Observable2DArraySection<RawJSON, RawJSON>])
    throws(ListStoreError) -> [Section]
  {
    var result: [Section] = []
    result.reserveCapacity(sections.count)
    for section in sections {
      var items = ItemList<Item>()
      for entry in section.items.entries {
        items.append(try value(Item.self, from: entry.value), id: entry.id)
      }
      result.append(
        Section(
          id: section.id, metadata: try value(Metadata.self, from: section.metadata),
          items: items))
    }
    return result
  }
}
