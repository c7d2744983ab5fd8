public import Dispatch
import Foundation
public import ListStore
import ReactiveCore

/// Records every changeset of an observable 2D array — a stored list's, or any other — for
/// assertions: the next one with ``expect(next:_:fileID:filePath:line:column:)``, the whole sequence with
/// ``changesets`` or, as `liststore watch --json` lines, with ``transcript()``.
///
/// Recording is deterministic: ``settle()`` returns once every change committed before it
/// has been recorded — this process's writes are delivered before they return, and other
/// connections' and processes' commits are brought in by
/// `Repository.synchronizeObservers()` — so a test never sleeps or polls.
/// The `expect` methods settle first.
///
/// ```swift
/// let recorder = try ChangesetRecorder(cities)
/// try cities.appendItem("Rome", toSection: 0)
/// recorder.expect(nextJSON: #"{"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Rome"}]}}"#)
/// recorder.expectNoMoreChangesets()
/// ```
///
/// Every changeset is also checked against the state before it (the rules of
/// docs/changesets.md); a changeset that breaks one is reported as a failure by the next
/// `expect`. Failures go to Swift Testing (`Issue.record`) when a Swift Testing test is
/// running, else to XCTest (`XCTFail`), at the caller's source location.
public final class ChangesetRecorder<Metadata: Sendable, Item: Sendable>: Sendable {
  private struct State {
    var sections: [Observable2DArraySection<Metadata, Item>] = []
    var changesets: [Changeset<Metadata, Item>] = []
    /// How many changesets the `expect` methods and ``next()`` have consumed.
    var consumed = 0
    var problems: [String] = []
    var reportedProblems = 0
    var isFinished = false
    var failure: (any Error)?
  }

  /// The recorded array, kept alive by the recorder.
  public let array: Observable2DArray<Metadata, Item>
  private let repository: Repository?
  private let state = Locked(State())
  private let bag = DisposeBag()

  /// Starts recording `array`, whose current state is the starting point.
  /// - Parameters:
  ///   - array: The array; observed while the recorder lives.
  ///   - repository: The repository whose commits feed it, which ``settle()`` synchronizes;
  ///     `nil` for an array no repository feeds.
  public init(_ array: Observable2DArray<Metadata, Item>, repository: Repository? = nil) {
    self.array = array
    self.repository = repository
    // The starting state, then every event, with neither gap nor duplicate.
    array.subscribe(
      initial: { [weak self] sections in self?.state.withLock { $0.sections = sections } },
      onNext: { [weak self] event in self?.record(event) }
    ).disposed(by: bag)
    array.subscribe(
      onError: { [weak self] error in
        self?.state.withLock {
          $0.isFinished = true
          $0.failure = error
        }
      },
      onCompleted: { [weak self] in self?.state.withLock { $0.isFinished = true } }
    ).disposed(by: bag)
  }

  private func record(_ event: Observable2DArrayEvent<Metadata, Item>) {
    state.withLock { state in
      let changeset = event.changeset
      let number = state.changesets.count + 1
      do {
        try changeset.validate(against: state.sections)
      } catch {
        state.problems.append("changeset \(number) does not apply to the state before it: \(error)")
      }
      state.changesets.append(changeset)
      state.sections = event.sections
    }
  }

  // MARK: Settling

  /// Returns once every change committed before the call — by this process, another
  /// connection or another process — has been recorded. No sleeping: the repository reads
  /// its change log at once (`Repository.synchronizeObservers()`), and an array
  /// observed on a queue (`StoredList.observe(on:undecodable:)`) applies what it
  /// was handed, at once when called on that queue, else by waiting for the queue.
  public func settle() {
    repository?.synchronizeObservers()
    (array as? QueueBoundObservable2DArray<Metadata, Item>)?.flush()
  }

  // MARK: What was recorded

  /// Every changeset recorded, in order.
  public var changesets: [Changeset<Metadata, Item>] { state.withLock { $0.changesets } }

  /// The state after the last recorded changeset.
  public var sections: [Observable2DArraySection<Metadata, Item>] {
    state.withLock { $0.sections }
  }

  /// Whether the array's events ended: its list was deleted, or the observation failed.
  public var isFinished: Bool { state.withLock { $0.isFinished } }

  /// The error the events failed with, if they did.
  public var failure: (any Error)? { state.withLock { $0.failure } }

  /// The changesets that broke a rule of docs/changesets.md, described; empty when all
  /// were valid.
  public var problems: [String] { state.withLock { $0.problems } }

  /// Settles, then takes the next changeset not yet taken by `next()` or an `expect`.
  /// - Returns: The changeset, or `nil` when every recorded one was taken.
  @discardableResult
  public func next() -> Changeset<Metadata, Item>? {
    settle()
    return state.withLock { state in
      guard state.consumed < state.changesets.count else { return nil }
      defer { state.consumed += 1 }
      return state.changesets[state.consumed]
    }
  }

  // MARK: Expectations

  /// Settles, then expects that no changeset is left that `next()` or an `expect` has not
  /// taken.
  /// - Parameters:
  ///   - comment: Added to the failure message.
  ///   - fileID: Where the failure is reported: the caller's file, line and column.
  ///   - filePath: The caller's file path.
  ///   - line: The caller's line.
  ///   - column: The caller's column.
  public func expectNoMoreChangesets(
    _ comment: String? = nil, fileID: String = #fileID, filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) {
    let sourceLocation = FailureLocation(
      fileID: fileID, filePath: filePath, line: line, column: column)
    settle()
    let (left, total) = state.withLock { state in
      (Array(state.changesets[state.consumed...]), state.changesets.count)
    }
    reportProblems(at: sourceLocation)
    guard !left.isEmpty else { return }
    var message = "expected no more changesets, but \(left.count) more of \(total) "
    message += left.count == 1 ? "was recorded:" : "were recorded:"
    for changeset in left { message += "\n  \(changeset)" }
    reportFailure(message, comment: comment, at: sourceLocation)
  }

  /// Takes the next changeset for an `expect`, reporting a failure when there is none.
  func takeNext(
    expecting expected: String, comment: String?, at sourceLocation: FailureLocation
  ) -> Changeset<Metadata, Item>? {
    settle()
    let (next, total) = state.withLock { state -> (Changeset<Metadata, Item>?, Int) in
      guard state.consumed < state.changesets.count else { return (nil, state.changesets.count) }
      defer { state.consumed += 1 }
      return (state.changesets[state.consumed], state.changesets.count)
    }
    reportProblems(at: sourceLocation)
    if next == nil {
      let ended = isFinished ? " and the events ended" : ""
      reportFailure(
        "expected the next changeset to be\n  \(expected)\nbut none was left: \(total) "
          + "recorded, all taken before\(ended)", comment: comment, at: sourceLocation)
    }
    return next
  }

  /// The number of the changeset `next()` would take, counted from 1.
  var nextNumber: Int { state.withLock { $0.consumed } }

  /// Reports the problems not reported yet.
  private func reportProblems(at sourceLocation: FailureLocation) {
    let problems = state.withLock { state in
      defer { state.reportedProblems = state.problems.count }
      return Array(state.problems[state.reportedProblems...])
    }
    for problem in problems { reportFailure(problem, comment: nil, at: sourceLocation) }
  }
}

extension ChangesetRecorder where Metadata: Codable, Item: Codable {
  /// Records the changesets of `list` from now on, observing it with
  /// `StoredList.observe(undecodable:)`: events arrive synchronously, with every
  /// write of this process delivered before it returns.
  /// - Parameters:
  ///   - list: The list.
  ///   - undecodable: What to do with a row that does not decode.
  /// - Throws: What `StoredList.observe(undecodable:)` throws.
  public convenience init(
    _ list: StoredList<Metadata, Item>, undecodable: UndecodableRowPolicy<Metadata, Item> = .fail
  ) throws(ListStoreError) {
    self.init(try list.observe(undecodable: undecodable), repository: list.repository)
  }

  /// Records the changesets of `list` from now on, as code on `queue` receives them
  /// (`StoredList.observe(on:undecodable:)`).
  /// - Parameters:
  ///   - list: The list.
  ///   - queue: The queue the events are delivered on, such as `.main`.
  ///   - undecodable: What to do with a row that does not decode.
  /// - Throws: What `StoredList.observe(undecodable:)` throws.
  public convenience init(
    _ list: StoredList<Metadata, Item>, on queue: DispatchQueue,
    undecodable: UndecodableRowPolicy<Metadata, Item> = .fail
  ) throws(ListStoreError) {
    self.init(try list.observe(on: queue, undecodable: undecodable), repository: list.repository)
  }
}

extension ChangesetRecorder where Metadata: Equatable, Item: Equatable {
  /// Settles, then expects the next changeset to equal `expected`: the same entries, index
  /// paths, ids and values.
  ///
  /// ```swift
  /// recorder.expect(next: Changeset(insertedItems: [.init(at: [0, 2], id: rome, value: "Rome")]))
  /// ```
  /// - Parameters:
  ///   - expected: The changeset.
  ///   - comment: Added to the failure message.
  ///   - fileID: Where a failure is reported: the caller's file, line and column.
  ///   - filePath: The caller's file path.
  ///   - line: The caller's line.
  ///   - column: The caller's column.
  public func expect(
    next expected: Changeset<Metadata, Item>, _ comment: String? = nil,
    fileID: String = #fileID, filePath: StaticString = #filePath, line: UInt = #line,
    column: UInt = #column
  ) {
    let sourceLocation = FailureLocation(
      fileID: fileID, filePath: filePath, line: line, column: column)
    let number = nextNumber + 1
    guard
      let actual = takeNext(
        expecting: expected.description, comment: comment, at: sourceLocation)
    else { return }
    guard actual != expected else { return }
    reportFailure(
      "expected changeset \(number) to be\n  \(expected)\nbut it was\n  \(actual)"
        + differences(expected, actual), comment: comment, at: sourceLocation)
  }

  /// The fields in which two changesets differ, for a failure message.
  private func differences(
    _ expected: Changeset<Metadata, Item>, _ actual: Changeset<Metadata, Item>
  )
    -> String
  {
    var fields: [String] = []
    if expected.deletedSections != actual.deletedSections { fields.append("deletedSections") }
    if expected.insertedSections != actual.insertedSections { fields.append("insertedSections") }
    if expected.movedSections != actual.movedSections { fields.append("movedSections") }
    if expected.updatedSections != actual.updatedSections { fields.append("updatedSections") }
    if expected.deletedItems != actual.deletedItems { fields.append("deletedItems") }
    if expected.insertedItems != actual.insertedItems { fields.append("insertedItems") }
    if expected.movedItems != actual.movedItems { fields.append("movedItems") }
    if expected.updatedItems != actual.updatedItems { fields.append("updatedItems") }
    return "\n(they differ in " + fields.joined(separator: ", ") + ")"
  }
}

extension ChangesetRecorder where Metadata: Encodable, Item: Encodable {
  /// Settles, then expects the next changeset to be `expected`, written as a line of
  /// `liststore watch --json` prints it: `{"changes": {…}}` with the fields of
  /// docs/changesets.md, index paths as `[section, row]` and values as their JSON. White
  /// space and the order of keys do not matter.
  ///
  /// ```swift
  /// recorder.expect(nextJSON: #"{"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Rome"}]}}"#)
  /// ```
  /// - Parameters:
  ///   - expected: The changeset as JSON.
  ///   - comment: Added to the failure message.
  ///   - fileID: Where a failure is reported: the caller's file, line and column.
  ///   - filePath: The caller's file path.
  ///   - line: The caller's line.
  ///   - column: The caller's column.
  public func expect(
    nextJSON expected: String, _ comment: String? = nil,
    fileID: String = #fileID, filePath: StaticString = #filePath, line: UInt = #line,
    column: UInt = #column
  ) {
    let sourceLocation = FailureLocation(
      fileID: fileID, filePath: filePath, line: line, column: column)
    let number = nextNumber + 1
    guard let actual = takeNext(expecting: expected, comment: comment, at: sourceLocation)
    else { return }
    let line: String
    do {
      line = try changesJSON(actual)
    } catch {
      reportFailure(
        "changeset \(number) cannot be written as JSON: \(error)", comment: comment,
        at: sourceLocation)
      return
    }
    guard let expectedObject = jsonObject(expected) else {
      reportFailure(
        "the expected changeset is not JSON:\n  \(expected)\nthe changeset was\n  \(line)",
        comment: comment, at: sourceLocation)
      return
    }
    guard expectedObject != jsonObject(line) else { return }
    reportFailure(
      "expected changeset \(number) to be\n  \(expected)\nbut it was\n  \(line)",
      comment: comment, at: sourceLocation)
  }

  /// Settles, then gives every changeset recorded, one line each, as
  /// `liststore watch --json` prints them, for comparing a whole sequence at once (a
  /// snapshot).
  ///
  /// ```swift
  /// #expect(try recorder.transcript() == """
  ///   {"changes":{"insertedItems":[{"at":[0,2],"id":3,"value":"Rome"}]}}
  ///   {"changes":{"deletedItems":[{"at":[0,0],"id":1}]}}
  ///   """)
  /// ```
  /// - Returns: The lines, joined by newlines (no final one).
  /// - Throws: `ListStoreError.encodingFailed(_:)` when a value does not encode.
  public func transcript() throws(ListStoreError) -> String {
    settle()
    var lines: [String] = []
    for changeset in changesets { lines.append(try changesJSON(changeset)) }
    return lines.joined(separator: "\n")
  }
}

/// `text` parsed as JSON, for comparing values regardless of white space and key order.
private func jsonObject(_ text: String) -> NSObject? {
  (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]))
    as? NSObject
}
