// Owns the default durable store: one SQLite file through better-sqlite3, WAL,
// foreign keys on, schema versioned by `PRAGMA user_version` migrations. Every
// boundary is one transaction guarded by the session's revision.

import { mkdirSync, type Stats, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ContextHostError } from "../../base/errors.ts";
import type { Snapshot } from "../../system-context/index.ts";
import { SessionCorrupt, SessionNotFound, StoreBusy, StoreFailed, StoreFileChanged, StoreSchemaNewer } from "../errors.ts";
import { snapshotChange, snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { type MessageRow, messageFromRow, messageRow, type SessionRow, sessionFrom } from "./rows.ts";
import {
  type BoundaryCommit,
  type BoundaryCommitted,
  type BoundaryRead,
  type EpochReason,
  type EpochRecord,
  type InFlightLease,
  type PendingPrompt,
  type ReplyCommitted,
  RevisionConflict,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
} from "./store.ts";
import { busyTryMs, isWriteLockBusy, waitForWriteLock } from "./write-lock.ts";

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
];

interface EpochRow {
  number: number;
  baseline: string;
  started_seq: number;
  reason: EpochReason;
  system_prompt: string | null;
  snapshot_version: number;
}

/** Which state of a session's active epoch a cached record is: its number and its snapshot's version. */
interface EpochState {
  number: number;
  snapshot_version: number;
}

/** A provider reply and its tool calls' results as `commitReply` stores them. */
type ReplyToCommit = Parameters<SessionStore["commitReply"]>[2];
type ToolResult = Parameters<SessionStore["commitReply"]>[3][number];

/** What a boundary's transaction wrote: what the runtime is told, and the state of the epoch it ends in. */
interface BoundaryWritten {
  committed: BoundaryCommitted;
  state: EpochState;
}

/** A session's head after a claim advanced it: where its history ends, its epoch and that epoch's snapshot version. */
type Head = [last_seq: number, epoch: number, snapshot_version: number];

/**
 * A session's row with what a boundary reads beside it (`readBoundary`), as the values
 * of its columns in order (no object per row): one row per pending prompt, oldest first,
 * or one row with a null prompt when none is pending.
 */
type BoundaryRow = [
  id: string,
  location: string,
  provider: string,
  model: string,
  revision: number,
  epoch_due: EpochReason | null,
  awaiting_reply: number,
  lease_holder: string | null,
  lease_expires: number | null,
  epoch: number,
  snapshot_version: number,
  last_seq: number,
  prompt_id: number | null,
  prompt_text: string | null,
];

/** The longest a write waits for another process's write lock (in timers: the event loop goes on, decision 175). */
const busyWaitMs = 1000;

function isSameState(a: EpochState, b: EpochState): boolean {
  return a.number === b.number && a.snapshot_version === b.snapshot_version;
}

function isSameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The SQLite file of a data folder. */
export function sessionsFile(dataDir: string): string {
  return path.join(dataDir, "sessions.db");
}

/** Opens the SQLite file (creating its folder) in WAL mode; a failure is `StoreFailed` naming the file and what to do. */
function openDatabase(file: string): Database.Database {
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
function openFailed(file: string, error: unknown): StoreFailed {
  const code = (error as { code?: unknown }).code;
  const advice =
    code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT"
      ? "it is not a context-host session store: move it away, or give another data folder (dataDir)"
      : "check that its folder exists or can be created and that this process may write to both, or give another data folder (dataDir)";
  return new StoreFailed({ file, operation: "open the session store", cause: error, advice });
}

/** The default `SessionStore`: one SQLite file (WAL), each boundary one transaction guarded by the session's revision. */
export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  /**
   * The active epoch per session as last read or written, with the state it was at: a
   * boundary checks two integers instead of reading and parsing the Baseline and snapshot.
   */
  readonly #epochs = new Map<string, { state: EpochState; record: EpochRecord }>();
  /** The boundary and reply commits as transactions, built once. */
  readonly #boundaryTransaction: Database.Transaction<(id: string, revision: number, commit: BoundaryCommit) => BoundaryWritten>;
  readonly #replyTransaction: Database.Transaction<
    (id: string, revision: number, reply: ReplyToCommit, toolResults: readonly ToolResult[]) => ReplyCommitted
  >;

  constructor(readonly file: string) {
    this.#db = openDatabase(file);
    try {
      this.#db.pragma("busy_timeout = 5000");
      this.#migrate();
      // After opening, SQLite waits for another process's write lock a few ms per try; `#write`
      // tries again in timers for at most `busyWaitMs`, then `StoreBusy`.
      this.#db.pragma(`busy_timeout = ${busyTryMs}`);
      this.#opened = file === ":memory:" ? undefined : statSync(file);
      this.#boundaryTransaction = this.#db.transaction((id, revision, commit) => this.#commitBoundaryRows(id, revision, commit));
      this.#replyTransaction = this.#db.transaction((id, revision, reply, toolResults) =>
        this.#commitReplyRows(id, revision, reply, toolResults),
      );
    } catch (error) {
      // A store that failed to open keeps nothing open.
      this.#db.close();
      throw error instanceof ContextHostError ? error : openFailed(file, error);
    }
  }

  /** The file as opened (its device and inode are compared): a deleted or replaced file is detected at the next write. */
  readonly #opened: Stats | undefined;

  #checkFile(): void {
    if (this.#opened === undefined) return;
    let now: Stats;
    try {
      now = statSync(this.file);
    } catch {
      throw new StoreFileChanged({ file: this.file, reason: "was deleted" });
    }
    if (!isSameFile(now, this.#opened)) throw new StoreFileChanged({ file: this.file, reason: "was replaced by another file" });
  }

  /**
   * Runs one write: the file is still the one opened, another process's write lock is
   * waited for without blocking the event loop (`waitForWriteLock`), and SQLite's errors
   * name the file and the operation (`${doing} session ${id}`, put together only for an error).
   * `work` must write nothing when refused the lock: one statement, or an `immediate` transaction.
   */
  async #write<T>(doing: string, id: string, work: () => T): Promise<T> {
    this.#checkFile();
    try {
      return await waitForWriteLock(work, busyWaitMs);
    } catch (error) {
      if (error instanceof ContextHostError) throw error;
      const operation = `${doing} session ${id}`;
      if (isWriteLockBusy(error)) {
        throw new StoreBusy({ file: this.file, waitedMs: busyWaitMs, operation });
      }
      throw new StoreFailed({ file: this.file, operation, cause: error });
    }
  }

  /** Prepared statements by SQL text: a boundary runs the same few statements every time. */
  readonly #statements = new Map<string, Database.Statement>();

  #prepare(sql: string, isRaw = false): Database.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = isRaw ? this.#db.prepare(sql).raw(true) : this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** The schema version this file is at. */
  get schemaVersion(): number {
    return this.#db.pragma("user_version", { simple: true }) as number;
  }

  #migrate() {
    const migrate = this.#db.transaction(() => {
      const version = this.schemaVersion;
      if (version > migrations.length) {
        throw new StoreSchemaNewer({ file: this.file, version, supported: migrations.length });
      }
      for (let v = version; v < migrations.length; v++) {
        this.#db.exec(migrations[v] as string);
        this.#db.pragma(`user_version = ${v + 1}`);
      }
    });
    migrate.immediate();
  }

  async createSession(session: { id: string; location: string; provider: string; model: string }): Promise<void> {
    await this.#write("create", session.id, () =>
      this.#prepare("INSERT INTO sessions (id, location, provider, model) VALUES (@id, @location, @provider, @model)").run(
        session,
      ),
    );
  }

  #sessionRow(id: string): SessionRow {
    const row = this.#prepare("SELECT * FROM sessions WHERE id = ?").get(id) as SessionRow | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    return row;
  }

  /** Every stored session, oldest first: rows are never deleted, so `rowid` is the order of creation. */
  async listSessions(): Promise<SessionRecord[]> {
    return (this.#prepare("SELECT * FROM sessions ORDER BY rowid").all() as SessionRow[]).map(sessionFrom);
  }

  async session(id: string): Promise<SessionRecord> {
    return sessionFrom(this.#sessionRow(id));
  }

  async readBoundary(id: string, afterSeq: number): Promise<BoundaryRead> {
    // One statement over the session's row (its head: revision, epoch state, where history
    // ends) and its pending input, so they agree.
    const rows = this.#prepare(
      `SELECT s.id, s.location, s.provider, s.model, s.revision, s.epoch_due, s.awaiting_reply, s.lease_holder, s.lease_expires,
         s.epoch, s.snapshot_version, s.last_seq, p.id, p.text
       FROM sessions s
       LEFT JOIN pending_prompts p ON p.session_id = s.id AND p.promoted_seq IS NULL
       WHERE s.id = ?
       ORDER BY p.id`,
      true,
    ).all(id) as BoundaryRow[];
    const row = rows[0];
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    const [, location, provider, model, revision, epochDue, awaitingReply, leaseHolder, leaseExpires] = row;
    const [epochNumber, epochVersion, lastSeq] = row.slice(9) as [number, number, number];
    const session = sessionFrom({
      id,
      location,
      provider,
      model,
      revision,
      epoch_due: epochDue,
      awaiting_reply: awaitingReply,
      lease_holder: leaseHolder,
      lease_expires: leaseExpires,
    });
    const state = epochNumber === 0 ? undefined : { number: epochNumber, snapshot_version: epochVersion };
    const pending: PendingPrompt[] = [];
    for (const [, , , , , , , , , , , , prompt, text] of rows) {
      if (prompt !== null && text !== null) pending.push({ id: prompt, text });
    }
    return {
      session,
      epoch: state === undefined ? undefined : this.#epochAt(id, state),
      pending,
      appended: lastSeq > afterSeq ? this.#messageRows(id, afterSeq) : [],
    };
  }

  async updateSession(
    id: string,
    change: { location?: string; provider?: string; model?: string; epochDue?: Exclude<EpochReason, "initial"> },
  ): Promise<void> {
    const update = this.#db.transaction(() => {
      const row = this.#sessionRow(id);
      this.#prepare(
        "UPDATE sessions SET location = ?, provider = ?, model = ?, epoch_due = ?, revision = revision + 1 WHERE id = ?",
      ).run(
        change.location ?? row.location,
        change.provider ?? row.provider,
        change.model ?? row.model,
        change.epochDue ?? row.epoch_due,
        id,
      );
    });
    await this.#write("update", id, () => update.immediate());
  }

  async addPrompt(id: string, text: string): Promise<void> {
    await this.#write("add a prompt to", id, () => {
      this.#sessionRow(id);
      this.#prepare("INSERT INTO pending_prompts (session_id, text) VALUES (?, ?)").run(id, text);
    });
  }

  async pendingPrompts(id: string): Promise<PendingPrompt[]> {
    return this.#prepare("SELECT id, text FROM pending_prompts WHERE session_id = ? AND promoted_seq IS NULL ORDER BY id").all(
      id,
    ) as PendingPrompt[];
  }

  async messages(id: string, afterSeq = 0): Promise<StoredMessage[]> {
    const messages = this.#messageRows(id, afterSeq);
    // Rows prove the session exists; none may mean it does not.
    if (messages.length === 0 && this.#prepare("SELECT 1 FROM sessions WHERE id = ?").get(id) === undefined)
      throw new SessionNotFound({ sessionId: id });
    return messages;
  }

  #messageRows(id: string, afterSeq: number): StoredMessage[] {
    const rows = this.#prepare(
      "SELECT seq, role, text, epoch, data, usage, provider_content FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
    ).all(id, afterSeq) as MessageRow[];
    return rows.map((row) => messageFromRow(id, row));
  }

  async activeEpoch(id: string): Promise<EpochRecord | undefined> {
    return this.#activeEpoch(id);
  }

  /** The number and snapshot version of the session's active epoch, if it has one. */
  #epochState(id: string): EpochState | undefined {
    const row = this.#prepare("SELECT epoch, snapshot_version FROM sessions WHERE id = ?", true).get(id) as
      | [epoch: number, snapshot_version: number]
      | undefined;
    return row === undefined || row[0] === 0 ? undefined : { number: row[0], snapshot_version: row[1] };
  }

  #activeEpoch(id: string): EpochRecord | undefined {
    const state = this.#epochState(id);
    return state === undefined ? undefined : this.#epochAt(id, state);
  }

  /** The session's epoch at `state`: the held record while it is that state, else read. */
  #epochAt(id: string, state: EpochState): EpochRecord {
    const cached = this.#epochs.get(id);
    if (cached !== undefined && isSameState(cached.state, state)) return cached.record;
    const row = this.#prepare(
      "SELECT number, baseline, started_seq, reason, system_prompt, snapshot_version FROM epochs WHERE session_id = ? AND number = ?",
    ).get(id, state.number) as EpochRow | undefined;
    if (row === undefined) {
      throw new SessionCorrupt({ sessionId: id, reason: `its active Context Epoch ${state.number} is not stored` });
    }
    const record: EpochRecord = {
      number: row.number,
      baseline: row.baseline,
      snapshot: this.#snapshotOf(id, row),
      startedSeq: row.started_seq,
      reason: row.reason,
      systemPrompt: systemPromptFrom(
        { sessionId: id, number: row.number, snapshotVersion: row.snapshot_version },
        row.system_prompt,
      ),
    };
    this.#epochs.set(id, { state, record });
    return record;
  }

  /** An epoch's snapshot, read from its entries and checked as a whole. */
  #snapshotOf(id: string, row: EpochRow): Snapshot {
    const epoch = { sessionId: id, number: row.number, snapshotVersion: row.snapshot_version };
    if (epoch.snapshotVersion < 0) return snapshotFromEntries(epoch, []);
    const rows = this.#prepare("SELECT key, entry FROM snapshot_entries WHERE session_id = ? AND epoch = ?").all(
      id,
      row.number,
    ) as Array<{ key: string; entry: string }>;
    return snapshotFromEntries(
      epoch,
      rows.map((r) => [r.key, r.entry] as const),
    );
  }

  /** Writes `snapshot` as epoch `epoch`'s entries: what changed against `previous` (every entry without one), and deletes the gone ones. */
  #writeSnapshot(id: string, epoch: number, snapshot: Snapshot, previous: Snapshot | undefined): void {
    const upsert = this.#prepare(
      "INSERT INTO snapshot_entries (session_id, epoch, key, entry) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET entry = excluded.entry",
    );
    const remove = this.#prepare("DELETE FROM snapshot_entries WHERE session_id = ? AND epoch = ? AND key = ?");
    const { keys, entries, removed } = snapshotChange(snapshot, previous);
    for (const [i, key] of keys.entries()) upsert.run(id, epoch, key, entries[i]);
    for (const key of removed) remove.run(id, epoch, key);
  }

  /**
   * Advances the revision from `expected` and the session's head with it: `appended`
   * messages, a new epoch or an advanced snapshot, and what the turn leaves (a reply
   * awaited under `lease`, or none). Every commit runs this one statement. Returns the head
   * after it; `RevisionConflict` if another runtime moved the revision.
   */
  #claim(
    id: string,
    expected: number,
    turn: {
      /** A reply awaited (under `lease`), none, or as it was (a summary is written between turns). */
      readonly awaitingReply: boolean | "kept";
      readonly lease?: InFlightLease | undefined;
      readonly epochDue: "settled" | "kept" | "compaction";
      readonly appended: number;
      /** A new epoch begins (its snapshot at version 0). */
      readonly startsEpoch: boolean;
      /** The snapshot (the new epoch's, if one begins) advances by a Mid-Conversation System Message. */
      readonly advancesSnapshot: boolean;
    },
  ): Head {
    const keepsTurn = turn.awaitingReply === "kept" ? 1 : 0;
    const startsEpoch = turn.startsEpoch ? 1 : 0;
    const head = this.#prepare(
      // Positional parameters (a value given twice is passed twice): binding by name costs a lookup per parameter.
      `UPDATE sessions SET revision = revision + 1,
         awaiting_reply = CASE WHEN ? THEN awaiting_reply ELSE ? END,
         lease_holder = CASE WHEN ? THEN lease_holder ELSE ? END,
         lease_expires = CASE WHEN ? THEN lease_expires ELSE ? END,
         epoch_due = CASE ? WHEN 'settled' THEN NULL WHEN 'compaction' THEN 'compaction' ELSE epoch_due END,
         last_seq = last_seq + ?,
         epoch = epoch + ?,
         snapshot_version = CASE WHEN ? THEN 0 ELSE snapshot_version END + ?
       WHERE id = ? AND revision = ?
       RETURNING last_seq, epoch, snapshot_version`,
      true,
    ).get(
      keepsTurn,
      turn.awaitingReply === true ? 1 : 0,
      keepsTurn,
      turn.lease?.holder ?? null,
      keepsTurn,
      turn.lease?.expiresAt ?? null,
      turn.epochDue,
      turn.appended,
      startsEpoch,
      startsEpoch,
      turn.advancesSnapshot ? 1 : 0,
      id,
      expected,
    ) as Head | undefined;
    if (head === undefined) {
      this.#sessionRow(id);
      throw new RevisionConflict({ sessionId: id, expected });
    }
    return head;
  }

  /** Appends `rows` to the session's history (one statement, the same for every row and every commit); returns them as stored messages. */
  #insertMessages(id: string, rows: readonly MessageRow[]): StoredMessage[] {
    const insert = this.#prepare(
      "INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    for (const row of rows) insert.run(id, row.seq, row.role, row.text, row.epoch, row.data, row.usage, row.provider_content);
    // Exactly what reading the rows back gives, so a request built from them matches one built after a restart.
    return rows.map((row) => messageFromRow(id, row));
  }

  async commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    try {
      const { committed, state } = await this.#write("commit a boundary of", id, () =>
        this.#boundaryTransaction.immediate(id, revision, commit),
      );
      // Held only once committed: a rolled-back epoch must never be taken for the stored one.
      this.#epochs.set(id, { state, record: committed.epoch });
      return committed;
    } catch (error) {
      // Whatever was held may be what the failed write was built on.
      this.#epochs.delete(id);
      throw error;
    }
  }

  #commitBoundaryRows(id: string, revision: number, commit: BoundaryCommit): BoundaryWritten {
    const { newEpoch, systemUpdate } = commit;
    const [lastSeq, number, version] = this.#claim(id, revision, {
      awaitingReply: true,
      lease: commit.lease,
      epochDue: commit.settlesEpochDue ? "settled" : "kept",
      appended: commit.promote.length + (systemUpdate === undefined ? 0 : 1),
      startsEpoch: newEpoch !== undefined,
      advancesSnapshot: systemUpdate !== undefined,
    });
    let seq = lastSeq - commit.promote.length - (systemUpdate === undefined ? 0 : 1) + 1;
    // The epoch the boundary ends in: a new one, or the active one as it stood before this
    // commit (read only if this store does not hold it as it was).
    let active: EpochRecord;
    if (newEpoch !== undefined) {
      const { baseline, snapshot, reason, systemPrompt } = newEpoch;
      this.#prepare(
        "INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(id, number, baseline, seq, reason, JSON.stringify(systemPrompt));
      this.#writeSnapshot(id, number, snapshot, undefined);
      active = { number, baseline, snapshot, startedSeq: seq, reason, systemPrompt };
    } else {
      if (number === 0) throw new SessionCorrupt({ sessionId: id, reason: "no Context Epoch after a boundary" });
      // The active epoch as it stood before this commit (read only if this store does not hold it as it was).
      active = this.#epochAt(id, { number, snapshot_version: systemUpdate === undefined ? version : version - 1 });
    }
    const rows: MessageRow[] = [];
    for (const prompt of commit.promote) {
      const promoted = this.#prepare(
        "UPDATE pending_prompts SET promoted_seq = ? WHERE id = ? AND session_id = ? AND promoted_seq IS NULL",
      ).run(seq, prompt.id, id);
      if (promoted.changes !== 1) throw new RevisionConflict({ sessionId: id, expected: revision });
      rows.push(messageRow(seq++, "user", prompt.text, active.number));
    }
    if (systemUpdate !== undefined) rows.push(messageRow(seq++, "system-update", systemUpdate.text, active.number));
    const appended = this.#insertMessages(id, rows);
    if (systemUpdate !== undefined) {
      this.#writeSnapshot(id, active.number, systemUpdate.snapshot, active.snapshot);
      active = { ...active, snapshot: systemUpdate.snapshot };
    }
    return { committed: { revision: revision + 1, epoch: active, appended }, state: { number, snapshot_version: version } };
  }

  async commitReply(
    id: string,
    revision: number,
    reply: ReplyToCommit,
    toolResults: readonly ToolResult[],
  ): Promise<ReplyCommitted> {
    return this.#write("commit a reply of", id, () => this.#replyTransaction.immediate(id, revision, reply, toolResults));
  }

  #commitReplyRows(id: string, revision: number, reply: ReplyToCommit, toolResults: readonly ToolResult[]): ReplyCommitted {
    const [lastSeq, epoch] = this.#claim(id, revision, {
      awaitingReply: false,
      epochDue: "kept",
      appended: 1 + toolResults.length,
      startsEpoch: false,
      advancesSnapshot: false,
    });
    let seq = lastSeq - toolResults.length;
    const toolCalls = reply.toolCalls !== undefined && reply.toolCalls.length > 0 ? reply.toolCalls : undefined;
    const rows = [
      messageRow(seq++, "assistant", reply.text, epoch, toolCalls === undefined ? undefined : { toolCalls }, {
        usage: reply.usage,
        providerContent: reply.providerContent,
      }),
    ];
    for (const result of toolResults) {
      rows.push(messageRow(seq++, "tool", result.result, epoch, { callId: result.callId, name: result.name }));
    }
    return { appended: this.#insertMessages(id, rows) };
  }

  async claimLease(id: string, lease: { holder: string; expiresAt: number }, now: number): Promise<boolean> {
    const result = await this.#write("claim the lease of", id, () =>
      this.#prepare(
        `UPDATE sessions SET lease_holder = ?, lease_expires = ?
       WHERE id = ? AND awaiting_reply = 1 AND (lease_holder IS NULL OR lease_holder = ? OR lease_expires <= ?)`,
      ).run(lease.holder, lease.expiresAt, id, lease.holder, now),
    );
    if (result.changes === 0) this.#sessionRow(id);
    return result.changes === 1;
  }

  async releaseLease(id: string, holder: string): Promise<void> {
    await this.#write("release the lease of", id, () =>
      this.#prepare("UPDATE sessions SET lease_holder = NULL, lease_expires = NULL WHERE id = ? AND lease_holder = ?").run(
        id,
        holder,
      ),
    );
  }

  async commitSummary(id: string, revision: number, text: string): Promise<void> {
    const run = this.#db.transaction(() => {
      const [lastSeq, epoch] = this.#claim(id, revision, {
        awaitingReply: "kept",
        epochDue: "compaction",
        appended: 1,
        startsEpoch: false,
        advancesSnapshot: false,
      });
      this.#insertMessages(id, [messageRow(lastSeq, "summary", text, epoch)]);
    });
    await this.#write("commit a summary of", id, () => run.immediate());
  }

  async discoveredInstructions(id: string, location: string): Promise<string[]> {
    const rows = this.#prepare(
      "SELECT file FROM discovered_instructions WHERE session_id = ? AND location = ? ORDER BY discovered",
    ).all(id, location) as Array<{ file: string }>;
    return rows.map((row) => row.file);
  }

  async addDiscoveredInstructions(id: string, location: string, files: readonly string[]): Promise<void> {
    const run = this.#db.transaction(() => {
      this.#sessionRow(id);
      const next = this.#prepare(
        "SELECT COALESCE(MAX(discovered), 0) + 1 AS n FROM discovered_instructions WHERE session_id = ?",
      ).get(id) as { n: number };
      const insert = this.#prepare(
        "INSERT OR IGNORE INTO discovered_instructions (session_id, location, file, discovered) VALUES (?, ?, ?, ?)",
      );
      // One number per file, in the order given: discovery order holds within a call too.
      let order = next.n;
      for (const file of files) if (insert.run(id, location, file, order).changes === 1) order += 1;
    });
    await this.#write("record discovered instructions of", id, () => run.immediate());
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
