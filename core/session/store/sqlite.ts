// Owns the default durable store: one SQLite file through better-sqlite3, WAL, foreign keys
// on, schema versioned by `PRAGMA user_version` migrations. The one commit algorithm
// (commits.ts) runs each commit in one transaction guarded by the session's revision.

import type Database from "better-sqlite3";
import { ContextHostError } from "../../base/errors.ts";
import { SessionNotFound } from "../errors.ts";
import type { ReplyToCommit, SessionHead, Writes } from "./commit-plan.ts";
import { Commits, type ToolResults } from "./commits.ts";
import { type EpochRow, type EpochState, epochFrom } from "./epoch-rows.ts";
import { HeldSessions, stateAt } from "./held.ts";
import { type MessageRow, messageFromRow, type SessionRow, sessionFrom } from "./rows.ts";
import {
  applyWrites,
  type BoundaryRow,
  boundaryFrom,
  openDatabase,
  openFailed,
  readBoundarySql,
  type StorePlace,
  statementsOf,
  type Write,
  writesTo,
} from "./sqlite-file.ts";
import { migrate } from "./sqlite-schema.ts";

export { sessionsFile } from "./sqlite-file.ts";

import type {
  BoundaryCommit,
  BoundaryCommitted,
  BoundaryRead,
  EpochReason,
  EpochRecord,
  PendingPrompt,
  ReplyCommitted,
  SessionRecord,
  SessionStore,
  StoredMessage,
} from "./store.ts";
import { busyTryMs } from "./write-lock.ts";

/** The default `SessionStore`: one SQLite file (WAL), each boundary one transaction guarded by the session's revision. */
export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  /** Prepared statements by SQL text. */
  readonly #prepare: (sql: string, isRaw?: boolean) => Database.Statement;
  readonly #write: Write;
  /** The active epoch per session as last read or committed. */
  readonly #held = new HeldSessions();
  readonly #commits: Commits;
  /** The connection's `synchronous` setting as opened (2: FULL), which a bookkeeping commit lowers for itself. */
  #synchronous = 2;

  /**
   * Opens (or creates) the store in `file`. With `{ dataDir }` (the folder `file` is the
   * `sessions.db` of), errors speak of that data folder instead of the file. Throws
   * `StorePathUnusable` when a file stands where a folder of the path should be, or a folder
   * where the file should be; `StoreFailed` when SQLite cannot open it.
   */
  constructor(
    readonly file: string,
    options: { readonly dataDir?: string } = {},
  ) {
    const place: StorePlace = options.dataDir === undefined ? { file } : { dataDir: options.dataDir };
    this.#db = openDatabase(place);
    try {
      this.#prepare = statementsOf(this.#db);
      this.#db.pragma("busy_timeout = 5000");
      migrate(this.#db, file);
      // After opening, SQLite waits for another process's write lock a few ms per try; each
      // write tries again in timers for a bounded time, then `StoreBusy` (decision 175).
      this.#db.pragma(`busy_timeout = ${busyTryMs}`);
      this.#write = writesTo(file);
      this.#synchronous = this.#db.pragma("synchronous", { simple: true }) as number;
      const apply = this.#db.transaction((id: string, writes: Writes) => applyWrites(this.#prepare, id, writes));
      this.#commits = new Commits(this.#held, {
        readHead: async (_kind, id, withEpoch) => {
          const head = this.#head(id);
          const state = withEpoch ? stateAt(head) : undefined;
          return { head, epoch: state === undefined ? undefined : this.#epochAt(id, state) };
        },
        // One transaction, guarded by the revision its head was read at.
        apply: (kind, id, writes) =>
          this.#write(`commit ${kind} of`, id, () =>
            writes.bookkeeping === true ? this.#withoutSync(() => apply.immediate(id, writes)) : apply.immediate(id, writes),
          ),
      });
    } catch (error) {
      // A store that failed to open keeps nothing open.
      this.#db.close();
      throw error instanceof ContextHostError ? error : openFailed(place, error);
    }
  }

  /**
   * Runs a transaction that need not wait for the disk (a bookkeeping commit): in WAL mode,
   * `synchronous = NORMAL` commits without a sync, is never lost to a crash of the process,
   * and the next synced commit makes it durable with it. The connection's setting is restored.
   */
  #withoutSync<T>(transaction: () => T): T {
    if (this.#synchronous <= 1) return transaction();
    this.#prepare("PRAGMA synchronous = NORMAL").run();
    try {
      return transaction();
    } finally {
      this.#prepare(`PRAGMA synchronous = ${this.#synchronous}`).run();
    }
  }

  /** The schema version this file is at. */
  get schemaVersion(): number {
    return this.#db.pragma("user_version", { simple: true }) as number;
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
    const read = boundaryFrom(this.#prepare(readBoundarySql, true).all(id) as BoundaryRow[]);
    if (read === undefined) throw new SessionNotFound({ sessionId: id });
    const { session, head, pending } = read;
    // Held: the boundary's commit at this revision reads it no more.
    this.#held.holdHead(id, head);
    const state = stateAt(head);
    return {
      session,
      epoch: state === undefined ? undefined : this.#epochAt(id, state),
      pending,
      appended: head.lastSeq > afterSeq ? this.#messageRows(id, afterSeq) : [],
    };
  }

  async updateSession(
    id: string,
    change: { location?: string; provider?: string; model?: string; epochDue?: Exclude<EpochReason, "initial"> },
  ): Promise<void> {
    await this.#write("update", id, () => {
      const updated = this.#prepare(
        `UPDATE sessions SET location = COALESCE(?, location), provider = COALESCE(?, provider), model = COALESCE(?, model),
           epoch_due = COALESCE(?, epoch_due), revision = revision + 1 WHERE id = ?`,
      ).run(change.location ?? null, change.provider ?? null, change.model ?? null, change.epochDue ?? null, id);
      if (updated.changes === 0) throw new SessionNotFound({ sessionId: id });
    });
  }

  async addPrompt(id: string, text: string): Promise<void> {
    await this.#write("add a prompt to", id, () => {
      // One statement: the prompt is added only to a session that exists.
      const added = this.#prepare("INSERT INTO pending_prompts (session_id, text) SELECT id, ? FROM sessions WHERE id = ?").run(
        text,
        id,
      );
      if (added.changes === 0) throw new SessionNotFound({ sessionId: id });
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
    const row = this.#prepare("SELECT epoch, snapshot_version FROM sessions WHERE id = ?", true).get(id) as
      | [epoch: number, snapshot_version: number]
      | undefined;
    return row === undefined || row[0] === 0 ? undefined : this.#epochAt(id, { number: row[0], snapshot_version: row[1] });
  }

  /** The session's epoch at `state`: the held record while it is that state, else read. */
  #epochAt(id: string, state: EpochState): EpochRecord {
    return this.#held.epoch(id, state, this.#readEpoch);
  }

  readonly #readEpoch = (id: string, state: EpochState): EpochRecord | undefined => {
    const row = this.#prepare(
      "SELECT baseline, started_seq, reason, system_prompt, snapshot_version AS marked FROM epochs WHERE session_id = ? AND number = ?",
    ).get(id, state.number) as EpochRow | undefined;
    if (row === undefined) return undefined;
    // An epoch marked unreadable is corrupt whatever its entries.
    const entries =
      row.marked < 0
        ? []
        : (this.#prepare("SELECT key, entry FROM snapshot_entries WHERE session_id = ? AND epoch = ?", true).all(
            id,
            state.number,
          ) as Array<[key: string, entry: string]>);
    return epochFrom(id, state.number, row, entries);
  };

  /** The session's head; `SessionNotFound` when there is none. */
  #head(id: string): SessionHead {
    const row = this.#prepare("SELECT revision, last_seq, epoch, snapshot_version FROM sessions WHERE id = ?", true).get(id) as
      | [revision: number, last_seq: number, epoch: number, snapshot_version: number]
      | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    return { revision: row[0], lastSeq: row[1], epoch: row[2], snapshotVersion: row[3] };
  }

  commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    return this.#commits.boundary(id, revision, commit);
  }

  commitReply(id: string, revision: number, reply: ReplyToCommit, toolResults: ToolResults): Promise<ReplyCommitted> {
    return this.#commits.reply(id, revision, reply, toolResults);
  }

  commitSummary(id: string, revision: number, text: string): Promise<void> {
    return this.#commits.summary(id, revision, text);
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
