-- ListStore schema for PostgreSQL, version 6: the change log kept for a time, whatever
-- its readers (SQLite's version 7 does the same; docs/replicas.md).
--
-- `retain_seconds` is how long every entry is kept, by whichever process prunes: 0
-- keeps what the live observers have not read, as before; `liststore serve --retain-days
-- N` sets it. Pruning notes in `change_log_marks` when the log reached a seq (at most one
-- mark a minute), and deletes only through the last seq reached longer ago than that.

ALTER TABLE change_log_horizon ADD COLUMN retain_seconds double precision NOT NULL DEFAULT 0
  CHECK (retain_seconds >= 0);

CREATE TABLE change_log_marks (
  seq bigint PRIMARY KEY,
  at double precision NOT NULL
);
