-- ListStore schema, version 1: lists of ordered sections of ordered items.
--
-- This schema is a public interface: any SQLite client may read these tables and
-- insert, update or delete rows. `metadata` and `value` hold JSON text (checked);
-- `position` holds a position key whose byte order is the row order (see README).

PRAGMA application_id = 1280529487; -- 'LSTO': marks the file as a ListStore database

CREATE TABLE lists (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE CHECK (length(name) > 0)
);

CREATE TABLE sections (
  id INTEGER PRIMARY KEY,
  list_id INTEGER NOT NULL REFERENCES lists(id) ON DELETE CASCADE,
  position TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(metadata)),
  UNIQUE (list_id, position)
);

CREATE TABLE items (
  id INTEGER PRIMARY KEY,
  section_id INTEGER NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
  position TEXT NOT NULL,
  value TEXT NOT NULL CHECK (json_valid(value)),
  UNIQUE (section_id, position)
);

-- The UNIQUE constraints above are also the indexes that read rows in order.

-- Clients such as the sqlite3 shell run with foreign keys off by default; these
-- triggers keep the tree whole for them too (with foreign keys on, the cascades
-- above have already done the work).
CREATE TRIGGER lists_delete_sections AFTER DELETE ON lists BEGIN
  DELETE FROM sections WHERE list_id = OLD.id;
END;

CREATE TRIGGER sections_delete_items AFTER DELETE ON sections BEGIN
  DELETE FROM items WHERE section_id = OLD.id;
END;

CREATE TRIGGER sections_need_list BEFORE INSERT ON sections
WHEN NOT EXISTS (SELECT 1 FROM lists WHERE id = NEW.list_id) BEGIN
  SELECT RAISE(ABORT, 'no list with this list_id');
END;

CREATE TRIGGER sections_move_need_list BEFORE UPDATE OF list_id ON sections
WHEN NOT EXISTS (SELECT 1 FROM lists WHERE id = NEW.list_id) BEGIN
  SELECT RAISE(ABORT, 'no list with this list_id');
END;

CREATE TRIGGER items_need_section BEFORE INSERT ON items
WHEN NOT EXISTS (SELECT 1 FROM sections WHERE id = NEW.section_id) BEGIN
  SELECT RAISE(ABORT, 'no section with this section_id');
END;

CREATE TRIGGER items_move_need_section BEFORE UPDATE OF section_id ON items
WHEN NOT EXISTS (SELECT 1 FROM sections WHERE id = NEW.section_id) BEGIN
  SELECT RAISE(ABORT, 'no section with this section_id');
END;
