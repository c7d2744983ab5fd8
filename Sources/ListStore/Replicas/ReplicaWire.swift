/// A replica's writes as `POST /v1/push` carries them: each write
/// `{"n", "digest", "protocol", "ops": [...]}`, each op an object named by `"op"`
/// (docs/replicas.md has the table).
package enum ReplicaWire {
  /// Why a write cannot be read; `message` names the place (`writes[2].ops[0]`).
  package struct Failure: Error, Equatable {
    package var message: String
  }

  /// The ops' names and the keys each takes (`op` besides).
  package static let keys: [String: [String]] = [
    "list.create": ["list", "name"],
    "list.rename": ["list", "name"],
    "list.delete": ["list"],
    "section.insert": ["list", "id", "metadata", "after", "before", "afterKey"],
    "section.move": ["list", "id", "after", "before", "afterKey"],
    "section.set": ["list", "id", "metadata"],
    "section.delete": ["list", "id"],
    "item.insert": ["list", "section", "id", "value", "after", "before", "afterKey"],
    "item.move": ["list", "section", "id", "after", "before", "afterKey"],
    "item.set": ["list", "id", "value"],
    "item.delete": ["list", "id"],
  ]

  // MARK: Writing

  /// A write as JSON text.
  package static func json(_ write: ReplicaWrite) -> String {
    "{\"n\":\(write.number),\"digest\":\(JSONText.quote(write.digest)),"
      + "\"protocol\":\(write.protocolVersion),\"ops\":["
      + write.intents.map(json).joined(separator: ",") + "]}"
  }

  /// An intent as JSON text.
  package static func json(_ intent: ReplicaIntent) -> String { intent.json }

  // MARK: Reading

  /// The members of an object node, by key; refuses keys other than `allowed`.
  private static func members(
    _ node: JSONSyntax.Node, _ bytes: [UInt8], allowed: [String], at place: String
  ) throws(Failure) -> [String: JSONSyntax.Node] {
    guard case .object(let pairs) = node.kind else {
      throw Failure(message: "\(place) must be an object, not \(node.kindDescription(in: bytes))")
    }
    var members: [String: JSONSyntax.Node] = [:]
    for (key, value) in pairs {
      guard allowed.contains(key) else {
        throw Failure(
          message: "\(place) has an unknown key \(quoted(key)); it takes "
            + allowed.map { "\"\($0)\"" }.joined(separator: ", "))
      }
      members[key] = value
    }
    return members
  }

  /// A write from its JSON node; `protocolVersion` is the push's, for a write that does
  /// not name its own.
  package static func write(
    _ node: JSONSyntax.Node, in bytes: [UInt8], at place: String, protocolVersion: Int64
  ) throws(Failure) -> ReplicaWrite {
    let members = try members(node, bytes, allowed: ["n", "digest", "protocol", "ops"], at: place)
    let reader = Reader(members: members, bytes: bytes, place: place)
    guard let number = try reader.integer("n"), number >= 1 else {
      throw Failure(message: "\(place) needs \"n\", its number: a whole number from 1")
    }
    guard let digest = try reader.string("digest"),
      (1...128).contains(digest.unicodeScalars.count)
    else {
      throw Failure(message: "\(place) needs \"digest\": a string of 1 to 128 characters")
    }
    let version = try reader.integer("protocol") ?? protocolVersion
    guard version >= 1 else {
      throw Failure(message: "\(place).protocol must be a version, from 1")
    }
    guard let ops = members["ops"], case .array(let elements) = ops.kind else {
      throw Failure(message: "\(place) needs \"ops\": an array of its changes")
    }
    var intents: [ReplicaIntent] = []
    intents.reserveCapacity(elements.count)
    for (index, element) in elements.enumerated() {
      intents.append(try intent(element, in: bytes, at: "\(place).ops[\(index)]"))
    }
    return ReplicaWrite(
      number: number, digest: digest, protocolVersion: version, intents: intents)
  }

  /// An intent from its JSON node.
  package static func intent(_ node: JSONSyntax.Node, in bytes: [UInt8], at place: String)
    throws(Failure) -> ReplicaIntent
  {
    guard case .object(let pairs) = node.kind else {
      throw Failure(message: "\(place) must be an object, not \(node.kindDescription(in: bytes))")
    }
    guard let opNode = pairs.first(where: { $0.key == "op" })?.value,
      let op = opNode.string(in: bytes), let allowed = keys[op]
    else {
      throw Failure(
        message: "\(place) needs \"op\", one of "
          + keys.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", "))
    }
    let reader = Reader(
      members: try members(node, bytes, allowed: ["op"] + allowed, at: place), bytes: bytes,
      place: place)
    let list = try reader.id("list")
    switch op {
    case "list.create": return .createList(id: list, name: try reader.name())
    case "list.rename": return .renameList(id: list, name: try reader.name())
    case "list.delete": return .deleteList(id: list)
    case "section.insert":
      return .insertSection(
        list: list, id: try reader.id("id"), metadata: try reader.json("metadata"),
        anchor: try reader.anchor())
    case "section.move":
      return .moveSection(list: list, id: try reader.id("id"), anchor: try reader.anchor())
    case "section.set":
      return .setSection(list: list, id: try reader.id("id"), metadata: try reader.json("metadata"))
    case "section.delete": return .deleteSection(list: list, id: try reader.id("id"))
    case "item.insert":
      return .insertItem(
        list: list, section: try reader.id("section"), id: try reader.id("id"),
        value: try reader.json("value"), anchor: try reader.anchor())
    case "item.move":
      return .moveItem(
        list: list, section: try reader.id("section"), id: try reader.id("id"),
        anchor: try reader.anchor())
    case "item.set":
      return .setItem(list: list, id: try reader.id("id"), value: try reader.json("value"))
    default: return .deleteItem(list: list, id: try reader.id("id"))
    }
  }

  /// Reads an object's members, with errors that name the place.
  private struct Reader {
    let members: [String: JSONSyntax.Node]
    let bytes: [UInt8]
    let place: String

    func integer(_ key: String) throws(Failure) -> Int64? {
      guard let node = members[key] else { return nil }
      guard case .number = node.kind, let value = wholeNumber(node.text(in: bytes)) else {
        throw Failure(message: "\(place).\(key) must be a whole number")
      }
      return value
    }

    func string(_ key: String) throws(Failure) -> String? {
      guard let node = members[key] else { return nil }
      guard let text = node.string(in: bytes) else {
        throw Failure(message: "\(place).\(key) must be a string")
      }
      return text
    }

    /// A required id: a whole number from 1.
    func id(_ key: String) throws(Failure) -> Int64 {
      guard let id = try optionalID(key) else {
        throw Failure(message: "\(place) needs \"\(key)\": an id")
      }
      return id
    }

    func optionalID(_ key: String) throws(Failure) -> Int64? {
      if let node = members[key], case .null = node.kind { return nil }
      guard let id = try integer(key) else { return nil }
      guard id >= 1 else { throw Failure(message: "\(place).\(key) must be an id, from 1") }
      return id
    }

    func name() throws(Failure) -> String {
      guard let name = try string("name") else {
        throw Failure(message: "\(place) needs \"name\": a string")
      }
      return name
    }

    /// A value or metadata: any JSON, as compact text.
    func json(_ key: String) throws(Failure) -> String {
      guard let node = members[key] else {
        throw Failure(message: "\(place) needs \"\(key)\": any JSON value")
      }
      return JSONText.singleLine(node.text(in: bytes))
    }

    func anchor() throws(Failure) -> ReplicaAnchor {
      let key = try string("afterKey")
      return ReplicaAnchor(
        after: try optionalID("after"), before: try optionalID("before"), afterKey: key)
    }
  }
}
