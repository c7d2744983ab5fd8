public import Observable2D
public import Observation
import ReactiveCore

/// A stored list as an `@Observable` model for SwiftUI and any other user of Swift's
/// Observation: its sections, their metadata and items, and the last changeset, kept up
/// to date with every committed change to the list — by this process, another process,
/// or any SQLite client.
///
/// ```swift
/// @MainActor struct CitiesView: View {
///   @State var model: ListModel<SectionMetadata, City>
///   var body: some View {
///     List(model.sections) { section in
///       Section(section.metadata.header) {
///         ForEach(section.items.entries, id: \.id) { Text($0.value.name) }
///       }
///     }
///   }
/// }
/// // let model = try ListModel(cities)
/// ```
///
/// **Where it changes.** On the main actor: it is `@MainActor`, and follows the list
/// through ``StoredList/observe(on:undecodable:)`` with the main queue. A write made on the
/// main actor has changed the model when it returns; other writes and other processes'
/// commits reach it on the main queue a moment after their commit (``synchronize()``
/// brings everything committed in at once).
///
/// **What changes.** Each change sets only what it changed, so a view that reads only part
/// of the model is invalidated only by changes to that part:
/// * ``sections`` when sections are inserted, deleted or moved (not when their contents
///   change: each section is an object of its own);
/// * a section's ``Section/items`` when items are inserted into, deleted from, moved
///   within, into or out of, or updated in that section;
/// * a section's ``Section/metadata`` when its metadata is updated, or when it moves
///   (its metadata is then set again, equal or not);
/// * ``lastChangeset`` for every change, and ``isFinished`` and ``failure`` when the
///   observation ends.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class ListModel<Metadata: Codable & Sendable, Item: Codable & Sendable> {
  /// One section of the model: an object, so that a change to one section's items
  /// invalidates only the views that read that section.
  @MainActor @Observable
  public final class Section: Identifiable {
    /// The section's stable id.
    public let id: Int64
    /// The section's metadata.
    public internal(set) var metadata: Metadata
    /// The section's items with their ids (`items.entries` pairs each with its id).
    public internal(set) var items: ItemList<Item>

    init(_ section: Observable2DArraySection<Metadata, Item>) {
      id = section.id
      metadata = section.metadata
      items = section.items
    }
  }

  /// The sections, in order.
  public private(set) var sections: [Section] = []
  /// The changeset of the last change, `nil` before the first.
  public private(set) var lastChangeset: Changeset<Metadata, Item>?
  /// Whether the observation ended: the list was deleted, or it failed (see ``failure``).
  public private(set) var isFinished = false
  /// The error the observation failed with, such as ``ListStoreError/undecodable(_:)``.
  public private(set) var failure: (any Error)?

  @ObservationIgnored private let repository: Repository?
  @ObservationIgnored private let array: Observable2DArray<Metadata, Item>
  @ObservationIgnored private let bag = DisposeBag()

  /// Starts following `list`, from its current state.
  /// - Parameters:
  ///   - list: The stored list.
  ///   - undecodable: What to do with a row that does not decode.
  /// - Throws: What ``StoredList/observe(undecodable:)`` throws.
  public convenience init(
    _ list: StoredList<Metadata, Item>, undecodable: UndecodableRowPolicy<Metadata, Item> = .fail
  ) throws(ListStoreError) {
    self.init(
      onMain: try list.observe(on: .main, undecodable: undecodable), repository: list.repository)
  }

  /// Starts following an observable 2D array from its current state: a list's observation,
  /// or an array derived from one — filtered, sorted, grouped — so that a view shows the
  /// derived list with the same fine-grained invalidation.
  ///
  /// ```swift
  /// let results = try cities.observe().filterItems { $0.name.hasPrefix("B") }
  /// let model = ListModel(following: results.sortedItems { $0.name < $1.name })
  /// ```
  ///
  /// The model changes on the main queue (it follows `array.delivered(on: .main)`).
  /// - Parameters:
  ///   - array: The array to follow.
  ///   - repository: The repository whose commits ``synchronize()`` brings in, if any.
  public convenience init(
    following array: Observable2DArray<Metadata, Item>, repository: Repository? = nil
  ) {
    self.init(onMain: array.delivered(on: .main), repository: repository)
  }

  /// Follows `array`, whose state and events change on the main queue.
  private init(onMain array: Observable2DArray<Metadata, Item>, repository: Repository?) {
    self.repository = repository
    self.array = array
    // The array changes only on the main queue, where this runs: the state read here is
    // the one its next event starts from.
    sections = array.sections.map(Section.init)
    array.subscribe(
      onNext: { [weak self] event in
        MainActor.assumeIsolated { self?.apply(event) }
      },
      onError: { [weak self] error in
        MainActor.assumeIsolated { self?.finish(failure: error) }
      },
      onCompleted: { [weak self] in
        MainActor.assumeIsolated { self?.finish(failure: nil) }
      }
    ).disposed(by: bag)
  }

  /// Brings the model up to date with everything committed so far, by any process,
  /// before returning: ``Repository/synchronizeObservers()`` (of the list's repository, or
  /// of the one given to ``init(following:repository:)``), then applies on the spot what it
  /// and earlier commits handed to the main queue.
  public func synchronize() {
    repository?.synchronizeObservers()
    (array as? QueueBoundObservable2DArray<Metadata, Item>)?.flush()
  }

  private func apply(_ event: Observable2DArrayEvent<Metadata, Item>) {
    let changeset = event.changeset
    let old = sections
    let new = event.sections
    // Sections whose items changed, by id (old index paths name old sections, new ones new).
    var itemsChanged = Set<Int64>()
    for entry in changeset.deletedItems { itemsChanged.insert(old[entry.at[0]].id) }
    for entry in changeset.updatedItems { itemsChanged.insert(old[entry.at[0]].id) }
    for entry in changeset.insertedItems { itemsChanged.insert(new[entry.at[0]].id) }
    for entry in changeset.movedItems {
      itemsChanged.insert(old[entry.from[0]].id)
      itemsChanged.insert(new[entry.to[0]].id)
    }
    var metadataChanged = Set<Int64>()
    for entry in changeset.updatedSections { metadataChanged.insert(entry.id) }
    for entry in changeset.movedSections { metadataChanged.insert(entry.id) }

    let structureChanged =
      !changeset.insertedSections.isEmpty || !changeset.deletedSections.isEmpty
      || !changeset.movedSections.isEmpty
    var byID: [Int64: Section] = [:]
    for section in old { byID[section.id] = section }
    var rebuilt: [Section] = []
    rebuilt.reserveCapacity(new.count)
    for section in new {
      guard let kept = byID[section.id] else {
        rebuilt.append(Section(section))
        continue
      }
      if itemsChanged.contains(section.id) { kept.items = section.items }
      if metadataChanged.contains(section.id) { kept.metadata = section.metadata }
      rebuilt.append(kept)
    }
    if structureChanged { sections = rebuilt }
    lastChangeset = changeset
  }

  private func finish(failure: (any Error)?) {
    isFinished = true
    self.failure = failure
  }
}
