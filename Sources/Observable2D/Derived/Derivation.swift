import ReactiveCore

/// The rule of a derived array (filtered, mapped, sorted, grouped): how its state follows
/// from its source's, and how each change of the source changes it.
///
/// A derivation keeps whatever indexes it needs to turn a change of *k* source rows into
/// its own changes in O(*k* log *n*); ``rebuild(from:)`` sets them up from a whole state.
@usableFromInline
protocol Derivation<SourceMetadata, SourceItem, Metadata, Item> {
  associatedtype SourceMetadata
  associatedtype SourceItem
  associatedtype Metadata
  associatedtype Item

  typealias SourceSection = Observable2DArraySection<SourceMetadata, SourceItem>
  typealias Section = Observable2DArraySection<Metadata, Item>
  typealias SourceChangeset = Changeset<SourceMetadata, SourceItem>

  /// Sets the indexes up for `source` and returns the derived state.
  @inlinable
  mutating func rebuild(from source: [SourceSection]) -> [Section]

  /// About how many derived rows deriving `changeset` step by step would touch; above
  /// ``DerivationLink/stepLimit`` the link rebuilds instead.
  @inlinable
  func work(for changeset: SourceChangeset) -> Int

  /// Changes `sections` (the derived state) as the source's `changeset` requires, and
  /// returns the changeset of that change.
  ///
  /// `complete` is `false` only when the derivation's indexes disagreed with `sections` (a
  /// defect): the changeset then leads to the state reached so far, from which the link
  /// rebuilds.
  @inlinable
  mutating func derive(_ changeset: SourceChangeset, into sections: inout [Section])
    -> (changeset: Changeset<Metadata, Item>, complete: Bool)

  /// The changeset of a single step of the source (the usual change of one row), derived
  /// from the indexes alone, with the indexes updated; the link applies it to `sections` as
  /// the source applied its own. `nil`, before changing anything, when the step takes the
  /// general path (``derive(_:into:)``).
  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Metadata, Item>?

  /// The ids of the derived sections whose metadata `changeset` may have changed, for the
  /// diff that follows a rebuild.
  @inlinable
  func changedSectionIDs(in changeset: SourceChangeset) -> Set<Int64>

  /// The changeset from `old`, derived by `previous`, to `new`, which this derivation
  /// (`previous` with a new rule) rebuilt from the same source state: values are the same.
  @inlinable
  func changeOfRule(from old: [Section], to new: [Section], previous: Self)
    -> Changeset<Metadata, Item>
}

extension Derivation {
  @inlinable
  func work(for changeset: SourceChangeset) -> Int {
    changeset.rowCount
  }

  @inlinable
  func changeOfRule(from old: [Section], to new: [Section], previous: Self)
    -> Changeset<Metadata, Item>
  {
    Changeset.byIDs(from: old, to: new, changedItems: [], changedSections: [])
  }

  @inlinable
  mutating func deriveSingle(_ step: SourceChangeset.Step, from sections: [Section])
    -> Changeset<Metadata, Item>?
  {
    nil
  }

  @inlinable
  func changedSectionIDs(in changeset: SourceChangeset) -> Set<Int64> {
    var items = Set<Int64>()
    var sections = Set<Int64>()
    changeset.collectChangedIDs(items: &items, sections: &sections)
    return sections
  }
}

/// A derivation that turns each single step of the source (``Changeset/steps``) into
/// mutations of an editor of the derived state, which composes them into one changeset.
@usableFromInline
protocol StepDerivation: Derivation {
  /// Applies one step of the source, in the index spaces the steps before it left.
  @inlinable
  mutating func apply(
    _ step: SourceChangeset.Step, to editor: inout Observable2DArrayEditor<Metadata, Item>
  ) throws(Observable2DArrayError)

  /// Ends a changeset's steps (a grouped array removes the groups they emptied here, so
  /// that a group emptied and filled again within one change stays the same section).
  @inlinable
  mutating func finishSteps(_ editor: inout Observable2DArrayEditor<Metadata, Item>)
    throws(Observable2DArrayError)
}

extension StepDerivation {
  @inlinable
  mutating func derive(_ changeset: SourceChangeset, into sections: inout [Section])
    -> (changeset: Changeset<Metadata, Item>, complete: Bool)
  {
    var editor = Observable2DArrayEditor<Metadata, Item>.editing(sections, keepingOldState: false)
    sections = []
    defer { sections = editor.sections }
    do throws(Observable2DArrayError) {
      if let step = changeset.onlyStep {
        try apply(step, to: &editor)
      } else {
        for step in changeset.steps { try apply(step, to: &editor) }
      }
      try finishSteps(&editor)
    } catch {
      return (editor.changeset, false)
    }
    return (editor.changeset, true)
  }

  @inlinable
  mutating func finishSteps(_ editor: inout Observable2DArrayEditor<Metadata, Item>)
    throws(Observable2DArrayError)
  {}
}

/// Keeps a derived array in step with its source: it receives the source's events in order
/// and turns each into the derived array's event with its derivation.
///
/// All its work runs under one lock, on the thread that delivers the source's events (a
/// change of rule reads the source in order with them, ``Observable2DArray/read(inOrder:)``),
/// so the derivation is never used by two threads at once, and the derived events are queued
/// in the order of the source's.
///
/// `@unchecked Sendable`: the derivation and the started flag are behind `derivation`'s lock,
/// `source` is immutable, the target is a weak reference to a thread-safe array, and the
/// subscription is set once before anything can read it.
@usableFromInline
final class DerivationLink<D: Derivation>: @unchecked Sendable {
  /// Source changes that touch more derived rows than this are derived by a rebuild and a
  /// diff (O(*n*)) rather than step by step.
  @inlinable
  static var stepLimit: Int { 512 }

  @usableFromInline
  struct State {
    @usableFromInline
    var derivation: D
    /// Whether the source's initial state arrived.
    @usableFromInline
    var started = false

    @inlinable
    init(derivation: D) {
      self.derivation = derivation
    }
  }

  @usableFromInline
  let state: Locked<State>
  @usableFromInline
  let source: Observable2DArray<D.SourceMetadata, D.SourceItem>
  @usableFromInline
  weak var target: Observable2DArray<D.Metadata, D.Item>?
  @usableFromInline
  let subscription = SerialDisposable()

  @inlinable
  init(source: Observable2DArray<D.SourceMetadata, D.SourceItem>, derivation: D) {
    self.source = source
    state = Locked(State(derivation: derivation))
  }

  deinit {
    subscription.dispose()
  }

  /// Starts following the source into `target`: its state arrives first (before this
  /// returns unless another thread is delivering the source's events), then every event.
  @inlinable
  func start(into target: Observable2DArray<D.Metadata, D.Item>) {
    self.target = target
    subscription.replace(
      with: source.subscribe(
        initialWithVersion: { [weak self] sections, version in
          self?.rederive(from: sections, version: version, change: nil)
        },
        observer: Observer { [weak self] event in
          switch event {
          case .next(let event): self?.receive(event)
          case .failed(let error): self?.finish(error)
          case .completed: self?.finish(nil)
          }
        }))
  }

  /// Changes the derivation's rule and re-derives from the source's state at this point
  /// of its events (see ``Observable2DArray/read(inOrder:)`` for when that happens).
  @inlinable
  func change(_ body: @escaping (inout D) -> Void) {
    source.read { [weak self] sections, version in
      self?.rederive(from: sections, version: version, change: body)
    }
  }

  @inlinable
  func receive(_ event: Observable2DArrayEvent<D.SourceMetadata, D.SourceItem>) {
    guard let target else { return }
    state.withLock { state in
      guard state.started else { return }
      target.state.withLock { targetState in
        var sections = targetState.sections
        targetState.sections = []
        var changesets: [Changeset<D.Metadata, D.Item>] = []
        if let step = event.changeset.onlyStep,
          let changeset = state.derivation.deriveSingle(step, from: sections)
        {
          changeset.applyWithoutValidation(to: &sections)
          changesets.append(changeset)
        } else if state.derivation.work(for: event.changeset) <= Self.stepLimit {
          let (changeset, complete) = state.derivation.derive(event.changeset, into: &sections)
          changesets.append(changeset)
          if !complete {
            // The derivation lost track (a defect): the state reached so far goes out with
            // its changeset, then the source's state derived again, with the difference.
            targetState.sections = sections
            targetState.version = event.version
            Observable2DArray<D.Metadata, D.Item>.enqueue(
              changeset, in: &targetState, silent: event.isSilent)
            changesets = [rebuild(&state.derivation, &sections, from: event.sections)]
          }
        } else {
          var items = Set<Int64>()
          var unused = Set<Int64>()
          event.changeset.collectChangedIDs(items: &items, sections: &unused)
          let new = state.derivation.rebuild(from: event.sections)
          changesets.append(
            Changeset.byIDs(
              from: sections, to: new, changedItems: items,
              changedSections: state.derivation.changedSectionIDs(in: event.changeset)))
          sections = new
        }
        targetState.sections = sections
        targetState.version = event.version
        for changeset in changesets {
          Observable2DArray<D.Metadata, D.Item>.enqueue(
            changeset, in: &targetState, silent: event.isSilent)
        }
      }
    }
    target.deliverPending()
  }

  /// Rebuilds `sections` from the source's `source` state after a failed step; returns the
  /// changeset from what `sections` held.
  @inlinable
  func rebuild(
    _ derivation: inout D, _ sections: inout [Observable2DArraySection<D.Metadata, D.Item>],
    from source: [Observable2DArraySection<D.SourceMetadata, D.SourceItem>]
  ) -> Changeset<D.Metadata, D.Item> {
    let new = derivation.rebuild(from: source)
    var items = Set<Int64>()
    for section in new { for id in section.items.ids { items.insert(id) } }
    let changeset = Changeset.byIDs(
      from: sections, to: new, changedItems: items, changedSections: Set(new.map(\.id)))
    sections = new
    return changeset
  }

  /// Derives the whole state again from `sections` of the source, after `change` (if any)
  /// changed the rule, and emits the difference: values are the same, so only what the
  /// rule places differently (inclusion, order, groups) changes.
  @inlinable
  func rederive(
    from sections: [Observable2DArraySection<D.SourceMetadata, D.SourceItem>], version: Int64,
    change: ((inout D) -> Void)?
  ) {
    guard let target else { return }
    state.withLock { state in
      let previous = state.derivation
      change?(&state.derivation)
      let new = state.derivation.rebuild(from: sections)
      target.state.withLock { targetState in
        let changeset: Changeset<D.Metadata, D.Item>
        if !state.started {
          // The first state: everything is new to whoever subscribed before it arrived.
          changeset = Changeset(
            insertedSections: new.enumerated().map { index, section in
              .init(index: index, id: section.id, metadata: section.metadata, items: section.items)
            })
        } else {
          changeset = state.derivation.changeOfRule(
            from: targetState.sections, to: new, previous: previous)
        }
        state.started = true
        targetState.sections = new
        targetState.version = version
        Observable2DArray<D.Metadata, D.Item>.enqueue(changeset, in: &targetState)
      }
    }
    target.deliverPending()
  }

  @inlinable
  func finish(_ error: (any Error)?) {
    guard let target else { return }
    target.state.withLock { $0.enqueue(.finish(error)) }
    target.deliverPending()
  }
}

extension Changeset {
  /// The one step of a changeset of one entry (a store's usual change), without the
  /// bookkeeping of ``steps``; `nil` for any other changeset.
  @inlinable
  var onlyStep: Step? {
    guard entryCount == 1 else { return nil }
    if let entry = updatedItems.first {
      return .updateItem(at: entry.at, id: entry.id, value: entry.value)
    }
    if let entry = insertedItems.first {
      return .insertItem(at: entry.at, id: entry.id, value: entry.value)
    }
    if let entry = deletedItems.first { return .deleteItem(at: entry.at, id: entry.id) }
    if let entry = movedItems.first {
      return .moveItem(from: entry.from, to: entry.to, id: entry.id, value: entry.value)
    }
    if let entry = updatedSections.first {
      return .updateSection(at: entry.index, id: entry.id, metadata: entry.metadata)
    }
    if let entry = deletedSections.first { return .deleteSection(at: entry.index, id: entry.id) }
    if let entry = insertedSections.first { return .insertSection(at: entry.index, entry.section) }
    if let entry = movedSections.first {
      return .moveSection(from: entry.from, to: entry.to, id: entry.id, metadata: entry.metadata)
    }
    return nil
  }
}

extension Observable2DArrayEditor {
  /// Inserts item `id` at `row` of `section` for a derivation: new to the batch when
  /// `previous` is `nil`, else taken out of the editor earlier with that value — a move,
  /// unless it `stays` where it was, when it is an update if its value changed.
  @inlinable
  mutating func put(
    _ value: Item, id: Int64, section: Int, row: Int, previous: Item?, stays: Bool
  ) {
    guard let previous else {
      insertEntry(value, id: id, section: section, row: row, moved: true)
      return
    }
    insertEntry(value, id: id, section: section, row: row, moved: !stays)
    if stays && !dynamicallyEqual(previous, value) { setValue(value, section: section, row: row) }
  }
}
