// Owns the SQLite store's file and its statements: opening the file (WAL, foreign keys),
// writing to it (a deleted or replaced file told, another process's write lock waited for,
// SQLite's errors named), what a boundary reads in one statement, and one commit's writes
// (decision 171) in SQL.

import { mkdirSync, type Stats, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ContextHostError } from "../../base/errors.ts";
import { RevisionConflict, SessionNotFound, StoreBusy, StoreFailed, StoreFileChanged, StorePathUnusable } from "../errors.ts";
import type { SessionHead, Writes } from "./commit-plan.ts";
import { sessionFrom } from "./rows.ts";
import type { EpochReason, PendingPrompt, SessionRecord } from "./store.ts";
import { isWriteLockBusy, waitForWriteLock } from "./write-lock.ts";

/** Whether two stats are of the same file (device and inode). @internal */
export function isSameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The SQLite file of a data folder. */
export function sessionsFile(dataDir: string): string {
  return path.join(dataDir, "sessions.db");
}

/**
 * Where the user put the store: its data folder (`createHost`'s `dataDir`, the command line's
 * `--data`), whose file is `sessions.db`, or the file itself (`new SqliteSessionStore(file)`).
 * Errors speak of the one the user gave.
 */
export type StorePlace = { readonly dataDir: string } | { readonly file: string };

/** The store's file at `place`. */
const fileAt = (place: StorePlace) => ("file" in place ? place.file : sessionsFile(place.dataDir));

/** The stat of `file`, or `undefined` when it is not there (a file standing where a folder of its path should be included). */
function statIfThere(file: string): Stats | undefined {
  try {
    return statSync(file, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw error;
  }
}

/**
 * Throws `StorePathUnusable` when something stands where the store's file or one of its folders
 * should be: a folder where the file should be, or a file where a folder should be. Anything
 * else (a folder that cannot be created, no permission) is left to the open to find. @internal
 */
export function checkStorePlace(place: StorePlace): void {
  const file = fileAt(place);
  if (file === ":memory:") return;
  const given =
    "file" in place
      ? { path: place.file, what: "session store file" as const }
      : { path: place.dataDir, what: "data folder" as const };
  if (statIfThere(file)?.isDirectory() === true) throw new StorePathUnusable({ ...given, obstacle: file, isFolder: true });
  // The nearest folder of the path that exists must be a folder.
  for (let folder = path.dirname(file); ; folder = path.dirname(folder)) {
    const stat = statIfThere(folder);
    if (stat !== undefined) {
      if (!stat.isDirectory()) throw new StorePathUnusable({ ...given, obstacle: folder, isFolder: false });
      return;
    }
    if (path.dirname(folder) === folder) return;
  }
}

/** Opens the SQLite file (creating its folder) in WAL mode; a failure is `StoreFailed` or `StorePathUnusable` naming the place and what to do. @internal */
export function openDatabase(place: StorePlace): Database.Database {
  const file = fileAt(place);
  checkStorePlace(place);
  let db: Database.Database | undefined;
  try {
    if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("foreign_keys = ON");
    return db;
  } catch (error) {
    db?.close();
    throw openFailed(place, error);
  }
}

/** Why a store could not be opened, with what to do about it, in the terms of the place the user gave. @internal */
export function openFailed(place: StorePlace, error: unknown): StoreFailed {
  const code = (error as { code?: unknown }).code;
  const elsewhere = "file" in place ? "give the store another file" : "choose another data folder";
  const advice =
    code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT"
      ? `it is not a context-host session store: move it away, or ${elsewhere}`
      : `check that its folder exists or can be created and that this process may write to both, or ${elsewhere}`;
  return new StoreFailed({ file: fileAt(place), operation: "open the session store", cause: error, advice });
}

/** The longest a write waits for another process's write lock (in timers: the event loop goes on, decision 175). */
const busyWaitMs = 1000;

/** One write of a store: `work` for the operation `${doing} session ${id}`. @internal */
export type Write = <T>(doing: string, id: string, work: () => T) => Promise<T>;

/**
 * How a store writes to `file` (as it is now, once opened): each write first checks that the
 * file is still the one opened (its device and inode), waits for another process's write
 * lock without blocking the event loop (`waitForWriteLock`), and names the file and the
 * operation in SQLite's errors (put together only for an error). `work` must write nothing
 * when refused the lock: one statement, or an `immediate` transaction.
 * @internal
 */
export function writesTo(file: string): Write {
  const opened = file === ":memory:" ? undefined : statSync(file);
  return async (doing, id, work) => {
    if (opened !== undefined) {
      let now: Stats;
      try {
        now = statSync(file);
      } catch {
        throw new StoreFileChanged({ file, reason: "was deleted" });
      }
      if (!isSameFile(now, opened)) throw new StoreFileChanged({ file, reason: "was replaced by another file" });
    }
    try {
      return await waitForWriteLock(work, busyWaitMs);
    } catch (error) {
      if (error instanceof ContextHostError) throw error;
      const operation = `${doing} session ${id}`;
      if (isWriteLockBusy(error)) throw new StoreBusy({ file, waitedMs: busyWaitMs, operation });
      throw new StoreFailed({ file, operation, cause: error });
    }
  };
}

/** Prepares a statement once per SQL text (`isRaw`: rows as arrays of values): a boundary runs the same few every time. @internal */
export function statementsOf(db: Database.Database): (sql: string, isRaw?: boolean) => Database.Statement {
  const statements = new Map<string, Database.Statement>();
  return (sql, isRaw = false) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = isRaw ? db.prepare(sql).raw(true) : db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
}

/**
 * What a boundary reads of a session in one statement, so they agree (decision 096): its row
 * (with its head: revision, epoch state, where history ends) and its pending prompts, oldest
 * first, one row each (one row with a null prompt when none is pending).
 * @internal
 */
export const readBoundarySql = `SELECT s.id, s.location, s.provider, s.model, s.revision, s.epoch_due, s.awaiting_reply,
     s.lease_holder, s.lease_expires, s.seen_count, s.seen_digest, s.epoch, s.snapshot_version, s.last_seq, p.id, p.text
   FROM sessions s
   LEFT JOIN pending_prompts p ON p.session_id = s.id AND p.promoted_seq IS NULL
   WHERE s.id = ?
   ORDER BY p.id`;

/** A row of `readBoundarySql`, as the values of its columns in order (no object per row). @internal */
export type BoundaryRow = [
  id: string,
  location: string,
  provider: string,
  model: string,
  revision: number,
  epoch_due: EpochReason | null,
  awaiting_reply: number,
  lease_holder: string | null,
  lease_expires: number | null,
  seen_count: number | null,
  seen_digest: string | null,
  epoch: number,
  snapshot_version: number,
  last_seq: number,
  prompt_id: number | null,
  prompt_text: string | null,
];

/** The session, its head and its pending prompts from the rows of `readBoundarySql`; none for an unknown session. @internal */
export function boundaryFrom(
  rows: readonly BoundaryRow[],
): { session: SessionRecord; head: SessionHead; pending: PendingPrompt[] } | undefined {
  const row = rows[0];
  if (row === undefined) return undefined;
  const [id, location, provider, model, revision, epoch_due, awaiting_reply, lease_holder, lease_expires] = row;
  const [seen_count, seen_digest, epoch, snapshotVersion, lastSeq] = row.slice(9) as [
    number | null,
    string | null,
    number,
    number,
    number,
  ];
  const session = sessionFrom({
    id,
    location,
    provider,
    model,
    revision,
    epoch_due,
    awaiting_reply,
    lease_holder,
    lease_expires,
    seen_count,
    seen_digest,
  });
  const pending: PendingPrompt[] = [];
  for (const [, , , , , , , , , , , , , , prompt, text] of rows) {
    if (prompt !== null && text !== null) pending.push({ id: prompt, text });
  }
  return { session, head: { revision, lastSeq, epoch, snapshotVersion }, pending };
}

/**
 * Runs one commit's writes (decision 171), inside the caller's transaction: the session's
 * row advanced to the new head if it is still at `writes.revision` (else `RevisionConflict`,
 * or `SessionNotFound`), then the epoch, its entries, the promoted prompts and the messages.
 * @internal
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
