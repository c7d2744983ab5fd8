-- ListStore schema, version 2: the change log behind observers.
--
-- Triggers record every insert, update and delete of a section or item row, by any
-- SQLite client, in `changes`. An observer remembers the last `seq` it applied and
-- reads the rows after it. Each log row names the list(s) the row belonged to, the
-- row, and where the row was before the change (`old_parent`, `old_position`) so an
-- observer can find it in its copy; where it is after the change is read from the
-- row itself.
--
-- kind: 0 list, 1 section, 2 item.  op: 1 insert, 2 update, 3 delete.
-- `changed` is 1 when an update changed the value (items) or metadata (sections).

CREATE TABLE changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  list_id INTEGER,
  old_list_id INTEGER,
  kind INTEGER NOT NULL,
  op INTEGER NOT NULL,
  row_id INTEGER NOT NULL,
  old_parent INTEGER,
  old_position TEXT,
  changed INTEGER NOT NULL DEFAULT 0
);

-- One row: the seq up to which the log was pruned. An observer whose last applied
-- seq is below it missed changes and reloads instead.
CREATE TABLE change_log_horizon (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_through INTEGER NOT NULL
);
INSERT INTO change_log_horizon(id, pruned_through) VALUES (1, 0);

-- Live observers' positions, one row per observing process; pruning keeps what
-- the slowest live one has not read yet.
CREATE TABLE change_log_readers (
  id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  heartbeat REAL NOT NULL
);

-- Items ------------------------------------------------------------------------

CREATE TRIGGER items_log_insert AFTER INSERT ON items BEGIN
  INSERT INTO changes(list_id, kind, op, row_id)
  VALUES ((SELECT list_id FROM sections WHERE id = NEW.section_id), 2, 1, NEW.id);
END;

CREATE TRIGGER items_log_update AFTER UPDATE ON items
WHEN OLD.id = NEW.id AND (OLD.section_id IS NOT NEW.section_id
  OR OLD.position IS NOT NEW.position OR OLD.value IS NOT NEW.value) BEGIN
  INSERT INTO changes(list_id, old_list_id, kind, op, row_id, old_parent, old_position, changed)
  VALUES ((SELECT list_id FROM sections WHERE id = NEW.section_id),
    (SELECT list_id FROM sections WHERE id = OLD.section_id),
    2, 2, NEW.id, OLD.section_id, OLD.position, OLD.value IS NOT NEW.value);
END;

-- An update of the id itself is a delete of the old row and an insert of the new.
CREATE TRIGGER items_log_update_id AFTER UPDATE ON items WHEN OLD.id <> NEW.id BEGIN
  INSERT INTO changes(list_id, old_list_id, kind, op, row_id, old_parent, old_position)
  VALUES (NULL, (SELECT list_id FROM sections WHERE id = OLD.section_id),
    2, 3, OLD.id, OLD.section_id, OLD.position);
  INSERT INTO changes(list_id, kind, op, row_id)
  VALUES ((SELECT list_id FROM sections WHERE id = NEW.section_id), 2, 1, NEW.id);
END;

-- Items removed with their section are covered by the section's entry.
CREATE TRIGGER items_log_delete AFTER DELETE ON items
WHEN EXISTS (SELECT 1 FROM sections WHERE id = OLD.section_id) BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  VALUES ((SELECT list_id FROM sections WHERE id = OLD.section_id),
    2, 3, OLD.id, OLD.section_id, OLD.position);
END;

-- Sections ---------------------------------------------------------------------

CREATE TRIGGER sections_log_insert AFTER INSERT ON sections BEGIN
  INSERT INTO changes(list_id, kind, op, row_id) VALUES (NEW.list_id, 1, 1, NEW.id);
END;

CREATE TRIGGER sections_log_update AFTER UPDATE ON sections
WHEN OLD.id = NEW.id AND (OLD.list_id IS NOT NEW.list_id
  OR OLD.position IS NOT NEW.position OR OLD.metadata IS NOT NEW.metadata) BEGIN
  INSERT INTO changes(list_id, old_list_id, kind, op, row_id, old_parent, old_position, changed)
  VALUES (NEW.list_id, OLD.list_id, 1, 2, NEW.id, OLD.list_id, OLD.position,
    OLD.metadata IS NOT NEW.metadata);
END;

CREATE TRIGGER sections_log_update_id AFTER UPDATE ON sections WHEN OLD.id <> NEW.id BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  VALUES (OLD.list_id, 1, 3, OLD.id, OLD.list_id, OLD.position);
  INSERT INTO changes(list_id, kind, op, row_id) VALUES (NEW.list_id, 1, 1, NEW.id);
END;

-- Sections removed with their list are covered by the list's entry.
CREATE TRIGGER sections_log_delete AFTER DELETE ON sections
WHEN EXISTS (SELECT 1 FROM lists WHERE id = OLD.list_id) BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id, old_parent, old_position)
  VALUES (OLD.list_id, 1, 3, OLD.id, OLD.list_id, OLD.position);
END;

-- Lists ------------------------------------------------------------------------

CREATE TRIGGER lists_log_delete AFTER DELETE ON lists BEGIN
  INSERT INTO changes(old_list_id, kind, op, row_id) VALUES (OLD.id, 0, 3, OLD.id);
END;
