// Owns the default durable store: one SQLite file through better-sqlite3, WAL,
// foreign keys on, schema versioned by `PRAGMA user_version` migrations. Every
// boundary is one transaction guarded by the session's revision.

import { mkdirSync, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ContextHostError } from "../../base/errors.ts";
import type { Snapshot } from "../../system-context/index.ts";
import { SessionCorrupt, SessionNotFound, StoreBusy, StoreFailed, StoreFileChanged, StoreSchemaNewer } from "../errors.ts";
import type { ProviderContent, TokenUsage, ToolCall } from "../provider.ts";
import { snapshotChange, snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { type MessageRow, messageFromRow } from "./message-row.ts";
import {
  type BoundaryCommit,
  type BoundaryCommitted,
  type EpochReason,
  type EpochRecord,
  type MessageRole,
  type PendingPrompt,
  type ReplyCommitted,
  RevisionConflict,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
} from "./store.ts";

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
];

interface SessionRow {
  id: string;
  location: string;
  provider: string;
  model: string;
  revision: number;
  epoch_due: EpochReason | null;
  awaiting_reply: number;
  lease_holder: string | null;
  lease_expires: number | null;
}

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

/** The longest a write waits for another process's write lock (the event loop waits with it). */
const busyWaitMs = 1000;

function isSameState(a: EpochState, b: EpochState): boolean {
  return a.number === b.number && a.snapshot_version === b.snapshot_version;
}

function identityOf(stats: { dev: number; ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

/** The SQLite file of a data folder. */
export function sessionsFile(dataDir: string): string {
  return path.join(dataDir, "sessions.db");
}

/** The default `SessionStore`: one SQLite file (WAL), each boundary one transaction guarded by the session's revision. */
export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  /**
   * The active epoch per session as last read or written, with the state it was at: a
   * boundary checks two integers instead of reading and parsing the Baseline and snapshot.
   */
  readonly #epochs = new Map<string, { state: EpochState; record: EpochRecord }>();

  constructor(readonly file: string) {
    if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
    this.#db = new Database(file);
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("foreign_keys = ON");
    try {
      this.#db.pragma("busy_timeout = 5000");
      this.#migrate();
      // After opening, another process's write lock is waited for at most this long, then `StoreBusy`.
      this.#db.pragma(`busy_timeout = ${busyWaitMs}`);
      this.#identity = file === ":memory:" ? undefined : identityOf(statSync(file));
    } catch (error) {
      // A store that failed to open keeps nothing open.
      this.#db.close();
      throw error;
    }
  }

  /** Device and inode of the file as opened: a deleted or replaced file is detected at the next write. */
  readonly #identity: string | undefined;

  #checkFile(): void {
    if (this.#identity === undefined) return;
    let now: string;
    try {
      now = identityOf(statSync(this.file));
    } catch {
      throw new StoreFileChanged({ file: this.file, reason: "was deleted" });
    }
    if (now !== this.#identity) throw new StoreFileChanged({ file: this.file, reason: "was replaced by another file" });
  }

  /** Runs one write: the file is still the one opened, and SQLite's errors name the file. */
  #write<T>(operation: string, work: () => T): T {
    this.#checkFile();
    try {
      return work();
    } catch (error) {
      if (error instanceof ContextHostError) throw error;
      if ((error as { code?: unknown }).code === "SQLITE_BUSY") {
        throw new StoreBusy({ file: this.file, waitedMs: busyWaitMs, operation });
      }
      throw new StoreFailed({ file: this.file, operation, cause: error });
    }
  }

  /** Prepared statements by SQL text: a boundary runs the same few statements every time. */
  readonly #statements = new Map<string, Database.Statement>();

  #prepare(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
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
    this.#write(`create session ${session.id}`, () =>
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

  /** The ids of the stored sessions, oldest first (`context-host inspect --list`). */
  async sessionIds(): Promise<string[]> {
    return (this.#prepare("SELECT id FROM sessions ORDER BY rowid").all() as Array<{ id: string }>).map((row) => row.id);
  }

  async session(id: string): Promise<SessionRecord> {
    const row = this.#sessionRow(id);
    return {
      id: row.id,
      location: row.location,
      provider: row.provider,
      model: row.model,
      revision: row.revision,
      epochDue: row.epoch_due ?? undefined,
      isAwaitingReply: row.awaiting_reply === 1,
      ...(row.lease_holder === null || row.lease_expires === null
        ? {}
        : { lease: { holder: row.lease_holder, expiresAt: row.lease_expires } }),
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
    this.#write(`update session ${id}`, () => update.immediate());
  }

  async addPrompt(id: string, text: string): Promise<void> {
    this.#write(`add a prompt to session ${id}`, () => {
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
    const rows = this.#prepare(
      "SELECT seq, role, text, epoch, data, usage, provider_content FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
    ).all(id, afterSeq) as MessageRow[];
    // Rows prove the session exists; none may mean it does not.
    if (rows.length === 0 && this.#prepare("SELECT 1 FROM sessions WHERE id = ?").get(id) === undefined)
      throw new SessionNotFound({ sessionId: id });
    return rows.map((row) => messageFromRow(id, row));
  }

  async activeEpoch(id: string): Promise<EpochRecord | undefined> {
    return this.#activeEpoch(id);
  }

  /** The number and snapshot version of the session's active epoch, if it has one. */
  #epochState(id: string): EpochState | undefined {
    return this.#prepare("SELECT number, snapshot_version FROM epochs WHERE session_id = ? ORDER BY number DESC LIMIT 1").get(
      id,
    ) as EpochState | undefined;
  }

  #activeEpoch(id: string): EpochRecord | undefined {
    const state = this.#epochState(id);
    if (state === undefined) return undefined;
    const cached = this.#epochs.get(id);
    if (cached !== undefined && isSameState(cached.state, state)) return cached.record;
    const row = this.#prepare(
      "SELECT number, baseline, started_seq, reason, system_prompt, snapshot_version FROM epochs WHERE session_id = ? AND number = ?",
    ).get(id, state.number) as EpochRow;
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
    this.#epochs.set(id, { state: { number: row.number, snapshot_version: row.snapshot_version }, record });
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

  #nextSeq(id: string): number {
    const row = this.#prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM messages WHERE session_id = ?").get(id) as {
      seq: number;
    };
    return row.seq + 1;
  }

  #currentEpochNumber(id: string): number {
    return this.#epochState(id)?.number ?? 0;
  }

  /** Advances the revision from `expected` (and sets `set`, with its `params`); throws `RevisionConflict` if another runtime moved it. */
  #claim(id: string, expected: number, set: string, params: readonly unknown[] = []) {
    const result = this.#prepare(`UPDATE sessions SET revision = revision + 1${set} WHERE id = ? AND revision = ?`).run(
      ...params,
      id,
      expected,
    );
    if (result.changes === 0) {
      this.#sessionRow(id);
      throw new RevisionConflict({ sessionId: id, expected });
    }
  }

  #insertMessage(
    id: string,
    seq: number,
    role: MessageRole,
    text: string,
    epoch: number,
    data?: { toolCalls?: readonly ToolCall[]; callId?: string; name?: string },
    reply?: { usage?: TokenUsage | undefined; providerContent?: ProviderContent | undefined },
  ): StoredMessage {
    const json = data === undefined ? null : JSON.stringify(data);
    const usage = reply?.usage === undefined ? null : JSON.stringify(reply.usage);
    const providerContent = reply?.providerContent === undefined ? null : JSON.stringify(reply.providerContent);
    this.#prepare(
      "INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(id, seq, role, text, epoch, json, usage, providerContent);
    // Exactly what reading the row back gives, so a request built from it matches one built after a restart.
    return messageFromRow(id, { seq, role, text, epoch, data: json, usage, provider_content: providerContent });
  }

  async commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    const run = this.#db.transaction((): BoundaryCommitted => {
      this.#claim(
        id,
        revision,
        `, awaiting_reply = 1, lease_holder = ?, lease_expires = ?${commit.settlesEpochDue ? ", epoch_due = NULL" : ""}`,
        [commit.lease?.holder ?? null, commit.lease?.expiresAt ?? null],
      );
      let seq = this.#nextSeq(id);
      // The epoch the boundary ends in: a new one (only the old one's number is read), or the
      // active one as it stands (read only if this store has not read or written it as it is).
      let active: EpochRecord | undefined;
      let state: EpochState | undefined;
      const appended: StoredMessage[] = [];
      if (commit.newEpoch === undefined) {
        active = this.#activeEpoch(id);
        state = this.#epochs.get(id)?.state;
      } else {
        const { baseline, snapshot, reason, systemPrompt } = commit.newEpoch;
        const number = (this.#epochState(id)?.number ?? 0) + 1;
        this.#prepare(
          "INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt) VALUES (?, ?, ?, ?, ?, ?)",
        ).run(id, number, baseline, seq, reason, JSON.stringify(systemPrompt));
        this.#writeSnapshot(id, number, snapshot, undefined);
        active = { number, baseline, snapshot, startedSeq: seq, reason, systemPrompt };
        state = { number, snapshot_version: 0 };
      }
      if (active === undefined || state === undefined)
        throw new SessionCorrupt({ sessionId: id, reason: "no Context Epoch after a boundary" });
      for (const prompt of commit.promote) {
        const promoted = this.#prepare(
          "UPDATE pending_prompts SET promoted_seq = ? WHERE id = ? AND session_id = ? AND promoted_seq IS NULL",
        ).run(seq, prompt.id, id);
        if (promoted.changes !== 1) throw new RevisionConflict({ sessionId: id, expected: revision });
        appended.push(this.#insertMessage(id, seq++, "user", prompt.text, active.number));
      }
      if (commit.systemUpdate !== undefined) {
        appended.push(this.#insertMessage(id, seq++, "system-update", commit.systemUpdate.text, active.number));
        this.#writeSnapshot(id, active.number, commit.systemUpdate.snapshot, active.snapshot);
        this.#prepare("UPDATE epochs SET snapshot_version = snapshot_version + 1 WHERE session_id = ? AND number = ?").run(
          id,
          active.number,
        );
        active = { ...active, snapshot: commit.systemUpdate.snapshot };
        state = { number: state.number, snapshot_version: state.snapshot_version + 1 };
      }
      this.#epochs.set(id, { state, record: active });
      return { revision: revision + 1, epoch: active, appended };
    });
    try {
      return this.#write(`commit a boundary of session ${id}`, () => run.immediate());
    } catch (error) {
      // A rolled-back write must not leave its epoch remembered as the stored one.
      this.#epochs.delete(id);
      throw error;
    }
  }

  async commitReply(
    id: string,
    revision: number,
    reply: { text: string; toolCalls?: readonly ToolCall[]; usage?: TokenUsage; providerContent?: ProviderContent },
    toolResults: ReadonlyArray<{ callId: string; name: string; result: string }>,
  ): Promise<ReplyCommitted> {
    const run = this.#db.transaction((): ReplyCommitted => {
      this.#claim(id, revision, ", awaiting_reply = 0, lease_holder = NULL, lease_expires = NULL");
      let seq = this.#nextSeq(id);
      const epoch = this.#currentEpochNumber(id);
      const toolCalls = reply.toolCalls !== undefined && reply.toolCalls.length > 0 ? reply.toolCalls : undefined;
      const appended = [
        this.#insertMessage(id, seq++, "assistant", reply.text, epoch, toolCalls === undefined ? undefined : { toolCalls }, {
          usage: reply.usage,
          providerContent: reply.providerContent,
        }),
      ];
      for (const result of toolResults) {
        appended.push(this.#insertMessage(id, seq++, "tool", result.result, epoch, { callId: result.callId, name: result.name }));
      }
      return { appended };
    });
    return this.#write(`commit a reply of session ${id}`, () => run.immediate());
  }

  async claimLease(id: string, lease: { holder: string; expiresAt: number }, now: number): Promise<boolean> {
    const result = this.#write(`claim the lease of session ${id}`, () =>
      this.#prepare(
        `UPDATE sessions SET lease_holder = ?, lease_expires = ?
       WHERE id = ? AND awaiting_reply = 1 AND (lease_holder IS NULL OR lease_holder = ? OR lease_expires <= ?)`,
      ).run(lease.holder, lease.expiresAt, id, lease.holder, now),
    );
    if (result.changes === 0) this.#sessionRow(id);
    return result.changes === 1;
  }

  async releaseLease(id: string, holder: string): Promise<void> {
    this.#prepare("UPDATE sessions SET lease_holder = NULL, lease_expires = NULL WHERE id = ? AND lease_holder = ?").run(
      id,
      holder,
    );
  }

  async commitSummary(id: string, revision: number, text: string): Promise<void> {
    const run = this.#db.transaction(() => {
      this.#claim(id, revision, ", epoch_due = 'compaction'");
      this.#insertMessage(id, this.#nextSeq(id), "summary", text, this.#currentEpochNumber(id));
    });
    this.#write(`commit a summary of session ${id}`, () => run.immediate());
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
    run.immediate();
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
