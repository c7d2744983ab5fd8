/// `; did you mean 'show'?` for the candidate closest to `word`, when one is within a
/// small edit distance; empty otherwise.
/// - Parameters:
///   - word: What was written.
///   - candidates: The words that would have been understood.
///   - prefix: Written before the suggestion, such as `--` for an option.
///   - usingSynonyms: Whether other tools' words for a command count (`ls` for `lists`):
///     for commands and options, not for names of the user's own.
/// - Returns: The suggestion, starting with `; `, or an empty string.
package func suggestion(
  for word: String, among candidates: [String], prefix: String, usingSynonyms: Bool = true
) -> String {
  let lowered = word.lowercased()
  let bare = String(lowered.drop { $0 == "-" })
  if usingSynonyms,
    let synonym = synonyms[bare]?.first(where: {
      candidates.contains($0) || candidates.contains("--" + $0)
    })
  {
    let spelled = candidates.contains(synonym) ? synonym : "--" + synonym
    return "; did you mean '\(prefix)\(spelled)'?"
  }
  let scored = candidates.map { ($0, editDistance(lowered, $0.lowercased())) }.sorted {
    $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0)
  }
  guard let best = scored.first, best.1 <= max(2, word.count / 3) else { return "" }
  return "; did you mean '\(prefix)\(best.0)'?"
}

/// Words other tools use for what `liststore` names otherwise, each with the names it
/// may mean (the first among the candidates is suggested).
private let synonyms: [String: [String]] = [
  "ls": ["lists", "show"], "list": ["lists"], "cat": ["show"], "print": ["show"],
  "view": ["show"], "get": ["show"], "display": ["show"],
  "remove": ["rm"], "del": ["rm"], "delete": ["rm"], "rmdir": ["rm"],
  "update": ["set"], "edit": ["set"], "change": ["set"], "modify": ["set"],
  "mv": ["move"], "new": ["add", "create"], "create": ["add", "create"], "insert": ["add"],
  "append": ["add"], "push": ["add"], "dump": ["export"], "load": ["import"],
  "restore": ["import"], "tail": ["watch"], "follow": ["watch"], "listen": ["watch"],
  "verify": ["check"], "fsck": ["check"], "fix": ["repair"], "copy": ["backup"],
  "ren": ["rename"], "increment": ["inc"], "decrement": ["dec"], "silent": ["quiet"],
]

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
