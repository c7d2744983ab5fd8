-- ListStore schema for PostgreSQL, version 3: `metadata` and `value` are `text` holding
-- canonical JSON, the same bytes SQLite stores.
--
-- Until now they were `json`, which keeps the text as written: `{"a": 1}` from one
-- client and `{"a":1}` from another were different rows to compare, export and sync,
-- and `WHERE value = '"Rome"'` failed (json has no equality operator). Now a trigger
-- checks every value written (invalid JSON is refused as the `json` type refused it)
-- and stores it as SQLite's json() does: without the white space between tokens, with
-- its keys in their order and its numbers and strings spelt as they were. It also
-- checks positions, which the trigger it replaces did, so that a write runs one
-- trigger before it rather than two.
--
-- Existing rows are rewritten only where their text changes; the change log records
-- those rewrites like any other update, so observers see the canonical text too.

-- The canonical text of valid JSON: white space outside strings removed.
CREATE FUNCTION liststore_canonical_json(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN t ~ '[ \t\n\r]'
    THEN regexp_replace(t, '("(?:[^"\\]|\\.)*")|[ \t\n\r]+', '\1', 'g')
    ELSE t END
$$;

CREATE FUNCTION liststore_check_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (TG_OP = 'INSERT' OR NEW.position IS DISTINCT FROM OLD.position)
    AND NOT coalesce(liststore_is_position_key(NEW.position), false) THEN
    RAISE EXCEPTION USING
      ERRCODE = 'check_violation',
      MESSAGE = 'ListStore: ' || TG_TABLE_NAME || '.position must be a position key: text of '
        || '0-9A-Za-z, a head letter giving the integer part''s length (a-z: 2-27 characters, '
        || 'Z-A: 2-27), no trailing 0 after it';
  END IF;
  -- The cast refuses invalid JSON (SQLSTATE 22P02), as the json column did.
  IF TG_TABLE_NAME = 'items' THEN
    IF TG_OP = 'INSERT' OR NEW.value IS DISTINCT FROM OLD.value THEN
      NEW.value := liststore_canonical_json(NEW.value::json::text);
    END IF;
  ELSIF TG_OP = 'INSERT' OR NEW.metadata IS DISTINCT FROM OLD.metadata THEN
    NEW.metadata := liststore_canonical_json(NEW.metadata::json::text);
  END IF;
  RETURN NEW;
END $$;

DROP TRIGGER sections_position_is_a_key ON sections;
DROP TRIGGER items_position_is_a_key ON items;
DROP FUNCTION liststore_check_position();

-- json to text keeps the bytes: no table rewrite.
ALTER TABLE sections ALTER COLUMN metadata DROP DEFAULT,
  ALTER COLUMN metadata TYPE text USING metadata::text,
  ALTER COLUMN metadata SET DEFAULT 'null';
ALTER TABLE items ALTER COLUMN value TYPE text USING value::text;

UPDATE sections SET metadata = liststore_canonical_json(metadata)
WHERE metadata ~ '[ \t\n\r]' AND metadata <> liststore_canonical_json(metadata);
UPDATE items SET value = liststore_canonical_json(value)
WHERE value ~ '[ \t\n\r]' AND value <> liststore_canonical_json(value);

CREATE TRIGGER sections_check BEFORE INSERT OR UPDATE OF position, metadata ON sections
FOR EACH ROW EXECUTE FUNCTION liststore_check_row();
CREATE TRIGGER items_check BEFORE INSERT OR UPDATE OF position, value ON items
FOR EACH ROW EXECUTE FUNCTION liststore_check_row();
