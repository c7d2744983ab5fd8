public import ListStore

/// What can go wrong with stored counters, with messages that say what to do.
public enum CounterError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No counter is at this row.
  case rowOutOfRange(row: Int, count: Int, list: String)
  /// No counter has this id.
  case counterNotFound(id: Int64, list: String)
  /// A stored value is not a whole number (someone stored something else in the list).
  case notANumber(id: Int64, json: String, list: String, row: Int?)
  /// A change would take a counter beyond `Int.min...Int.max`; `row` when the caller
  /// named it by row.
  case overflow(id: Int64, row: Int?)
  /// The repository failed.
  case store(ListStoreError)

  /// One sentence: what went wrong, and what to do about it.
  public var description: String {
    switch self {
    case .rowOutOfRange(let row, let count, let list):
      count == 0
        ? "counter \(row) does not exist: \(quoted(list)) has no counters; "
          + "add one with 'liststore counters add'"
        : "counter \(row) does not exist: \(quoted(list)) has \(count) "
          + (count == 1 ? "counter (row 0)" : "counters (rows 0…\(count - 1))")
    case .counterNotFound(let id, let list):
      "no counter with id \(id) in \(quoted(list))"
    case .notANumber(let id, let json, let list, let row):
      "counter \(Self.name(id: id, row: row)) of \(quoted(list)) holds "
        + "\(json.prefix(40)), not a whole number; fix it with: "
        + "liststore item set \(list) \(row.map { "0:\($0)" } ?? "'#\(id)'") 0 --json"
    case .overflow(let id, let row):
      "counter \(Self.name(id: id, row: row)) cannot go beyond \(Int.min)…\(Int.max); "
        + "it is left as it was"
    case .store(let error):
      error.description
    }
  }

  /// A counter as messages name it: by its zero-based row when known, else by id.
  private static func name(id: Int64, row: Int?) -> String {
    row.map { "\($0) (id \(id))" } ?? "with id \(id)"
  }
}
