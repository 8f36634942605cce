// Owns the SQLite store's schema: its migrations, one per version (`PRAGMA user_version`),
// and running them. Each moves the schema one version up; a released one is never edited.

import type Database from "better-sqlite3";
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
     awaiting_reply INTEGER NOT NULL DEFAULT 0
   ) STRICT;
   CREATE TABLE messages (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system-update', 'summary')),
     text TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     data TEXT,
     PRIMARY KEY (session_id, seq)
   ) STRICT;
   CREATE TABLE pending_prompts (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     text TEXT NOT NULL,
     promoted_seq INTEGER
   ) STRICT;
   CREATE INDEX pending_prompts_by_session ON pending_prompts(session_id, promoted_seq);
   CREATE TABLE epochs (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     number INTEGER NOT NULL,
     baseline TEXT NOT NULL,
     snapshot TEXT NOT NULL,
     started_seq INTEGER NOT NULL,
     reason TEXT NOT NULL CHECK (reason IN ('initial', 'compaction', 'switch', 'move', 'replacement')),
     PRIMARY KEY (session_id, number)
   ) STRICT;`,
  `CREATE TABLE discovered_instructions (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     location TEXT NOT NULL,
     file TEXT NOT NULL,
     discovered INTEGER NOT NULL,
     PRIMARY KEY (session_id, location, file)
   ) STRICT;`,
  // The host system prompt an epoch began with, as JSON (a string or null); NULL: not recorded.
  "ALTER TABLE epochs ADD COLUMN system_prompt TEXT;",
  // An assistant reply's token usage and the provider content to replay (thinking blocks), as JSON; NULL: none.
  `ALTER TABLE messages ADD COLUMN usage TEXT;
   ALTER TABLE messages ADD COLUMN provider_content TEXT;`,
  // The in-flight lease of an awaited reply (decision 030): holder and expiry in ms since the epoch.
  "ALTER TABLE sessions ADD COLUMN lease_holder TEXT; ALTER TABLE sessions ADD COLUMN lease_expires INTEGER;",
  // A Context Snapshot is kept one row per source key, so a Mid-Conversation System Message
  // writes only the entries it changed, not the whole snapshot again; `snapshot_version`
  // counts an epoch's changes (a reader's cached snapshot is current while it matches).
  // An epoch whose old snapshot text was not a JSON object is marked -1 (read: corrupt); a key
  // written twice keeps its last value, as JSON.parse did.
  `CREATE TABLE snapshot_entries (
     session_id TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     key TEXT NOT NULL,
     entry TEXT NOT NULL,
     PRIMARY KEY (session_id, epoch, key),
     FOREIGN KEY (session_id, epoch) REFERENCES epochs(session_id, number) ON DELETE CASCADE
   ) STRICT, WITHOUT ROWID;
   ALTER TABLE epochs ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 0;
   INSERT OR REPLACE INTO snapshot_entries (session_id, epoch, key, entry)
     SELECT e.session_id, e.number, j.key, CASE WHEN j.type IN ('object', 'array') THEN j.value ELSE json_quote(j.value) END
     FROM epochs e, json_each(e.snapshot) j
     WHERE json_valid(e.snapshot) AND json_type(e.snapshot) = 'object'
     ORDER BY e.session_id, e.number, j.id;
   UPDATE epochs SET snapshot_version = -1 WHERE NOT (json_valid(snapshot) AND json_type(snapshot) = 'object');
   ALTER TABLE epochs DROP COLUMN snapshot;`,
  // The head of each session on its own row (decision 096): where its history ends, its
  // active epoch's number (0: none yet) and the version of that epoch's snapshot, so a
  // boundary reads one row and every commit advances the head with its claim of the
  // revision. From here on epochs.snapshot_version only marks an epoch unreadable since
  // the upgrade above (-1).
  `ALTER TABLE sessions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 0;
   UPDATE sessions SET
     last_seq = COALESCE((SELECT MAX(m.seq) FROM messages m WHERE m.session_id = sessions.id), 0),
     epoch = COALESCE((SELECT MAX(e.number) FROM epochs e WHERE e.session_id = sessions.id), 0),
     snapshot_version = COALESCE(
       (SELECT e.snapshot_version FROM epochs e WHERE e.session_id = sessions.id ORDER BY e.number DESC LIMIT 1), 0);`,
  // Messages kept in the order of their key (decision 096): one b-tree instead of a table and
  // its key's index, so appending a message writes one page less and history is read in order.
  `CREATE TABLE messages_by_key (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system-update', 'summary')),
     text TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     data TEXT,
     usage TEXT,
     provider_content TEXT,
     PRIMARY KEY (session_id, seq)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO messages_by_key (session_id, seq, role, text, epoch, data, usage, provider_content)
     SELECT session_id, seq, role, text, epoch, data, usage, provider_content FROM messages;
   DROP TABLE messages;
   ALTER TABLE messages_by_key RENAME TO messages;`,
  // A session of the context engine (decision 104) keeps how much of its caller's history
  // its last boundary saw: the number of messages and their chained digest (NULL: a Host session).
  "ALTER TABLE sessions ADD COLUMN seen_count INTEGER; ALTER TABLE sessions ADD COLUMN seen_digest TEXT;",
];

/** Moves `db`'s schema up to this code's (`PRAGMA user_version`), in one immediate transaction: one process at a time. */
export function migrate(db: Database.Database, file: string): void {
  db.transaction(() => {
    for (const { sql, version } of migrationsAfter(file, db.pragma("user_version", { simple: true }) as number, migrations)) {
      db.exec(sql);
      db.pragma(`user_version = ${version}`);
    }
  }).immediate();
}
