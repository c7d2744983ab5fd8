import ListStore
import ListStoreFormats

/// The sentence a failed command prints for a store's error: the error's own, with what
/// only the command line knows added — the list a missing row was looked for in, and the
/// nearest name of a list that does exist.
enum ErrorExplanations {
  /// What `liststore` prints after `error: ` for `error`, met while running `invocation`.
  /// - Parameters:
  ///   - error: The store's error.
  ///   - invocation: The command that met it.
  ///   - token: The token given with `--token` or `LISTSTORE_TOKEN`, if any.
  ///   - listNames: The names of the lists there are (read only for a missing list).
  /// - Returns: One sentence.
  static func explain(
    _ error: ListStoreError, in invocation: Invocation, token: String?,
    listNames: () -> [String]
  ) -> String {
    let list = invocation.arguments["LIST"]
    switch error {
    case .authenticationFailed(let location) where isServer(location):
      guard token != nil else {
        return "\(location) needs a token: give it with --token TOKEN or LISTSTORE_TOKEN "
          + "(the server's --tokens file lists them)"
      }
      return "the token given (--token or LISTSTORE_TOKEN) is not known to \(location); check "
        + "it against the server's --tokens file"
    case .listNotFound(let name):
      let hint = suggestion(
        for: name, among: listNames().filter { $0 != name }, prefix: "", usingSynonyms: false)
      guard !hint.isEmpty else { return "\(error)" }
      return "no list named \(quoted(name))\(hint) ('liststore lists' shows them all)"
    case .itemNotFound(let id) where list != nil:
      return "no item with id \(id) in \(quoted(list ?? "")); "
        + "'liststore show \(shellWord(list ?? "")) --json' shows the ids"
    case .sectionNotFound(let id) where list != nil:
      return "no section with id \(id) in \(quoted(list ?? "")); "
        + "'liststore show \(shellWord(list ?? "")) --json' shows the ids"
    default:
      return "\(error)"
    }
  }

  private static func isServer(_ location: String) -> Bool {
    location.hasPrefix("http://") || location.hasPrefix("https://")
  }

  /// `word` as the shell reads it back: bare when it holds only safe characters, else in
  /// single quotes.
  static func shellWord(_ word: String) -> String {
    let safe =
      !word.isEmpty
      && word.unicodeScalars.allSatisfy {
        ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
          || "-_./:@".unicodeScalars.contains($0)
      } && !word.hasPrefix("-")
    return safe
      ? word
      : "'"
        + word.split(separator: "'", omittingEmptySubsequences: false)
        .joined(separator: "'\\''") + "'"
  }
}
