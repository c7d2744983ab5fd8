public import FoundationEssentials

#if !canImport(UIKit)
  extension IndexPath {
    /// Creates an index path that names an item in a section, as UIKit's collection views do.
    ///
    /// - Parameters:
    ///   - item: The index of the item within its section.
    ///   - section: The index of the section.
    public init(item: Int, section: Int) {
      self.init(indexes: [section, item])
    }

    /// Creates an index path that names a row in a section, as UIKit's table views do.
    ///
    /// - Parameters:
    ///   - row: The index of the row within its section.
    ///   - section: The index of the section.
    public init(row: Int, section: Int) {
      self.init(indexes: [section, row])
    }

    /// The section of a two-element index path (its first index).
    ///
    /// Like UIKit, this traps when the index path has fewer than two indexes; the 2D array's
    /// throwing APIs check the length first and report an error instead.
    public var section: Int {
      get { self[0] }
      set { self[0] = newValue }
    }

    /// The item of a two-element index path (its second index).
    ///
    /// Like UIKit, this traps when the index path has fewer than two indexes.
    public var item: Int {
      get { self[1] }
      set { self[1] = newValue }
    }

    /// The row of a two-element index path (its second index); the same as ``item``.
    ///
    /// Like UIKit, this traps when the index path has fewer than two indexes.
    public var row: Int {
      get { self[1] }
      set { self[1] = newValue }
    }
  }
#endif

extension IndexPath {
  /// A short `[section, row]` rendering used in error messages.
  var shortDescription: String {
    "[" + map(String.init).joined(separator: ", ") + "]"
  }
}
