/// One change of an observable 2D array: the changeset and the state it leads to.
///
/// The changeset is never empty, and applying it to the state carried by the previous event
/// (or to the initial state of a subscription) gives `sections`.
public struct Observable2DArrayEvent<Metadata, Item> {
  /// What changed, in the index spaces of the previous state and of `sections`.
  public let changeset: Changeset<Metadata, Item>

  /// The array's state right after this change.
  public let sections: [Observable2DArraySection<Metadata, Item>]

  /// Creates an event.
  ///
  /// - Parameters:
  ///   - changeset: What changed.
  ///   - sections: The state after the change.
  @inlinable
  public init(
    changeset: Changeset<Metadata, Item>, sections: [Observable2DArraySection<Metadata, Item>]
  ) {
    self.changeset = changeset
    self.sections = sections
  }
}

extension Observable2DArrayEvent: Sendable where Metadata: Sendable, Item: Sendable {}
