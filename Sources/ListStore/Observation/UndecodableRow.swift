import FoundationEssentials

/// A stored row that an observer or a read could not decode into the list's Swift
/// types — for example a value another client wrote as `"just a string"` where the
/// list's items are a `struct`.
public struct UndecodableRow: Sendable, Hashable, CustomStringConvertible {
  /// Which table the row is in.
  public enum Kind: String, Sendable, Hashable {
    /// A row of `sections`: its `metadata` did not decode.
    case section
    /// A row of `items`: its `value` did not decode.
    case item
  }

  /// Which table the row is in.
  public var kind: Kind
  /// The row's id.
  public var id: Int64
  /// The stored JSON text (at most its first 200 characters).
  public var json: String
  /// The Swift type it was decoded as.
  public var type: String
  /// Why it did not decode, in the decoder's words.
  public var reason: String

  /// `item 42 holds "just a string", which is not a City: expected an object …`.
  public var description: String {
    "\(kind) \(id) holds \(json), which is not a \(type): \(reason)"
  }

  /// Describes the failure of decoding `bytes` as `Value` for row `id`.
  init<Value>(
    kind: Kind, id: Int64, bytes: UnsafeBufferPointer<UInt8>, as _: Value.Type, error: any Error
  ) {
    self.kind = kind
    self.id = id
    let text = String(decoding: bytes, as: UTF8.self)
    json = text.count > 200 ? String(text.prefix(200)) + "…" : text
    type = "\(Value.self)"
    reason = Self.reason(error)
  }

  /// What went wrong, without the decoder's type names where it can be helped.
  private static func reason(_ error: any Error) -> String {
    func path(_ context: DecodingError.Context) -> String {
      let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
      return keys.isEmpty ? "" : " at \(keys.joined())"
    }
    switch error {
    case DecodingError.keyNotFound(let key, let context):
      return "the key \"\(key.stringValue)\" is missing\(path(context))"
    case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
      DecodingError.dataCorrupted(let context):
      return context.debugDescription + path(context)
    case ListStoreError.decodingFailed:
      return "not a JSON string"
    default:
      return "\(error)"
    }
  }
}

/// What an observer (or a read of the whole list) does with a stored row that does
/// not decode into the list's Swift types.
///
/// The default, ``fail``, ends the observation with
/// ``ListStoreError/undecodable(_:)`` naming the row, so that the program learns of it
/// (a `watch` exits with that message; ``StoredList/changesets(undecodable:bufferingLimit:)`` throws
/// it). ``substitute(item:metadata:)`` shows a stand-in value instead and goes on: the
/// row keeps its place and id, and when it is later rewritten with a value that
/// decodes, the observer emits that value as an update.
public struct UndecodableRowPolicy<Metadata, Item>: Sendable {
  let item: (@Sendable (UndecodableRow) -> Item)?
  let metadata: (@Sendable (UndecodableRow) -> Metadata)?

  /// End the observation with ``ListStoreError/undecodable(_:)``.
  public static var fail: Self { Self(item: nil, metadata: nil) }

  /// Show `item(row)` (or `metadata(row)`) in place of a row that does not decode.
  /// - Parameters:
  ///   - item: The stand-in for an item's value.
  ///   - metadata: The stand-in for a section's metadata.
  /// - Returns: The policy.
  public static func substitute(
    item: @escaping @Sendable (UndecodableRow) -> Item,
    metadata: @escaping @Sendable (UndecodableRow) -> Metadata
  ) -> Self {
    Self(item: item, metadata: metadata)
  }
}

extension UndecodableRowPolicy where Metadata: Decodable, Item: Decodable {
  /// A decoder of stored JSON bytes for the row with a given id that follows this
  /// policy, made once per observation.
  @usableFromInline
  func itemDecoder() -> (UnsafeBufferPointer<UInt8>, Int64) throws -> Item {
    Self.decoder(kind: .item, substitute: item)
  }

  /// A decoder of stored metadata that follows this policy.
  @usableFromInline
  func metadataDecoder() -> (UnsafeBufferPointer<UInt8>, Int64) throws -> Metadata {
    Self.decoder(kind: .section, substitute: metadata)
  }

  private static func decoder<Value: Decodable>(
    kind: UndecodableRow.Kind, substitute: (@Sendable (UndecodableRow) -> Value)?
  ) -> (UnsafeBufferPointer<UInt8>, Int64) throws -> Value {
    let decode = ValueCoder.decoder(for: Value.self)
    return { bytes, id in
      do {
        return try decode(bytes)
      } catch {
        let row = UndecodableRow(kind: kind, id: id, bytes: bytes, as: Value.self, error: error)
        guard let substitute else { throw ListStoreError.undecodable(row) }
        return substitute(row)
      }
    }
  }
}
