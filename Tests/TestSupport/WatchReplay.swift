import Foundation

/// The `show --json` object that the snapshot line and every `changes` line of
/// `liststore watch --json` output give, replayed by the rules of `changesets.md`.
public func replayWatch(_ text: String) throws -> NSDictionary? {
  let lines = text.split(separator: "\n").map { Data($0.utf8) }
  guard let firstLine = lines.first,
    let first = try JSONSerialization.jsonObject(with: firstLine) as? [String: Any],
    let snapshot = first["snapshot"] as? [String: Any],
    var sections = snapshot["sections"] as? [[String: Any]]
  else { return nil }
  for (number, line) in lines.enumerated().dropFirst() {
    guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any],
      let changes = object["changes"] as? [String: Any]
    else { return nil }
    do {
      try applyWatchChanges(changes, to: &sections)
    } catch {
      throw ReplayError(description: "line \(number + 1) does not apply: \(error)")
    }
  }
  var result = snapshot
  result["sections"] = sections
  return result as NSDictionary
}

/// The normative application of `changesets.md`, on the JSON objects of `watch --json`.
public func applyWatchChanges(_ changes: [String: Any], to sections: inout [[String: Any]]) throws {
  func check(_ condition: Bool, _ what: @autoclosure () -> String) throws {
    if !condition { throw ReplayError(description: what()) }
  }
  func entries(_ name: String) -> [[String: Any]] { changes[name] as? [[String: Any]] ?? [] }
  func path(_ value: Any?) -> (Int, Int) {
    let pair = value as? [Int] ?? [0, 0]
    return (pair[0], pair[1])
  }
  // 1. Remove items, highest index first, then sections.
  var movedItems: [Int64: [String: Any]] = [:]
  var removals = entries("deletedItems").map { (path($0["at"]), Int64(0)) }
  removals += entries("movedItems").map { (path($0["from"]), Int64(($0["id"] as? Int) ?? 0)) }
  for ((section, row), id) in removals.sorted(by: { $0.0 > $1.0 }) {
    try check(sections.indices.contains(section), "no section \(section) to remove \(row) from")
    var items = sections[section]["items"] as? [[String: Any]] ?? []
    try check(items.indices.contains(row), "no row \(section):\(row) to remove")
    let item = items.remove(at: row)
    if id != 0 { movedItems[id] = item }
    sections[section]["items"] = items
  }
  var movedSections: [Int: [String: Any]] = [:]
  var sectionRemovals = entries("deletedSections").map { ($0["index"] as? Int ?? 0, -1) }
  sectionRemovals += entries("movedSections").map {
    ($0["from"] as? Int ?? 0, $0["id"] as? Int ?? 0)
  }
  for (index, id) in sectionRemovals.sorted(by: { $0.0 > $1.0 }) {
    try check(sections.indices.contains(index), "no section \(index) to remove")
    let section = sections.remove(at: index)
    if id >= 0 { movedSections[id] = section }
  }
  // 2. Insert sections, then items, lowest index first.
  var sectionInserts: [(Int, [String: Any])] = entries("insertedSections").map { entry in
    var section = entry
    section["index"] = nil
    return (entry["index"] as? Int ?? 0, section)
  }
  for entry in entries("movedSections") {
    var section = movedSections[entry["id"] as? Int ?? 0] ?? [:]
    setMetadata(of: &section, from: entry)
    sectionInserts.append((entry["to"] as? Int ?? 0, section))
  }
  for (index, section) in sectionInserts.sorted(by: { $0.0 < $1.0 }) {
    sections.insert(section, at: index)
  }
  var itemInserts: [((Int, Int), [String: Any])] = entries("insertedItems").map {
    (path($0["at"]), ["id": $0["id"] ?? 0, "value": $0["value"] ?? NSNull()])
  }
  itemInserts += entries("movedItems").map {
    (path($0["to"]), ["id": $0["id"] ?? 0, "value": $0["value"] ?? NSNull()])
  }
  for ((section, row), item) in itemInserts.sorted(by: { $0.0 < $1.0 }) {
    try check(sections.indices.contains(section), "no section \(section) to insert into")
    var items = sections[section]["items"] as? [[String: Any]] ?? []
    try check(row <= items.count, "cannot insert row \(section):\(row)")
    items.insert(item, at: row)
    sections[section]["items"] = items
  }
  // 3. Update by id.
  for entry in entries("updatedSections") {
    guard let index = sections.firstIndex(where: { ($0["id"] as? Int) == (entry["id"] as? Int) })
    else { continue }
    setMetadata(of: &sections[index], from: entry)
  }
  for entry in entries("updatedItems") {
    for index in sections.indices {
      var items = sections[index]["items"] as? [[String: Any]] ?? []
      guard let row = items.firstIndex(where: { ($0["id"] as? Int) == (entry["id"] as? Int) })
      else { continue }
      items[row]["value"] = entry["value"] ?? NSNull()
      sections[index]["items"] = items
    }
  }
}

/// Gives `section` the metadata fields of a moved or updated section's `entry`: its
/// header and footer, and its `metadata` when it has one (metadata of another shape than
/// `{header, footer}`), else none.
private func setMetadata(of section: inout [String: Any], from entry: [String: Any]) {
  section["header"] = entry["header"] ?? NSNull()
  section["footer"] = entry["footer"] ?? NSNull()
  section["metadata"] = entry["metadata"]
}

/// A `watch --json` line that does not apply to the state before it.
public struct ReplayError: Error, CustomStringConvertible {
  /// What does not apply, and where.
  public var description: String
}
