import FoundationEssentials
import ListStore

/// One change to a list, as the `item` and `section` commands and the lines of `batch`
/// give it, with sections and items named by index or by id (`#42`).
package enum ListOperation: Equatable, Sendable {
  /// Where `section add` puts the new section.
  package enum SectionTarget: Equatable, Sendable {
    case end
    case index(Int)
    case before(SectionAddress)
    case after(SectionAddress)
  }

  /// Where `section move` takes a section.
  package enum SectionMove: Equatable, Sendable {
    case index(Int)
    case before(SectionAddress)
    case after(SectionAddress)
  }

  /// Where `item add` puts the new item.
  package enum ItemTarget: Equatable, Sendable {
    case end
    case row(Int)
    case before(ItemAddress)
    case after(ItemAddress)
  }

  /// Where `item move` takes an item.
  package enum ItemMove: Equatable, Sendable {
    case path(section: Int, row: Int)
    case before(ItemAddress)
    case after(ItemAddress)
  }

  /// What `section set` does to the footer.
  package enum FooterChange: Equatable, Sendable {
    case keep
    case set(String)
    case remove
  }

  case addSection(header: String, footer: String?, target: SectionTarget)
  case removeSection(SectionAddress)
  case moveSection(SectionAddress, to: SectionMove)
  case setSection(SectionAddress, header: String?, footer: FooterChange)
  case addItem(section: SectionAddress, value: RawJSON, target: ItemTarget)
  case removeItem(ItemAddress)
  case moveItem(ItemAddress, to: ItemMove)
  case setItem(ItemAddress, value: RawJSON)

  /// A list as the operations see it: metadata and values as JSON text.
  package typealias List = StoredList<RawJSON, RawJSON>

  // MARK: Running

  /// What ``perform(on:reporting:)`` works out besides doing the change.
  package enum Report: Sendable {
    /// Nothing: `batch` of the CLI, which prints a count only.
    case nothing
    /// The confirming line, e.g. `added item 0:2 (id 7)`.
    case message
    /// The id of the row the operation created or touched (the HTTP API's batch).
    case id
  }

  /// What an operation did.
  package struct Outcome: Equatable, Sendable {
    /// The confirming line (empty unless asked for).
    package var message = ""
    /// The id of the section or item it created or touched (0 unless asked for).
    package var id: Int64 = 0
  }

  /// Carries the operation out on `list`, in one transaction (or a savepoint of the
  /// batch under way).
  /// - Parameters:
  ///   - list: The list to change.
  ///   - report: What to work out besides: only what is asked is read, so that naming
  ///     rows by index costs no more than naming them by id (finding a new row's index
  ///     reads the whole section).
  /// - Returns: The confirming line or the id, as `report` asks.
  /// - Throws: What the list's methods throw (a row or section that does not exist, a
  ///   storage failure), or ``OperationError`` for a neighbour in another section.
  @discardableResult
  package func perform(on list: List, reporting report: Report = .message) throws -> Outcome {
    try list.write { try run(on: list, report) }
  }

  private func run(on list: List, _ report: Report) throws -> Outcome {
    switch self {
    case .addSection(let header, let footer, let target):
      let metadata = Rendering.metadataJSON(header: header, footer: footer)
      let id: Int64
      var index: Int?
      switch target {
      case .end:
        id = try list.appendSection(metadata)
        if report == .message { index = try list.numberOfSections() - 1 }
      case .index(let at):
        id = try list.insert(section: metadata, at: at)
        index = at
      case .before(let neighbor):
        id = try list.insert(section: metadata, before: try Self.id(of: neighbor, in: list))
      case .after(let neighbor):
        id = try list.insert(section: metadata, after: try Self.id(of: neighbor, in: list))
      }
      guard report == .message else { return Outcome(id: id) }
      let at = try index ?? list.index(ofSectionWithID: id)
      return Outcome(message: "added section \(at) (id \(id)) to \(quoted(list.name))", id: id)

    case .removeSection(let section):
      var id: Int64 = 0
      switch section {
      case .index(let index) where report != .id: try list.removeSection(at: index)
      default:
        id = try Self.id(of: section, in: list)
        try list.removeSection(id: id)
      }
      return Outcome(message: "removed \(Self.describe(section))", id: id)

    case .moveSection(let section, let move):
      var id: Int64 = 0
      let moved: Bool
      switch (section, move) {
      case (.index(let from), .index(let to)) where report != .id:
        moved = try list.moveSection(from: from, to: to)
      case (_, .index(let to)):
        id = try Self.id(of: section, in: list)
        moved = try list.moveSection(id: id, to: to)
      case (_, .before(let neighbor)):
        id = try Self.id(of: section, in: list)
        moved = try list.moveSection(id: id, before: try Self.id(of: neighbor, in: list))
      case (_, .after(let neighbor)):
        id = try Self.id(of: section, in: list)
        moved = try list.moveSection(id: id, after: try Self.id(of: neighbor, in: list))
      }
      guard moved else {
        return Outcome(message: "\(Self.describe(section)) is there already; nothing moved", id: id)
      }
      let message =
        switch move {
        case .index(let to): "moved \(Self.describe(section)) to \(to)"
        case .before(let neighbor):
          "moved \(Self.describe(section)) before \(Self.describe(neighbor))"
        case .after(let neighbor):
          "moved \(Self.describe(section)) after \(Self.describe(neighbor))"
        }
      return Outcome(message: message, id: id)

    case .setSection(let section, let header, let footer):
      let transform: @Sendable (String) throws -> String = { old in
        let titles = Rendering.titles(ofMetadata: old)
        let newFooter: String?
        switch footer {
        case .keep: newFooter = titles.footer
        case .set(let text): newFooter = text
        case .remove: newFooter = nil
        }
        return Rendering.metadataJSON(header: header ?? titles.header ?? "", footer: newFooter)
          .text
      }
      var id: Int64 = 0
      switch section {
      case .index(let index) where report != .id:
        try list.updateMetadataJSON(forSectionAt: index, transform)
      default:
        id = try Self.id(of: section, in: list)
        try list.updateMetadataJSON(forSectionWithID: id, transform)
      }
      return Outcome(message: "set \(Self.describe(section))", id: id)

    case .addItem(let section, let value, let target):
      return try addItem(value, to: section, target, on: list, report)

    case .removeItem(let item):
      var id: Int64 = 0
      switch item {
      case .path(let section, let row) where report != .id:
        try list.removeItem(at: IndexPath(indexes: [section, row]))
      default:
        id = try Self.id(of: item, in: list)
        try list.removeItem(id: id)
      }
      return Outcome(message: "removed \(Self.describe(item))", id: id)

    case .moveItem(let item, let move):
      var id: Int64 = 0
      let moved: Bool
      switch (item, move) {
      case (.path(let section, let row), .path(let toSection, let toRow)) where report != .id:
        moved = try list.moveItem(
          from: IndexPath(indexes: [section, row]), to: IndexPath(indexes: [toSection, toRow]))
      case (_, .path(let toSection, let toRow)):
        id = try Self.id(of: item, in: list)
        moved = try list.moveItem(id: id, to: IndexPath(indexes: [toSection, toRow]))
      case (_, .before(let neighbor)):
        id = try Self.id(of: item, in: list)
        moved = try list.moveItem(id: id, before: try Self.id(of: neighbor, in: list))
      case (_, .after(let neighbor)):
        id = try Self.id(of: item, in: list)
        moved = try list.moveItem(id: id, after: try Self.id(of: neighbor, in: list))
      }
      guard moved else {
        return Outcome(message: "\(Self.describe(item)) is there already; nothing moved", id: id)
      }
      let message =
        switch move {
        case .path(let section, let row): "moved \(Self.describe(item)) to \(section):\(row)"
        case .before(let neighbor):
          "moved \(Self.describe(item)) before \(Self.describe(neighbor))"
        case .after(let neighbor): "moved \(Self.describe(item)) after \(Self.describe(neighbor))"
        }
      return Outcome(message: message, id: id)

    case .setItem(let item, let value):
      var id: Int64 = 0
      switch item {
      case .path(let section, let row) where report != .id:
        try list.replaceItem(at: IndexPath(indexes: [section, row]), with: value)
      default:
        id = try Self.id(of: item, in: list)
        try list.replaceItem(id: id, with: value)
      }
      return Outcome(message: "set \(Self.describe(item))", id: id)
    }
  }

  private func addItem(
    _ value: RawJSON, to section: SectionAddress, _ target: ItemTarget, on list: List,
    _ report: Report
  ) throws -> Outcome {
    let message = report == .message
    switch (target, section) {
    case (.end, .index(let index)):
      let id = try list.appendItem(value, toSection: index)
      guard message else { return Outcome(id: id) }
      // Its row, unless another writer added after it meanwhile (then it is unknown
      // without reading the section, and the message says only the section).
      let last = try list.numberOfItems(inSection: index) - 1
      if last >= 0, try list.itemID(at: IndexPath(indexes: [index, last])) == id {
        return Outcome(message: "added item \(index):\(last) (id \(id))", id: id)
      }
      return Outcome(message: "added item (id \(id)) to section \(index)", id: id)
    case (.end, .id(let sectionID)):
      let id = try list.appendItem(value, toSectionWithID: sectionID)
      return Outcome(message: "added item (id \(id)) to section #\(sectionID)", id: id)
    case (.row(let row), .index(let index)):
      let id = try list.insert(item: value, at: IndexPath(indexes: [index, row]))
      return Outcome(message: "added item \(index):\(row) (id \(id))", id: id)
    case (.row(let row), .id(let sectionID)):
      let id = try list.insert(item: value, atRow: row, inSectionWithID: sectionID)
      return Outcome(
        message: "added item (id \(id)) at row \(row) of section #\(sectionID)", id: id)
    case (.before(let neighbor), _), (.after(let neighbor), _):
      let neighborID = try Self.id(of: neighbor, in: list)
      // The neighbour must be in the section named: a stale script fails, not misplaces.
      guard try list.sectionID(ofItem: neighborID) == Self.id(of: section, in: list) else {
        throw OperationError(
          "\(Self.describe(neighbor)) is not in \(Self.describe(section)); name the section it "
            + "is in")
      }
      let after = if case .after = target { true } else { false }
      let id =
        after
        ? try list.insert(item: value, after: neighborID)
        : try list.insert(item: value, before: neighborID)
      return Outcome(
        message: "added item (id \(id)) \(after ? "after" : "before") \(Self.describe(neighbor))",
        id: id)
    }
  }

  // MARK: Addresses

  package static func id(of section: SectionAddress, in list: List) throws -> Int64 {
    switch section {
    case .index(let index): try list.sectionID(at: index)
    case .id(let id): id
    }
  }

  package static func id(of item: ItemAddress, in list: List) throws -> Int64 {
    switch item {
    case .path(let section, let row): try list.itemID(at: IndexPath(indexes: [section, row]))
    case .id(let id): id
    }
  }

  /// `section 2` or `section #7`.
  package static func describe(_ section: SectionAddress) -> String {
    switch section {
    case .index(let index): "section \(index)"
    case .id(let id): "section #\(id)"
    }
  }

  /// `item 0:1` or `item #42`.
  package static func describe(_ item: ItemAddress) -> String {
    switch item {
    case .path(let section, let row): "item \(section):\(row)"
    case .id(let id): "item #\(id)"
    }
  }
}
