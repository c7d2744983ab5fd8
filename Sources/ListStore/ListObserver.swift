import FoundationEssentials
import Observable2D
import ReactiveCore
import SQLiteKit

/// Keeps one ``MutableObservable2DArray`` equal to a stored list: the feed hands it
/// the log entries after its position; it turns them into one changeset per batch
/// and applies that to the array, which emits it.
///
/// `@unchecked Sendable`: `seq`, `mirror`, `pending` and `needsFullReload` are only
/// touched by the feed's draining thread (under the feed's drain lock), or before
/// the observer is added to the feed.
final class ListObserver<Metadata: Codable, Item: Codable>: FeedObserver, @unchecked Sendable {
  typealias Section = Observable2DArraySection<Metadata, Item>

  /// Work found by `prepare`, waiting for `deliver`.
  private enum Pending {
    case changes(Changeset<Metadata, Item>)
    case replace([Section])
    case deleted
    case failed(ListStoreError)
  }

  let listID: Int64
  let name: String
  private(set) var seq: Int64
  private var mirror: ListMirror
  /// Kept while someone else holds the array or subscribes to it (see `isAlive`).
  private var array: MutableObservable2DArray<Metadata, Item>?
  private var pending: [Pending] = []
  private var needsFullReload = false
  private var finished = false

  init(
    listID: Int64, name: String, seq: Int64, mirror: ListMirror,
    array: MutableObservable2DArray<Metadata, Item>
  ) {
    self.listID = listID
    self.name = name
    self.seq = seq
    self.mirror = mirror
    self.array = array
  }

  /// Whether the observation is still wanted: its array is referenced by someone
  /// besides this observer, or has subscribers (a binding keeps it going even when
  /// the program dropped the array itself).
  var isAlive: Bool {
    guard !finished, array != nil else { return false }
    if !isKnownUniquelyReferenced(&array) || array?.hasSubscribers == true { return true }
    array = nil
    return false
  }

  var needsRead: Bool { needsFullReload }

  /// Decodes stored rows into the sections of a 2D array.
  static func sections(of stored: [StoredSection]) throws(ListStoreError) -> [Section] {
    var sections: [Section] = []
    sections.reserveCapacity(stored.count)
    for section in stored {
      var items = ItemList<Item>()
      items.reserveCapacity(section.items.count)
      for item in section.items {
        items.append(try ValueCoder.decode(Item.self, from: item.json), id: item.id)
      }
      sections.append(
        Section(
          id: section.row.id,
          metadata: try ValueCoder.decode(Metadata.self, from: section.row.json), items: items))
    }
    return sections
  }

  func prepare(entries: ArraySlice<ChangeLogEntry>, lastSeq: Int64, horizon: Int64, db: Connection)
  {
    guard !finished else { return }
    do {
      if needsFullReload {
        try reload(db: db, diff: false)
      } else if seq < horizon {
        try reload(db: db, diff: true)  // Fell behind the pruned log.
      } else {
        do {
          switch try ListChanges<Metadata, Item>(listID: listID, db: db).update(
            mirror: &mirror, entries: entries)
          {
          case .changes(let changeset)?: pending.append(.changes(changeset))
          case .deleted?: pending.append(.deleted)
          case nil: break
          }
        } catch is NeedsReload {
          try reload(db: db, diff: true)
        }
      }
      seq = lastSeq
    } catch let error as ListStoreError {
      pending.append(.failed(error))
    } catch let error as SQLiteError {
      pending.append(.failed(.sqlite(error)))
    } catch {
      pending.append(.failed(.decodingFailed("\(error)")))
    }
  }

  /// Reads the whole list again; with `diff`, emits the difference to what the
  /// mirror says the array holds, else replaces the array's state by a diff of its own.
  private func reload(db: Connection, diff: Bool) throws {
    guard try db.scalarInt64("SELECT 1 FROM lists WHERE id = ?", listID) != nil else {
      pending.append(.deleted)
      return
    }
    let stored = try ListRows(db: db, listID: listID).snapshot()
    let newMirror = ListMirror(stored)
    if diff {
      let hashed = Changeset<Int, Int>.diffByID(
        from: mirror.hashedSections, to: newMirror.hashedSections)
      if !hashed.isEmpty { pending.append(.changes(try typed(hashed, stored: stored))) }
    } else {
      pending.append(.replace(try Self.sections(of: stored)))
      needsFullReload = false
    }
    mirror = newMirror
  }

  /// The changeset of hashes, with the stored values decoded in place of the hashes.
  private func typed(_ hashed: Changeset<Int, Int>, stored: [StoredSection]) throws -> Changeset<
    Metadata, Item
  > {
    var sectionJSON: [Int64: StoredSection] = [:]
    var itemJSON: [Int64: String] = [:]
    for section in stored {
      sectionJSON[section.row.id] = section
      for item in section.items { itemJSON[item.id] = item.json }
    }
    func metadata(_ id: Int64) throws -> Metadata {
      guard let section = sectionJSON[id] else {
        throw NeedsReload(reason: "section \(id) missing")
      }
      return try ValueCoder.decode(Metadata.self, from: section.row.json)
    }
    func value(_ id: Int64) throws -> Item {
      guard let json = itemJSON[id] else { throw NeedsReload(reason: "item \(id) missing") }
      return try ValueCoder.decode(Item.self, from: json)
    }
    var result = Changeset<Metadata, Item>()
    result.deletedSections = hashed.deletedSections.map { .init(index: $0.index, id: $0.id) }
    for section in hashed.insertedSections {
      var items = ItemList<Item>()
      for id in section.items.ids { items.append(try value(id), id: id) }
      result.insertedSections.append(
        .init(
          index: section.index, id: section.id, metadata: try metadata(section.id), items: items))
    }
    for section in hashed.movedSections {
      result.movedSections.append(
        .init(
          from: section.from, to: section.to, id: section.id, metadata: try metadata(section.id)))
    }
    for section in hashed.updatedSections {
      result.updatedSections.append(
        .init(index: section.index, id: section.id, metadata: try metadata(section.id)))
    }
    result.deletedItems = hashed.deletedItems.map { .init(at: $0.at, id: $0.id) }
    for item in hashed.insertedItems {
      result.insertedItems.append(.init(at: item.at, id: item.id, value: try value(item.id)))
    }
    for item in hashed.movedItems {
      result.movedItems.append(
        .init(from: item.from, to: item.to, id: item.id, value: try value(item.id)))
    }
    for item in hashed.updatedItems {
      result.updatedItems.append(.init(at: item.at, id: item.id, value: try value(item.id)))
    }
    return result
  }

  func deliver() {
    let work = pending
    pending = []
    guard let array else { return }
    for item in work {
      switch item {
      case .changes(let changeset):
        do {
          try array.apply(changeset)
        } catch {
          // The array and the mirror disagree: replace the array's state wholesale
          // (by a diff of its own) on the next refresh.
          needsFullReload = true
        }
      case .replace(let sections):
        array.replace(with: sections, performDiff: true)
      case .deleted:
        finished = true
        array.finish()
      case .failed(let error):
        finished = true
        array.finish(failing: error)
      }
    }
  }

  func finish() {
    guard !finished else { return }
    finished = true
    array?.finish()
  }
}
