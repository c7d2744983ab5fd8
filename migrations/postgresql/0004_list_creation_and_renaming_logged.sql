-- ListStore schema for PostgreSQL, version 4: creating and renaming a list are logged, as
-- deleting one always was (SQLite's version 5 does the same).
--
-- A list's entries in the change log (kind 0) said only that it was deleted. Creating a
-- list, and renaming one, now write an entry too (op 1 and op 2), so that every change of
-- which list a name stands for moves the log forward: a client that holds a snapshot's
-- seq (`If-Match: "S"`) finds that the name it read now means another list, or was taken
-- away and given back, and two states of a name never share a seq. Observers read such an
-- entry as they read a deletion's: they check that their list is still there.

CREATE OR REPLACE FUNCTION lists_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM liststore_log(0::smallint, 1::smallint, NEW.id, NEW.id, NULL, NULL, NULL, NULL);
  ELSIF TG_OP = 'UPDATE' THEN
    IF OLD.name IS DISTINCT FROM NEW.name THEN
      PERFORM liststore_log(0::smallint, 2::smallint, NEW.id, NEW.id, OLD.id, NULL, NULL, NULL);
    END IF;
  ELSE
    PERFORM liststore_log(0::smallint, 3::smallint, OLD.id, NULL, OLD.id, NULL, NULL, NULL);
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER lists_log ON lists;
CREATE TRIGGER lists_log AFTER INSERT OR UPDATE OR DELETE ON lists
FOR EACH ROW EXECUTE FUNCTION lists_log();
