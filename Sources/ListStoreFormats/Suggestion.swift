/// `; did you mean 'show'?` for the candidate closest to `word`, when one is within a
/// small edit distance; empty otherwise.
/// - Parameters:
///   - word: What was written.
///   - candidates: The words that would have been understood.
///   - prefix: Written before the suggestion, such as `--` for an option.
/// - Returns: The suggestion, starting with `; `, or an empty string.
package func suggestion(for word: String, among candidates: [String], prefix: String) -> String {
  let scored = candidates.map { ($0, editDistance(word, $0)) }.sorted {
    $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0)
  }
  guard let best = scored.first, best.1 <= max(2, word.count / 3) else { return "" }
  return "; did you mean '\(prefix)\(best.0)'?"
}

/// The Levenshtein distance between two strings, over characters.
/// - Parameters:
///   - a: One string.
///   - b: The other.
/// - Returns: How many insertions, deletions and substitutions turn one into the other.
package func editDistance(_ a: String, _ b: String) -> Int {
  let a = Array(a)
  let b = Array(b)
  guard !a.isEmpty else { return b.count }
  guard !b.isEmpty else { return a.count }
  var previous = Array(0...b.count)
  var current = [Int](repeating: 0, count: b.count + 1)
  for i in 1...a.count {
    current[0] = i
    for j in 1...b.count {
      current[j] = min(
        previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
    }
    swap(&previous, &current)
  }
  return previous[b.count]
}
