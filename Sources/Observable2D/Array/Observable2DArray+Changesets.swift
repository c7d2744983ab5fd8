import ReactiveCore

extension Changeset {
  /// One changeset with the effect of `changesets` applied in order to `old`, given the
  /// state `new` they lead to: what a consumer that fell behind receives instead of each
  /// of them.
  ///
  /// Sections and items are matched by id. The values and metadata of the rows the
  /// changesets update or move are reported as changed (with their values in `new`);
  /// the others are not compared, so neither `Item` nor `Metadata` needs to be
  /// `Equatable`. Rows that `changesets` insert and remove again do not appear.
  ///
  /// - Parameters:
  ///   - changesets: Changesets that turn `old` into `new`, in order.
  ///   - old: The state before the first of them.
  ///   - new: The state after the last of them.
  /// - Returns: A changeset that turns `old` into `new`.
  /// - Complexity: O(*n*) for *n* sections and items, plus the changesets' entries.
  public static func coalescing(
    _ changesets: some Sequence<Changeset>, from old: [Section], to new: [Section]
  ) -> Changeset {
    var items = Set<Int64>()
    var sections = Set<Int64>()
    for changeset in changesets { changeset.collectChangedIDs(items: &items, sections: &sections) }
    return byIDs(from: old, to: new, changedItems: items, changedSections: sections)
  }

  /// The changeset from `old` to `new`, matching sections and items by id and taking the
  /// rows whose values or metadata changed from `changedItems` and `changedSections`
  /// instead of comparing them.
  ///
  /// - Complexity: O(*n*) for *n* sections and items.
  @usableFromInline
  package static func byIDs(
    from old: [Section], to new: [Section], changedItems: Set<Int64>,
    changedSections: Set<Int64>
  ) -> Changeset {
    Differ(
      old: old, new: new, pairs: SectionPairs(old: old, new: new, pairing: .ids), symbols: nil,
      isEqual: { _, _ in true }, metadataIsEqual: { _, _ in true },
      changedItemIDs: changedItems, changedSectionIDs: changedSections
    ).run()
  }

  /// Adds the ids of the items and sections whose values or metadata this changeset sets
  /// (updated, moved or inserted ones).
  @usableFromInline
  package func collectChangedIDs(items: inout Set<Int64>, sections: inout Set<Int64>) {
    for entry in updatedItems { items.insert(entry.id) }
    for entry in movedItems { items.insert(entry.id) }
    for entry in insertedItems { items.insert(entry.id) }
    for section in insertedSections {
      sections.insert(section.id)
      for id in section.items.ids { items.insert(id) }
    }
    for section in updatedSections { sections.insert(section.id) }
    for section in movedSections { sections.insert(section.id) }
  }

  /// How many sections and items it names, an inserted section with its items.
  @usableFromInline
  var rowCount: Int {
    deletedSections.count + movedSections.count + updatedSections.count
      + insertedSections.reduce(0) { $0 + 1 + $1.items.count } + deletedItems.count
      + insertedItems.count + movedItems.count + updatedItems.count
  }
}

extension Observable2DArray where Metadata: Sendable, Item: Sendable {
  /// The changesets the array emits from now on, as an asynchronous sequence that ends
  /// when the array's events complete and throws when they fail.
  ///
  /// **Buffering.** Changesets wait until the loop asks for them. A loop that falls
  /// behind by more than `limit` changesets, or by more changed rows than
  /// `entryLimit`, receives what waits coalesced into one changeset
  /// (``Changeset/coalescing(_:from:to:)``) that has the same effect: no change is
  /// dropped, and what is held stays bounded by the array's size and those limits,
  /// however slow the loop (two states of the array and the waiting changesets). Each
  /// element is valid for the state the previous one led to, starting from ``sections``
  /// at the call.
  ///
  /// ```swift
  /// for try await changeset in array.changesets() {
  ///   tableView.apply(changeset)
  /// }
  /// ```
  ///
  /// Releasing the sequence (which a loop over `array.changesets()` does when it ends) or
  /// cancelling the loop's task ends the subscription; the sequence keeps the array alive
  /// while it exists.
  /// - Parameters:
  ///   - limit: How many changesets may wait before they are coalesced.
  ///   - entryLimit: How many changed sections and items may wait before they are.
  /// - Returns: The sequence.
  public func changesets(bufferingLimit limit: Int = 64, entryLimit: Int = 65_536)
    -> AsyncThrowingStream<Changeset<Metadata, Item>, any Error>
  {
    let buffer = ChangesetBuffer<Metadata, Item>(limit: max(1, limit), entryLimit: entryLimit)
    let subscription = subscribe(
      initial: { buffer.start(from: $0) },
      observer: Observer { event in
        switch event {
        case .next(let event): buffer.push(event)
        case .failed(let error): buffer.end(failing: error)
        case .completed: buffer.end(failing: nil)
        }
      })
    let holder = ChangesetBuffer<Metadata, Item>.Holder(
      buffer: buffer, subscription: subscription, source: self)
    return AsyncThrowingStream { try await holder.next() }
  }
}

/// The changesets waiting for a loop over ``Observable2DArray/changesets(bufferingLimit:entryLimit:)``,
/// coalesced when too many wait.
///
/// `@unchecked Sendable`: `state` is only touched under its lock.
final class ChangesetBuffer<Metadata: Sendable, Item: Sendable>: @unchecked Sendable {
  typealias Section = Observable2DArraySection<Metadata, Item>

  /// Keeps the subscription, and the array, for as long as the sequence is iterated.
  final class Holder: Sendable {
    let buffer: ChangesetBuffer
    let subscription: any Disposable
    /// Holding the array keeps a stored list's observation going.
    let source: Observable2DArray<Metadata, Item>

    init(
      buffer: ChangesetBuffer, subscription: any Disposable,
      source: Observable2DArray<Metadata, Item>
    ) {
      self.buffer = buffer
      self.subscription = subscription
      self.source = source
    }

    deinit { subscription.dispose() }

    func next() async throws -> Changeset<Metadata, Item>? { try await buffer.next() }
  }

  private struct State {
    /// The state the loop has been given so far (its last element led to).
    var given: [Section] = []
    /// The state the last waiting changeset leads to.
    var latest: [Section] = []
    /// What waits, in order.
    var waiting: [Changeset<Metadata, Item>] = []
    var waitingEntries = 0
    /// How many rows waiting changesets may name before they are coalesced again: the
    /// limit, or twice the last coalesced changeset, so that one large change does not
    /// make every later one coalesce again.
    var coalescingBound = 0
    /// The end, once the events ended: `.some(nil)` for completion.
    var end: (any Error)??
    /// A loop waiting for the next element.
    var waiter: CheckedContinuation<Changeset<Metadata, Item>?, any Error>?
    /// How many times waiting changesets were coalesced (for tests).
    var coalescings = 0
  }

  private let state = Locked(State())
  let limit: Int
  let entryLimit: Int

  init(limit: Int, entryLimit: Int) {
    self.limit = limit
    self.entryLimit = entryLimit
  }

  /// How many times waiting changesets were coalesced so far.
  var coalescings: Int { state.withLock { $0.coalescings } }

  func start(from sections: [Section]) {
    state.withLock { state in
      state.given = sections
      state.latest = sections
      state.coalescingBound = entryLimit
    }
  }

  func push(_ event: Observable2DArrayEvent<Metadata, Item>) {
    let handed = state.withLock {
      state -> CheckedContinuation<Changeset<Metadata, Item>?, any Error>? in
      if state.waiting.isEmpty, let waiter = state.waiter {
        state.waiter = nil
        state.given = event.sections
        state.latest = event.sections
        return waiter
      }
      state.waiting.append(event.changeset)
      state.latest = event.sections
      state.waitingEntries += event.changeset.rowCount
      if state.waiting.count > limit || state.waitingEntries > state.coalescingBound {
        let merged = Changeset.coalescing(state.waiting, from: state.given, to: event.sections)
        state.waiting = merged.isEmpty ? [] : [merged]
        state.waitingEntries = merged.rowCount
        state.coalescingBound = max(entryLimit, 2 * merged.rowCount)
        state.coalescings += 1
      }
      return nil
    }
    handed?.resume(returning: event.changeset)
  }

  func end(failing error: (any Error)?) {
    let waiter = state.withLock { state in
      state.end = .some(error)
      defer { state.waiter = nil }
      return state.waiting.isEmpty ? state.waiter : nil
    }
    guard let waiter else { return }
    if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
  }

  func next() async throws -> Changeset<Metadata, Item>? {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let ready = state.withLock { state -> Result<Changeset<Metadata, Item>?, any Error>? in
          if !state.waiting.isEmpty {
            let changeset = state.waiting.removeFirst()
            state.waitingEntries -= changeset.rowCount
            if state.waiting.isEmpty {
              state.given = state.latest
            } else {
              // The state it leads to, for what waits after it: O(its entries).
              do {
                state.given = try changeset.applied(to: state.given)
              } catch {
                return .failure(error)
              }
            }
            return .success(changeset)
          }
          if let end = state.end { return end.map { .failure($0) } ?? .success(nil) }
          if Task.isCancelled { return .success(nil) }
          state.waiter = continuation
          return nil
        }
        if let ready { continuation.resume(with: ready) }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: nil)
    }
  }
}
