import ListStoreFormats
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// MARK: - Keys

/// A key press, decoded from the bytes a terminal sends.
enum Key: Hashable, Sendable {
  /// A printable character, space included.
  case character(Character)
  /// Arrow up (`ESC [ A` or `ESC O A`).
  case up
  /// Arrow down (`ESC [ B` or `ESC O B`).
  case down
  /// Arrow right (`ESC [ C` or `ESC O C`).
  case right
  /// Arrow left (`ESC [ D` or `ESC O D`).
  case left
  /// Home.
  case home
  /// End.
  case end
  /// Page up.
  case pageUp
  /// Page down.
  case pageDown
  /// Insert.
  case insert
  /// Delete (forward).
  case delete
  /// Return or enter.
  case enter
  /// Tab.
  case tab
  /// Backspace.
  case backspace
  /// Escape on its own.
  case escape
  /// A control key: `.control("c")` for Ctrl-C.
  case control(Character)
  /// A sequence this decoder does not know, with its bytes.
  case unknown([UInt8])
}

/// Turns the bytes a terminal sends into keys, keeping an unfinished sequence for the next
/// bytes.
///
/// A lone ESC is ambiguous (the start of an arrow, or the Escape key): ``decode(_:)`` keeps it
/// pending, and ``flush()`` reports it as `.escape` once no more bytes came in a short while.
struct KeyDecoder {
  private var pending: [UInt8] = []

  /// Whether bytes of an unfinished key are waiting.
  var hasPending: Bool { !pending.isEmpty }

  /// Decodes `bytes` after what was pending.
  /// - Parameter bytes: The bytes read.
  /// - Returns: The complete keys, in order; an unfinished one stays pending.
  mutating func decode(_ bytes: some Sequence<UInt8>) -> [Key] {
    pending.append(contentsOf: bytes)
    var keys: [Key] = []
    var index = 0
    while index < pending.count {
      guard let (key, length) = Self.key(in: pending[index...]) else { break }
      keys.append(key)
      index += length
    }
    pending.removeFirst(index)
    return keys
  }

  /// Ends what is pending: a lone ESC becomes `.escape`, anything else `.unknown`.
  /// - Returns: The keys that were pending.
  mutating func flush() -> [Key] {
    guard !pending.isEmpty else { return [] }
    var keys: [Key] = []
    if pending.first == 0x1B {
      keys.append(.escape)
      pending.removeFirst()
      keys += decode([])
    }
    if !pending.isEmpty {
      keys.append(.unknown(pending))
      pending = []
    }
    return keys
  }

  /// The key at the start of `bytes` and its length, or `nil` when it is unfinished.
  private static func key(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let start = bytes.startIndex
    let first = bytes[start]
    switch first {
    case 0x1B:
      return escapeSequence(in: bytes)
    case 0x0D, 0x0A:
      return (.enter, 1)
    case 0x09:
      return (.tab, 1)
    case 0x7F, 0x08:
      return (.backspace, 1)
    case 0x01...0x1A:
      return (.control(Character(Unicode.Scalar(first + 0x60))), 1)
    case 0x00, 0x1C...0x1F:
      return (.control(Character(Unicode.Scalar(first + 0x40))), 1)
    case 0x20...0x7E:
      return (.character(Character(Unicode.Scalar(first))), 1)
    default:
      return utf8Character(in: bytes)
    }
  }

  private static func escapeSequence(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let start = bytes.startIndex
    guard bytes.count > 1 else { return nil }
    switch bytes[start + 1] {
    case UInt8(ascii: "["):
      // CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one final byte.
      var index = start + 2
      while index < bytes.endIndex, (0x20...0x3F).contains(bytes[index]) { index += 1 }
      guard index < bytes.endIndex else { return nil }
      let final = bytes[index]
      let length = index - start + 1
      guard (0x40...0x7E).contains(final) else {
        return (.unknown(Array(bytes.prefix(length))), length)
      }
      let parameters = String(decoding: bytes[(start + 2)..<index], as: UTF8.self)
      let first = parameters.split(separator: ";").first.map(String.init) ?? ""
      let key: Key? =
        switch (final, first) {
        case (UInt8(ascii: "A"), _): .up
        case (UInt8(ascii: "B"), _): .down
        case (UInt8(ascii: "C"), _): .right
        case (UInt8(ascii: "D"), _): .left
        case (UInt8(ascii: "H"), _): .home
        case (UInt8(ascii: "F"), _): .end
        case (UInt8(ascii: "~"), "1"), (UInt8(ascii: "~"), "7"): .home
        case (UInt8(ascii: "~"), "4"), (UInt8(ascii: "~"), "8"): .end
        case (UInt8(ascii: "~"), "2"): .insert
        case (UInt8(ascii: "~"), "3"): .delete
        case (UInt8(ascii: "~"), "5"): .pageUp
        case (UInt8(ascii: "~"), "6"): .pageDown
        default: nil
        }
      return (key ?? .unknown(Array(bytes.prefix(length))), length)
    case UInt8(ascii: "O"):
      // SS3, sent for arrows in "application cursor keys" mode.
      guard bytes.count > 2 else { return nil }
      let key: Key? =
        switch bytes[start + 2] {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "H"): .home
        case UInt8(ascii: "F"): .end
        default: nil
        }
      return (key ?? .unknown(Array(bytes.prefix(3))), 3)
    default:
      // ESC followed by anything else: Escape, then that key (Alt+key reads as both).
      return (.escape, 1)
    }
  }

  private static func utf8Character(in bytes: ArraySlice<UInt8>) -> (Key, Int)? {
    let first = bytes[bytes.startIndex]
    let length: Int
    switch first {
    case 0xC2...0xDF: length = 2
    case 0xE0...0xEF: length = 3
    case 0xF0...0xF4: length = 4
    default: return (.unknown([first]), 1)
    }
    guard bytes.count >= length else { return nil }
    let sequence = Array(bytes.prefix(length))
    guard let text = String(validating: sequence, as: UTF8.self), let character = text.first
    else { return (.unknown(sequence), length) }
    return (.character(character), length)
  }
}
