import FoundationEssentials

extension JSONTextEncoder: Encoder {
  /// The keys of the value being encoded (not those of the nested containers it opened).
  var codingPath: [any CodingKey] {
    codingPath(through: frames.lastIndex { !$0.isNestedContainer } ?? -1)
  }

  /// None, as for the `JSONEncoder` ListStore used.
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  /// The object of the value being encoded (the same one when asked again).
  /// - Parameter type: The key type.
  /// - Returns: A container writing into this encoder.
  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let index = currentValueFrame()
    guard index >= 0 else { return KeyedEncodingContainer(KeyedContainer(self, -1, 0)) }
    switch frames[index].kind {
    case .empty:
      frames[index].kind = .keyed
      frames[index].start = bytes.count
      frames[index].firstField = fields.count
      bytes.append(UInt8(ascii: "{"))
    case .keyed:
      break
    case .unkeyed, .single:
      failed = true
    }
    return KeyedEncodingContainer(KeyedContainer(self, index, frames[index].id))
  }

  /// The array of the value being encoded (the same one when asked again).
  /// - Returns: A container writing into this encoder.
  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let index = currentValueFrame()
    guard index >= 0 else { return UnkeyedContainer(self, -1, 0) }
    switch frames[index].kind {
    case .empty:
      frames[index].kind = .unkeyed
      frames[index].start = bytes.count
      bytes.append(UInt8(ascii: "["))
    case .unkeyed:
      break
    case .keyed, .single:
      failed = true
    }
    return UnkeyedContainer(self, index, frames[index].id)
  }

  /// A container for the value being encoded as one value.
  /// - Returns: A container writing into this encoder.
  func singleValueContainer() -> any SingleValueEncodingContainer {
    let index = currentValueFrame()
    return SingleContainer(self, index, index >= 0 ? frames[index].id : 0)
  }
}
