/// One section of a 2D array: a stable id, its metadata (a header and footer, or any value) and
/// its items.
///
/// ```swift
/// typealias SectionMetadata = (header: String, footer: String)
/// let cities = Observable2DArraySection<SectionMetadata, String>(
///   metadata: (header: "Cities", footer: "That's it"),
///   items: ["Paris", "Berlin"]
/// )
/// ```
///
/// A section made from plain items has id `0` and items with id `0` ("not assigned yet"); a
/// ``MutableObservable2DArray`` gives them fresh ids when they enter it.
public struct Observable2DArraySection<Metadata, Item> {
  /// The section's stable id; `0` means "not assigned yet".
  public var id: Int64

  /// The section's metadata, for example its header and footer titles.
  public var metadata: Metadata

  /// The section's items, each with its stable id.
  public var items: ItemList<Item>

  /// Creates a section whose id and item ids are not assigned yet (`0`).
  ///
  /// - Parameters:
  ///   - metadata: The section's metadata.
  ///   - items: The section's items, in order.
  /// - Complexity: O(*n*) for *n* items.
  @inlinable
  public init(metadata: Metadata, items: [Item] = []) {
    self.id = 0
    self.metadata = metadata
    self.items = ItemList(items)
  }

  /// Creates a section with an explicit id and items that carry their own ids.
  ///
  /// - Parameters:
  ///   - id: The section's stable id (`0` when not assigned yet).
  ///   - metadata: The section's metadata.
  ///   - items: The section's items with their ids.
  /// - Complexity: O(1).
  @inlinable
  public init(id: Int64, metadata: Metadata, items: ItemList<Item> = []) {
    self.id = id
    self.metadata = metadata
    self.items = items
  }

  /// The number of items in the section.
  ///
  /// - Complexity: O(1).
  @inlinable
  public var count: Int { items.count }
}

extension Observable2DArraySection: Equatable where Metadata: Equatable, Item: Equatable {}
extension Observable2DArraySection: Sendable where Metadata: Sendable, Item: Sendable {}

extension Observable2DArraySection: CustomStringConvertible {
  /// The id, metadata and items, for logs and test failures.
  public var description: String {
    "Section(id: \(id), metadata: \(metadata), items: \(items.debugDescription))"
  }
}
