// What a replica pushes: its local commits as intents, resolved by the server against its
// own state (docs/replicas.md).

/// Where a replica put an inserted or moved row: between its predecessor and its
/// successor in the replica's new order, as the replica saw them.
///
/// The server places the row after `after` when that row is still in the same section
/// (or list, for a section); at the start when `after` is `nil` (the row was first);
/// else before `before` when that one is; else where `afterKey`, the predecessor's
/// position key on the replica, falls among the rows that are left; else at the end.
/// Never a rejection: a run of rows inserted one after another stays together, whatever
/// another replica inserted at the same place.
package struct ReplicaAnchor: Sendable, Equatable {
  /// The row just before, or `nil` when the row was first.
  package var after: Int64?
  /// The row just after, or `nil` when the row was last.
  package var before: Int64?
  /// The predecessor's position key on the replica.
  package var afterKey: String?

  /// An anchor.
  package init(after: Int64?, before: Int64?, afterKey: String?) {
    self.after = after
    self.before = before
    self.afterKey = afterKey
  }
}

/// One change of a replica's local commit, named by ids; values and metadata are JSON
/// text.
package enum ReplicaIntent: Sendable, Equatable {
  case createList(id: Int64, name: String)
  case renameList(id: Int64, name: String)
  case deleteList(id: Int64)
  case insertSection(list: Int64, id: Int64, metadata: String, anchor: ReplicaAnchor)
  case moveSection(list: Int64, id: Int64, anchor: ReplicaAnchor)
  case setSection(list: Int64, id: Int64, metadata: String)
  case deleteSection(list: Int64, id: Int64)
  case insertItem(list: Int64, section: Int64, id: Int64, value: String, anchor: ReplicaAnchor)
  case moveItem(list: Int64, section: Int64, id: Int64, anchor: ReplicaAnchor)
  case setItem(list: Int64, id: Int64, value: String)
  case deleteItem(list: Int64, id: Int64)

  /// The list the intent writes.
  package var list: Int64 {
    switch self {
    case .createList(let id, _), .renameList(let id, _), .deleteList(let id): id
    case .insertSection(let list, _, _, _), .moveSection(let list, _, _),
      .setSection(let list, _, _), .deleteSection(let list, _),
      .insertItem(let list, _, _, _, _), .moveItem(let list, _, _, _),
      .setItem(let list, _, _), .deleteItem(let list, _):
      list
    }
  }
}

/// One local commit of a replica, numbered from 1 in the order the replica made them:
/// applied whole or rejected whole.
package struct ReplicaWrite: Sendable, Equatable {
  /// Its number; a replica's writes are numbered 1, 2, 3… with no gap.
  package var number: Int64
  /// A digest of its content: the same number with another digest means the replica's
  /// file was copied or restored.
  package var digest: String
  /// The replica protocol's version it was made under.
  package var protocolVersion: Int64
  /// Its changes, in the replica's new order (a row's predecessor comes first).
  package var intents: [ReplicaIntent]

  /// A write.
  package init(number: Int64, digest: String, protocolVersion: Int64, intents: [ReplicaIntent]) {
    self.number = number
    self.digest = digest
    self.protocolVersion = protocolVersion
    self.intents = intents
  }
}

/// Why the server did not apply a replica's write: the write is acknowledged all the
/// same, and the replica's next writes go on.
package struct ReplicaRejection: Error, Sendable, Equatable {
  /// `deleted` (the row, section or list is gone), `forbidden` (the token may not write
  /// the list), `nameTaken` (a created or renamed list's name is another list's), or
  /// `invalid` (the write cannot be applied as given).
  package var code: String
  /// A sentence for the user.
  package var error: String

  /// A rejection.
  package init(_ code: String, _ error: String) {
    self.code = code
    self.error = error
  }
}

/// What became of one write of a push.
package enum ReplicaResult: Sendable, Equatable {
  /// Applied; `seq` is the change log's position after it.
  case applied(seq: Int64)
  /// Not applied, for this reason.
  case rejected(ReplicaRejection)
}

/// Why a whole push is refused: nothing of it was applied.
package enum PushRefusal: Error, Sendable, Equatable {
  /// The server has no record of this replica.
  case unknownReplica(Int64)
  /// The replica acknowledged results the server never gave: the server's database is
  /// older than the replica's last sync (restored from a backup).
  case serverBehind(last: Int64, ackedThrough: Int64)
  /// The push's first write is not the next the server expects, or its writes are not
  /// numbered one after another.
  case outOfOrder(last: Int64, got: Int64)
  /// A write number the server has applied came with other content, or one already
  /// acknowledged came again: the replica's file was copied or restored.
  case forked(number: Int64)
}

extension ReplicaIntent {
  /// The intent as `POST /v1/push` carries it: `{"op": …, …}`.
  package var json: String {
    func object(_ op: String, _ members: [(String, String?)]) -> String {
      "{\"op\":\"\(op)\""
        + members.compactMap { key, value in value.map { ",\"\(key)\":\($0)" } }.joined() + "}"
    }
    func anchor(_ anchor: ReplicaAnchor) -> [(String, String?)] {
      [
        ("after", anchor.after.map(String.init) ?? "null"),
        ("before", anchor.before.map(String.init)),
        ("afterKey", anchor.afterKey.map(JSONText.quote)),
      ]
    }
    switch self {
    case .createList(let id, let name):
      return object("list.create", [("list", "\(id)"), ("name", JSONText.quote(name))])
    case .renameList(let id, let name):
      return object("list.rename", [("list", "\(id)"), ("name", JSONText.quote(name))])
    case .deleteList(let id):
      return object("list.delete", [("list", "\(id)")])
    case .insertSection(let list, let id, let metadata, let place):
      return object(
        "section.insert",
        [("list", "\(list)"), ("id", "\(id)"), ("metadata", metadata)] + anchor(place))
    case .moveSection(let list, let id, let place):
      return object("section.move", [("list", "\(list)"), ("id", "\(id)")] + anchor(place))
    case .setSection(let list, let id, let metadata):
      return object("section.set", [("list", "\(list)"), ("id", "\(id)"), ("metadata", metadata)])
    case .deleteSection(let list, let id):
      return object("section.delete", [("list", "\(list)"), ("id", "\(id)")])
    case .insertItem(let list, let section, let id, let value, let place):
      return object(
        "item.insert",
        [("list", "\(list)"), ("section", "\(section)"), ("id", "\(id)"), ("value", value)]
          + anchor(place))
    case .moveItem(let list, let section, let id, let place):
      return object(
        "item.move",
        [("list", "\(list)"), ("section", "\(section)"), ("id", "\(id)")] + anchor(place))
    case .setItem(let list, let id, let value):
      return object("item.set", [("list", "\(list)"), ("id", "\(id)"), ("value", value)])
    case .deleteItem(let list, let id):
      return object("item.delete", [("list", "\(list)"), ("id", "\(id)")])
    }
  }
}
