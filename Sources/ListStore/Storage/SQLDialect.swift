import Synchronization

/// The SQL that differs between engines. Everything else ListStore runs is written
/// once, with `?` placeholders, for both.
///
/// A class, made once per engine: a connection hands it out on every statement that
/// needs it, and a reference costs less to hand out than a copy of every text.
@usableFromInline
package final class SQLDialect: Sendable {
  /// Which engine.
  package enum Engine: Sendable { case sqlite, postgresql }

  package let engine: Engine
  /// The expression that stores a bound JSON parameter that may need checking and
  /// compacting (values ListStore did not encode itself).
  package let checkedJSONParameter: String
  /// One row, two columns: the seq of the last log entry ever written (0 for none),
  /// and how far the log was pruned.
  package let lastSeqAndHorizon: String
  /// The type of a `position` value as text (`'text'` where only text is possible).
  package let positionType: String
  /// The test that an expression is one of the list ids bound, as
  /// ``listIDsParameter(_:)`` makes them, to `$1`.
  package let manyListsMembership: String
  /// How an `INSERT` names the id of a new row of a table, and the value it gives, where
  /// ListStore gives it (SQLite, once the table holds rows of another origin: the next
  /// id of the file's own origin); empty where the engine always gives it.
  package let newRowID: @Sendable (_ table: String) -> (column: String, value: String)
  /// `INSERT INTO lists(name) VALUES (?)`, with ``newRowID``.
  package let insertList: String

  /// The writes that store a JSON parameter, built once: single writes run them often,
  /// and building their text on every call cost more than some of the statements.
  package let insertSection: JSONParameterSQL
  package let setMetadata: JSONParameterSQL
  package let insertItem: JSONParameterSQL
  package let setValue: JSONParameterSQL

  /// The query of a page of the change log (``ChangeLog/page(after:lists:db:)``), for one
  /// list (`$1` its id), for several (`$1` as ``listIDsParameter(_:)`` makes it), and for
  /// every list.
  package let changeLogPage: (single: String, many: String, all: String)
  /// How several list ids are bound as one parameter.
  private let listIDsText: @Sendable ([Int64]) -> String

  /// A list's items with their section's id (`$1` the list): `ordered` by section and
  /// position; `grouped`, which may cost less, by section and then position within each
  /// section, in an order of sections of the engine's choice.
  @usableFromInline package let listItems: (ordered: String, grouped: String)
  /// Every section of a list (`?`) with its items, in order, one row per item (a section
  /// without items: one row with `NULL`s).
  package let listSnapshot: String
  /// The number of items of a list (`?`).
  package let listItemCount: String
  /// Every list's id and name, with its numbers of sections and items, by name.
  package let listsWithCounts: String

  /// Creates the dialect of an engine.
  /// - Parameters:
  ///   - engine: Which engine.
  ///   - checkedJSONParameter: See ``checkedJSONParameter``.
  ///   - lastSeqAndHorizon: See ``lastSeqAndHorizon``.
  ///   - positionType: See ``positionType``.
  ///   - manyListsMembership: The test that an expression is one of the list ids bound,
  ///     as ``listIDsParameter(_:)`` makes them, to `$1`.
  ///   - listIDsText: The text of that parameter for some ids.
  ///   - pageShape: How the query of a page of the log is best shaped for the engine.
  ///   - ordersJoins: Whether the engine returns a join in its outer table's order, so that
  ///     a list's items come grouped by section without an `ORDER BY`.
  ///   - itemsOfSection: How `FROM sections s` joins each section's items as `i` (`JOIN`
  ///     or, with `left`, `LEFT JOIN`), so that the engine reads only the list's items
  ///     whatever it guesses of their number.
  ///   - newRowID: See ``newRowID``; none by default.
  package init(
    engine: Engine, checkedJSONParameter: String, lastSeqAndHorizon: String, positionType: String,
    manyListsMembership: String, listIDsText: @escaping @Sendable ([Int64]) -> String,
    pageShape: ChangeLogPageShape, ordersJoins: Bool, itemsOfSection: (_ left: Bool) -> String,
    newRowID: @escaping @Sendable (_ table: String) -> (column: String, value: String) = { _ in
      ("", "")
    }
  ) {
    self.engine = engine
    self.manyListsMembership = manyListsMembership
    self.newRowID = newRowID
    self.listIDsText = listIDsText
    changeLogPage = (
      ChangeLog.pageQuery(membership: "= $1", shape: pageShape),
      ChangeLog.pageQuery(membership: manyListsMembership, shape: pageShape),
      ChangeLog.allListsPageQuery(shape: pageShape)
    )
    let items = """
      SELECT s.id, i.id, i.position, i.value FROM sections s \(itemsOfSection(false))
      WHERE s.list_id = $1
      """
    listItems = (
      items + " ORDER BY s.position, i.position",
      ordersJoins ? items + " ORDER BY s.position, i.position" : items
    )
    listSnapshot = """
      SELECT s.id, s.position, s.metadata, i.id, i.position, i.value
      FROM sections s \(itemsOfSection(true))
      WHERE s.list_id = ? ORDER BY s.position, i.position
      """
    listItemCount = "SELECT count(*) FROM sections s \(itemsOfSection(false)) WHERE s.list_id = ?"
    listsWithCounts = """
      SELECT l.id, l.name,
        (SELECT count(*) FROM sections s WHERE s.list_id = l.id),
        (SELECT count(*) FROM sections s \(itemsOfSection(false)) WHERE s.list_id = l.id)
      FROM lists l ORDER BY l.name
      """
    self.checkedJSONParameter = checkedJSONParameter
    self.lastSeqAndHorizon = lastSeqAndHorizon
    self.positionType = positionType
    func sql(_ text: (String) -> String) -> JSONParameterSQL {
      JSONParameterSQL(canonical: text("?"), checked: text(checkedJSONParameter))
    }
    let (list, section, item) = (newRowID("lists"), newRowID("sections"), newRowID("items"))
    insertList = "INSERT INTO lists(\(list.column)name) VALUES (\(list.value)?)"
    insertSection = sql {
      "INSERT INTO sections(\(section.column)list_id, position, metadata) VALUES (\(section.value)?, ?, \($0))"
    }
    setMetadata = sql { "UPDATE sections SET metadata = \($0) WHERE id = ? AND list_id = ?" }
    insertItem = sql {
      "INSERT INTO items(\(item.column)section_id, position, value) VALUES (\(item.value)?, ?, \($0))"
    }
    setValue = sql {
      """
      UPDATE items SET value = \($0)
      WHERE id = ?
      AND EXISTS (SELECT 1 FROM sections s WHERE s.id = items.section_id AND s.list_id = ?)
      """
    }
  }
}

extension SQLDialect {
  /// Several list ids as one parameter, for ``changeLogPage``'s query of several lists.
  package func listIDsParameter(_ ids: [Int64]) -> SQLValue { .text(listIDsText(ids)) }
}

/// One statement that stores a JSON parameter, in its two texts: for text ListStore
/// encoded itself (compact, valid JSON: bound as it is), and for text to check and
/// compact as it is written (``SQLDialect/checkedJSONParameter``).
@usableFromInline
package struct JSONParameterSQL: Sendable {
  /// The text binding the JSON as it is.
  package let canonical: String
  /// The text checking the JSON.
  package let checked: String

  /// The text for JSON that is canonical or not.
  package subscript(canonical isCanonical: Bool) -> String {
    isCanonical ? canonical : checked
  }
}
