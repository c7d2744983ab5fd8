import FoundationEssentials
public import ListStore
import Observable2D

/// Counters kept in a ListStore list, so that their ids and values survive restarts and any
/// `liststore` command or SQLite client can read them.
///
/// ## Format
///
/// The counters are the items of the list's first section, in order; that section's header is
/// `Counters`. A counter's id is its item's row id, and its value is stored as a JSON number:
///
/// ```
/// $ liststore show counters --json
/// {"list":"counters","sections":[{"id":1,"header":"Counters","footer":null,
///   "items":[{"id":1,"value":3},{"id":2,"value":-1}]}]}
/// ```
///
/// Reading also accepts a string holding a whole number (`"5"`, what
/// `liststore item set counters 0:0 5` stores without `--json`) and a number with no fraction
/// (`5.0`); anything else reads as ``CounterError/notANumber(id:json:list:row:)``. Writes
/// always store a JSON number. Other sections of the list are left alone.
///
/// ```swift
/// let store = try CounterStore(repository: try Repository(path: path))
/// let id = try store.add()  // a new counter at 0
/// try store.increment(id: id)  // 1
/// try store.counters()  // [(id: 1, value: 1)]
/// ```
///
/// Each call is one transaction, except ``increment(id:by:)`` and its relatives, which read the
/// value and then write the sum: two processes incrementing the same counter at the same
/// moment may lose one increment.
public struct CounterStore: Sendable {
  /// The list used when none is named: `counters`.
  public static let defaultListName = "counters"
  /// The header of the section holding the counters.
  public static let sectionHeader = "Counters"

  /// The repository holding the list.
  public let repository: Repository
  /// The list's name.
  public let listName: String
  private let list: StoredList<SectionMetadata, RawJSON>

  /// Opens the list named `listName`, creating it with its section when it does not exist.
  ///
  /// - Parameters:
  ///   - repository: The database.
  ///   - listName: The list's name; `counters` by default.
  /// - Throws: ``CounterError/store(_:)`` when the list cannot be read or created.
  public init(repository: Repository, listName: String = defaultListName) throws(CounterError) {
    if let existing = try Self.existing(repository: repository, listName: listName) {
      self = existing
      return
    }
    let metadata = "{\"header\":" + JSONText.quote(Self.sectionHeader) + ",\"footer\":null}"
    do {
      _ = try repository.createList(listName, contents: [(metadata: metadata, items: [])])
    } catch .listExists {
      // Another process created it first: use theirs.
    } catch {
      throw .store(error)
    }
    guard let created = try Self.existing(repository: repository, listName: listName) else {
      throw .store(.listNotFound(name: listName))
    }
    self = created
  }

  private init(repository: Repository, list: StoredList<SectionMetadata, RawJSON>) {
    self.repository = repository
    self.listName = list.name
    self.list = list
  }

  /// Opens the list named `listName` if it exists, without writing anything.
  ///
  /// - Parameters:
  ///   - repository: The database.
  ///   - listName: The list's name.
  /// - Returns: The store, or `nil` when there is no such list.
  /// - Throws: ``CounterError/store(_:)`` when the database cannot be read.
  public static func existing(
    repository: Repository, listName: String = defaultListName
  ) throws(CounterError) -> CounterStore? {
    do {
      let list = try repository.list(listName, metadata: SectionMetadata.self, item: RawJSON.self)
      return CounterStore(repository: repository, list: list)
    } catch .listNotFound {
      return nil
    } catch {
      throw .store(error)
    }
  }

  // MARK: - Reading

  /// Every counter, in order.
  ///
  /// - Returns: The counters' ids and values; empty when the list has no section.
  /// - Throws: ``CounterError/notANumber(id:json:list:row:)`` for a value that is not a whole
  ///   number, ``CounterError/store(_:)`` when the list cannot be read.
  /// - Complexity: One query, O(*n*) in the number of counters.
  public func counters() throws(CounterError) -> [(id: Int64, value: Int)] {
    let sections = try mapped { () throws(ListStoreError) in try list.storedSections() }
    guard let section = sections.first else { return [] }
    var counters: [(id: Int64, value: Int)] = []
    counters.reserveCapacity(section.items.count)
    for (row, item) in section.items.enumerated() {
      guard let value = Self.number(fromJSON: item.json) else {
        throw .notANumber(id: item.id, json: item.json, list: listName, row: row)
      }
      counters.append((id: item.id, value: value))
    }
    return counters
  }

  /// The counters in the first of `sections`, as stored values read by an observer.
  ///
  /// - Parameter sections: The list's sections, with values as JSON.
  /// - Returns: The counters' ids and values.
  /// - Throws: ``CounterError/notANumber(id:json:list:row:)``.
  func counters(in sections: [Observable2DArraySection<SectionMetadata, RawJSON>])
    throws(CounterError)
    -> [(id: Int64, value: Int)]
  {
    guard let section = sections.first else { return [] }
    var counters: [(id: Int64, value: Int)] = []
    counters.reserveCapacity(section.items.count)
    for (row, item) in section.items.entries.enumerated() {
      guard let value = Self.number(fromJSON: item.value.text) else {
        throw .notANumber(id: item.id, json: item.value.text, list: listName, row: row)
      }
      counters.append((id: item.id, value: value))
    }
    return counters
  }

  /// An observable 2D array that follows the stored list through the change feed.
  ///
  /// - Returns: The array; keep it (or a subscription to it) for as long as you observe.
  /// - Throws: ``CounterError/store(_:)`` when the list is gone or cannot be read.
  func observe() throws(CounterError) -> Observable2DArray<SectionMetadata, RawJSON> {
    try mapped { () throws(ListStoreError) in try list.observe() }
  }

  /// The id of the counter at `row`.
  ///
  /// - Parameter row: The counter's zero-based row.
  /// - Returns: Its id.
  /// - Throws: ``CounterError/rowOutOfRange(row:count:list:)``.
  public func id(atRow row: Int) throws(CounterError) -> Int64 {
    try mapped(row: row) { () throws(ListStoreError) in
      try list.itemID(at: IndexPath(indexes: [0, row]))
    }
  }

  /// The value of the counter with id `id`.
  ///
  /// - Parameter id: The counter's id.
  /// - Returns: Its value.
  /// - Throws: ``CounterError/counterNotFound(id:list:)``,
  ///   ``CounterError/notANumber(id:json:list:row:)``.
  public func value(id: Int64) throws(CounterError) -> Int {
    let json = try mapped { () throws(ListStoreError) in try list.item(id: id) }
    guard let value = Self.number(fromJSON: json.text) else {
      throw .notANumber(id: id, json: json.text, list: listName, row: nil)
    }
    return value
  }

  // MARK: - Writing

  /// Appends a counter (and the list's section, when it has none).
  ///
  /// - Parameter value: Its value; 0 by default.
  /// - Returns: The new counter's id.
  /// - Throws: ``CounterError/store(_:)`` when the write fails.
  @discardableResult
  public func add(_ value: Int = 0) throws(CounterError) -> Int64 {
    try mapped { () throws(ListStoreError) in
      if try list.numberOfSections() == 0 {
        try list.appendSection(SectionMetadata(header: Self.sectionHeader))
      }
      return try list.appendItem(RawJSON(String(value)), toSection: 0)
    }
  }

  /// Sets the value of the counter with id `id`.
  ///
  /// - Parameters:
  ///   - id: The counter's id.
  ///   - value: Its new value.
  /// - Throws: ``CounterError/counterNotFound(id:list:)``.
  public func set(id: Int64, to value: Int) throws(CounterError) {
    try mapped { () throws(ListStoreError) in
      try list.replaceItem(id: id, with: RawJSON(String(value)))
    }
  }

  /// Sets the value of the counter at `row`.
  ///
  /// - Parameters:
  ///   - row: The counter's zero-based row.
  ///   - value: Its new value.
  /// - Throws: ``CounterError/rowOutOfRange(row:count:list:)``.
  public func set(row: Int, to value: Int) throws(CounterError) {
    try mapped(row: row) { () throws(ListStoreError) in
      try list.replaceItem(at: IndexPath(indexes: [0, row]), with: RawJSON(String(value)))
    }
  }

  /// Adds `amount` to the counter with id `id`.
  ///
  /// - Parameters:
  ///   - id: The counter's id.
  ///   - amount: What to add; 1 by default.
  /// - Returns: The new value.
  /// - Throws: ``CounterError/counterNotFound(id:list:)``, ``CounterError/overflow(id:row:)``,
  ///   ``CounterError/notANumber(id:json:list:row:)``.
  @discardableResult
  public func increment(id: Int64, by amount: Int = 1) throws(CounterError) -> Int {
    try adjust(id: id) { $0.addingReportingOverflow(amount) }
  }

  /// Subtracts `amount` from the counter with id `id`.
  ///
  /// - Parameters:
  ///   - id: The counter's id.
  ///   - amount: What to subtract; 1 by default.
  /// - Returns: The new value.
  /// - Throws: ``CounterError/counterNotFound(id:list:)``, ``CounterError/overflow(id:row:)``,
  ///   ``CounterError/notANumber(id:json:list:row:)``.
  @discardableResult
  public func decrement(id: Int64, by amount: Int = 1) throws(CounterError) -> Int {
    try adjust(id: id) { $0.subtractingReportingOverflow(amount) }
  }

  /// Reads, changes and writes one counter in one transaction, so that concurrent changes
  /// by other processes are never lost.
  private func adjust(id: Int64, _ change: (Int) -> (partialValue: Int, overflow: Bool))
    throws(CounterError) -> Int
  {
    do {
      return try list.updateItemJSON(id: id) {
        json throws(CounterError) -> (json: String, output: Int) in
        guard let value = Self.number(fromJSON: json) else {
          throw .notANumber(id: id, json: json, list: listName, row: nil)
        }
        let (result, overflow) = change(value)
        guard !overflow else { throw .overflow(id: id, row: nil) }
        return (String(result), result)
      }
    } catch let error as CounterError {
      throw error
    } catch let error as ListStoreError {
      throw translated(error)
    } catch {
      throw .store(.encodingFailed("\(error)"))
    }
  }

  /// Adds `amount` to the counter at `row`.
  ///
  /// - Parameters:
  ///   - row: The counter's zero-based row.
  ///   - amount: What to add; 1 by default.
  /// - Returns: The new value.
  /// - Throws: ``CounterError/rowOutOfRange(row:count:list:)``, ``CounterError/overflow(id:row:)``.
  @discardableResult
  public func increment(row: Int, by amount: Int = 1) throws(CounterError) -> Int {
    try naming(row) { id throws(CounterError) in try increment(id: id, by: amount) }
  }

  /// Runs `body` with the id of the counter at `row`; an overflow it reports names the row.
  private func naming<Result>(_ row: Int, _ body: (Int64) throws(CounterError) -> Result)
    throws(CounterError) -> Result
  {
    let id = try id(atRow: row)
    do {
      return try body(id)
    } catch .overflow(let id, _) {
      throw .overflow(id: id, row: row)
    }
  }

  /// Subtracts `amount` from the counter at `row`.
  ///
  /// - Parameters:
  ///   - row: The counter's zero-based row.
  ///   - amount: What to subtract; 1 by default.
  /// - Returns: The new value.
  /// - Throws: ``CounterError/rowOutOfRange(row:count:list:)``, ``CounterError/overflow(id:row:)``.
  @discardableResult
  public func decrement(row: Int, by amount: Int = 1) throws(CounterError) -> Int {
    try naming(row) { id throws(CounterError) in try decrement(id: id, by: amount) }
  }

  /// Deletes the counter with id `id`.
  ///
  /// - Parameter id: The counter's id.
  /// - Throws: ``CounterError/counterNotFound(id:list:)``.
  public func delete(id: Int64) throws(CounterError) {
    try mapped { () throws(ListStoreError) in try list.removeItem(id: id) }
  }

  /// Deletes the counter at `row`.
  ///
  /// - Parameter row: The counter's zero-based row.
  /// - Throws: ``CounterError/rowOutOfRange(row:count:list:)``.
  public func delete(row: Int) throws(CounterError) {
    try mapped(row: row) { () throws(ListStoreError) in
      try list.removeItem(at: IndexPath(indexes: [0, row]))
    }
  }

  // MARK: - Helpers

  /// A stored value as a counter: a JSON integer, a number without a fraction, or a string
  /// holding a whole number; `nil` for anything else.
  /// - Parameter json: A stored item value, as JSON text.
  /// - Returns: The counter's value, or `nil` when the JSON is no whole number.
  package static func number(fromJSON json: String) -> Int? {
    switch try? JSONValue.parse(json) {
    case .integer(let value): Int(exactly: value)
    case .number(let value): Int(exactly: value)
    case .string(let text):
      Int(
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()))
    default: nil
    }
  }

  /// Runs `body`, translating the repository's row errors into counter errors.
  ///
  /// - Parameters:
  ///   - row: The row `body` addresses, if any.
  ///   - body: The repository calls.
  /// - Returns: What `body` returns.
  /// - Throws: The counter error for what `body` threw.
  private func mapped<Result>(
    row: Int? = nil, _ body: () throws(ListStoreError) -> Result
  ) throws(CounterError) -> Result {
    do {
      return try body()
    } catch {
      throw translated(error, row: row)
    }
  }

  /// The counter error for a repository error.
  private func translated(_ error: ListStoreError, row: Int? = nil) -> CounterError {
    switch error {
    case .itemOutOfRange(section: _, let row, let count):
      .rowOutOfRange(row: row, count: count, list: listName)
    case .sectionOutOfRange:
      // Only section 0 is ever addressed: the list has no section, hence no counters.
      .rowOutOfRange(row: row ?? 0, count: 0, list: listName)
    case .itemNotFound(let id):
      .counterNotFound(id: id, list: listName)
    default:
      .store(error)
    }
  }
}
