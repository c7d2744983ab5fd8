/// One change of an observable 2D array: the changeset and the state it leads to.
///
/// The changeset is never empty, and applying it to the state carried by the previous event
/// (or to the initial state of a subscription) gives `sections`.
public struct Observable2DArrayEvent<Metadata, Item> {
  /// What changed, in the index spaces of the previous state and of `sections`.
  public let changeset: Changeset<Metadata, Item>

  /// The array's state right after this change.
  public let sections: [Observable2DArraySection<Metadata, Item>]

  /// Where `sections` stands in its source's order of commits: for a stored list's
  /// array, the change log's `seq` of the last commit it reflects (increasing from event
  /// to event); 0 for an array changed in memory.
  public let version: Int64

  /// Where the state before this change stood in the same order: the changeset covers the
  /// source's commits after `previousVersion` up to `version` (those that did not touch
  /// the array among them too). 0 for an array changed in memory.
  public let previousVersion: Int64

  /// Whether the change is one the views already show
  /// (``MutableObservable2DArray/silentUpdate(_:)``): a bound table view takes the new state
  /// as its data source without a batch update. Arrays that follow this one (derived,
  /// delivered on a queue) pass the mark on; everything else treats the event as any other.
  public let isSilent: Bool

  /// Creates an event.
  ///
  /// - Parameters:
  ///   - changeset: What changed.
  ///   - sections: The state after the change.
  ///   - version: Where `sections` stands in its source's order of commits (0 for none).
  ///   - previousVersion: Where the state before the change stood in that order.
  ///   - isSilent: Whether the views already show the change.
  @inlinable
  public init(
    changeset: Changeset<Metadata, Item>, sections: [Observable2DArraySection<Metadata, Item>],
    version: Int64 = 0, previousVersion: Int64 = 0, isSilent: Bool = false
  ) {
    self.changeset = changeset
    self.sections = sections
    self.version = version
    self.previousVersion = previousVersion
    self.isSilent = isSilent
  }
}

extension Observable2DArrayEvent: Sendable where Metadata: Sendable, Item: Sendable {}
