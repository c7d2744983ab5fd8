-- ListStore schema, version 3: ids that are never reused, rules that foreign writers
-- meet, and a change log that every write the schema accepts reaches.
--
-- * Ids are never reused. `lists`, `sections` and `items` become AUTOINCREMENT
--   tables, so SQLite never hands out an id again, and a foreign client that gives
--   an id must give a new one (above every id the table ever used). An id never
--   changes. Rows with an id of 0 or below, which older versions let foreign
--   clients write, get fresh ids here (with their children following them).
-- * A position is a position key: text of the digits 0-9A-Za-z whose first
--   character gives the length of its integer part, with no trailing 0 after it.
--   Anything else is refused when written. Keys already stored that break the rule
--   are rewritten, in their current order, right after this migration (by the
--   program, in the same transaction).
-- * REPLACE (and UPDATE OR REPLACE) deletes conflicting rows without firing delete
--   triggers; BEFORE triggers log every row such a statement may remove, so that
--   observers re-read it.
-- * Item log entries name the item's section before (`old_parent`) and after
--   (`parent`) the change, never a list: a section is stable, while its list may
--   change in the same transaction. Section entries name their list before and after.
--
-- The program runs migrations with foreign keys off (SQLite's procedure for
-- rebuilding tables), each in one transaction.

-- Every trigger is re-created below; the tables they watch are rebuilt.
DROP TRIGGER IF EXISTS lists_delete_sections;
DROP TRIGGER IF EXISTS sections_delete_items;
DROP TRIGGER IF EXISTS sections_need_list;
DROP TRIGGER IF EXISTS sections_move_need_list;
DROP TRIGGER IF EXISTS items_need_section;
DROP TRIGGER IF EXISTS items_move_need_section;
DROP TRIGGER IF EXISTS items_log_insert;
DROP TRIGGER IF EXISTS items_log_update;
DROP TRIGGER IF EXISTS items_log_update_id;
DROP TRIGGER IF EXISTS items_log_delete;
DROP TRIGGER IF EXISTS sections_log_insert;
DROP TRIGGER IF EXISTS sections_log_update;
DROP TRIGGER IF EXISTS sections_log_update_id;
DROP TRIGGER IF EXISTS sections_log_delete;
DROP TRIGGER IF EXISTS lists_log_delete;

-- The highest id each table ever used: its rows' and its deleted rows' in the log.
CREATE TEMP TABLE id_high (name TEXT PRIMARY KEY, high INTEGER NOT NULL);
INSERT INTO id_high VALUES
  ('lists', max(0, coalesce((SELECT max(id) FROM lists), 0),
    coalesce((SELECT max(row_id) FROM changes WHERE kind = 0), 0))),
  ('sections', max(0, coalesce((SELECT max(id) FROM sections), 0),
    coalesce((SELECT max(row_id) FROM changes WHERE kind = 1), 0))),
  ('items', max(0, coalesce((SELECT max(id) FROM items), 0),
    coalesce((SELECT max(row_id) FROM changes WHERE kind = 2), 0)));

-- Fresh ids for rows whose id is 0 or below.
CREATE TEMP TABLE list_renumbering (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
INSERT INTO list_renumbering
  SELECT id, (SELECT high FROM id_high WHERE name = 'lists') + row_number() OVER (ORDER BY id DESC)
  FROM lists WHERE id <= 0;
CREATE TEMP TABLE section_renumbering (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
INSERT INTO section_renumbering
  SELECT id,
    (SELECT high FROM id_high WHERE name = 'sections') + row_number() OVER (ORDER BY id DESC)
  FROM sections WHERE id <= 0;
CREATE TEMP TABLE item_renumbering (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
INSERT INTO item_renumbering
  SELECT id, (SELECT high FROM id_high WHERE name = 'items') + row_number() OVER (ORDER BY id DESC)
  FROM items WHERE id <= 0;

CREATE TABLE new_lists (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE CHECK (length(name) > 0)
);
INSERT INTO new_lists(id, name)
  SELECT coalesce((SELECT new FROM list_renumbering WHERE old = l.id), l.id), l.name
  FROM lists l;

CREATE TABLE new_sections (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  list_id INTEGER NOT NULL REFERENCES lists(id) ON DELETE CASCADE,
  position TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(metadata)),
  UNIQUE (list_id, position)
);
INSERT INTO new_sections(id, list_id, position, metadata)
  SELECT coalesce((SELECT new FROM section_renumbering WHERE old = s.id), s.id),
    coalesce((SELECT new FROM list_renumbering WHERE old = s.list_id), s.list_id),
    s.position, s.metadata
  FROM sections s;

CREATE TABLE new_items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  section_id INTEGER NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
  position TEXT NOT NULL,
  value TEXT NOT NULL CHECK (json_valid(value)),
  UNIQUE (section_id, position)
);
INSERT INTO new_items(id, section_id, position, value)
  SELECT coalesce((SELECT new FROM item_renumbering WHERE old = i.id), i.id),
    coalesce((SELECT new FROM section_renumbering WHERE old = i.section_id), i.section_id),
    i.position, i.value
  FROM items i;

DROP TABLE items;
DROP TABLE sections;
DROP TABLE lists;
ALTER TABLE new_lists RENAME TO lists;
ALTER TABLE new_sections RENAME TO sections;
ALTER TABLE new_items RENAME TO items;

-- AUTOINCREMENT continues above every id ever used, renumbered ones included.
DELETE FROM sqlite_sequence WHERE name IN ('lists', 'sections', 'items');
INSERT INTO sqlite_sequence(name, seq)
  SELECT 'lists', max(coalesce((SELECT max(id) FROM lists), 0),
    (SELECT high FROM id_high WHERE name = 'lists'))
  UNION ALL
  SELECT 'sections', max(coalesce((SELECT max(id) FROM sections), 0),
    (SELECT high FROM id_high WHERE name = 'sections'))
  UNION ALL
  SELECT 'items', max(coalesce((SELECT max(id) FROM items), 0),
    (SELECT high FROM id_high WHERE name = 'items'));

DROP TABLE temp.id_high;
DROP TABLE temp.list_renumbering;
DROP TABLE temp.section_renumbering;
DROP TABLE temp.item_renumbering;

-- Item entries: the section before the change is `old_parent`, after it `parent`.
-- Section entries: the list before is `old_list_id` (= `old_parent`), after it
-- `list_id` (= `parent`). List entries name the list in `row_id`.
ALTER TABLE changes ADD COLUMN parent INTEGER;

-- Lists -----------------------------------------------------------------------------

CREATE TRIGGER lists_id_is_new AFTER INSERT ON lists
WHEN NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lists'), 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: lists.id is never reused; leave it out, or give one above every list id used so far');
END;

CREATE TRIGGER lists_id_is_fixed BEFORE UPDATE OF id ON lists WHEN NEW.id IS NOT OLD.id BEGIN
  SELECT RAISE(ABORT, 'ListStore: lists.id never changes; insert a new list instead');
END;

-- Rows REPLACE may remove, logged before it does (a spurious entry is harmless: the
-- observer checks whether the list is still there).
CREATE TRIGGER lists_log_replaced BEFORE INSERT ON lists BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id)
  SELECT id, 0, 3, id FROM lists WHERE name = NEW.name OR id = NEW.id;
END;

CREATE TRIGGER lists_log_replaced_by_update BEFORE UPDATE OF name ON lists BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id)
  SELECT id, 0, 3, id FROM lists WHERE name = NEW.name AND id <> OLD.id;
END;

CREATE TRIGGER lists_log_delete AFTER DELETE ON lists BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id) VALUES (OLD.id, 0, 3, OLD.id);
END;

-- Clients such as the sqlite3 shell run with foreign keys off by default; these keep
-- the tree whole for them too.
CREATE TRIGGER lists_delete_sections AFTER DELETE ON lists BEGIN
  DELETE FROM sections WHERE list_id = OLD.id;
END;

-- Sections --------------------------------------------------------------------------

CREATE TRIGGER sections_id_is_new AFTER INSERT ON sections
WHEN NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sections'), 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: sections.id is never reused; leave it out, or give one above every section id used so far');
END;

CREATE TRIGGER sections_id_is_fixed BEFORE UPDATE OF id ON sections
WHEN NEW.id IS NOT OLD.id BEGIN
  SELECT RAISE(ABORT, 'ListStore: sections.id never changes; insert a new section instead');
END;

CREATE TRIGGER sections_position_is_a_key BEFORE INSERT ON sections
WHEN NOT coalesce(typeof(NEW.position) = 'text'
  AND NEW.position NOT GLOB '*[^0-9A-Za-z]*'
  AND length(CAST(NEW.position AS BLOB)) = length(NEW.position)
  AND length(NEW.position) >= CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    WHEN NEW.position GLOB '[A-Z]*' THEN 92 - unicode(NEW.position) END
  AND (NEW.position NOT GLOB '*0' OR length(NEW.position) = CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    ELSE 92 - unicode(NEW.position) END)
  AND NEW.position <> 'A00000000000000000000000000', 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: sections.position must be a position key: text of 0-9A-Za-z, a head letter giving the integer part''s length (a-z: 2-27 characters, Z-A: 2-27), no trailing 0 after it');
END;

CREATE TRIGGER sections_position_stays_a_key BEFORE UPDATE OF position ON sections
WHEN NOT coalesce(typeof(NEW.position) = 'text'
  AND NEW.position NOT GLOB '*[^0-9A-Za-z]*'
  AND length(CAST(NEW.position AS BLOB)) = length(NEW.position)
  AND length(NEW.position) >= CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    WHEN NEW.position GLOB '[A-Z]*' THEN 92 - unicode(NEW.position) END
  AND (NEW.position NOT GLOB '*0' OR length(NEW.position) = CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    ELSE 92 - unicode(NEW.position) END)
  AND NEW.position <> 'A00000000000000000000000000', 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: sections.position must be a position key: text of 0-9A-Za-z, a head letter giving the integer part''s length (a-z: 2-27 characters, Z-A: 2-27), no trailing 0 after it');
END;

CREATE TRIGGER sections_need_list BEFORE INSERT ON sections
WHEN NOT EXISTS (SELECT 1 FROM lists WHERE id = NEW.list_id) BEGIN
  SELECT RAISE(ABORT, 'ListStore: no list with this list_id');
END;

CREATE TRIGGER sections_move_need_list BEFORE UPDATE OF list_id ON sections
WHEN NOT EXISTS (SELECT 1 FROM lists WHERE id = NEW.list_id) BEGIN
  SELECT RAISE(ABORT, 'ListStore: no list with this list_id');
END;

CREATE TRIGGER sections_log_replaced BEFORE INSERT ON sections BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  SELECT list_id, 1, 3, id, list_id, position FROM sections
  WHERE (list_id = NEW.list_id AND position = NEW.position) OR id = NEW.id;
END;

CREATE TRIGGER sections_log_replaced_by_update BEFORE UPDATE OF list_id, position ON sections
BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  SELECT list_id, 1, 3, id, list_id, position FROM sections
  WHERE list_id = NEW.list_id AND position = NEW.position AND id <> OLD.id;
END;

CREATE TRIGGER sections_log_insert AFTER INSERT ON sections BEGIN
  INSERT INTO changes(list_id, kind, op, row_id, parent)
  VALUES (NEW.list_id, 1, 1, NEW.id, NEW.list_id);
END;

CREATE TRIGGER sections_log_update AFTER UPDATE ON sections
WHEN OLD.list_id IS NOT NEW.list_id OR OLD.position IS NOT NEW.position
  OR OLD.metadata IS NOT NEW.metadata BEGIN
  INSERT INTO changes(list_id, old_list_id, kind, op, row_id, parent, old_parent, old_position)
  VALUES (NEW.list_id, OLD.list_id, 1, 2, NEW.id, NEW.list_id, OLD.list_id, OLD.position);
END;

-- Sections removed with their list are covered by the list's entry.
CREATE TRIGGER sections_log_delete AFTER DELETE ON sections
WHEN EXISTS (SELECT 1 FROM lists WHERE id = OLD.list_id) BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  VALUES (OLD.list_id, 1, 3, OLD.id, OLD.list_id, OLD.position);
END;

CREATE TRIGGER sections_delete_items AFTER DELETE ON sections BEGIN
  DELETE FROM items WHERE section_id = OLD.id;
END;

-- Items -----------------------------------------------------------------------------

CREATE TRIGGER items_id_is_new AFTER INSERT ON items
WHEN NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: items.id is never reused; leave it out, or give one above every item id used so far');
END;

CREATE TRIGGER items_id_is_fixed BEFORE UPDATE OF id ON items WHEN NEW.id IS NOT OLD.id BEGIN
  SELECT RAISE(ABORT, 'ListStore: items.id never changes; insert a new item instead');
END;

CREATE TRIGGER items_position_is_a_key BEFORE INSERT ON items
WHEN NOT coalesce(typeof(NEW.position) = 'text'
  AND NEW.position NOT GLOB '*[^0-9A-Za-z]*'
  AND length(CAST(NEW.position AS BLOB)) = length(NEW.position)
  AND length(NEW.position) >= CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    WHEN NEW.position GLOB '[A-Z]*' THEN 92 - unicode(NEW.position) END
  AND (NEW.position NOT GLOB '*0' OR length(NEW.position) = CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    ELSE 92 - unicode(NEW.position) END)
  AND NEW.position <> 'A00000000000000000000000000', 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: items.position must be a position key: text of 0-9A-Za-z, a head letter giving the integer part''s length (a-z: 2-27 characters, Z-A: 2-27), no trailing 0 after it');
END;

CREATE TRIGGER items_position_stays_a_key BEFORE UPDATE OF position ON items
WHEN NOT coalesce(typeof(NEW.position) = 'text'
  AND NEW.position NOT GLOB '*[^0-9A-Za-z]*'
  AND length(CAST(NEW.position AS BLOB)) = length(NEW.position)
  AND length(NEW.position) >= CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    WHEN NEW.position GLOB '[A-Z]*' THEN 92 - unicode(NEW.position) END
  AND (NEW.position NOT GLOB '*0' OR length(NEW.position) = CASE
    WHEN NEW.position GLOB '[a-z]*' THEN unicode(NEW.position) - 95
    ELSE 92 - unicode(NEW.position) END)
  AND NEW.position <> 'A00000000000000000000000000', 0) BEGIN
  SELECT RAISE(ABORT, 'ListStore: items.position must be a position key: text of 0-9A-Za-z, a head letter giving the integer part''s length (a-z: 2-27 characters, Z-A: 2-27), no trailing 0 after it');
END;

CREATE TRIGGER items_need_section BEFORE INSERT ON items
WHEN NOT EXISTS (SELECT 1 FROM sections WHERE id = NEW.section_id) BEGIN
  SELECT RAISE(ABORT, 'ListStore: no section with this section_id');
END;

CREATE TRIGGER items_move_need_section BEFORE UPDATE OF section_id ON items
WHEN NOT EXISTS (SELECT 1 FROM sections WHERE id = NEW.section_id) BEGIN
  SELECT RAISE(ABORT, 'ListStore: no section with this section_id');
END;

CREATE TRIGGER items_log_replaced BEFORE INSERT ON items BEGIN
  INSERT INTO changes(kind, op, row_id, old_parent, old_position)
  SELECT 2, 3, id, section_id, position FROM items
  WHERE (section_id = NEW.section_id AND position = NEW.position) OR id = NEW.id;
END;

CREATE TRIGGER items_log_replaced_by_update BEFORE UPDATE OF section_id, position ON items BEGIN
  INSERT INTO changes(kind, op, row_id, old_parent, old_position)
  SELECT 2, 3, id, section_id, position FROM items
  WHERE section_id = NEW.section_id AND position = NEW.position AND id <> OLD.id;
END;

CREATE TRIGGER items_log_insert AFTER INSERT ON items BEGIN
  INSERT INTO changes(kind, op, row_id, parent) VALUES (2, 1, NEW.id, NEW.section_id);
END;

CREATE TRIGGER items_log_update AFTER UPDATE ON items
WHEN OLD.section_id IS NOT NEW.section_id OR OLD.position IS NOT NEW.position
  OR OLD.value IS NOT NEW.value BEGIN
  INSERT INTO changes(kind, op, row_id, parent, old_parent, old_position)
  VALUES (2, 2, NEW.id, NEW.section_id, OLD.section_id, OLD.position);
END;

-- Items removed with their section are covered by the section's entry.
CREATE TRIGGER items_log_delete AFTER DELETE ON items
WHEN EXISTS (SELECT 1 FROM sections WHERE id = OLD.section_id) BEGIN
  INSERT INTO changes(kind, op, row_id, old_parent, old_position)
  VALUES (2, 3, OLD.id, OLD.section_id, OLD.position);
END;
