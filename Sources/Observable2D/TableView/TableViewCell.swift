public import ReactiveCore

/// A text label of a headless table view cell, as `UILabel` is to `UITableViewCell`.
public final class TableViewLabel {
  /// The label's text.
  public var text: String?

  /// Creates an empty label.
  public init() {}
}

/// A reusable row of a headless ``TableView``: its texts, its reuse identifier and a
/// ``DisposeBag`` for the bindings of its current content.
///
/// Cells are recycled like UIKit's: a cell that leaves the table goes to a reuse pool, and
/// ``TableView/dequeueReusableCell(withIdentifier:for:)`` hands it out again after calling
/// ``prepareForReuse()``, which drops its bindings and clears its texts. Subclass it (with
/// ``TableView/register(_:forCellReuseIdentifier:)``) to add content.
///
/// ```swift
/// let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
/// cell.textLabel?.text = dataSource[indexPath]
/// viewModel.detail.bind { cell.detailText = $0 }.disposed(by: cell.bag)
/// ```
open class TableViewCell {
  /// The identifier the cell is recycled under.
  public let reuseIdentifier: String?

  /// The main label (never `nil`; optional as in UIKit, so `cell.textLabel?.text = …` reads
  /// the same).
  public let textLabel: TableViewLabel?

  /// The secondary label (never `nil`; optional as in UIKit).
  public let detailTextLabel: TableViewLabel?

  /// The bindings of the cell's current content, disposed when the cell is reused.
  public var bag = DisposeBag()

  /// Creates a cell.
  ///
  /// - Parameter reuseIdentifier: The identifier it is recycled under.
  public required init(reuseIdentifier: String?) {
    self.reuseIdentifier = reuseIdentifier
    self.textLabel = TableViewLabel()
    self.detailTextLabel = TableViewLabel()
  }

  /// The main label's text.
  public var text: String? {
    get { textLabel?.text }
    set { textLabel?.text = newValue }
  }

  /// The secondary label's text.
  public var detailText: String? {
    get { detailTextLabel?.text }
    set { detailTextLabel?.text = newValue }
  }

  /// Called before the cell is handed out again: replaces ``bag`` (disposing the old bindings)
  /// and clears the texts. Overrides must call `super`.
  open func prepareForReuse() {
    bag = DisposeBag()
    text = nil
    detailText = nil
  }
}
