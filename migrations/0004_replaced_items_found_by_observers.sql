-- ListStore schema, version 4: the items that a REPLACE removes are found by observers,
-- not logged by triggers.
--
-- A REPLACE, INSERT OR REPLACE or UPDATE OR REPLACE that conflicts on an item's
-- position deletes the row that held it, and SQLite fires no delete trigger for that
-- (unless recursive triggers are on). Version 3 logged every row such a statement might
-- remove from BEFORE triggers, which cost every insert and every move of an item an
-- index lookup, though almost none replaces anything. Observers now find such rows
-- themselves: when a row is placed where their copy still has another row of the same
-- section (positions are unique within a section), they confirm with the store that the
-- other row is gone and remove it. A REPLACE by id is refused anyway (`items_id_is_new`).
--
-- Sections and lists keep their BEFORE triggers: they are rarely written, and a section
-- that a REPLACE removes takes its items out of the list with it.

DROP TRIGGER IF EXISTS items_log_replaced;
DROP TRIGGER IF EXISTS items_log_replaced_by_update;
