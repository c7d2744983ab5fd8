import Foundation
import ListStore
import TestSupport
import Testing

/// A key made from any string (or integer), for containers written by hand.
private struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int?

  init(_ string: String) {
    stringValue = string
    intValue = nil
  }

  init?(stringValue: String) { self.init(stringValue) }

  init?(intValue: Int) {
    stringValue = String(intValue)
    self.intValue = intValue
  }
}

/// The keys of a coding path as text: string and integer values.
private func describe(_ path: [any CodingKey]) -> String {
  path.map { "\($0.stringValue)/\($0.intValue.map(String.init) ?? "-")" }.joined(separator: ".")
}

/// A value of random shape, encoded through every kind of container.
private indirect enum Shape: Encodable {
  case string(String)
  case bool(Bool)
  case int(Int)
  case int8(Int8)
  case int16(Int16)
  case int32(Int32)
  case int64(Int64)
  case uint(UInt)
  case uint8(UInt8)
  case uint16(UInt16)
  case uint32(UInt32)
  case uint64(UInt64)
  case double(Double)
  case float(Float)
  case null
  /// Through `Optional`'s own `encode(to:)`.
  case optional(Shape?)
  /// Through `Array`'s `encode(to:)`.
  case array([Shape])
  /// Through `Dictionary`'s `encode(to:)`.
  case dictionary([String: Shape])
  /// `Dictionary` with `Int` keys.
  case intDictionary([Int: Shape])
  /// A keyed container written by hand, fields in the given order, primitives through
  /// their own `encode(_:forKey:)`.
  case object([(String, Shape)])
  /// A keyed container whose field `nested` is a nested keyed container, and `list` a
  /// nested unkeyed one, each written completely before the next field.
  case nesting([(String, Shape)], [Shape], after: Shape)
  /// An unkeyed container written by hand, with a nested object and array inside.
  case unkeyed([Shape], nestedObject: [(String, Shape)], nestedArray: [Shape])
  /// A synthesized `Codable` struct.
  case record(Record)
  /// A synthesized enum with associated values.
  case choice(Choice)

  func encode(to encoder: any Encoder) throws {
    switch self {
    case .string(let value): try encodeSingle(value, to: encoder)
    case .bool(let value): try encodeSingle(value, to: encoder)
    case .int(let value): try encodeSingle(value, to: encoder)
    case .int8(let value): try encodeSingle(value, to: encoder)
    case .int16(let value): try encodeSingle(value, to: encoder)
    case .int32(let value): try encodeSingle(value, to: encoder)
    case .int64(let value): try encodeSingle(value, to: encoder)
    case .uint(let value): try encodeSingle(value, to: encoder)
    case .uint8(let value): try encodeSingle(value, to: encoder)
    case .uint16(let value): try encodeSingle(value, to: encoder)
    case .uint32(let value): try encodeSingle(value, to: encoder)
    case .uint64(let value): try encodeSingle(value, to: encoder)
    case .double(let value): try encodeSingle(value, to: encoder)
    case .float(let value): try encodeSingle(value, to: encoder)
    case .null:
      var container = encoder.singleValueContainer()
      try container.encodeNil()
    case .optional(let value): try value.encode(to: encoder)
    case .array(let values): try values.encode(to: encoder)
    case .dictionary(let values): try values.encode(to: encoder)
    case .intDictionary(let values): try values.encode(to: encoder)
    case .object(let fields):
      var container = encoder.container(keyedBy: AnyKey.self)
      for (key, value) in fields { try value.encodeField(in: &container, forKey: AnyKey(key)) }
    case .nesting(let fields, let list, let after):
      var container = encoder.container(keyedBy: AnyKey.self)
      var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("nested"))
      for (key, value) in fields { try value.encodeField(in: &nested, forKey: AnyKey(key)) }
      var array = container.nestedUnkeyedContainer(forKey: AnyKey("list"))
      for value in list { try array.encode(value) }
      try container.encode(after, forKey: AnyKey("after"))
    case .unkeyed(let values, let nestedObject, let nestedArray):
      var container = encoder.unkeyedContainer()
      for value in values { try container.encode(value) }
      var object = container.nestedContainer(keyedBy: AnyKey.self)
      for (key, value) in nestedObject {
        try value.encodeField(in: &object, forKey: AnyKey(key))
      }
      var array = container.nestedUnkeyedContainer()
      for value in nestedArray { try array.encode(value) }
      try container.encodeNil()
    case .record(let value): try value.encode(to: encoder)
    case .choice(let value): try value.encode(to: encoder)
    }
  }

  private func encodeSingle<Value: Encodable>(_ value: Value, to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(value)
  }

  /// Writes the value as a field, through the container's overload for its type.
  func encodeField(in container: inout KeyedEncodingContainer<AnyKey>, forKey key: AnyKey)
    throws
  {
    switch self {
    case .string(let value): try container.encode(value, forKey: key)
    case .bool(let value): try container.encode(value, forKey: key)
    case .int(let value): try container.encode(value, forKey: key)
    case .int8(let value): try container.encode(value, forKey: key)
    case .uint64(let value): try container.encode(value, forKey: key)
    case .double(let value): try container.encode(value, forKey: key)
    case .float(let value): try container.encode(value, forKey: key)
    case .null: try container.encodeNil(forKey: key)
    default: try container.encode(self, forKey: key)
    }
  }
}

/// A synthesized struct, fields declared out of key order.
private struct Record: Codable {
  var name: String
  var count: Int
  var score: Double?
  var tags: [String]
  var flag: Bool?
  var ratio: Float
  var child: Inner?
}

/// A synthesized struct inside ``Record``.
private struct Inner: Codable {
  var zeta: UInt8
  var alpha: Int64
  var a1: [Int]?

  enum CodingKeys: String, CodingKey {
    case zeta
    case alpha = "Alpha"
    case a1
  }
}

/// A synthesized enum with associated values.
private enum Choice: Codable {
  case plain
  case pair(Int, String)
  case labelled(first: Double, second: [String: Int])
}

/// Random values for the differential test.
private struct Generator {
  var random: SeededGenerator

  mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

  mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

  mutating func pick<Element>(_ elements: [Element]) -> Element {
    elements[int(0...(elements.count - 1))]
  }

  static let characters: [String] =
    (0..<32).map { String(UnicodeScalar(UInt8($0))) } + [
      "\"", "\\", "/", "\u{7F}", "a", "b", "z", "A", "Z", "0", "9", " ", "-", "_", ".", "é",
      "ß", "Ä", "日", "本", "🎉", "👍🏽", "e\u{301}", "\u{2028}", "\u{FEFF}", "𝄞", "ж", "ﬁ",
    ]

  static let keyCharacters: [String] = [
    "a", "b", "c", "m", "z", "A", "B", "M", "Z", "0", "1", "2", "9", "10", "_", "-", " ", ".",
    "é", "É", "ß", "日", "🎉", "e\u{301}", "ä", "Ä", "\u{2028}",
  ]

  mutating func string() -> String {
    if chance(20) { return "" }
    return (0..<int(1...12)).map { _ in pick(Self.characters) }.joined()
  }

  mutating func key() -> String {
    if chance(3) { return pick(["\"", "\\", "\n", "\u{1}"]) + "k" }  // needs escaping
    return (0..<int(1...6)).map { _ in pick(Self.keyCharacters) }.joined()
  }

  mutating func double() -> Double {
    if chance(50) {
      return pick([
        0, -0.0, 0.1, 0.2, 1, -1, 1.5, 1e21, 1e20, 1e-7, 1e-6, 123_456_789_012_345_680,
        .leastNonzeroMagnitude,
        2.2250738585072014e-308, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1e15,
        1e16, 9_007_199_254_740_992, 100, 3.141592653589793, 1.0 / 3,
      ])
    }
    while true {
      let value = Double(bitPattern: random.next())
      if value.isFinite { return value }
    }
  }

  mutating func float() -> Float {
    if chance(50) {
      return pick([
        0, -0.0, 0.1, 1e21, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 16_777_216, 1.5,
      ])
    }
    while true {
      let value = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
      if value.isFinite { return value }
    }
  }

  mutating func scalar() -> Shape {
    switch int(0...14) {
    case 0: .string(string())
    case 1: .bool(chance(50))
    case 2: .int(chance(30) ? pick([.min, .max, 0, -1]) : Int(truncatingIfNeeded: random.next()))
    case 3: .int8(Int8(truncatingIfNeeded: random.next()))
    case 4: .int16(pick([.min, .max, 0]))
    case 5: .int32(Int32(truncatingIfNeeded: random.next()))
    case 6: .int64(pick([.min, .max, -9, 10]))
    case 7: .uint(UInt(truncatingIfNeeded: random.next()))
    case 8: .uint8(pick([.min, .max, 7]))
    case 9: .uint16(UInt16(truncatingIfNeeded: random.next()))
    case 10: .uint32(.max)
    case 11: .uint64(chance(50) ? .max : random.next())
    case 12: .double(double())
    case 13: .float(float())
    default: .null
    }
  }

  mutating func fields(depth: Int) -> [(String, Shape)] {
    (0..<int(0...5)).map { _ in (key(), shape(depth: depth + 1)) }
  }

  mutating func list(depth: Int) -> [Shape] {
    (0..<int(0...4)).map { _ in shape(depth: depth + 1) }
  }

  mutating func record(depth: Int) -> Record {
    Record(
      name: string(), count: Int(truncatingIfNeeded: random.next()),
      score: chance(50) ? double() : nil, tags: (0..<int(0...3)).map { _ in string() },
      flag: chance(50) ? chance(50) : nil, ratio: float(),
      child: chance(50)
        ? Inner(
          zeta: UInt8(truncatingIfNeeded: random.next()), alpha: .min,
          a1: chance(50) ? [1, -2, .max] : nil) : nil)
  }

  mutating func shape(depth: Int = 0) -> Shape {
    if depth > 4 || chance(35) { return scalar() }
    switch int(0...9) {
    case 0: return .optional(chance(50) ? shape(depth: depth + 1) : nil)
    case 1: return .array(list(depth: depth))
    case 2:
      var values: [String: Shape] = [:]
      for (key, value) in fields(depth: depth) { values[key] = value }
      return .dictionary(values)
    case 3:
      var values: [Int: Shape] = [:]
      for _ in 0..<int(0...4) { values[int(-20...20)] = shape(depth: depth + 1) }
      return .intDictionary(values)
    case 4:
      // Distinct keys: a key written twice is left to JSONEncoder (tested below).
      var seen: Set<String> = []
      return .object(fields(depth: depth).filter { seen.insert($0.0).inserted })
    case 5:
      var seen: Set<String> = ["nested", "list", "after"]
      let nestedFields = fields(depth: depth).filter { seen.insert($0.0).inserted }
      return .nesting(nestedFields, list(depth: depth), after: shape(depth: depth + 1))
    case 6:
      var seen: Set<String> = []
      return .unkeyed(
        list(depth: depth),
        nestedObject: fields(depth: depth).filter { seen.insert($0.0).inserted },
        nestedArray: list(depth: depth))
    case 7: return .record(record(depth: depth))
    case 8:
      return .choice(
        pick([
          .plain, .pair(int(-5...5), string()),
          .labelled(first: double(), second: [key(): int(0...9)].merging(["b": 2]) { a, _ in a }),
        ]))
    default: return .array([.record(record(depth: depth)), scalar()])
    }
  }
}

/// The three encodings of a value: the fast path's alone, `JSONEncoder`'s, and
/// ListStore's (fast path with fallback).
private struct Encodings {
  var fast: String?
  var reference: String?
  var stored: Result<String, ListStoreError>

  init<Value: Encodable>(_ value: Value) {
    fast = ValueCoder.fastEncode(value)
    reference = ValueCoder.referenceEncode(value)
    stored = Result { () throws(ListStoreError) in try ValueCoder.encode(value) }
  }

  /// Whether ListStore stored `JSONEncoder`'s text, or threw where it threw.
  var storedMatches: Bool {
    switch stored {
    case .success(let text): text == reference
    case .failure: reference == nil
    }
  }
}

@Suite struct JSONTextEncoderTests {
  /// The fast path must write exactly `JSONEncoder`'s text wherever it does not fall back;
  /// ListStore's encoding (fast path plus fallback) must always match `JSONEncoder`.
  @Test func writesTheSameTextAsJSONEncoder() throws {
    let seed = testSeed(0x1457_C0DA)
    var generator = Generator(random: SeededGenerator(seed: seed))
    var fast = 0
    let count = scaled(4000)
    for _ in 0..<count {
      let encodings = Encodings(generator.shape())
      if let text = encodings.fast {
        fast += 1
        #expect(text == encodings.reference, "seed \(seed)")
      }
      #expect(encodings.storedMatches, "seed \(seed)")
    }
    // Most values take the fast path (keys needing escaping, non-finite floats and
    // empty encodings are rare in the generator).
    #expect(fast > count * 3 / 4, "only \(fast) of \(count) values took the fast path")
  }

  /// The shapes of real models take the fast path and give `JSONEncoder`'s text.
  @Test func commonShapesTakeTheFastPath() throws {
    struct Entry: Codable {
      var name: String
      var count: Int
    }
    let values: [any Encodable] = [
      Entry(name: "item 12 of a benchmark list", count: 12),
      Entry(name: "a/b \"quoted\" \\ tab\t nul\u{0} é 🎉", count: .min),
      ["b": 1, "a": 2, "B": 3, "10": 4, "9": 5, "é": 6, "e": 7, "Z": 8],
      [1: "one", 10: "ten", 2: "two", -1: "minus one"],
      // More fields than the insertion sort takes.
      Dictionary(uniqueKeysWithValues: (0..<60).map { ("K\($0 * 37 % 60)é\($0 % 3)", $0) }),
      [Entry?.none, Entry(name: "x", count: 1)],
      [[1.5, -0.0, 0.1, 1e21, .leastNonzeroMagnitude], [Double.greatestFiniteMagnitude]],
      [Float(0.1), 1e-7, 16_777_216, -0.0],
      Choice.labelled(first: 2, second: ["z": 1, "a": 2]),
      Choice.plain,
      "just a string",
      42,
      UInt64.max,
      Int8.min,
      true,
      Optional<Int>.none,
      [String](),
      [String: Int](),
    ]
    for value in values {
      let encodings = Encodings(value)
      #expect(encodings.reference != nil)
      #expect(encodings.fast == encodings.reference, "\(value)")
      #expect(encodings.storedMatches)
    }
    #expect(
      ValueCoder.fastEncode(Entry(name: "item 1", count: 1)) == #"{"count":1,"name":"item 1"}"#)
  }

  /// What the fast path does not cover goes to `JSONEncoder`, with the same result.
  @Test func fallsBackToJSONEncoder() throws {
    struct Dated: Codable {
      var name: String
      var when: Date
    }
    struct Keys: Encodable {
      var keys: [String]
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        for (index, key) in keys.enumerated() { try container.encode(index, forKey: AnyKey(key)) }
      }
    }
    /// Writes to its outer container after a nested one moved on, and back again.
    struct Interleaved: Encodable {
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("n"))
        try container.encode(1, forKey: AnyKey("b"))
        try nested.encode(2, forKey: AnyKey("x"))
      }
    }
    class Base: Encodable {
      var id = 1
    }
    final class Derived: Base {
      var extra = "x"
      enum Keys: String, CodingKey { case extra }
      override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try super.encode(to: container.superEncoder())
        try container.encode(extra, forKey: .extra)
      }
    }
    /// Encodes nothing at all.
    struct Nothing: Encodable {
      func encode(to encoder: any Encoder) throws {}
    }
    let values: [any Encodable] = [
      Dated(name: "x", when: Date(timeIntervalSinceReferenceDate: 12.5)),
      Date(timeIntervalSinceReferenceDate: 0),
      Data([1, 2, 3]),
      try #require(URL(string: "https://example.com/a?b=c")),
      Decimal(string: "12.345"),
      ["a": Data([0xFF])],
      Keys(keys: ["a", "b", "a"]),
      Keys(keys: ["quote\"d", "a"]),
      Keys(keys: ["new\nline"]),
      Interleaved(),
      Derived(),
      [Nothing()],
    ]
    for value in values {
      let encodings = Encodings(value)
      #expect(encodings.fast == nil, "\(value)")
      #expect(encodings.storedMatches, "\(value)")
    }
  }

  /// 128-bit integers, which the fast path leaves to the standard library's defaults,
  /// and coding paths, which a value may read, are as with `JSONEncoder`.
  @Test func wideIntegersAndCodingPaths() throws {
    struct Wide: Encodable {
      var big = Int128.min
      var huge = UInt128.max
    }
    /// Writes the coding paths it sees as its fields.
    struct Paths: Encodable {
      var inner: [Path] = [Path(), Path()]
      struct Path: Encodable {
        func encode(to encoder: any Encoder) throws {
          var container = encoder.container(keyedBy: AnyKey.self)
          var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("n"))
          try nested.encode(describe(nested.codingPath), forKey: AnyKey("nested"))
          try container.encode(describe(encoder.codingPath), forKey: AnyKey("encoder"))
          try container.encode(describe(container.codingPath), forKey: AnyKey("container"))
        }
      }
    }
    let values: [any Encodable] = [Wide(), [Int128(5), -Int128(5)], Paths()]
    for value in values {
      let encodings = Encodings(value)
      #expect(encodings.fast == nil || encodings.fast == encodings.reference, "\(value)")
      #expect(encodings.storedMatches, "\(value)")
    }
    #expect(Encodings(Paths()).fast != nil)
  }

  /// Non-finite floats and the value's own errors throw `encodingFailed` with
  /// `JSONEncoder`'s message, as before the fast path.
  @Test func errorsAreJSONEncodersErrors() throws {
    struct Reading: Codable {
      var value: Double
    }
    struct Refusing: Encodable {
      struct Refused: Error {}
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        try container.encode(1, forKey: AnyKey("a"))
        throw Refused()
      }
    }
    let values: [any Encodable] = [
      Reading(value: .nan), Reading(value: .infinity), [Float.nan], -Double.infinity,
      Refusing(),
    ]
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
    for value in values {
      var expected: (any Error)?
      do { _ = try encoder.encode(value) } catch { expected = error }
      // (`value` is opened for `JSONEncoder.encode`; the same for `Encodings` below.)
      let message = "\(try #require(expected))"
      let encodings = Encodings(value)
      #expect(encodings.fast == nil)
      #expect(throws: ListStoreError.encodingFailed(message)) { try encodings.stored.get() }
    }
  }
}
