-- ListStore schema, version 8: a replica's outbox (docs/replicas.md).
--
-- In a replica's file (`replica_origin.origin` > 0), every local commit — by ListStore,
-- the CLI, the sqlite3 shell — notes the rows it touched in `outbox_rows`, in the same
-- transaction, by triggers that ListStore creates when it makes the file a replica (a
-- plain file has none, and pays nothing for them); ListStore closes them into one write of `outbox`
-- just before its own commits (another client's commits are closed by the next
-- ListStore commit or sync): the write's intents, each row placed after its predecessor
-- in the new order. `outbox_before` keeps each row as it was before the first pending
-- write touched it: the server's state, on which a sync replays the pending writes.
-- The sync engine's own writes (`applying` = 1), migrations from this one on (run with
-- `applying` set) and a plain file's (origin 0) note nothing.

-- Rows touched by local commits not yet closed into a write. `op`: 1 inserted, 2 moved
-- (position or parent), 4 value, metadata or name changed, 8 deleted.
CREATE TABLE outbox_rows (
  kind INTEGER NOT NULL,
  id INTEGER NOT NULL,
  op INTEGER NOT NULL,
  list INTEGER,
  PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- Writes waiting for the server, numbered from 1 (never a number twice): `ops` is the
-- write's intents as pushed (a JSON array), `digest` a digest of them, `protocol` the
-- replica protocol they were made under.
-- `applied_at` is the server's seq once it applied the write: the write stays, replayed
-- on the server's state, until the replica has pulled that far.
CREATE TABLE outbox (
  n INTEGER PRIMARY KEY AUTOINCREMENT,
  protocol INTEGER NOT NULL,
  digest TEXT NOT NULL,
  ops TEXT NOT NULL CHECK (json_valid(ops)),
  applied_at INTEGER
);

-- The replica's record, in a replica's file: its server, its number there (the origin of
-- its ids), the lists it follows (a JSON array of ids; NULL: every list its token may
-- read), the server's position its confirmed state is at, and the last write whose
-- result it kept.
CREATE TABLE replica (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  server TEXT NOT NULL,
  number INTEGER NOT NULL CHECK (number >= 0),
  lists TEXT CHECK (lists IS NULL OR json_valid(lists)),
  seq INTEGER NOT NULL DEFAULT 0,
  acked_through INTEGER NOT NULL DEFAULT 0,
  read_only INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1)),
  token TEXT
);

-- Writes the server rejected (the last 1,000 are kept): the write's number, the code and
-- sentence of the server, when, and the write's intents.
CREATE TABLE replica_rejections (
  n INTEGER PRIMARY KEY,
  code TEXT NOT NULL,
  error TEXT NOT NULL,
  at TEXT NOT NULL,
  ops TEXT NOT NULL
);

-- Each row as it was before the first pending write touched it (`existed` 0: it did not
-- exist). `parent` is a section's list or an item's section; a list's name is its value.
CREATE TABLE outbox_before (
  kind INTEGER NOT NULL,
  id INTEGER NOT NULL,
  existed INTEGER NOT NULL,
  parent INTEGER,
  position TEXT,
  value TEXT,
  PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- Ids ------------------------------------------------------------------------------

-- The sync engine gives a replica's own rows back their ids when it replays the pending
-- writes on the server's state (a row made offline keeps its id): an id of the file's
-- origin is never reused but by it. Otherwise as in version 6.

DROP TRIGGER lists_id_is_new;

CREATE TRIGGER lists_id_is_new AFTER INSERT ON lists
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lists'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'lists') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: lists.id is never reused; leave it out, or give one above every list id used so far')
  WHERE (SELECT applying FROM replica_origin) = 0
    AND (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
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

DROP TRIGGER sections_id_is_new;

CREATE TRIGGER sections_id_is_new AFTER INSERT ON sections
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sections'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'sections') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: sections.id is never reused; leave it out, or give one above every section id used so far')
  WHERE (SELECT applying FROM replica_origin) = 0
    AND (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
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

DROP TRIGGER items_id_is_new;

CREATE TRIGGER items_id_is_new AFTER INSERT ON items
WHEN NEW.id <= 0 OR NEW.id >= 1 << 40
  OR NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0)
  OR EXISTS (SELECT 1 FROM origin_ids WHERE name = 'items') BEGIN
  -- A row of the file's origin: an id above every one of its origin ever used.
  SELECT RAISE(ABORT, 'ListStore: items.id is never reused; leave it out, or give one above every item id used so far')
  WHERE (SELECT applying FROM replica_origin) = 0
    AND (NEW.id <= 0 OR (NEW.id >> 40) = (SELECT origin FROM replica_origin))
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
