import FoundationEssentials

/// A small, fast, seedable generator (SplitMix64) so every random test can be replayed.
struct SeededRandom: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) {
    state = seed
  }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Settings shared by the randomized tests.
enum PropertyTestSettings {
  /// How many random cases a property test runs; `LISTSTORE_PROPTEST_ITERATIONS` overrides it.
  static func iterations(default defaultCount: Int) -> Int {
    if let text = ProcessInfo.processInfo.environment["LISTSTORE_PROPTEST_ITERATIONS"],
      let count = Int(text), count > 0
    {
      return count
    }
    return defaultCount
  }

  /// A fixed base seed, or `LISTSTORE_PROPTEST_SEED` to replay or explore.
  static var baseSeed: UInt64 {
    if let text = ProcessInfo.processInfo.environment["LISTSTORE_PROPTEST_SEED"],
      let seed = UInt64(text)
    {
      return seed
    }
    return 0x5EED_2D2D
  }
}
