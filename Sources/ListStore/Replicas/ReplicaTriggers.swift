// The triggers that note a replica's local commits in its outbox (docs/replicas.md),
// created when a file becomes a replica's: a plain file has none, and pays nothing for
// them. Migration 8 made the tables they write.

extension ReplicaOutbox {
  /// The names of the triggers, for `check()`.
  static let triggerNames = ["lists", "sections", "items"].flatMap { table in
    ["insert", "update", "delete"].map { "\(table)_outbox_\($0)" }
  }

  /// Creates the triggers (those missing), in the caller's transaction.
  static func createTriggers(db: any DatabaseConnection) throws {
    try db.execute(triggersSQL)
  }

  /// Each notes the row a local commit touched (`outbox_rows`: 1 inserted, 2 moved, 4
  /// value, metadata or name changed, 8 deleted) and keeps the row as it was before the
  /// first pending write touched it (`outbox_before`); a row renumbered into the file's
  /// origin is an insert of its new id; rows deleted with their list or section go with
  /// its delete. None notes the sync engine's writes (`applying` = 1).
  private static let triggersSQL = #"""
    -- Lists ----------------------------------------------------------------------------

    CREATE TRIGGER IF NOT EXISTS lists_outbox_insert AFTER INSERT ON lists
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0
      AND (NEW.id >> 40) = origin) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list) VALUES (0, NEW.id, 1, NEW.id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 1;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed) VALUES (0, NEW.id, 0);
    END;

    CREATE TRIGGER IF NOT EXISTS lists_outbox_update AFTER UPDATE ON lists
    WHEN (OLD.name IS NOT NEW.name OR OLD.id IS NOT NEW.id)
      AND EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0) BEGIN
      -- A row renumbered into the file's origin: its insert is the new id's.
      DELETE FROM outbox_rows WHERE kind = 0 AND id = OLD.id AND OLD.id <> NEW.id;
      DELETE FROM outbox_before WHERE kind = 0 AND id = OLD.id AND OLD.id <> NEW.id AND existed = 0;
      INSERT INTO outbox_rows(kind, id, op, list)
      VALUES (0, NEW.id, CASE WHEN OLD.id <> NEW.id THEN 1 ELSE 4 END, NEW.id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | excluded.op;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, value)
      VALUES (0, NEW.id, OLD.id = NEW.id, CASE WHEN OLD.id = NEW.id THEN OLD.name END);
    END;

    CREATE TRIGGER IF NOT EXISTS lists_outbox_delete AFTER DELETE ON lists
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list) VALUES (0, OLD.id, 8, OLD.id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 8;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, value) VALUES (0, OLD.id, 1, OLD.name);
    END;

    -- Sections -------------------------------------------------------------------------

    CREATE TRIGGER IF NOT EXISTS sections_outbox_insert AFTER INSERT ON sections
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0
      AND (NEW.id >> 40) = origin) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list) VALUES (1, NEW.id, 1, NEW.list_id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 1;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed) VALUES (1, NEW.id, 0);
    END;

    CREATE TRIGGER IF NOT EXISTS sections_outbox_update AFTER UPDATE ON sections
    WHEN (OLD.id IS NOT NEW.id OR OLD.list_id IS NOT NEW.list_id
        OR OLD.position IS NOT NEW.position OR OLD.metadata IS NOT NEW.metadata)
      AND EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0) BEGIN
      DELETE FROM outbox_rows WHERE kind = 1 AND id = OLD.id AND OLD.id <> NEW.id;
      DELETE FROM outbox_before WHERE kind = 1 AND id = OLD.id AND OLD.id <> NEW.id AND existed = 0;
      INSERT INTO outbox_rows(kind, id, op, list)
      VALUES (1, NEW.id,
        CASE WHEN OLD.id <> NEW.id THEN 1 ELSE
          (CASE WHEN OLD.list_id IS NOT NEW.list_id OR OLD.position IS NOT NEW.position
            THEN 2 ELSE 0 END) | (CASE WHEN OLD.metadata IS NOT NEW.metadata THEN 4 ELSE 0 END)
        END, NEW.list_id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | excluded.op, list = excluded.list;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, parent, position, value)
      SELECT 1, NEW.id, 1, OLD.list_id, OLD.position, OLD.metadata WHERE OLD.id = NEW.id
      UNION ALL SELECT 1, NEW.id, 0, NULL, NULL, NULL WHERE OLD.id <> NEW.id;
    END;

    -- Sections deleted with their list go with the list's delete.
    CREATE TRIGGER IF NOT EXISTS sections_outbox_delete AFTER DELETE ON sections
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0)
      AND EXISTS (SELECT 1 FROM lists WHERE id = OLD.list_id) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list) VALUES (1, OLD.id, 8, OLD.list_id)
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 8, list = excluded.list;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, parent, position, value)
      VALUES (1, OLD.id, 1, OLD.list_id, OLD.position, OLD.metadata);
    END;

    -- Items ----------------------------------------------------------------------------

    CREATE TRIGGER IF NOT EXISTS items_outbox_insert AFTER INSERT ON items
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0
      AND (NEW.id >> 40) = origin) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list)
      VALUES (2, NEW.id, 1, (SELECT list_id FROM sections WHERE id = NEW.section_id))
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 1;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed) VALUES (2, NEW.id, 0);
    END;

    CREATE TRIGGER IF NOT EXISTS items_outbox_update AFTER UPDATE ON items
    WHEN (OLD.id IS NOT NEW.id OR OLD.section_id IS NOT NEW.section_id
        OR OLD.position IS NOT NEW.position OR OLD.value IS NOT NEW.value)
      AND EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0) BEGIN
      DELETE FROM outbox_rows WHERE kind = 2 AND id = OLD.id AND OLD.id <> NEW.id;
      DELETE FROM outbox_before WHERE kind = 2 AND id = OLD.id AND OLD.id <> NEW.id AND existed = 0;
      INSERT INTO outbox_rows(kind, id, op, list)
      VALUES (2, NEW.id,
        CASE WHEN OLD.id <> NEW.id THEN 1 ELSE
          (CASE WHEN OLD.section_id IS NOT NEW.section_id OR OLD.position IS NOT NEW.position
            THEN 2 ELSE 0 END) | (CASE WHEN OLD.value IS NOT NEW.value THEN 4 ELSE 0 END)
        END, (SELECT list_id FROM sections WHERE id = NEW.section_id))
      ON CONFLICT (kind, id) DO UPDATE SET op = op | excluded.op, list = excluded.list;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, parent, position, value)
      SELECT 2, NEW.id, 1, OLD.section_id, OLD.position, OLD.value WHERE OLD.id = NEW.id
      UNION ALL SELECT 2, NEW.id, 0, NULL, NULL, NULL WHERE OLD.id <> NEW.id;
    END;

    -- Items deleted with their section go with the section's delete.
    CREATE TRIGGER IF NOT EXISTS items_outbox_delete AFTER DELETE ON items
    WHEN EXISTS (SELECT 1 FROM replica_origin WHERE origin > 0 AND applying = 0)
      AND EXISTS (SELECT 1 FROM sections WHERE id = OLD.section_id) BEGIN
      INSERT INTO outbox_rows(kind, id, op, list)
      VALUES (2, OLD.id, 8, (SELECT list_id FROM sections WHERE id = OLD.section_id))
      ON CONFLICT (kind, id) DO UPDATE SET op = op | 8, list = excluded.list;
      INSERT OR IGNORE INTO outbox_before(kind, id, existed, parent, position, value)
      VALUES (2, OLD.id, 1, OLD.section_id, OLD.position, OLD.value);
    END;
    """#
}
