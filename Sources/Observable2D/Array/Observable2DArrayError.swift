public import FoundationEssentials

/// What went wrong when a 2D array, a changeset or a table view update was given bad input.
///
/// Nothing in this module traps on bad indexes or inconsistent changesets: every public API that
/// takes them checks first and throws one of these, leaving the state unchanged.
public enum Observable2DArrayError: Error, Equatable, Sendable, CustomStringConvertible {
  /// An index path that does not have exactly two indexes (section and item).
  case malformedIndexPath(IndexPath)

  /// A section index outside the valid range for the operation.
  ///
  /// `validRange` is `0 ..< sectionCount` to read, remove or move from, and
  /// `0 ..< sectionCount + 1` to insert or move to.
  case sectionOutOfRange(section: Int, validRange: Range<Int>)

  /// An item index outside the valid range of its (existing) section for the operation.
  ///
  /// `validRange` is `0 ..< itemCount` to read, remove or move from, and `0 ..< itemCount + 1`
  /// to insert or move to.
  case itemOutOfRange(IndexPath, validRange: Range<Int>)

  /// A changeset that breaks a rule of the changeset contract (`docs/changesets.md`).
  ///
  /// `rule` is the rule's number (1 to 6) and `message` says which entry broke it and how.
  case invalidChangeset(rule: Int, message: String)

  /// A batch update that a table view rejects, with a message worded like UIKit's.
  case invalidTableViewUpdate(message: String)

  /// A human-readable explanation.
  public var description: String {
    switch self {
    case .malformedIndexPath(let indexPath):
      return "index path \(indexPath.shortDescription) must have exactly two indexes "
        + "(section, item)"
    case .sectionOutOfRange(let section, let validRange):
      return "section \(section) is out of range: "
        + (validRange.isEmpty ? "there are no sections" : "valid sections are \(validRange)")
    case .itemOutOfRange(let indexPath, let validRange):
      return "item \(indexPath.shortDescription) is out of range: "
        + (validRange.isEmpty
          ? "the section has no items" : "valid items of that section are \(validRange)")
    case .invalidChangeset(let rule, let message):
      return "invalid changeset (rule \(rule)): \(message)"
    case .invalidTableViewUpdate(let message):
      return message
    }
  }
}
