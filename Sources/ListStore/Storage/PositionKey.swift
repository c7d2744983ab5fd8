/// Position keys: strings whose byte order is the order of rows in a section.
///
/// A key is an integer part followed by an optional fraction, all in the 62 ASCII
/// digits `0-9A-Za-z` (ascending in byte order, so SQLite's `ORDER BY position` with
/// the default BINARY collation agrees with Swift). The first character of the
/// integer part tells its length: `a`…`z` begin integers of 1…26 further digits,
/// `Z`…`A` negative ones of 1…26 digits. Appending increments the integer (keys stay
/// short: a million appends need five characters), inserting between two keys
/// extends the fraction. Any two distinct keys have keys between them, so an insert
/// or a move never renumbers other rows: it writes exactly one row.
///
/// The scheme follows the well-known "fractional indexing" idea; this is an
/// independent implementation.
enum PositionKey {
  /// The key of the first row put into an empty section.
  static let first = "a0"

  private static let digits = Array(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
  private static let base = 62
  private static let zero = UInt8(ascii: "0")
  private static let smallestInteger: [UInt8] =
    [UInt8(ascii: "A")] + Array(repeating: zero, count: 26)

  /// A key that a row reader found malformed (written by another client).
  struct InvalidKey: Error, Equatable, CustomStringConvertible {
    /// The offending key.
    var key: String
    var description: String { "malformed position key \(key.debugDescription)" }
  }

  /// The value of a digit, or `nil` for a byte that is not one.
  private static func value(of digit: UInt8) -> Int? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(digit - UInt8(ascii: "0"))
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(digit - UInt8(ascii: "A")) + 10
    case UInt8(ascii: "a")...UInt8(ascii: "z"): Int(digit - UInt8(ascii: "a")) + 36
    default: nil
    }
  }

  /// The number of characters of the integer part that starts with `head`.
  private static func integerLength(head: UInt8) -> Int? {
    switch head {
    case UInt8(ascii: "a")...UInt8(ascii: "z"): Int(head - UInt8(ascii: "a")) + 2
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(UInt8(ascii: "Z") - head) + 2
    default: nil
    }
  }

  /// Splits a key into integer part and fraction, validating both.
  static func split(_ key: [UInt8]) throws(InvalidKey) -> (
    integer: [UInt8], fraction: [UInt8]
  ) {
    let invalid = InvalidKey(key: String(decoding: key, as: UTF8.self))
    guard let head = key.first, let length = integerLength(head: head), key.count >= length else {
      throw invalid
    }
    guard key.allSatisfy({ value(of: $0) != nil }) else { throw invalid }
    let fraction = Array(key[length...])
    // Trailing zeros would make keys with no key between them ("x" and "x0").
    guard fraction.last != zero else { throw invalid }
    // The smallest integer with no fraction leaves nothing below it.
    guard key != smallestInteger else { throw invalid }
    return (Array(key[..<length]), fraction)
  }

  /// Whether `key` is well formed.
  static func isValid(_ key: String) -> Bool {
    (try? split(Array(key.utf8))) != nil
  }

  /// Whether the UTF-8 bytes `key` form a well-formed key.
  static func isValid(bytes key: UnsafeBufferPointer<UInt8>) -> Bool {
    (try? split(Array(key))) != nil
  }

  /// A key strictly between `lower` and `upper`; `nil` means unbounded.
  /// - Throws: ``InvalidKey`` when a bound is malformed or `lower >= upper`.
  static func between(_ lower: String?, _ upper: String?) throws(InvalidKey) -> String {
    if let key = integerBetween(lower, upper) { return key }
    return try generalBetween(lower, upper)
  }

  /// ``between(_:_:)`` by the general algorithm, for every case.
  static func generalBetween(_ lower: String?, _ upper: String?) throws(InvalidKey) -> String {
    String(
      decoding: try between(lower.map { Array($0.utf8) }, upper.map { Array($0.utf8) }),
      as: UTF8.self)
  }

  /// What the general algorithm gives, for the common cases, without its arrays: bounds
  /// that are integers with no fraction (every key an append or a prepend makes), whose
  /// last digit moves by one without a carry. An append after `L`, a prepend before `U`, or
  /// an insert between two integers gives the next integer when it lies below the upper
  /// bound, else the lower bound with the middle digit as fraction. `nil` for any other
  /// case, a malformed bound or bounds out of order included: the general algorithm then
  /// answers (or throws).
  static func integerBetween(_ lower: String?, _ upper: String?) -> String? {
    switch (lower, upper) {
    case (nil, nil):
      return nil
    case (let lower?, nil):
      return isInteger(lower) ? lastDigit(of: lower, movedBy: 1) : nil
    case (nil, let upper?):
      guard isInteger(upper), let below = lastDigit(of: upper, movedBy: -1),
        !below.utf8.elementsEqual(smallestInteger)
      else { return nil }
      return below
    case (let lower?, let upper?):
      guard lower.utf8.lexicographicallyPrecedes(upper.utf8), isInteger(lower), isInteger(upper)
      else { return nil }
      // No next integer without a carry: the general algorithm's case.
      guard let next = lastDigit(of: lower, movedBy: 1) else { return nil }
      return next.utf8.lexicographicallyPrecedes(upper.utf8) ? next : lower + middleDigit
    }
  }

  /// The fraction the general algorithm puts after a bound with none, when there is room
  /// up to the next integer: the middle digit.
  private static let middleDigit = String(UnicodeScalar(digits[base / 2]))

  /// Whether `key` is a well-formed integer with no fraction.
  private static func isInteger(_ key: String) -> Bool {
    let utf8 = key.utf8
    guard let head = utf8.first, let length = integerLength(head: head), utf8.count == length
    else { return false }
    return utf8.dropFirst().allSatisfy { value(of: $0) != nil }
      && !utf8.elementsEqual(smallestInteger)
  }

  /// `key` with its last digit moved by `delta` (1 or -1), or `nil` when that digit would
  /// leave the alphabet (a carry or a borrow).
  private static func lastDigit(of key: String, movedBy delta: Int) -> String? {
    guard let last = key.utf8.last, let digit = value(of: last) else { return nil }
    let moved = digit + delta
    guard moved >= 0, moved < base else { return nil }
    let count = key.utf8.count
    return String(unsafeUninitializedCapacity: count) { bytes in
      _ = bytes.initialize(from: key.utf8)
      bytes[count - 1] = digits[moved]
      return count
    }
  }

  private static func between(_ lower: [UInt8]?, _ upper: [UInt8]?) throws(InvalidKey) -> [UInt8] {
    if let lower, let upper, !lower.lexicographicallyPrecedes(upper) {
      throw InvalidKey(key: String(decoding: upper, as: UTF8.self))
    }
    switch (lower, upper) {
    case (nil, nil):
      return Array(first.utf8)
    case (nil, let upper?):
      let (integer, fraction) = try split(upper)
      if integer == smallestInteger { return integer + midpoint(nil, fraction) }
      if !fraction.isEmpty { return integer }
      // `split` rejected the smallest integer, so there is one below; when that one is
      // the smallest, which is no key alone, it takes a fraction.
      guard let below = decrement(integer) else { return integer + midpoint(nil, fraction) }
      return below == smallestInteger ? below + midpoint(nil, nil) : below
    case (let lower?, nil):
      let (integer, fraction) = try split(lower)
      return increment(integer) ?? integer + midpoint(fraction, nil)
    case (let lower?, let upper?):
      let (lowInteger, lowFraction) = try split(lower)
      let (highInteger, highFraction) = try split(upper)
      if lowInteger == highInteger { return lowInteger + midpoint(lowFraction, highFraction) }
      if let next = increment(lowInteger), next.lexicographicallyPrecedes(upper) { return next }
      return lowInteger + midpoint(lowFraction, nil)
    }
  }

  /// `count` ascending keys strictly between `lower` and `upper`, spread so that
  /// their lengths stay balanced.
  /// - Throws: ``InvalidKey`` when a bound is malformed or `lower >= upper`.
  static func keys(between lower: String?, _ upper: String?, count: Int) throws(InvalidKey)
    -> [String]
  {
    guard count > 0 else { return [] }
    var result: [String] = []
    result.reserveCapacity(count)
    if upper == nil {
      // Appending: consecutive integers are short and cheap to make.
      var previous = lower
      for _ in 0..<count {
        let key = try between(previous, nil)
        result.append(key)
        previous = key
      }
      return result
    }
    try fill(&result, lower, upper, count)
    return result
  }

  private static func fill(
    _ result: inout [String], _ lower: String?, _ upper: String?, _ count: Int
  )
    throws(InvalidKey)
  {
    guard count > 0 else { return }
    let middle = try between(lower, upper)
    let below = (count - 1) / 2
    try fill(&result, lower, middle, below)
    result.append(middle)
    try fill(&result, middle, upper, count - 1 - below)
  }

  /// A fraction strictly between fractions `lower` (nil: 0) and `upper` (nil: 1),
  /// with no trailing zero. Requires `lower < upper`.
  private static func midpoint(_ lower: [UInt8]?, _ upper: [UInt8]?) -> [UInt8] {
    let low = lower ?? []
    if let upper {
      // Skip the common prefix, reading a missing digit of `low` as 0.
      var index = 0
      while index < upper.count, (index < low.count ? low[index] : zero) == upper[index] {
        index += 1
      }
      if index > 0 {
        let rest = midpoint(Array(low.dropFirst(min(index, low.count))), Array(upper[index...]))
        return Array(upper[..<index]) + rest
      }
    }
    let lowDigit = low.first.flatMap(value) ?? 0
    let highDigit = upper.flatMap { $0.first.flatMap(value) } ?? base
    if highDigit - lowDigit > 1 {
      return [digits[(lowDigit + highDigit) / 2]]
    }
    if let upper, upper.count > 1 {
      // `upper`'s first digit alone is above `low` and below `upper`.
      return [upper[0]]
    }
    return [digits[lowDigit]] + midpoint(Array(low.dropFirst()), nil)
  }

  /// The next integer part, or `nil` past the largest.
  private static func increment(_ integer: [UInt8]) -> [UInt8]? {
    var digitsPart = Array(integer.dropFirst())
    let head = integer[0]
    for index in digitsPart.indices.reversed() {
      let next = (value(of: digitsPart[index]) ?? 0) + 1
      if next < base {
        digitsPart[index] = digits[next]
        return [head] + digitsPart
      }
      digitsPart[index] = zero
    }
    // Every digit carried: the integer gets one digit longer (or, on the negative
    // side, one shorter, since negatives shrink toward zero).
    if head == UInt8(ascii: "Z") { return Array("a0".utf8) }
    if head == UInt8(ascii: "z") { return nil }
    let newHead = head + 1
    if newHead > UInt8(ascii: "a") { digitsPart.append(zero) } else { digitsPart.removeLast() }
    return [newHead] + digitsPart
  }

  /// The previous integer part, or `nil` below the smallest.
  private static func decrement(_ integer: [UInt8]) -> [UInt8]? {
    var digitsPart = Array(integer.dropFirst())
    let head = integer[0]
    let top = digits[base - 1]
    for index in digitsPart.indices.reversed() {
      let previous = (value(of: digitsPart[index]) ?? 0) - 1
      if previous >= 0 {
        digitsPart[index] = digits[previous]
        return [head] + digitsPart
      }
      digitsPart[index] = top
    }
    if head == UInt8(ascii: "a") { return Array("Zz".utf8) }
    if head == UInt8(ascii: "A") { return nil }
    let newHead = head - 1
    if newHead < UInt8(ascii: "Z") { digitsPart.append(top) } else { digitsPart.removeLast() }
    return [newHead] + digitsPart
  }
}
