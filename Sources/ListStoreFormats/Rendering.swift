import FoundationEssentials
import ListStore
import Observable2D

/// How lists are printed: as text for people, as JSON for scripts (the shapes of
/// docs/cli.md). The CLI's `show`, `export` and `watch --json` print with it, and so do
/// ListStoreTesting's dumps, so that a test compares what the command line shows.
package enum Rendering {
  /// The header and footer a section's metadata shows: an object's `header` and
  /// `footer` strings, or a bare string as the header.
  package struct Titles: Equatable {
    /// The header, when the metadata has one.
    package var header: String?
    /// The footer, when the metadata has one.
    package var footer: String?
    /// Whether the metadata is exactly `{header, footer}`, so JSON output can show
    /// just those two fields.
    package var isStandard: Bool
  }

  /// The titles of a section whose metadata is `json`.
  package static func titles(ofMetadata json: String) -> Titles {
    guard let value = try? JSONValue.parse(json) else {
      return Titles(header: nil, footer: nil, isStandard: false)
    }
    switch value {
    case .object(let members):
      let header = members["header"]
      let footer = members["footer"]
      let text = { (value: JSONValue?) -> String? in
        if case .string(let text)? = value { return text }
        return nil
      }
      let standard =
        Set(members.keys).isSubset(of: ["header", "footer"])
        && [header, footer].allSatisfy { $0 == nil || $0 == .null || text($0) != nil }
        && text(header) != nil
      return Titles(header: text(header), footer: text(footer), isStandard: standard)
    case .string(let text):
      return Titles(header: text, footer: nil, isStandard: false)
    case .null:
      return Titles(header: nil, footer: nil, isStandard: false)
    default:
      return Titles(header: value.jsonText, footer: nil, isStandard: false)
    }
  }

  /// A stored value as people read it, so that what is shown tells its type: a string
  /// as it is, unless it is empty or would read as JSON (`-5`, `true`, `null`, `[1]`,
  /// `"x"`), then in double quotes as a JSON string; any other value as compact JSON.
  /// So `-5` is a number and `"-5"` a string. Control characters are made visible so
  /// they cannot drive the terminal.
  package static func displayText(ofValue json: String) -> String {
    guard let string = JSONText.unquote(json) else { return visible(JSONText.singleLine(json)) }
    return visible(readsAsJSON(string) ? JSONText.quote(string) : string)
  }

  /// Whether a string, shown as it is, would be taken for another JSON value.
  private static func readsAsJSON(_ string: String) -> Bool {
    guard
      let first = string.utf8.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 })
    else { return true }  // Empty or only white space.
    guard "\"-0123456789[{tfn".utf8.contains(first) else { return false }
    return JSONSyntax.isJSON(string)
  }

  /// `text` with control characters shown as escapes.
  package static func visible(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
      if isControl(scalar) {
        result += "\\u{" + String(scalar.value, radix: 16) + "}"
      } else {
        result.unicodeScalars.append(scalar)
      }
    }
    return result
  }

  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
  }

  /// Section metadata with a header and a footer, as the CLI stores it:
  /// `{"header": …, "footer": … | null}`.
  package static func metadataJSON(header: String, footer: String?) -> RawJSON {
    RawJSON(
      "{\"header\":" + JSONText.quote(header) + ",\"footer\":"
        + (footer.map(JSONText.quote) ?? "null") + "}")
  }

  // MARK: Text

  /// The lines `show` prints for a list.
  package static func text(list name: String, sections: [StoredSection]) -> [String] {
    var lines = [visible(name)]
    if sections.isEmpty {
      lines.append("  (no sections; add one with 'liststore section add \(name) HEADER')")
    }
    // Index paths padded to the longest, so that values line up from row 10 on.
    let pathWidth =
      sections.indices.map { "\($0):\(max(0, sections[$0].items.count - 1))".count }.max() ?? 0
    for (index, section) in sections.enumerated() {
      let titles = titles(ofMetadata: section.row.json)
      lines.append("  [\(index)] " + (titles.header.map(visible) ?? "(no header)"))
      if section.items.isEmpty { lines.append("      (no items)") }
      for (row, item) in section.items.enumerated() {
        let path = "\(index):\(row)"
        lines.append(
          "      " + path + String(repeating: " ", count: pathWidth - path.count + 2)
            + displayText(ofValue: item.json))
      }
      if let footer = titles.footer { lines.append("      -- " + visible(footer)) }
    }
    return lines
  }

  // MARK: JSON

  /// The `show --json` / `export` object on one line.
  package static func json(list name: String, sections: [StoredSection]) -> String {
    "{\"list\":" + JSONText.quote(name) + ",\"sections\":["
      + sections.map(json(section:)).joined(separator: ",") + "]}"
  }

  /// An observed array's sections as stored rows, for ``json(list:sections:)`` and
  /// ``text(list:sections:)``.
  package static func stored(_ sections: [Observable2DArraySection<RawJSON, RawJSON>])
    -> [StoredSection]
  {
    sections.map { section in
      StoredSection(
        row: StoredRow(id: section.id, position: "", json: section.metadata.text),
        items: section.items.entries.map { StoredRow(id: $0.id, position: "", json: $0.value.text) }
      )
    }
  }

  /// The `lists --json` array: `[{"id":1,"name":"groceries","sections":2,"items":5}, …]`.
  package static func json(lists: [ListSummary]) -> String {
    "["
      + lists.map {
        "{\"id\":\($0.id),\"name\":\(JSONText.quote($0.name)),\"sections\":\($0.sectionCount),"
          + "\"items\":\($0.itemCount)}"
      }.joined(separator: ",") + "]"
  }

  /// One section of the `show --json` object.
  package static func json(section: StoredSection) -> String {
    "{" + sectionFields(id: section.row.id, metadata: section.row.json) + ",\"items\":["
      + section.items.map { "{\"id\":\($0.id),\"value\":" + JSONText.singleLine($0.json) + "}" }
      .joined(separator: ",") + "]}"
  }

  /// `"id":…,"header":…,"footer":…` and, for metadata of another shape, `"metadata":…`.
  package static func sectionFields(id: Int64, metadata: String) -> String {
    let titles = titles(ofMetadata: metadata)
    var fields = "\"id\":\(id),\"header\":" + (titles.header.map(JSONText.quote) ?? "null")
    fields += ",\"footer\":" + (titles.footer.map(JSONText.quote) ?? "null")
    if !titles.isStandard { fields += ",\"metadata\":" + JSONText.singleLine(metadata) }
    return fields
  }
}

extension Rendering {
  /// A changeset as `watch --json` prints it: the fields of `changesets.md` as
  /// arrays of objects, empty ones left out, on one line.
  package static func json(changes: Changeset<RawJSON, RawJSON>) -> String {
    "{\"changes\":" + json(changeset: changes) + "}"
  }

  /// The changeset object of a `watch --json` line (its `"changes"` value), and of the
  /// HTTP change stream's `changes` events.
  package static func json(changeset changes: Changeset<RawJSON, RawJSON>) -> String {
    func path(_ indexPath: IndexPath) -> String { "[\(indexPath[0]),\(indexPath[1])]" }
    func value(_ raw: RawJSON) -> String { JSONText.singleLine(raw.text) }
    var fields: [String] = []
    func add(_ name: String, _ objects: [String]) {
      guard !objects.isEmpty else { return }
      fields.append("\"\(name)\":[" + objects.joined(separator: ",") + "]")
    }
    add(
      "deletedSections", changes.deletedSections.map { "{\"index\":\($0.index),\"id\":\($0.id)}" })
    add(
      "insertedSections",
      changes.insertedSections.map { section in
        "{\"index\":\(section.index),"
          + sectionFields(id: section.id, metadata: section.metadata.text)
          + ",\"items\":["
          + section.items.entries.map { "{\"id\":\($0.id),\"value\":" + value($0.value) + "}" }
          .joined(separator: ",") + "]}"
      })
    add(
      "movedSections",
      changes.movedSections.map {
        "{\"from\":\($0.from),\"to\":\($0.to),"
          + sectionFields(id: $0.id, metadata: $0.metadata.text) + "}"
      })
    add(
      "updatedSections",
      changes.updatedSections.map {
        "{\"index\":\($0.index)," + sectionFields(id: $0.id, metadata: $0.metadata.text) + "}"
      })
    add("deletedItems", changes.deletedItems.map { "{\"at\":\(path($0.at)),\"id\":\($0.id)}" })
    add(
      "insertedItems",
      changes.insertedItems.map {
        "{\"at\":\(path($0.at)),\"id\":\($0.id),\"value\":" + value($0.value) + "}"
      })
    add(
      "movedItems",
      changes.movedItems.map {
        "{\"from\":\(path($0.from)),\"to\":\(path($0.to)),\"id\":\($0.id),\"value\":"
          + value($0.value) + "}"
      })
    add(
      "updatedItems",
      changes.updatedItems.map {
        "{\"at\":\(path($0.at)),\"id\":\($0.id),\"value\":" + value($0.value) + "}"
      })
    return "{" + fields.joined(separator: ",") + "}"
  }
}
