// Owns the SQLite store's file and its writes: opening the file (WAL, foreign keys), telling
// a deleted or replaced file, and running one commit's writes (decision 171) in SQL.

import { mkdirSync, type Stats } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { RevisionConflict, SessionNotFound, StoreFailed } from "../errors.ts";
import type { Writes } from "./commit-plan.ts";

/** Whether two stats are of the same file (device and inode). */
export function isSameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The SQLite file of a data folder. */
export function sessionsFile(dataDir: string): string {
  return path.join(dataDir, "sessions.db");
}

/** Opens the SQLite file (creating its folder) in WAL mode; a failure is `StoreFailed` naming the file and what to do. */
export function openDatabase(file: string): Database.Database {
  let db: Database.Database | undefined;
  try {
    if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("foreign_keys = ON");
    return db;
  } catch (error) {
    db?.close();
    throw openFailed(file, error);
  }
}

/** Why a store could not be opened, with what to do about it. */
export function openFailed(file: string, error: unknown): StoreFailed {
  const code = (error as { code?: unknown }).code;
  const advice =
    code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT"
      ? "it is not a context-host session store: move it away, or give another data folder (dataDir)"
      : "check that its folder exists or can be created and that this process may write to both, or give another data folder (dataDir)";
  return new StoreFailed({ file, operation: "open the session store", cause: error, advice });
}

/**
 * Runs one commit's writes (decision 171), inside the caller's transaction: the session's
 * row advanced to the new head if it is still at `writes.revision` (else `RevisionConflict`,
 * or `SessionNotFound`), then the epoch, its entries, the promoted prompts and the messages.
 */
export function applyWrites(prepare: (sql: string) => Database.Statement, id: string, writes: Writes): void {
  const { head, lease, where, seen } = writes;
  const keepsTurn = writes.awaitingReply === "kept" ? 1 : 0;
  const keepsLease = lease === "kept" ? 1 : 0;
  const taken = lease === "kept" ? null : lease;
  const claimed = prepare(
    // Positional parameters (a value given twice is passed twice): binding by name costs a lookup per parameter.
    `UPDATE sessions SET revision = ?, last_seq = ?, epoch = ?, snapshot_version = ?,
       awaiting_reply = CASE WHEN ? THEN awaiting_reply ELSE ? END,
       lease_holder = CASE WHEN ? THEN lease_holder ELSE ? END,
       lease_expires = CASE WHEN ? THEN lease_expires ELSE ? END,
       epoch_due = CASE ? WHEN 'settled' THEN NULL WHEN 'compaction' THEN 'compaction' ELSE epoch_due END,
       seen_count = COALESCE(?, seen_count), seen_digest = COALESCE(?, seen_digest),
       location = COALESCE(?, location), provider = COALESCE(?, provider), model = COALESCE(?, model)
     WHERE id = ? AND revision = ?`,
  ).run(
    head.revision,
    head.lastSeq,
    head.epoch,
    head.snapshotVersion,
    keepsTurn,
    writes.awaitingReply === true ? 1 : 0,
    keepsLease,
    taken?.holder ?? null,
    keepsLease,
    taken?.expiresAt ?? null,
    writes.epochDue,
    seen?.count ?? null,
    seen?.digest ?? null,
    where?.location ?? null,
    where?.provider ?? null,
    where?.model ?? null,
    id,
    writes.revision,
  );
  if (claimed.changes === 0) {
    if (prepare("SELECT 1 FROM sessions WHERE id = ?").get(id) === undefined) throw new SessionNotFound({ sessionId: id });
    throw new RevisionConflict({ sessionId: id, expected: writes.revision });
  }
  const epoch = writes.newEpoch;
  if (epoch !== undefined) {
    prepare(
      "INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(id, epoch.number, epoch.baseline, epoch.startedSeq, epoch.reason, epoch.systemPrompt);
  }
  const { entries } = writes;
  const upsert = prepare(
    "INSERT INTO snapshot_entries (session_id, epoch, key, entry) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET entry = excluded.entry",
  );
  for (const [i, key] of entries.keys.entries()) upsert.run(id, entries.epoch, key, entries.entries[i]);
  for (const key of entries.removed) {
    prepare("DELETE FROM snapshot_entries WHERE session_id = ? AND epoch = ? AND key = ?").run(id, entries.epoch, key);
  }
  for (const prompt of writes.promote) {
    const promoted = prepare(
      "UPDATE pending_prompts SET promoted_seq = ? WHERE id = ? AND session_id = ? AND promoted_seq IS NULL",
    ).run(prompt.seq, prompt.id, id);
    if (promoted.changes !== 1) throw new RevisionConflict({ sessionId: id, expected: writes.revision });
  }
  const insert = prepare(
    "INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  for (const row of writes.messages) {
    insert.run(id, row.seq, row.role, row.text, row.epoch, row.data, row.usage, row.provider_content);
  }
}
