import FoundationEssentials
import ListStore
import ListStoreFormats

/// One change to a list, as the `item` and `section` commands and the lines of `batch`
/// give it, with sections and items named by index or by id (`#42`).
enum ListOperation: Equatable {
  /// Where `section add` puts the new section.
  enum SectionTarget: Equatable {
    case end
    case index(Int)
    case before(SectionAddress)
    case after(SectionAddress)
  }

  /// Where `section move` takes a section.
  enum SectionMove: Equatable {
    case index(Int)
    case before(SectionAddress)
    case after(SectionAddress)
  }

  /// Where `item add` puts the new item.
  enum ItemTarget: Equatable {
    case end
    case row(Int)
    case before(ItemAddress)
    case after(ItemAddress)
  }

  /// Where `item move` takes an item.
  enum ItemMove: Equatable {
    case path(section: Int, row: Int)
    case before(ItemAddress)
    case after(ItemAddress)
  }

  /// What `section set` does to the footer.
  enum FooterChange: Equatable {
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

  typealias List = StoredList<RawJSON, RawJSON>

  // MARK: Running

  /// Carries the operation out on `list`, in one transaction (or a savepoint of the
  /// batch under way).
  /// - Parameters:
  ///   - list: The list to change.
  ///   - confirming: Whether to work out the confirming line; `batch`, which prints
  ///     none, passes `false`, so that adding by section index costs no more than adding
  ///     by id (finding the new row's index reads the whole section).
  /// - Returns: The line that confirms it, e.g. `added item 0:2 (id 7)`, or an empty
  ///   line when not `confirming`.
  /// - Throws: What the list's methods throw: a row or section that does not exist, a
  ///   storage failure.
  @discardableResult
  func perform(on list: List, confirming: Bool = true) throws -> String {
    try list.write { try run(on: list, confirming: confirming) }
  }

  private func run(on list: List, confirming: Bool) throws -> String {
    switch self {
    case .addSection(let header, let footer, let target):
      let metadata = try Commands.metadataJSON(header: header, footer: footer)
      let id: Int64
      let index: Int
      switch target {
      case .end:
        id = try list.appendSection(metadata)
        index = try list.numberOfSections() - 1
      case .index(let at):
        id = try list.insert(section: metadata, at: at)
        index = at
      case .before(let neighbor):
        id = try list.insert(section: metadata, before: try Self.id(of: neighbor, in: list))
        index = try list.index(ofSectionWithID: id)
      case .after(let neighbor):
        id = try list.insert(section: metadata, after: try Self.id(of: neighbor, in: list))
        index = try list.index(ofSectionWithID: id)
      }
      return "added section \(index) (id \(id)) to \(quoted(list.name))"

    case .removeSection(let section):
      switch section {
      case .index(let index): try list.removeSection(at: index)
      case .id(let id): try list.removeSection(id: id)
      }
      return "removed \(Self.describe(section))"

    case .moveSection(let section, let move):
      switch (section, move) {
      case (.index(let from), .index(let to)): try list.moveSection(from: from, to: to)
      case (.id(let id), .index(let to)): try list.moveSection(id: id, to: to)
      case (_, .before(let neighbor)):
        try list.moveSection(
          id: try Self.id(of: section, in: list), before: try Self.id(of: neighbor, in: list))
      case (_, .after(let neighbor)):
        try list.moveSection(
          id: try Self.id(of: section, in: list), after: try Self.id(of: neighbor, in: list))
      }
      switch move {
      case .index(let to): return "moved \(Self.describe(section)) to \(to)"
      case .before(let neighbor):
        return "moved \(Self.describe(section)) before \(Self.describe(neighbor))"
      case .after(let neighbor):
        return "moved \(Self.describe(section)) after \(Self.describe(neighbor))"
      }

    case .setSection(let section, let header, let footer):
      let transform: @Sendable (String) throws -> String = { old in
        let titles = Rendering.titles(ofMetadata: old)
        let newFooter: String?
        switch footer {
        case .keep: newFooter = titles.footer
        case .set(let text): newFooter = text
        case .remove: newFooter = nil
        }
        return try Commands.metadataJSON(header: header ?? titles.header ?? "", footer: newFooter)
          .text
      }
      switch section {
      case .index(let index): try list.updateMetadataJSON(forSectionAt: index, transform)
      case .id(let id): try list.updateMetadataJSON(forSectionWithID: id, transform)
      }
      return "set \(Self.describe(section))"

    case .addItem(let section, let value, let target):
      return try addItem(value, to: section, target, on: list, confirming: confirming)

    case .removeItem(let item):
      switch item {
      case .path(let section, let row): try list.removeItem(at: IndexPath(indexes: [section, row]))
      case .id(let id): try list.removeItem(id: id)
      }
      return "removed \(Self.describe(item))"

    case .moveItem(let item, let move):
      switch (item, move) {
      case (.path(let section, let row), .path(let toSection, let toRow)):
        try list.moveItem(
          from: IndexPath(indexes: [section, row]), to: IndexPath(indexes: [toSection, toRow]))
      case (.id(let id), .path(let toSection, let toRow)):
        try list.moveItem(id: id, to: IndexPath(indexes: [toSection, toRow]))
      case (_, .before(let neighbor)):
        try list.moveItem(
          id: try Self.id(of: item, in: list), before: try Self.id(of: neighbor, in: list))
      case (_, .after(let neighbor)):
        try list.moveItem(
          id: try Self.id(of: item, in: list), after: try Self.id(of: neighbor, in: list))
      }
      switch move {
      case .path(let section, let row): return "moved \(Self.describe(item)) to \(section):\(row)"
      case .before(let neighbor):
        return "moved \(Self.describe(item)) before \(Self.describe(neighbor))"
      case .after(let neighbor):
        return "moved \(Self.describe(item)) after \(Self.describe(neighbor))"
      }

    case .setItem(let item, let value):
      switch item {
      case .path(let section, let row):
        try list.replaceItem(at: IndexPath(indexes: [section, row]), with: value)
      case .id(let id): try list.replaceItem(id: id, with: value)
      }
      return "set \(Self.describe(item))"
    }
  }

  private func addItem(
    _ value: RawJSON, to section: SectionAddress, _ target: ItemTarget, on list: List,
    confirming: Bool
  ) throws -> String {
    switch (target, section) {
    case (.end, .index(let index)):
      let id = try list.appendItem(value, toSection: index)
      guard confirming else { return "" }
      // Its row, unless another writer added after it meanwhile (then it is unknown
      // without reading the section, and the message says only the section).
      let last = try list.numberOfItems(inSection: index) - 1
      if last >= 0, try list.itemID(at: IndexPath(indexes: [index, last])) == id {
        return "added item \(index):\(last) (id \(id))"
      }
      return "added item (id \(id)) to section \(index)"
    case (.end, .id(let sectionID)):
      let id = try list.appendItem(value, toSectionWithID: sectionID)
      return "added item (id \(id)) to section #\(sectionID)"
    case (.row(let row), .index(let index)):
      let id = try list.insert(item: value, at: IndexPath(indexes: [index, row]))
      return "added item \(index):\(row) (id \(id))"
    case (.row(let row), .id(let sectionID)):
      let id = try list.insert(item: value, atRow: row, inSectionWithID: sectionID)
      return "added item (id \(id)) at row \(row) of section #\(sectionID)"
    case (.before(let neighbor), _), (.after(let neighbor), _):
      let neighborID = try Self.id(of: neighbor, in: list)
      // The neighbour must be in the section named: a stale script fails, not misplaces.
      guard try list.sectionID(ofItem: neighborID) == Self.id(of: section, in: list) else {
        throw CommandError(
          "\(Self.describe(neighbor)) is not in \(Self.describe(section)); name the section it "
            + "is in")
      }
      let after = if case .after = target { true } else { false }
      let id =
        after
        ? try list.insert(item: value, after: neighborID)
        : try list.insert(item: value, before: neighborID)
      return "added item (id \(id)) \(after ? "after" : "before") \(Self.describe(neighbor))"
    }
  }

  // MARK: Addresses

  static func id(of section: SectionAddress, in list: List) throws -> Int64 {
    switch section {
    case .index(let index): try list.sectionID(at: index)
    case .id(let id): id
    }
  }

  static func id(of item: ItemAddress, in list: List) throws -> Int64 {
    switch item {
    case .path(let section, let row): try list.itemID(at: IndexPath(indexes: [section, row]))
    case .id(let id): id
    }
  }

  /// `section 2` or `section #7`.
  static func describe(_ section: SectionAddress) -> String {
    switch section {
    case .index(let index): "section \(index)"
    case .id(let id): "section #\(id)"
    }
  }

  /// `item 0:1` or `item #42`.
  static func describe(_ item: ItemAddress) -> String {
    switch item {
    case .path(let section, let row): "item \(section):\(row)"
    case .id(let id): "item #\(id)"
    }
  }
}

// MARK: - From the command line

extension ListOperation {
  /// At most one of the options naming a place.
  private static func onePlace(_ invocation: Invocation, _ names: [String]) throws(UsageError)
    -> String?
  {
    let given = names.filter { invocation.option($0) != nil }
    guard given.count <= 1 else {
      throw UsageError(
        message: given.map { "--" + $0 }.joined(separator: " and ") + " cannot be used together",
        command: invocation.command.path)
    }
    return given.first
  }

  /// The operation an `item` or `section` command line asks for.
  init(_ invocation: Invocation) throws {
    let path = invocation.command.path
    switch path {
    case ["section", "add"]:
      var target = SectionTarget.end
      switch try Self.onePlace(invocation, ["at", "before", "after"]) {
      case "at":
        switch try invocation.placeOption("at") {
        case .index(let index)?: target = .index(index)
        case .id(let id)?: target = .before(.id(id))
        case nil: break
        }
      case "before": target = .before(try invocation.sectionOption("before") ?? .index(0))
      case "after": target = .after(try invocation.sectionOption("after") ?? .index(0))
      default: break
      }
      self = .addSection(
        header: invocation.argument("HEADER"), footer: invocation.option("footer"), target: target)
    case ["section", "rm"]:
      self = .removeSection(try invocation.section("SECTION"))
    case ["section", "move"]:
      self = .moveSection(
        try invocation.section("SECTION"),
        to: try Self.sectionMove(invocation))
    case ["section", "set"]:
      let header = invocation.option("header")
      let footer = invocation.option("footer")
      let removeFooter = invocation.flag("no-footer")
      guard header != nil || footer != nil || removeFooter else {
        throw UsageError(
          message: "nothing to change: give --header, --footer or --no-footer", command: path)
      }
      guard !(footer != nil && removeFooter) else {
        throw UsageError(message: "--footer and --no-footer cannot be used together", command: path)
      }
      self = .setSection(
        try invocation.section("SECTION"), header: header,
        footer: removeFooter ? .remove : footer.map { .set($0) } ?? .keep)
    case ["item", "add"]:
      let section = try invocation.section("SECTION")
      var target = ItemTarget.end
      switch try Self.onePlace(invocation, ["at", "before", "after"]) {
      case "at":
        switch try invocation.placeOption("at") {
        case .index(let row)?: target = .row(row)
        case .id(let id)?: target = .before(.id(id))
        case nil: break
        }
      case "before": target = .before(try invocation.itemOption("before") ?? .id(0))
      case "after": target = .after(try invocation.itemOption("after") ?? .id(0))
      default: break
      }
      self = .addItem(section: section, value: try Self.value(invocation), target: target)
    case ["item", "rm"]:
      self = .removeItem(try invocation.item("ITEM"))
    case ["item", "move"]:
      self = .moveItem(try invocation.item("ITEM"), to: try Self.itemMove(invocation))
    default:  // item set
      self = .setItem(try invocation.item("ITEM"), value: try Self.value(invocation))
    }
  }

  private static func sectionMove(_ invocation: Invocation) throws -> SectionMove {
    let path = invocation.command.path
    let hasTo = invocation.arguments["TO"] != nil
    let place = try onePlace(invocation, ["before", "after"])
    switch (hasTo, place) {
    case (true, nil): return .index(try invocation.index("TO"))
    case (false, "before"?): return .before(try invocation.sectionOption("before") ?? .index(0))
    case (false, "after"?): return .after(try invocation.sectionOption("after") ?? .index(0))
    case (false, _):
      throw UsageError(message: "missing TO (or --before or --after)", command: path)
    default:
      throw UsageError(message: "give TO or --\(place ?? "before"), not both", command: path)
    }
  }

  private static func itemMove(_ invocation: Invocation) throws -> ItemMove {
    let path = invocation.command.path
    let hasTo = invocation.arguments["TO"] != nil
    let place = try onePlace(invocation, ["before", "after"])
    switch (hasTo, place) {
    case (true, nil):
      let to = try invocation.indexPath("TO")
      return .path(section: to.section, row: to.row)
    case (false, "before"?): return .before(try invocation.itemOption("before") ?? .id(0))
    case (false, "after"?): return .after(try invocation.itemOption("after") ?? .id(0))
    case (false, _):
      throw UsageError(message: "missing TO (or --before or --after)", command: path)
    default:
      throw UsageError(message: "give TO or --\(place ?? "before"), not both", command: path)
    }
  }

  /// VALUE as JSON text: a string unless --json, then checked to be JSON.
  static func value(_ invocation: Invocation) throws -> RawJSON {
    let text = invocation.argument("VALUE")
    guard invocation.flag("json") else { return RawJSON(JSONText.quote(text)) }
    let bytes = Array(text.utf8)
    do {
      _ = try JSONSyntax.parse(bytes)
    } catch  where error.isNumberOutOfRange {
      throw CommandError("cannot store \(text.debugDescription): \(error.message)")
    } catch {
      throw ListStoreError.invalidJSON(
        "\(text.debugDescription) at \(error.place(in: bytes)): \(error.message) (leave out --json "
          + "to store it as a string)")
    }
    return RawJSON(text)
  }
}
