-- ListStore schema, version 6: ids split by origin, and the server's records of its
-- replicas (docs/replicas.md).
--
-- * Every id belongs to an origin: `id >> 40`. A server's own rows (and a plain file's)
--   are of origin 0, below 2^40; replica r makes ids r * 2^40 + k. A file has one
--   origin of its own (`replica_origin.origin`), and every row it makes gets the next
--   id of that origin, above every id of that origin the table ever used — whatever
--   other origins' rows it holds. SQLite's AUTOINCREMENT gives the next id above every
--   row of the table, so once a table holds rows of another origin (`origin_ids` then
--   has its row) ListStore gives its ids itself, and a row another client inserts
--   without an id (the sqlite3 shell) is given the next id of the file's origin by a
--   trigger, in the same statement. Only the sync engine (`applying` = 1, inside its
--   own transactions) writes rows of another origin; any other client's row with an id
--   of another origin gets one of the file's own.
-- * `replicas` holds a server's record of each replica that registered with it: the
--   number of the last write it applied from it, and how far the replica acknowledged
--   their results. `replica_results` keeps each write's result (and its content's
--   digest) until the replica acknowledges it, so that a write sent again is answered
--   with its result and applied once. A replica's record is never deleted.
--
-- Existing rows keep their ids (all of origin 0 but for ids a client chose above 2^40).
-- The rules of version 3 stay, by origin: a row of the file's origin gets an id above
-- every one of its origin the table used, and an id never changes but by the trigger
-- that gives a row of another origin, written by a client other than the sync engine,
-- an id of the file's own. One trigger a table does both; its body runs only when the
-- id may be an old one, may be another origin's, or the table holds another origin's
-- rows: a plain file's insert pays for its condition alone.

CREATE TABLE replica_origin (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  origin INTEGER NOT NULL DEFAULT 0 CHECK (origin >= 0),
  applying INTEGER NOT NULL DEFAULT 0 CHECK (applying IN (0, 1)),
  -- 1 only while a trigger gives a row an id of the file's origin.
  renumbering INTEGER NOT NULL DEFAULT 0 CHECK (renumbering IN (0, 1))
);
INSERT INTO replica_origin(id) VALUES (1);

-- The highest id of the file's origin each table ever used, kept from the first row of
-- another origin in it on (until then AUTOINCREMENT's own record says it).
CREATE TABLE origin_ids (
  name TEXT PRIMARY KEY,
  high INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE replicas (
  id INTEGER PRIMARY KEY CHECK (id >= 1),
  last_write INTEGER NOT NULL DEFAULT 0 CHECK (last_write >= 0),
  acked_through INTEGER NOT NULL DEFAULT 0 CHECK (acked_through >= 0),
  registered TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE replica_results (
  replica INTEGER NOT NULL REFERENCES replicas(id),
  n INTEGER NOT NULL CHECK (n >= 1),
  digest TEXT NOT NULL,
  result TEXT NOT NULL CHECK (json_valid(result)),
  PRIMARY KEY (replica, n)
) WITHOUT ROWID;

-- A table that already holds ids above 2^40 (a client chose them) keeps its ids: its
-- record of the file's origin starts now.
INSERT INTO origin_ids(name, high)
  SELECT 'lists', max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lists'
    AND seq < 1 << 40), 0), coalesce((SELECT max(id) FROM lists WHERE id < 1 << 40), 0))
  WHERE EXISTS (SELECT 1 FROM lists WHERE id >= 1 << 40)
  UNION ALL
  SELECT 'sections', max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sections'
    AND seq < 1 << 40), 0), coalesce((SELECT max(id) FROM sections WHERE id < 1 << 40), 0))
  WHERE EXISTS (SELECT 1 FROM sections WHERE id >= 1 << 40)
  UNION ALL
  SELECT 'items', max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'
    AND seq < 1 << 40), 0), coalesce((SELECT max(id) FROM items WHERE id < 1 << 40), 0))
  WHERE EXISTS (SELECT 1 FROM items WHERE id >= 1 << 40);

-- A file that becomes a replica's (its origin set) keeps its record of that origin's ids
-- from then on: its tables hold, or will hold, the server's rows.
CREATE TRIGGER replica_origin_set AFTER UPDATE OF origin ON replica_origin
WHEN NEW.origin IS NOT OLD.origin BEGIN
  INSERT OR REPLACE INTO origin_ids(name, high)
  SELECT 'lists', max(NEW.origin << 40, coalesce((SELECT max(id) FROM lists
    WHERE id > NEW.origin << 40 AND id < (NEW.origin + 1) << 40), 0))
  UNION ALL
  SELECT 'sections', max(NEW.origin << 40, coalesce((SELECT max(id) FROM sections
    WHERE id > NEW.origin << 40 AND id < (NEW.origin + 1) << 40), 0))
  UNION ALL
  SELECT 'items', max(NEW.origin << 40, coalesce((SELECT max(id) FROM items
    WHERE id > NEW.origin << 40 AND id < (NEW.origin + 1) << 40), 0));
END;

-- Lists -----------------------------------------------------------------------

DROP TRIGGER lists_id_is_new;
DROP TRIGGER lists_id_is_fixed;

CREATE TRIGGER lists_id_is_new AFTER INSERT ON lists
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lists'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'lists') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: lists.id is never reused; leave it out, or give one above every list id used so far')
  WHERE (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
    AND NEW.id <= coalesce((SELECT high FROM origin_ids WHERE name = 'lists'),
      (SELECT seq FROM sqlite_sequence WHERE name = 'lists'), 0);
  UPDATE origin_ids SET high = NEW.id
  WHERE name = 'lists' AND high < NEW.id AND (NEW.id >> 40) = (SELECT origin FROM replica_origin);
  -- A row of another origin: the table's record of the file's origin starts (from
  -- AUTOINCREMENT's, still the file's own until now), and unless the sync engine wrote
  -- it, the row gets the next id of the file's origin, and the log says so.
  INSERT OR IGNORE INTO origin_ids(name, high)
  SELECT 'lists', max(
    (SELECT origin FROM replica_origin) << 40,
    coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lists'
      AND (seq >> 40) = (SELECT origin FROM replica_origin)), 0),
    coalesce((SELECT max(id) FROM lists WHERE id >= (SELECT origin FROM replica_origin) << 40
      AND id < ((SELECT origin FROM replica_origin) + 1) << 40), 0))
  WHERE NEW.id > 0 AND (NEW.id >> 40) IS NOT (SELECT origin FROM replica_origin);
  UPDATE replica_origin SET renumbering = 1
  WHERE applying = 0 AND NEW.id > 0 AND (NEW.id >> 40) IS NOT origin;
  UPDATE lists SET id = (SELECT high + 1 FROM origin_ids WHERE name = 'lists')
  WHERE id = NEW.id AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE origin_ids SET high = high + 1
  WHERE name = 'lists' AND (SELECT renumbering FROM replica_origin) = 1;
  INSERT INTO changes(list_id, kind, op, row_id)
  SELECT high, 0, 1, high FROM origin_ids
  WHERE name = 'lists' AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE replica_origin SET renumbering = 0 WHERE renumbering = 1;
END;

CREATE TRIGGER lists_id_is_fixed BEFORE UPDATE OF id ON lists
WHEN NEW.id IS NOT OLD.id AND (SELECT renumbering FROM replica_origin) = 0 BEGIN
  SELECT RAISE(ABORT, 'ListStore: lists.id never changes; insert a new list instead');
END;

-- Sections --------------------------------------------------------------------

DROP TRIGGER sections_id_is_new;
DROP TRIGGER sections_id_is_fixed;

CREATE TRIGGER sections_id_is_new AFTER INSERT ON sections
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sections'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'sections') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: sections.id is never reused; leave it out, or give one above every section id used so far')
  WHERE (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
    AND NEW.id <= coalesce((SELECT high FROM origin_ids WHERE name = 'sections'),
      (SELECT seq FROM sqlite_sequence WHERE name = 'sections'), 0);
  UPDATE origin_ids SET high = NEW.id
  WHERE name = 'sections' AND high < NEW.id AND (NEW.id >> 40) = (SELECT origin FROM replica_origin);
  -- A row of another origin: the table's record of the file's origin starts (from
  -- AUTOINCREMENT's, still the file's own until now), and unless the sync engine wrote
  -- it, the row gets the next id of the file's origin, and the log says so.
  INSERT OR IGNORE INTO origin_ids(name, high)
  SELECT 'sections', max(
    (SELECT origin FROM replica_origin) << 40,
    coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sections'
      AND (seq >> 40) = (SELECT origin FROM replica_origin)), 0),
    coalesce((SELECT max(id) FROM sections WHERE id >= (SELECT origin FROM replica_origin) << 40
      AND id < ((SELECT origin FROM replica_origin) + 1) << 40), 0))
  WHERE NEW.id > 0 AND (NEW.id >> 40) IS NOT (SELECT origin FROM replica_origin);
  UPDATE replica_origin SET renumbering = 1
  WHERE applying = 0 AND NEW.id > 0 AND (NEW.id >> 40) IS NOT origin;
  UPDATE sections SET id = (SELECT high + 1 FROM origin_ids WHERE name = 'sections')
  WHERE id = NEW.id AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE origin_ids SET high = high + 1
  WHERE name = 'sections' AND (SELECT renumbering FROM replica_origin) = 1;
  INSERT INTO changes(list_id, kind, op, row_id, parent)
  SELECT NEW.list_id, 1, 1, high, NEW.list_id FROM origin_ids
  WHERE name = 'sections' AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE replica_origin SET renumbering = 0 WHERE renumbering = 1;
END;

CREATE TRIGGER sections_id_is_fixed BEFORE UPDATE OF id ON sections
WHEN NEW.id IS NOT OLD.id AND (SELECT renumbering FROM replica_origin) = 0 BEGIN
  SELECT RAISE(ABORT, 'ListStore: sections.id never changes; insert a new section instead');
END;

-- Items -----------------------------------------------------------------------

DROP TRIGGER items_id_is_new;
DROP TRIGGER items_id_is_fixed;

CREATE TRIGGER items_id_is_new AFTER INSERT ON items
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'items') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: items.id is never reused; leave it out, or give one above every item id used so far')
  WHERE (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
    AND NEW.id <= coalesce((SELECT high FROM origin_ids WHERE name = 'items'),
      (SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0);
  UPDATE origin_ids SET high = NEW.id
  WHERE name = 'items' AND high < NEW.id AND (NEW.id >> 40) = (SELECT origin FROM replica_origin);
  -- A row of another origin: the table's record of the file's origin starts (from
  -- AUTOINCREMENT's, still the file's own until now), and unless the sync engine wrote
  -- it, the row gets the next id of the file's origin, and the log says so.
  INSERT OR IGNORE INTO origin_ids(name, high)
  SELECT 'items', max(
    (SELECT origin FROM replica_origin) << 40,
    coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'
      AND (seq >> 40) = (SELECT origin FROM replica_origin)), 0),
    coalesce((SELECT max(id) FROM items WHERE id >= (SELECT origin FROM replica_origin) << 40
      AND id < ((SELECT origin FROM replica_origin) + 1) << 40), 0))
  WHERE NEW.id > 0 AND (NEW.id >> 40) IS NOT (SELECT origin FROM replica_origin);
  UPDATE replica_origin SET renumbering = 1
  WHERE applying = 0 AND NEW.id > 0 AND (NEW.id >> 40) IS NOT origin;
  UPDATE items SET id = (SELECT high + 1 FROM origin_ids WHERE name = 'items')
  WHERE id = NEW.id AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE origin_ids SET high = high + 1
  WHERE name = 'items' AND (SELECT renumbering FROM replica_origin) = 1;
  INSERT INTO changes(kind, op, row_id, parent)
  SELECT 2, 1, high, NEW.section_id FROM origin_ids
  WHERE name = 'items' AND (SELECT renumbering FROM replica_origin) = 1;
  UPDATE replica_origin SET renumbering = 0 WHERE renumbering = 1;
END;

CREATE TRIGGER items_id_is_fixed BEFORE UPDATE OF id ON items
WHEN NEW.id IS NOT OLD.id AND (SELECT renumbering FROM replica_origin) = 0 BEGIN
  SELECT RAISE(ABORT, 'ListStore: items.id never changes; insert a new item instead');
END;
