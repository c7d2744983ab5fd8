-- ListStore schema, version 5: creating and renaming a list are logged, as deleting one
-- always was.
--
-- A list's entries in the change log (kind 0) said only that it was deleted. Creating a
-- list, and renaming one, now write an entry too (op 1 and op 2), so that every change of
-- which list a name stands for moves the log forward: a client that holds a snapshot's
-- seq (`If-Match: "S"`) finds that the name it read now means another list, or was taken
-- away and given back, and two states of a name never share a seq. Observers read such an
-- entry as they read a deletion's: they check that their list is still there.

CREATE TRIGGER lists_log_insert AFTER INSERT ON lists BEGIN
  INSERT INTO changes(list_id, kind, op, row_id) VALUES (NEW.id, 0, 1, NEW.id);
END;

CREATE TRIGGER lists_log_rename AFTER UPDATE OF name ON lists WHEN NEW.name IS NOT OLD.name BEGIN
  INSERT INTO changes(list_id, old_list_id, kind, op, row_id) VALUES (NEW.id, OLD.id, 0, 2, NEW.id);
END;
