-- ListStore schema for PostgreSQL, version 2: TRUNCATE of the public tables and of the
-- change log is refused.
--
-- TRUNCATE removes rows without firing row triggers, so nothing would reach the change
-- log: observers would go on showing rows that are gone, with nothing to tell them. A
-- client that means to empty a table deletes its rows instead (`DELETE FROM items`),
-- which is observed like any other write. SQLite has no TRUNCATE; its `DELETE` without a
-- `WHERE` is logged row by row.

CREATE FUNCTION liststore_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = 'feature_not_supported',
    MESSAGE = 'ListStore: TRUNCATE ' || TG_TABLE_NAME || ' is refused, since observers would '
      || 'not see it; delete the rows instead (DELETE FROM ' || TG_TABLE_NAME || '), which '
      || 'every observer sees';
END $$;

CREATE TRIGGER lists_truncate_refused BEFORE TRUNCATE ON lists
FOR EACH STATEMENT EXECUTE FUNCTION liststore_refuse_truncate();
CREATE TRIGGER sections_truncate_refused BEFORE TRUNCATE ON sections
FOR EACH STATEMENT EXECUTE FUNCTION liststore_refuse_truncate();
CREATE TRIGGER items_truncate_refused BEFORE TRUNCATE ON items
FOR EACH STATEMENT EXECUTE FUNCTION liststore_refuse_truncate();
CREATE TRIGGER changes_truncate_refused BEFORE TRUNCATE ON changes
FOR EACH STATEMENT EXECUTE FUNCTION liststore_refuse_truncate();
