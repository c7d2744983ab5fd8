-- ListStore schema for PostgreSQL, version 5: the server's records of its replicas
-- (SQLite's version 6 does the same; docs/replicas.md).
--
-- * Ids are split by origin: `id >> 40`. The server's own rows come from the identity
--   columns, below 2^40; replica r's rows keep the ids it gave them, r * 2^40 + k,
--   written only by the server's application of the replica's pushes (OVERRIDING SYSTEM
--   VALUE, which identity columns refuse any other client), and identity sequences never
--   move past them.
-- * `replicas` holds each registered replica's record: the number of the last write
--   applied from it, and how far it acknowledged their results. `replica_results` keeps
--   each write's result (and its content's digest) until the replica acknowledges it, so
--   that a write sent again is answered with its result and applied once. A replica's
--   record is never deleted.

CREATE TABLE replicas (
  id bigint PRIMARY KEY CHECK (id >= 1),
  last_write bigint NOT NULL DEFAULT 0 CHECK (last_write >= 0),
  acked_through bigint NOT NULL DEFAULT 0 CHECK (acked_through >= 0),
  registered timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE replica_results (
  replica bigint NOT NULL REFERENCES replicas(id),
  n bigint NOT NULL CHECK (n >= 1),
  digest text NOT NULL,
  result json NOT NULL,
  PRIMARY KEY (replica, n)
);
