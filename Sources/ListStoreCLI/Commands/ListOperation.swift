import FoundationEssentials
import ListStore
import ListStoreFormats

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
