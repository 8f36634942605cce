// Owns the PostgreSQL store's schema: its migrations, one per version (the `schema_version`
// table), and creating the schema and running them, one host at a time. Each moves the
// schema one version up; a released one is never edited.

import type { Query } from "./pg.ts";
import { migrationsAfter } from "./schema-version.ts";

/** Each entry moves the schema one version up; never edit a released one. */
export const migrations: readonly string[] = [
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     location TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     revision INTEGER NOT NULL DEFAULT 0,
     epoch_due TEXT CHECK (epoch_due IN ('compaction', 'switch', 'move', 'replacement')),
     awaiting_reply BOOLEAN NOT NULL DEFAULT false
   );
   CREATE TABLE messages (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system-update', 'summary')),
     text TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     data TEXT,
     usage TEXT,
     provider_content TEXT,
     PRIMARY KEY (session_id, seq)
   );
   CREATE TABLE pending_prompts (
     id SERIAL PRIMARY KEY,
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     text TEXT NOT NULL,
     promoted_seq INTEGER
   );
   CREATE INDEX pending_prompts_by_session ON pending_prompts(session_id, promoted_seq);
   CREATE TABLE epochs (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     number INTEGER NOT NULL,
     baseline TEXT NOT NULL,
     snapshot TEXT NOT NULL,
     started_seq INTEGER NOT NULL,
     reason TEXT NOT NULL CHECK (reason IN ('initial', 'compaction', 'switch', 'move', 'replacement')),
     system_prompt TEXT,
     PRIMARY KEY (session_id, number)
   );
   CREATE TABLE discovered_instructions (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     location TEXT NOT NULL,
     file TEXT NOT NULL,
     discovered INTEGER NOT NULL,
     PRIMARY KEY (session_id, location, file)
   );`,
  // The in-flight lease of an awaited reply (decision 030): holder and expiry in ms since the epoch.
  "ALTER TABLE sessions ADD COLUMN lease_holder TEXT; ALTER TABLE sessions ADD COLUMN lease_expires BIGINT;",
  // A Context Snapshot is kept one row per source key (decision 094), so a Mid-Conversation
  // System Message writes only the entries it changed; `snapshot_version` counts an epoch's
  // changes (a reader's cached snapshot is current while it matches). An epoch whose old
  // snapshot text was not a JSON object (or had a key no text column holds) is marked -1
  // (read: corrupt); the check catches the cast's error, so a bad text never fails the
  // migration. A key given twice keeps its last value, as JSON.parse did.
  `CREATE TABLE snapshot_entries (
     session_id TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     key TEXT NOT NULL,
     entry TEXT NOT NULL,
     PRIMARY KEY (session_id, epoch, key),
     FOREIGN KEY (session_id, epoch) REFERENCES epochs(session_id, number) ON DELETE CASCADE
   );
   ALTER TABLE epochs ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 0;
   CREATE FUNCTION snapshot_object_or_null(text) RETURNS json LANGUAGE plpgsql IMMUTABLE AS $$
   DECLARE
     parsed json;
   BEGIN
     parsed := $1::json;
     IF json_typeof(parsed) <> 'object' THEN RETURN NULL; END IF;
     PERFORM count(j.key) FROM json_each(parsed) AS j;
     RETURN parsed;
   EXCEPTION WHEN others THEN
     RETURN NULL;
   END $$;
   INSERT INTO snapshot_entries (session_id, epoch, key, entry)
     SELECT DISTINCT ON (e.session_id, e.number, j.key) e.session_id, e.number, j.key, j.value::text
     FROM epochs e, json_each(snapshot_object_or_null(e.snapshot)) WITH ORDINALITY AS j(key, value, n)
     ORDER BY e.session_id, e.number, j.key, j.n DESC;
   UPDATE epochs SET snapshot_version = -1 WHERE snapshot_object_or_null(snapshot) IS NULL;
   DROP FUNCTION snapshot_object_or_null(text);
   ALTER TABLE epochs DROP COLUMN snapshot;`,
  // The order sessions were created in, for `listSessions` (decision 150). Sessions of an
  // older schema are numbered in the order the table is read, all before newer ones.
  "ALTER TABLE sessions ADD COLUMN created BIGSERIAL;",
  // The head of each session on its own row, as in the SQLite store (decisions 096, 171):
  // where its history ends, its active epoch's number (0: none yet) and the version of that
  // epoch's snapshot, so a boundary reads one row and a commit is one statement; and what an
  // engine session saw of its caller's history (decision 104; NULL: a Host session). From
  // here on epochs.snapshot_version only marks an epoch unreadable since its upgrade (-1).
  `ALTER TABLE sessions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN seen_count INTEGER;
   ALTER TABLE sessions ADD COLUMN seen_digest TEXT;
   UPDATE sessions s SET
     last_seq = COALESCE((SELECT MAX(m.seq) FROM messages m WHERE m.session_id = s.id), 0),
     epoch = COALESCE((SELECT MAX(e.number) FROM epochs e WHERE e.session_id = s.id), 0),
     snapshot_version = COALESCE(
       (SELECT e.snapshot_version FROM epochs e WHERE e.session_id = s.id ORDER BY e.number DESC LIMIT 1), 0);
   UPDATE epochs SET snapshot_version = 0 WHERE snapshot_version > 0;`,
];

/**
 * Creates `schema` when missing and moves it up to this code's, inside the caller's
 * transaction; hosts opening the store at once migrate one at a time (an advisory lock).
 */
export async function migrate(query: Query, schema: string, database: string): Promise<void> {
  await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`context-host:${schema}`]);
  await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await query(`SET LOCAL search_path TO ${schema}`);
  await query("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const found = await query("SELECT version FROM schema_version");
  const version = (found.rows[0] as { version: number } | undefined)?.version ?? 0;
  if (found.rows.length === 0) await query("INSERT INTO schema_version (version) VALUES (0)");
  for (const migration of migrationsAfter(database, version, migrations)) await query(migration.sql);
  await query("UPDATE schema_version SET version = $1", [migrations.length]);
}
