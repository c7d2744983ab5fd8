-- ListStore schema, version 7: the change log kept for a time, whatever its readers
-- (docs/replicas.md).
--
-- A replica that was away for days resumes from its position in the log, and needs the
-- log (deletion entries included) to reach back that far. `retain_seconds` is how long
-- every entry is kept, by whichever process prunes: 0 (a plain file's) keeps what the
-- live observers have not read, as before; `liststore serve --retain-days N` sets it.
-- Pruning notes in `change_log_marks` when the log reached a seq (at most one mark a
-- minute), and deletes only through the last seq reached longer ago than that.

ALTER TABLE change_log_horizon ADD COLUMN retain_seconds REAL NOT NULL DEFAULT 0
  CHECK (retain_seconds >= 0);

CREATE TABLE change_log_marks (
  seq INTEGER PRIMARY KEY,
  at REAL NOT NULL
);
