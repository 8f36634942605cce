// Owns the default durable store: one SQLite file through better-sqlite3, WAL,
// foreign keys on, schema versioned by `PRAGMA user_version` migrations. Every
// boundary is one transaction guarded by the session's revision.

import { type Stats, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { ContextHostError } from "../../base/errors.ts";
import type { Snapshot } from "../../system-context/index.ts";
import { SessionCorrupt, SessionNotFound, StoreBusy, StoreFailed, StoreFileChanged, StoreSchemaNewer } from "../errors.ts";
import { planBoundary, planReply, planSummary, type ReplyToCommit, type SessionHead } from "./commit-plan.ts";
import { type EpochState, isSameState, snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { type MessageRow, messageFromRow, type SessionRow, sessionFrom } from "./rows.ts";
import { applyWrites, isSameFile, openDatabase, openFailed } from "./sqlite-file.ts";
import { migrations } from "./sqlite-schema.ts";

export { sessionsFile } from "./sqlite-file.ts";

import {
  type BoundaryCommit,
  type BoundaryCommitted,
  type BoundaryRead,
  type EpochReason,
  type EpochRecord,
  type PendingPrompt,
  type ReplyCommitted,
  RevisionConflict,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
} from "./store.ts";
import { busyTryMs, isWriteLockBusy, waitForWriteLock } from "./write-lock.ts";

interface EpochRow {
  number: number;
  baseline: string;
  started_seq: number;
  reason: EpochReason;
  system_prompt: string | null;
  snapshot_version: number;
}

type ToolResult = Parameters<SessionStore["commitReply"]>[3][number];

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
  seen_count: number | null,
  seen_digest: string | null,
  epoch: number,
  snapshot_version: number,
  last_seq: number,
  prompt_id: number | null,
  prompt_text: string | null,
];

/** The longest a write waits for another process's write lock (in timers: the event loop goes on, decision 175). */
const busyWaitMs = 1000;

/** The default `SessionStore`: one SQLite file (WAL), each boundary one transaction guarded by the session's revision. */
export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  /**
   * The active epoch per session as last read or written, with the state it was at: a
   * boundary checks two integers instead of reading and parsing the Baseline and snapshot.
   */
  readonly #epochs = new Map<string, { state: EpochState; record: EpochRecord }>();
  /** The boundary and reply commits as transactions, built once. */
  readonly #boundaryTransaction: Database.Transaction<
    (id: string, revision: number, commit: BoundaryCommit) => { committed: BoundaryCommitted; state: EpochState }
  >;
  readonly #replyTransaction: Database.Transaction<
    (id: string, revision: number, reply: ReplyToCommit, toolResults: readonly ToolResult[]) => ReplyCommitted
  >;
  readonly #summaryTransaction: Database.Transaction<(id: string, revision: number, text: string) => void>;

  constructor(readonly file: string) {
    this.#db = openDatabase(file);
    try {
      this.#db.pragma("busy_timeout = 5000");
      this.#migrate();
      // After opening, SQLite waits for another process's write lock a few ms per try; `#write`
      // tries again in timers for at most `busyWaitMs`, then `StoreBusy`.
      this.#db.pragma(`busy_timeout = ${busyTryMs}`);
      this.#opened = file === ":memory:" ? undefined : statSync(file);
      this.#boundaryTransaction = this.#db.transaction((id, revision, commit) => {
        const head = this.#head(id, revision);
        const active =
          head.epoch === 0 ? undefined : this.#epochAt(id, { number: head.epoch, snapshot_version: head.snapshotVersion });
        const { writes, committed } = planBoundary(id, head, active, commit);
        applyWrites((sql) => this.#prepare(sql), id, writes);
        return { committed, state: { number: writes.head.epoch, snapshot_version: writes.head.snapshotVersion } };
      });
      this.#replyTransaction = this.#db.transaction((id, revision, reply, toolResults) => {
        const { writes, appended } = planReply(id, this.#head(id, revision), reply, toolResults);
        applyWrites((sql) => this.#prepare(sql), id, writes);
        return { appended };
      });
      this.#summaryTransaction = this.#db.transaction((id, revision, text) => {
        applyWrites((sql) => this.#prepare(sql), id, planSummary(this.#head(id, revision), text));
      });
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
         s.seen_count, s.seen_digest, s.epoch, s.snapshot_version, s.last_seq, p.id, p.text
       FROM sessions s
       LEFT JOIN pending_prompts p ON p.session_id = s.id AND p.promoted_seq IS NULL
       WHERE s.id = ?
       ORDER BY p.id`,
      true,
    ).all(id) as BoundaryRow[];
    const row = rows[0];
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    const [, location, provider, model, revision, epochDue, awaitingReply, leaseHolder, leaseExpires, seenCount, seenDigest] =
      row;
    const [epochNumber, epochVersion, lastSeq] = row.slice(11) as [number, number, number];
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
      seen_count: seenCount,
      seen_digest: seenDigest,
    });
    const state = epochNumber === 0 ? undefined : { number: epochNumber, snapshot_version: epochVersion };
    const pending: PendingPrompt[] = [];
    for (const [, , , , , , , , , , , , , , prompt, text] of rows) {
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

  /** The session's head at `revision`: `RevisionConflict` when it is at another one, `SessionNotFound` when there is none. */
  #head(id: string, revision: number): SessionHead {
    const row = this.#prepare("SELECT revision, last_seq, epoch, snapshot_version FROM sessions WHERE id = ?", true).get(id) as
      | [revision: number, last_seq: number, epoch: number, snapshot_version: number]
      | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    if (row[0] !== revision) throw new RevisionConflict({ sessionId: id, expected: revision });
    return { revision: row[0], lastSeq: row[1], epoch: row[2], snapshotVersion: row[3] };
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

  async commitReply(
    id: string,
    revision: number,
    reply: ReplyToCommit,
    toolResults: readonly ToolResult[],
  ): Promise<ReplyCommitted> {
    return this.#write("commit a reply of", id, () => this.#replyTransaction.immediate(id, revision, reply, toolResults));
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
    await this.#write("commit a summary of", id, () => this.#summaryTransaction.immediate(id, revision, text));
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
