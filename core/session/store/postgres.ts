// Owns the fleet store: sessions in PostgreSQL through `pg`, for many host processes
// on many machines serving one set of sessions. The same contract as the SQLite store:
// versioned migrations, the one commit algorithm (commits.ts) with each commit one
// statement (postgres-sql.ts), writes guarded by the session's revision. Concurrent commits
// to one session serialise on its row lock; the revision guard turns the loser into a
// `RevisionConflict`.

import type pg from "pg";
import { SettingInvalid } from "../../base/errors.ts";
import { RevisionConflict, SessionNotFound } from "../errors.ts";
import type { ReplyToCommit, SessionHead } from "./commit-plan.ts";
import { type CommitSql, Commits, type ToolResults } from "./commits.ts";
import { HeldSessions, stateAt } from "./held.ts";
import { loadPg, StorePool } from "./pg.ts";
import { migrate } from "./postgres-schema.ts";
import {
  addPromptReadingSql,
  applyStatement,
  type BoundaryRow,
  type EpochColumns,
  epochOf,
  type HeadColumns,
  headOf,
  readBoundarySql,
  readHeadSql,
} from "./postgres-sql.ts";
import { messageFromRow, type SessionRow, sessionFrom } from "./rows.ts";
import type {
  BoundaryCommit,
  BoundaryCommitted,
  BoundaryRead,
  EpochReason,
  EpochRecord,
  InFlightLease,
  PendingPrompt,
  ReplyCommitted,
  SessionRecord,
  SessionStore,
  StoredMessage,
} from "./store.ts";

export { StoreUnavailable } from "../errors.ts";

/** How `PostgresSessionStore.open` connects: the server, the schema, the pool. */
export interface PostgresSessionStoreOptions {
  /** A `postgres://` URL; default the `DATABASE_URL` environment variable. */
  readonly connectionString?: string;
  /** The schema the store's tables live in (created when missing); default `context_host`. */
  readonly schema?: string;
  /** Most connections the pool opens (default 10). */
  readonly poolSize?: number;
}

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

/** No epoch read (its state is the one held). */
const notRead = () => undefined;

/** How long a boundary's read taken with a prompt stays good for the step after it (decision 178). */
const readAheadMs = 1_000;

/** A `SessionStore` in PostgreSQL. Open it with `await PostgresSessionStore.open(options)`. */
export class PostgresSessionStore implements SessionStore {
  readonly #db: StorePool;
  /** Where the sessions are, as errors name it: host, port, database and schema (never the password). */
  readonly database: string;
  /** The active epoch and the head per session as last read or committed. */
  readonly #held = new HeldSessions();
  readonly #commits: Commits;
  /**
   * The boundary's read taken with the prompt this store last added to a session, for the
   * step that comes next (decision 178): used once, at the seq it was read after, while fresh.
   */
  readonly #readAhead = new Map<string, { afterSeq: number; at: number; read: BoundaryRead }>();
  #isClosed = false;

  private constructor(pool: pg.Pool, database: string) {
    this.#db = new StorePool(pool, database);
    this.database = database;
    this.#commits = new Commits(this.#held, this.#commitSql);
  }

  /** Connects, creates the schema when missing, and migrates it (one host at a time). */
  static async open(options: PostgresSessionStoreOptions = {}): Promise<PostgresSessionStore> {
    const connectionString = options.connectionString ?? process.env.DATABASE_URL;
    if (connectionString === undefined || connectionString === "") {
      throw new SettingInvalid({
        setting: "PostgresSessionStore connectionString",
        reason: "none given and DATABASE_URL is not set",
      });
    }
    const schema = options.schema ?? "context_host";
    if (!identifier.test(schema)) {
      throw new SettingInvalid({
        setting: "PostgresSessionStore schema",
        reason: `${JSON.stringify(schema)} is not a plain lower-case SQL name`,
      });
    }
    const poolSize = options.poolSize ?? 10;
    if (!Number.isInteger(poolSize) || poolSize < 1) {
      throw new SettingInvalid({ setting: "PostgresSessionStore poolSize", reason: `${poolSize} is not a positive integer` });
    }
    let url: URL;
    try {
      url = new URL(connectionString);
    } catch {
      // The string may hold a password: say what is wrong, not what it is.
      throw new SettingInvalid({ setting: "PostgresSessionStore connectionString", reason: "is not a postgres:// URL" });
    }
    const database = `postgres://${url.hostname}:${url.port || 5432}${url.pathname} (schema ${schema})`;
    // Every connection starts in the store's schema (a startup option, so no query runs before it).
    const { Pool } = await loadPg("PostgresSessionStore.open");
    const pool = new Pool({ connectionString, max: poolSize, options: `-c search_path=${schema}` });
    // A connection's error (the server restarted) must not crash the host: the query that
    // meets it reports it as StoreUnavailable; idle and checked-out clients alike are covered.
    pool.on("error", () => {});
    pool.on("connect", (client) => client.on("error", () => {}));
    const store = new PostgresSessionStore(pool, database);
    try {
      await store.#db.transaction("migrating the schema", (query) => migrate(query, schema, database));
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
    return store;
  }

  /** The held epoch state of session `id` as the values `$2`, `$3` of a read (the epoch's columns are read only when it differs). */
  #heldState(id: string): [number | null, number | null] {
    const state = this.#held.epochState(id);
    return [state?.number ?? null, state?.snapshot_version ?? null];
  }

  async #sessionRow(id: string): Promise<SessionRow> {
    const result = await this.#db.query(`reading session ${id}`, "SELECT * FROM sessions WHERE id = $1", [id]);
    const row = result.rows[0] as SessionRow | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    return row;
  }

  async createSession(session: { id: string; location: string; provider: string; model: string }): Promise<void> {
    await this.#db.query(
      `creating session ${session.id}`,
      "INSERT INTO sessions (id, location, provider, model) VALUES ($1, $2, $3, $4)",
      [session.id, session.location, session.provider, session.model],
    );
  }

  async session(id: string): Promise<SessionRecord> {
    return sessionFrom(await this.#sessionRow(id));
  }

  /** Every stored session, oldest first (by `created`, the order of creation). */
  async listSessions(): Promise<SessionRecord[]> {
    const result = await this.#db.query("listing the sessions", "SELECT * FROM sessions ORDER BY created");
    return (result.rows as SessionRow[]).map(sessionFrom);
  }

  async readBoundary(id: string, afterSeq: number): Promise<BoundaryRead> {
    const ahead = this.#readAhead.get(id);
    this.#readAhead.delete(id);
    if (ahead !== undefined && ahead.afterSeq === afterSeq && performance.now() - ahead.at <= readAheadMs) return ahead.read;
    const result = await this.#db.query(
      `reading a boundary of session ${id}`,
      readBoundarySql,
      [id, ...this.#heldState(id), afterSeq],
      "context-host-read-boundary",
    );
    return this.#boundaryFrom(id, result.rows[0] as BoundaryRow | undefined);
  }

  #boundaryFrom(id: string, row: BoundaryRow | undefined): BoundaryRead {
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    const head = headOf(row);
    this.#held.holdHead(id, head);
    return {
      session: sessionFrom(row),
      epoch: this.#epochAt(id, head, row.epoch_row),
      pending: row.pending ?? [],
      appended: (row.appended ?? []).map((message) => messageFromRow(id, message)),
    };
  }

  /** The active epoch at `head`: the held record while it is at that state, else from the columns read. */
  #epochAt(id: string, head: SessionHead, columns: EpochColumns | null): EpochRecord | undefined {
    const state = stateAt(head);
    if (state === undefined) return undefined;
    return this.#held.epoch(id, state, columns === null ? notRead : () => epochOf(id, state.number, columns));
  }

  async updateSession(
    id: string,
    change: { location?: string; provider?: string; model?: string; epochDue?: Exclude<EpochReason, "initial"> },
  ): Promise<void> {
    this.#readAhead.delete(id);
    const updated = await this.#db.query(
      `updating session ${id}`,
      `UPDATE sessions SET location = COALESCE($1, location), provider = COALESCE($2, provider), model = COALESCE($3, model),
         epoch_due = COALESCE($4, epoch_due), revision = revision + 1 WHERE id = $5`,
      [change.location ?? null, change.provider ?? null, change.model ?? null, change.epochDue ?? null, id],
    );
    if (updated.rowCount === 0) throw new SessionNotFound({ sessionId: id });
  }

  async addPrompt(id: string, text: string): Promise<void> {
    this.#readAhead.delete(id);
    // One statement: the prompt is added only to a session that exists, and the next step's
    // read comes with it, after the last seq this store has seen (a runtime that has not read
    // the session reads all of it too).
    const afterSeq = this.#held.head(id)?.lastSeq ?? 0;
    const result = await this.#db.query(
      `adding a prompt to session ${id}`,
      addPromptReadingSql,
      [id, ...this.#heldState(id), afterSeq, text],
      "context-host-add-prompt",
    );
    const read = this.#boundaryFrom(id, result.rows[0] as BoundaryRow | undefined);
    this.#readAhead.set(id, { afterSeq, at: performance.now(), read });
  }

  async pendingPrompts(id: string): Promise<PendingPrompt[]> {
    const result = await this.#db.query(
      `reading the prompts of session ${id}`,
      "SELECT id, text FROM pending_prompts WHERE session_id = $1 AND promoted_seq IS NULL ORDER BY id",
      [id],
    );
    return result.rows as PendingPrompt[];
  }

  async messages(id: string, afterSeq = 0): Promise<StoredMessage[]> {
    const doing = `reading the messages of session ${id}`;
    const result = await this.#db.query(
      doing,
      "SELECT seq, role, text, epoch, data, usage, provider_content FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq",
      [id, afterSeq],
    );
    // Rows prove the session exists; none may mean it does not.
    if (result.rows.length === 0 && (await this.#db.query(doing, "SELECT 1 FROM sessions WHERE id = $1", [id])).rows.length === 0)
      throw new SessionNotFound({ sessionId: id });
    return result.rows.map((row) => messageFromRow(id, row));
  }

  async activeEpoch(id: string): Promise<EpochRecord | undefined> {
    return (await this.#readHead(id, `reading the epoch of session ${id}`))?.epoch;
  }

  /** The session's head and active epoch in one statement (its rows read only when not held); none for an unknown session. */
  async #readHead(id: string, doing: string): Promise<{ head: SessionHead; epoch: EpochRecord | undefined } | undefined> {
    const result = await this.#db.query(doing, readHeadSql, [id, ...this.#heldState(id)], "context-host-read-head");
    const row = result.rows[0] as (HeadColumns & { epoch_row: EpochColumns | null }) | undefined;
    if (row === undefined) return undefined;
    const head = headOf(row);
    this.#held.holdHead(id, head);
    return { head, epoch: this.#epochAt(id, head, row.epoch_row) };
  }

  /** A commit's SQL: the head read with its epoch in one statement, the writes applied in one (`applyStatement`). */
  readonly #commitSql: CommitSql = {
    readHead: async (kind, id) => {
      const read = await this.#readHead(id, `committing ${kind} of session ${id}`);
      if (read === undefined) throw new SessionNotFound({ sessionId: id });
      return read;
    },
    apply: async (kind, id, writes) => {
      // Whether it lands or not, a read taken before a commit is not the next step's.
      this.#readAhead.delete(id);
      const statement = applyStatement(id, writes);
      const result = await this.#db.query(
        `committing ${kind} of session ${id}`,
        statement.text,
        statement.values,
        statement.name,
      );
      const { claimed, revision } = result.rows[0] as { claimed: number; revision: number | null };
      if (claimed === 1) return;
      if (revision === null) throw new SessionNotFound({ sessionId: id });
      // Another writer moved the revision, or a prompt to promote is not pending (any more).
      throw new RevisionConflict({ sessionId: id, expected: writes.revision });
    },
  };

  commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    return this.#commits.boundary(id, revision, commit);
  }

  commitReply(id: string, revision: number, reply: ReplyToCommit, toolResults: ToolResults): Promise<ReplyCommitted> {
    return this.#commits.reply(id, revision, reply, toolResults);
  }

  commitSummary(id: string, revision: number, text: string): Promise<void> {
    return this.#commits.summary(id, revision, text);
  }

  async claimLease(id: string, lease: InFlightLease, now: number): Promise<boolean> {
    this.#readAhead.delete(id);
    const result = await this.#db.query(
      `claiming the lease of session ${id}`,
      `UPDATE sessions SET lease_holder = $1, lease_expires = $2
       WHERE id = $3 AND awaiting_reply AND (lease_holder IS NULL OR lease_holder = $1 OR lease_expires <= $4)`,
      [lease.holder, lease.expiresAt, id, now],
    );
    if (result.rowCount === 0) await this.#sessionRow(id);
    return result.rowCount === 1;
  }

  async releaseLease(id: string, holder: string): Promise<void> {
    this.#readAhead.delete(id);
    await this.#db.query(
      `releasing the lease of session ${id}`,
      "UPDATE sessions SET lease_holder = NULL, lease_expires = NULL WHERE id = $1 AND lease_holder = $2",
      [id, holder],
    );
  }

  async discoveredInstructions(id: string, location: string): Promise<string[]> {
    const result = await this.#db.query(
      `reading the instructions of session ${id}`,
      "SELECT file FROM discovered_instructions WHERE session_id = $1 AND location = $2 ORDER BY discovered",
      [id, location],
    );
    return result.rows.map((row) => (row as { file: string }).file);
  }

  async addDiscoveredInstructions(id: string, location: string, files: readonly string[]): Promise<void> {
    await this.#db.transaction(`recording the instructions of session ${id}`, async (query) => {
      // Lock the session's row: discovery order is numbered one writer at a time.
      const locked = await query("SELECT id FROM sessions WHERE id = $1 FOR UPDATE", [id]);
      if (locked.rows.length === 0) throw new SessionNotFound({ sessionId: id });
      const next = await query(
        "SELECT COALESCE(MAX(discovered), 0) + 1 AS n FROM discovered_instructions WHERE session_id = $1",
        [id],
      );
      let order = (next.rows[0] as { n: number }).n;
      for (const file of files) {
        const inserted = await query(
          "INSERT INTO discovered_instructions (session_id, location, file, discovered) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
          [id, location, file, order],
        );
        if (inserted.rowCount === 1) order += 1;
      }
    });
  }

  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    await this.#db.pool.end();
  }
}
