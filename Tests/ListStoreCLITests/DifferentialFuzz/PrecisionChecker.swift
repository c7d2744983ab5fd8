import Foundation
import ListStore
import Observable2D
import ReactiveCore

/// Checks what a table view cannot see: that every changeset of an array says exactly
/// what changed, as `docs/changesets.md` defines it, and no more. A changeset that lists
/// unchanged rows as updated, or deletes and inserts a row that stays, still applies —
/// which is how an observer that silently reloaded its whole list would go unnoticed.
///
/// - An updated section or item has new metadata or a new value ("'Updated' means that
///   the metadata or the value changed").
/// - A section that exists before and after is neither deleted nor inserted.
/// - An item in a section that exists before and after, and in one after, is neither
///   deleted nor inserted; an item leaving a deleted section or joining an inserted one
///   is not moved (rule 3).
final class PrecisionChecker: @unchecked Sendable {
  // `state` and `found` are touched only under `lock`; events arrive on any thread.
  private let lock = NSLock()
  private var state: [Observable2DArraySection<RawJSON, RawJSON>] = []
  private var found: [String] = []
  private let bag = DisposeBag()

  /// Starts checking `array`'s events from its current state.
  init(_ array: Observable2DArray<RawJSON, RawJSON>) {
    array.subscribe(
      initial: { [weak self] sections in self?.lock.withLock { self?.state = sections } },
      onNext: { [weak self] event in self?.check(event) }
    ).disposed(by: bag)
  }

  /// What was imprecise, one line per changeset (empty when all were exact).
  var problems: [String] { lock.withLock { found } }

  private func check(_ event: Observable2DArrayEvent<RawJSON, RawJSON>) {
    lock.withLock {
      let problems = Self.imprecision(of: event.changeset, from: state, to: event.sections)
      if !problems.isEmpty {
        found.append(problems.joined(separator: "; ") + " — in \(event.changeset)")
      }
      state = event.sections
    }
  }

  /// The ways `changeset`, which leads from `before` to `after`, says more than what changed.
  static func imprecision(
    of changeset: Changeset<RawJSON, RawJSON>,
    from before: [Observable2DArraySection<RawJSON, RawJSON>],
    to after: [Observable2DArraySection<RawJSON, RawJSON>]
  ) -> [String] {
    func sections(_ state: [Observable2DArraySection<RawJSON, RawJSON>]) -> [Int64: String] {
      Dictionary(state.map { ($0.id, $0.metadata.text) }, uniquingKeysWith: { first, _ in first })
    }
    func items(_ state: [Observable2DArraySection<RawJSON, RawJSON>]) -> [Int64: (
      section: Int64, value: String
    )] {
      var result: [Int64: (section: Int64, value: String)] = [:]
      for section in state {
        for entry in section.items.entries { result[entry.id] = (section.id, entry.value.text) }
      }
      return result
    }
    let (sectionsBefore, sectionsAfter) = (sections(before), sections(after))
    let (itemsBefore, itemsAfter) = (items(before), items(after))
    let staying = Set(sectionsBefore.keys).intersection(sectionsAfter.keys)
    var problems: [String] = []
    for update in changeset.updatedSections where sectionsBefore[update.id] == update.metadata.text
    {
      problems.append("section \(update.id) is listed as updated with its metadata unchanged")
    }
    for update in changeset.updatedItems where itemsBefore[update.id]?.value == update.value.text {
      problems.append("item \(update.id) is listed as updated with its value unchanged")
    }
    for entry in changeset.deletedSections where staying.contains(entry.id) {
      problems.append("section \(entry.id) is listed as deleted, yet it stays")
    }
    for entry in changeset.insertedSections where staying.contains(entry.id) {
      problems.append("section \(entry.id) is listed as inserted, yet it was there")
    }
    let deleted = Set(changeset.deletedItems.map(\.id))
    let inserted = Set(changeset.insertedItems.map(\.id))
    let moved = Set(changeset.movedItems.map(\.id))
    for (id, old) in itemsBefore {
      guard let new = itemsAfter[id] else { continue }
      let stays = staying.contains(old.section) && staying.contains(new.section)
      if stays && (deleted.contains(id) || inserted.contains(id)) {
        problems.append("item \(id) stays, yet it is listed as deleted or inserted")
      }
      if !stays && moved.contains(id) {
        problems.append("item \(id) is listed as moved out of a deleted section or into a new one")
      }
    }
    return problems
  }
}
