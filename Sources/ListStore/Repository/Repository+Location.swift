extension Repository {
  /// What is wrong with a database location that looks like an address ListStore does not
  /// take, or `nil` when it is one to use: a file path, a `postgresql://` or
  /// `postgres://` URL (or a libpq keyword string), or a server's `http://` or `https://`
  /// address.
  ///
  /// A mistyped address (`postgresql:/lists`, `mysql://…`, `https//host:8041`,
  /// `localhost:8041`) would otherwise be a relative file path, made as a new empty
  /// database in a folder of that name.
  /// - Parameter location: What the user gave, as `--db` or `$LISTSTORE_DB`.
  /// - Returns: A sentence saying what to write instead.
  public static func locationProblem(_ location: String) -> String? {
    let lowered = location.lowercased()
    let known = ["postgresql://", "postgres://", "http://", "https://"]
    if known.contains(where: { lowered.hasPrefix($0) }) { return nil }
    let file = "(for a file of that very name, write ./\(location))"
    let forms =
      "give a file path, a postgresql:// URL, or a server's address http://HOST:PORT \(file)"
    for scheme in ["postgresql", "postgres", "https", "http"]
    where lowered.hasPrefix(scheme + ":") || lowered.hasPrefix(scheme + "//") {
      return "\(quoted(location)) is not a whole \(scheme):// address: \(forms)"
    }
    // scheme:/… or scheme://…
    if let colon = location.firstIndex(of: ":"),
      location[location.index(after: colon)...].hasPrefix("/"),
      let first = location.first, first.isASCII, first.isLetter,
      location[..<colon].allSatisfy({
        $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0))
      })
    {
      return "ListStore does not know addresses of the kind \(location[..<colon]): \(forms)"
    }
    // HOST:PORT, with or without a path after it.
    let authority =
      location.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
      .first ?? ""
    if let colon = authority.lastIndex(of: ":"),
      !authority[..<colon].isEmpty,
      authority[..<colon].allSatisfy({
        $0.isASCII && ($0.isLetter || $0.isNumber || ".-[]:".contains($0))
      }),
      let port = Int(authority[authority.index(after: colon)...]), port > 0
    {
      return "\(quoted(location)) looks like a server's address: write http://\(authority) "
        + file
    }
    return nil
  }
}
