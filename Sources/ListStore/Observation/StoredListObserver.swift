import FoundationEssentials
import Observable2D
import ReactiveCore
import SQLiteKit

/// Keeps one ``MutableObservable2DArray`` equal to a stored list: the feed hands it
/// the log entries after its position; it turns them into one changeset per batch
/// and applies that to the array, which emits it.
///
/// The feed is not generic: it drives the observer through ``feedObserver()``'s closures,
/// made where `Metadata` and `Item` are concrete (``StoredList/observe(undecodable:)`` is
/// inlinable, and so is this class's path from a log entry to the event), so that a write's
/// staging, applying and delivering run compiled for the caller's types rather than through
/// generic code that looks up type metadata at run time. Rarer paths (reloads, failures) are
/// generic code of their own.
///
/// `@unchecked Sendable`: every stored `var` is only touched with the feed's state
/// lock held, or before the observer is registered with the feed. ``deliver()``, which
/// runs without that lock, reads only `weakArray`, a weak reference (thread-safe).
@usableFromInline
final class StoredListObserver<Metadata: Codable, Item: Codable>: @unchecked Sendable {
  @usableFromInline typealias Section = Observable2DArraySection<Metadata, Item>

  /// Work found by `stage`, applied by the closure it returns.
  @usableFromInline
  enum Pending {
    case changes(Changeset<Metadata, Item>)
    case replace([Section])
    case deleted
    case failed(ListStoreError)
    /// A transient failure: read the same entries again later.
    case retry
  }

  @usableFromInline let listID: Int64
  let name: String
  // The `var`s are touched only under the feed's state lock (see above): their dynamic
  // exclusivity checks, a few dozen on every write, are left out.
  @exclusivity(unchecked) @usableFromInline var seq: Int64
  @exclusivity(unchecked) @usableFromInline var mirror: PositionMirror
  /// Held while someone else holds the array or subscribes to it (see `isAlive`).
  @exclusivity(unchecked) @usableFromInline var array: MutableObservable2DArray<Metadata, Item>?
  /// The array, for delivering without the feed's lock.
  @usableFromInline weak var weakArray: MutableObservable2DArray<Metadata, Item>?
  /// The edits the last staging made to `mirror`, until its work is installed or discarded.
  @exclusivity(unchecked) @usableFromInline var stagedEdits: PositionMirror.Journal?
  @exclusivity(unchecked) @usableFromInline var needsFullReload = false
  @exclusivity(unchecked) @usableFromInline var retryPending = false
  @exclusivity(unchecked) @usableFromInline var finished = false
  @usableFromInline let decodeItem: (UnsafeBufferPointer<UInt8>, Int64) throws -> Item
  @usableFromInline let decodeMetadata: (UnsafeBufferPointer<UInt8>, Int64) throws -> Metadata
  let policy: UndecodableRowPolicy<Metadata, Item>

  @usableFromInline
  init(
    listID: Int64, name: String, seq: Int64, mirror: PositionMirror,
    array: MutableObservable2DArray<Metadata, Item>, policy: UndecodableRowPolicy<Metadata, Item>
  ) {
    self.listID = listID
    self.name = name
    self.seq = seq
    self.mirror = mirror
    self.array = array
    weakArray = array
    self.policy = policy
    decodeItem = policy.itemDecoder()
    decodeMetadata = policy.metadataDecoder()
  }

  /// The observer as the feed drives it. Inlinable: the closures, made in the caller's
  /// code, run this class's inlinable methods compiled for its `Metadata` and `Item`.
  @inlinable
  func feedObserver() -> FeedObserver {
    FeedObserver(
      listID: listID, seq: { self.seq }, isAlive: { self.isAlive },
      needsRead: { self.needsRead }, rowCount: { self.mirror.rowCount },
      concerns: { self.concerns($0) },
      stage: { self.stage(entries: $0, context: $1) },
      discard: { self.discardStaged() }, finish: { self.finish(failing: $0) },
      deliver: { self.deliver() })
  }

  /// Whether the observation is still wanted: its array is referenced by someone
  /// besides this observer, or has subscribers (a binding keeps it going even when
  /// the program dropped the array itself).
  @inlinable
  var isAlive: Bool {
    guard !finished, array != nil else { return false }
    if array?.hasSubscribers == true { return true }
    // Let go; if nobody else holds the array, it is freed now.
    array = nil
    array = weakArray
    return array != nil
  }

  @inlinable
  var needsRead: Bool { needsFullReload || retryPending }

  /// Whether `entry` may concern this list: names it, one of its sections, or a row that
  /// was or is in one of its sections (as its copy has them).
  @usableFromInline
  func concerns(_ entry: ChangeLogEntry) -> Bool {
    switch entry.kind {
    case .list: return entry.rowID == listID
    case .section: return entry.listID == listID || entry.oldListID == listID
    case .item:
      for section in [entry.parent, entry.oldParent, entry.current?.parent] {
        if let section, mirror.items[section] != nil { return true }
      }
      return false
    }
  }

  /// Reads list `listID` in one ordered pass: the decoded sections the array starts
  /// from, and the mirror of their positions and value hashes. Values are decoded
  /// straight from SQLite's bytes, by a decoder chosen once for `Item`, following
  /// `policy` for rows that do not decode.
  ///
  /// Inlinable, so that it is compiled for the concrete `Metadata` and `Item` of the
  /// caller: loading a million items costs per item only what the data needs.
  @inlinable
  static func load(
    listID: Int64, db: any DatabaseConnection, policy: UndecodableRowPolicy<Metadata, Item> = .fail
  ) throws -> (sections: [Section], mirror: PositionMirror) {
    let decodeItem = policy.itemDecoder()
    let decodeMetadata = policy.metadataDecoder()
    // The sections first (a few rows), then every item with just its section's id.
    var sections: [Section] = []
    var mirror = PositionMirror()
    var sectionIndex: [Int64: Int] = [:]
    let sectionRows = try db.cached(
      "SELECT id, position, metadata FROM sections WHERE list_id = ? ORDER BY position")
    try sectionRows.bind(listID, at: 1)
    try sectionRows.forEachRow { row in
      let id = row.int64(at: 0)
      let (metadata, hash) = try row.withUTF8(at: 2) {
        (try decodeMetadata($0, id), PositionMirror.hash($0))
      }
      sectionIndex[id] = sections.count
      sections.append(Section(id: id, metadata: metadata))
      mirror.sections.append(PositionMirror.Slot(key: row.string(at: 1), hash: hash), id: id)
    }
    // Grouped by section is enough, and may cost the engine less than ordered: the
    // order of each section's rows is checked, and an engine that returned them
    // otherwise is asked again for them in order.
    if try !loadItems(
      db.dialect.listItems.grouped, listID: listID, db: db, decode: decodeItem,
      sections: &sections, sectionIndex: sectionIndex, mirror: &mirror)
    {
      mirror.items = [:]
      _ = try loadItems(
        db.dialect.listItems.ordered, listID: listID, db: db, decode: decodeItem,
        sections: &sections, sectionIndex: sectionIndex, mirror: &mirror)
    }
    for section in sections where mirror.items[section.id] == nil {
      mirror.items[section.id] = ItemList()
    }
    return (sections, mirror)
  }

  /// Reads the items of list `listID` with `sql` (``SQLDialect/listItems``) into
  /// `sections` and `mirror`.
  /// - Returns: Whether each section's rows came together and in the order of their keys
  ///   (else `sections` and `mirror` hold part of them: read again, in order).
  @inlinable
  static func loadItems(
    _ sql: String, listID: Int64, db: any DatabaseConnection,
    decode decodeItem: (UnsafeBufferPointer<UInt8>, Int64) throws -> Item,
    sections: inout [Section], sectionIndex: [Int64: Int], mirror: inout PositionMirror
  ) throws -> Bool {
    let itemRows = try db.cached(sql)
    try itemRows.bind(listID, at: 1)
    defer { itemRows.reset() }
    var currentSection: Int64 = -1
    var items = ItemList<Item>()
    var slots = ItemList<PositionMirror.Slot>()
    func finishSection() {
      guard let index = sectionIndex[currentSection] else { return }
      sections[index].items = items
      mirror.items[currentSection] = slots
      items = ItemList()
      slots = ItemList()
    }
    var previousKey = ""
    // A plain loop rather than a closure: the loop's state stays in registers.
    while try itemRows.step() {
      let sectionID = itemRows.int64(at: 0)
      let key = itemRows.string(at: 2)
      if sectionID != currentSection {
        finishSection()
        // A section met a second time: not grouped.
        guard mirror.items[sectionID] == nil else { return false }
        currentSection = sectionID
      } else if !PositionMirror.precedes(previousKey, key) {
        return false
      }
      let id = itemRows.int64(at: 1)
      let (value, hash) = try itemRows.withUTF8(at: 3) {
        (try decodeItem($0, id), PositionMirror.hash($0))
      }
      items.append(value, id: id)
      slots.append(PositionMirror.Slot(key: key, hash: hash), id: id)
      previousKey = key
    }
    finishSection()
    return true
  }

  /// Works out what the entries after ``seq`` did (up to the context's `lastSeq`), reading
  /// rows through the context's connection, which sees the state the entries lead to; when
  /// the context says the observer fell behind, it reloads its list instead. Changes
  /// nothing the array shows yet: the returned closure, called once that state is
  /// committed, applies it to the array (queuing its event); when the state is not
  /// committed, ``discardStaged()`` undoes the staging instead.
  ///
  /// The mirror is brought up to date in place, its edits noted so that they can be
  /// undone: a copy of it would make the first edit of each touched list copy its chunk,
  /// a cost that grows with the list.
  @inlinable
  func stage(entries: ArraySlice<ChangeLogEntry>, context: StagingContext) -> () -> Void {
    discardStaged()
    guard !finished else { return {} }
    guard !needsFullReload, !context.fellBehind else { return stagedReload(context) }
    var edits = PositionMirror.Journal()
    var work: [Pending] = []
    do {
      switch try ChangesetBuilder.update(
        listID: listID, db: context.db, mirror: &mirror, journal: &edits, entries: entries)
      {
      case .changes(let changeset)?: work.append(.changes(try typed(changeset)))
      case .deleted?: work.append(.deleted)
      case nil: break
      }
    } catch {
      mirror.undo(edits)
      return staged(after: error, context)
    }
    stagedEdits = edits
    let lastSeq = context.lastSeq
    return {
      self.stagedEdits = nil
      self.seq = lastSeq
      self.retryPending = false
      self.array?.setVersion(lastSeq)
      self.install(work)
    }
  }

  /// Undoes the edits of a staging whose state was not committed: the observer is where
  /// it was before it.
  @inlinable
  func discardStaged() {
    guard let edits = stagedEdits else { return }
    stagedEdits = nil
    mirror.undo(edits)
  }

  /// The closure that makes staged work the observer's state.
  @inlinable
  func installing(_ work: [Pending], mirror: PositionMirror, lastSeq: Int64) -> () -> Void {
    if case .retry? = work.first {
      return { self.retryPending = true }
    }
    return {
      self.mirror = mirror
      self.seq = lastSeq
      self.retryPending = false
      self.array?.setVersion(lastSeq)
      self.install(work)
    }
  }

  /// ``stage(entries:context:)`` for an observer that reads the list whole: to replace its
  /// array's state after it disagreed with the store, or, with a diff, after it fell behind
  /// the log.
  @usableFromInline
  func stagedReload(_ context: StagingContext) -> () -> Void {
    var mirror = self.mirror
    let work: [Pending]
    do {
      work = try reload(db: context.db, mirror: &mirror, diff: !needsFullReload)
    } catch {
      work = [Self.failure(error, context.userError)]
    }
    return installing(work, mirror: mirror, lastSeq: context.lastSeq)
  }

  /// ``stage(entries:context:)`` after the log could not be applied: the mirror disagrees
  /// with it (reload and diff), or reading failed.
  @usableFromInline
  func staged(after error: any Error, _ context: StagingContext) -> () -> Void {
    var mirror = self.mirror
    var work: [Pending]
    if error is NeedsReload && context.inWrite {
      // Not in a writer's transaction: a refresh after its commit reloads.
      work = [.retry]
    } else if error is NeedsReload {
      do {
        work = try reload(db: context.db, mirror: &mirror, diff: true)
      } catch {
        work = [Self.failure(error, context.userError)]
      }
    } else {
      work = [Self.failure(error, context.userError)]
    }
    return installing(work, mirror: mirror, lastSeq: context.lastSeq)
  }

  /// The work a failure leaves: read again later when it may pass (the list changed under a
  /// reload's feet, the database was busy or out of reach), else the end of the
  /// observation, with the error as `userError`, the engine's mapping, says it.
  static func failure(_ error: any Error, _ userError: (any Error) -> ListStoreError) -> Pending {
    if error is NeedsReload { return .retry }
    let error = userError(error)
    return error.isTransient ? .retry : .failed(error)
  }

  /// Applies staged work to the array, queuing its events.
  @inlinable
  func install(_ work: [Pending]) {
    guard let array else { return }
    for item in work {
      switch item {
      case .changes(let changeset):
        do {
          try array.applyWithoutDelivering(changeset)
        } catch {
          // The array and the mirror disagree: replace the array's state wholesale
          // on the next refresh.
          needsFullReload = true
        }
      case .replace(let sections):
        replace(array, with: sections)
      case .deleted:
        finish(failing: nil)
      case .failed(let error):
        finish(failing: error)
      case .retry:
        retryPending = true
      }
    }
  }

  /// Replaces the array's state with `sections`, read whole from the store.
  @usableFromInline
  func replace(_ array: MutableObservable2DArray<Metadata, Item>, with sections: [Section]) {
    // Matched by id; values compared as not equal, so that no change is lost.
    let changeset = Changeset.diffByID(
      from: array.sections, to: sections, isEqual: { _, _ in false },
      metadataIsEqual: { _, _ in false })
    do {
      if !changeset.isEmpty { try array.applyWithoutDelivering(changeset) }
      needsFullReload = false
    } catch {
      needsFullReload = true
    }
  }

  /// A changeset of stored JSON text, with its metadata and values decoded.
  @inlinable
  func typed(_ raw: Changeset<String, String>) throws -> Changeset<Metadata, Item> {
    try raw.mapValues(
      metadata: { id, json in
        var json = json
        return try json.withUTF8 { try decodeMetadata($0, id) }
      },
      item: { id, json in
        var json = json
        return try json.withUTF8 { try decodeItem($0, id) }
      })
  }

  /// Reads the whole list again; with `diff`, the work is the difference to what the
  /// mirror says the array holds, else a replacement of the array's state.
  private func reload(db: any DatabaseConnection, mirror: inout PositionMirror, diff: Bool) throws
    -> [Pending]
  {
    guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
      return [.deleted]
    }
    let (sections, newMirror) = try Self.load(listID: listID, db: db, policy: policy)
    defer { mirror = newMirror }
    guard diff else { return [.replace(sections)] }
    let hashed = Changeset<Int, Int>.diffByID(
      from: mirror.hashedSections, to: newMirror.hashedSections)
    return hashed.isEmpty ? [] : [.changes(try typed(hashed, sections: sections))]
  }

  /// The changeset of hashes, with the new state's values in place of the hashes.
  private func typed(_ hashed: Changeset<Int, Int>, sections: [Section]) throws
    -> Changeset<Metadata, Item>
  {
    var metadataByID: [Int64: Metadata] = [:]
    var valueByID: [Int64: Item] = [:]
    for section in sections {
      metadataByID[section.id] = section.metadata
      for entry in section.items.entries { valueByID[entry.id] = entry.value }
    }
    return try hashed.mapValues(
      metadata: { id, _ in
        guard let metadata = metadataByID[id] else {
          throw NeedsReload(reason: "section \(id) missing")
        }
        return metadata
      },
      item: { id, _ in
        guard let value = valueByID[id] else { throw NeedsReload(reason: "item \(id) missing") }
        return value
      })
  }

  /// Delivers the queued events to the array's subscribers; runs without the feed's lock.
  @inlinable
  func deliver() {
    weakArray?.deliverPending()
  }

  /// Queues the end of the observation, failing with `error`, or completing when it is
  /// `nil`; nothing is staged any more.
  @usableFromInline
  func finish(failing error: ListStoreError?) {
    guard !finished else { return }
    finished = true
    array?.finishWithoutDelivering(failing: error)
  }
}
