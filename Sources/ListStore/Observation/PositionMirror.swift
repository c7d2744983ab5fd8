import Observable2D

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What an observer remembers of a list besides the values its 2D array shows: the
/// position key of every section and item (to place a changed row by binary search)
/// and a hash of every stored JSON text (to tell real value changes, and to diff on
/// a reload without decoding). It always describes the same state as the array.
@usableFromInline
struct PositionMirror {
  /// Where a row sits and what it holds, for one section or item.
  @usableFromInline
  struct Slot: Equatable {
    @usableFromInline var key: String
    @usableFromInline var hash: Int

    @inlinable
    init(key: String, hash: Int) {
      self.key = key
      self.hash = hash
    }
  }

  /// Sections in order, with their ids.
  @usableFromInline var sections = ItemList<Slot>()
  /// Each section's items in order, with their ids.
  @usableFromInline var items: [Int64: ItemList<Slot>] = [:]

  @inlinable init() {}

  /// How many sections and items it holds.
  @usableFromInline var rowCount: Int {
    items.values.reduce(sections.count) { $0 + $1.count }
  }

  /// The hash of stored JSON text kept for each row; the same for equal text
  /// (64-bit FNV-1a: cheap per byte, and only compared within this process).
  @inlinable
  static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return Int(truncatingIfNeeded: hash)
  }

  /// ``hash(_:)`` of a string's UTF-8 bytes.
  static func hash(_ json: String) -> Int {
    var json = json
    return json.withUTF8 { hash($0) }
  }

  /// The index of `key` in `list`, or where it would be inserted: the first entry
  /// whose key is not below `key`, in SQLite's byte order.
  static func lowerBound(_ key: String, in list: ItemList<Slot>) -> Int {
    list.partitioningIndex { !precedes($0.key, key) }
  }

  /// Whether `lhs` sorts before `rhs` in SQLite's byte order (`memcmp`, then length).
  @inlinable @inline(__always)
  static func precedes(_ lhs: String, _ rhs: String) -> Bool {
    // Native and small strings are contiguous UTF-8: compare their bytes directly.
    let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
      rhs.utf8.withContiguousStorageIfAvailable { right -> Bool in
        let common = min(left.count, right.count)
        guard common > 0, let leftBytes = left.baseAddress, let rightBytes = right.baseAddress
        else { return left.count < right.count }
        let order = memcmp(leftBytes, rightBytes, common)
        return order != 0 ? order < 0 : left.count < right.count
      }
    }
    return compared.flatMap { $0 } ?? lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
  }

  /// The index of the entry with `id` and `key` in `list`, if it is there.
  static func index(of id: Int64, key: String, in list: ItemList<Slot>) -> Int? {
    let index = lowerBound(key, in: list)
    guard index < list.count, list.id(at: index) == id, sameKey(list[index].key, key) else {
      return nil
    }
    return index
  }

  /// Whether two keys are the same bytes, as SQLite compares them (not Swift's `==`,
  /// which takes canonically equivalent Unicode as equal).
  static func sameKey(_ lhs: String, _ rhs: String?) -> Bool {
    guard let rhs else { return false }
    return lhs.utf8.elementsEqual(rhs.utf8)
  }

  /// The index of section `id`.
  func sectionIndex(of id: Int64, key: String) -> Int? {
    Self.index(of: id, key: key, in: sections)
  }

  // MARK: - Edits that can be undone

  /// One edit of a mirror, with what undoing it needs.
  @usableFromInline
  enum Edit {
    case sectionHash(index: Int, old: Int)
    case itemHash(section: Int64, index: Int, old: Int)
    case removedItem(section: Int64, index: Int, id: Int64, slot: Slot)
    case insertedItem(section: Int64, index: Int)
    case removedSection(index: Int, id: Int64, slot: Slot)
    case insertedSection(index: Int)
    case replacedItems(section: Int64, old: ItemList<Slot>?)
  }

  /// The edits made to a mirror in place since a point, newest last, so that they can be
  /// undone: an observer stages a batch on its own mirror, without copying it (a copy
  /// would make the first edit of each touched list copy its chunk), and undoes the
  /// batch when the write that staged it does not commit.
  @usableFromInline
  struct Journal {
    @usableFromInline var edits: [Edit] = []

    @inlinable
    init() {}
  }

  mutating func setSectionHash(at index: Int, to hash: Int, journal: inout Journal) {
    journal.edits.append(.sectionHash(index: index, old: sections[index].hash))
    sections[index].hash = hash
  }

  /// Sets the hash of item `index` of `section`, which must exist.
  mutating func setItemHash(section: Int64, at index: Int, to hash: Int, journal: inout Journal) {
    guard let old = items[section]?[index].hash else { return }
    journal.edits.append(.itemHash(section: section, index: index, old: old))
    items[section]?[index].hash = hash
  }

  mutating func removeItem(section: Int64, at index: Int, journal: inout Journal) {
    guard let removed = items[section]?.removeEntry(at: index) else { return }
    journal.edits.append(
      .removedItem(section: section, index: index, id: removed.id, slot: removed.value))
  }

  /// Inserts an item into `section`, which must exist, where its key sorts.
  mutating func insertItem(_ slot: Slot, id: Int64, section: Int64, journal: inout Journal) {
    guard let list = items[section] else { return }
    insertItem(
      slot, id: id, section: section, at: Self.lowerBound(slot.key, in: list), journal: &journal)
  }

  /// Inserts an item into `section` at `index`, which must be where its key sorts; whether
  /// the section and the index exist.
  @discardableResult
  mutating func insertItem(
    _ slot: Slot, id: Int64, section: Int64, at index: Int, journal: inout Journal
  ) -> Bool {
    guard var list = items[section], index >= 0, index <= list.count else { return false }
    items[section] = nil  // Keep the list uniquely referenced.
    list.insert(slot, id: id, at: index)
    items[section] = list
    journal.edits.append(.insertedItem(section: section, index: index))
    return true
  }

  mutating func removeSection(at index: Int, journal: inout Journal) {
    let removed = sections.removeEntry(at: index)
    journal.edits.append(.removedSection(index: index, id: removed.id, slot: removed.value))
  }

  /// Inserts a section where its key sorts.
  mutating func insertSection(_ slot: Slot, id: Int64, journal: inout Journal) {
    let index = Self.lowerBound(slot.key, in: sections)
    sections.insert(slot, id: id, at: index)
    journal.edits.append(.insertedSection(index: index))
  }

  /// Sets (or, with `nil`, removes) the items of `section`.
  mutating func setItems(_ list: ItemList<Slot>?, ofSection section: Int64, journal: inout Journal)
  {
    journal.edits.append(.replacedItems(section: section, old: items[section]))
    items[section] = list
  }

  /// Undoes the edits of `journal`, newest first: the mirror is as it was before them.
  @usableFromInline
  mutating func undo(_ journal: Journal) {
    for edit in journal.edits.reversed() {
      switch edit {
      case .sectionHash(let index, let old):
        sections[index].hash = old
      case .itemHash(let section, let index, let old):
        items[section]?[index].hash = old
      case .removedItem(let section, let index, let id, let slot):
        items[section]?.insert(slot, id: id, at: index)
      case .insertedItem(let section, let index):
        items[section]?.removeEntry(at: index)
      case .removedSection(let index, let id, let slot):
        sections.insert(slot, id: id, at: index)
      case .insertedSection(let index):
        sections.removeEntry(at: index)
      case .replacedItems(let section, let old):
        items[section] = old
      }
    }
  }

  /// The sections and items as `Int`-valued sections (hashes), for diffing by id.
  var hashedSections: [Observable2DArraySection<Int, Int>] {
    sections.entries.map { section in
      var hashes = ItemList<Int>()
      for item in items[section.id]?.entries ?? ItemList<Slot>().entries {
        hashes.append(item.value.hash, id: item.id)
      }
      return Observable2DArraySection(id: section.id, metadata: section.value.hash, items: hashes)
    }
  }
}
