// Owns the fleet store: sessions in PostgreSQL through `pg`, for many host processes
// on many machines serving one set of sessions. The same contract as the SQLite store:
// versioned migrations, one transaction per boundary commit (the snapshot and its
// Mid-Conversation System Message together), writes guarded by the session's revision.
// Concurrent commits to one session serialise on its row lock; the revision guard
// turns the loser into a `RevisionConflict`.

import type pg from "pg";
import { ContextHostError, messageOf, SettingInvalid } from "../../base/errors.ts";
import { RevisionConflict, SessionCorrupt, SessionNotFound, StoreSchemaNewer } from "../errors.ts";
import { planBoundary, planReply, planSummary, type ReplyToCommit, type SessionHead, type Writes } from "./commit-plan.ts";
import { type EpochState, isSameState, snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { loadPg } from "./pg.ts";
import { migrations } from "./postgres-schema.ts";
import {
  addPromptReadingSql,
  applyStatement,
  type BoundaryRow,
  type EpochColumns,
  epochColumns,
  type HeadColumns,
  headOf,
  readBoundarySql,
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

/** The database cannot be reached or refused a statement; names the database and what was being done. */
export class StoreUnavailable extends ContextHostError {
  readonly database: string;
  constructor(options: { readonly database: string; readonly doing: string; readonly cause: unknown }) {
    super(`session store ${options.database}: ${options.doing} failed: ${messageOf(options.cause)}`, { cause: options.cause });
    this.database = options.database;
  }
}

/** The store's own named errors pass through as they are; anything else is the database's. */
const isStoreError = (error: unknown) =>
  error instanceof ContextHostError ||
  error instanceof SessionNotFound ||
  error instanceof RevisionConflict ||
  error instanceof SessionCorrupt;

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

/** How long a boundary's read taken with a prompt stays good for the step after it (decision 178). */
const readAheadMs = 1_000;

type Query = (sql: string, values?: readonly unknown[]) => Promise<pg.QueryResult>;

/** A `SessionStore` in PostgreSQL. Open it with `await PostgresSessionStore.open(options)`. */
export class PostgresSessionStore implements SessionStore {
  readonly #pool: pg.Pool;
  /** Where the sessions are, as errors name it: host, port, database and schema (never the password). */
  readonly database: string;
  /**
   * The active epoch per session as last read or committed, with the state it was at: a
   * boundary checks two integers instead of reading and parsing the Baseline and snapshot.
   */
  readonly #epochs = new Map<string, { state: EpochState; record: EpochRecord }>();
  /** The head per session as last read or committed: a commit at its revision needs no read. */
  readonly #heads = new Map<string, SessionHead>();
  /**
   * The boundary's read taken with the prompt this store last added to a session, for the
   * step that comes next (decision 178): used once, at the seq it was read after, while fresh.
   */
  readonly #readAhead = new Map<string, { afterSeq: number; at: number; read: BoundaryRead }>();
  #isClosed = false;

  private constructor(pool: pg.Pool, database: string) {
    this.#pool = pool;
    this.database = database;
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
      await store.#transaction("migrating the schema", async (query) => {
        await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`context-host:${schema}`]);
        await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        await query(`SET LOCAL search_path TO ${schema}`);
        await query("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
        const found = await query("SELECT version FROM schema_version");
        const version = (found.rows[0] as { version: number } | undefined)?.version ?? 0;
        if (found.rows.length === 0) await query("INSERT INTO schema_version (version) VALUES (0)");
        if (version > migrations.length) {
          throw new StoreSchemaNewer({ file: database, version, supported: migrations.length });
        }
        for (let v = version; v < migrations.length; v++) await query(migrations[v] as string);
        await query("UPDATE schema_version SET version = $1", [migrations.length]);
      });
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
    return store;
  }

  /**
   * Runs one statement. A `name` makes it a prepared statement (parsed and planned once per
   * connection): the few statements of every step are (decision 171).
   */
  async #query(doing: string, sql: string, values?: readonly unknown[], name?: string): Promise<pg.QueryResult> {
    try {
      if (name !== undefined) return await this.#pool.query({ name, text: sql, values: values as unknown[] });
      return await this.#pool.query(sql, values as unknown[]);
    } catch (error) {
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    }
  }

  /** Runs `work` in one transaction; a named store error from `work` rolls back and is rethrown as it is. */
  async #transaction<T>(doing: string, work: (query: Query) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    }
    let isBroken = false;
    try {
      await client.query("BEGIN");
      const query: Query = async (sql, values) => {
        try {
          return await client.query(sql, values as unknown[]);
        } catch (error) {
          throw new StoreUnavailable({ database: this.database, doing, cause: error });
        }
      };
      const result = await work(query);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        isBroken = true;
      });
      if (isStoreError(error)) throw error;
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    } finally {
      client.release(isBroken);
    }
  }

  async #sessionRow(id: string, query: Query = (sql, values) => this.#query(`reading session ${id}`, sql, values)) {
    const result = await query("SELECT * FROM sessions WHERE id = $1", [id]);
    const row = result.rows[0] as SessionRow | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    return row;
  }

  async createSession(session: { id: string; location: string; provider: string; model: string }): Promise<void> {
    await this.#query(
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
    const result = await this.#query("listing the sessions", "SELECT * FROM sessions ORDER BY created");
    return (result.rows as SessionRow[]).map(sessionFrom);
  }

  async readBoundary(id: string, afterSeq: number): Promise<BoundaryRead> {
    const ahead = this.#readAhead.get(id);
    this.#readAhead.delete(id);
    if (ahead !== undefined && ahead.afterSeq === afterSeq && performance.now() - ahead.at <= readAheadMs) return ahead.read;
    const held = this.#epochs.get(id);
    const result = await this.#query(
      `reading a boundary of session ${id}`,
      readBoundarySql,
      [id, held?.state.number ?? null, held?.state.snapshot_version ?? null, afterSeq],
      "context-host-read-boundary",
    );
    return this.#boundaryFrom(id, result.rows[0] as BoundaryRow | undefined);
  }

  #boundaryFrom(id: string, row: BoundaryRow | undefined): BoundaryRead {
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    this.#heads.set(id, headOf(row));
    return {
      session: sessionFrom(row),
      epoch: this.#epochFrom(id, row, row.epoch_row),
      pending: row.pending ?? [],
      appended: (row.appended ?? []).map((message) => messageFromRow(id, message)),
    };
  }

  /** The active epoch of a session's row: the held record while its state is current, else the columns read. */
  #epochFrom(id: string, head: HeadColumns, columns: EpochColumns | null): EpochRecord | undefined {
    if (head.epoch === 0) return undefined;
    const state = { number: head.epoch, snapshot_version: head.snapshot_version };
    if (columns === null) {
      const held = this.#epochs.get(id);
      if (held !== undefined && isSameState(held.state, state)) {
        return held.record;
      }
      throw new SessionCorrupt({ sessionId: id, reason: `its active Context Epoch ${state.number} is not stored` });
    }
    const rows = { sessionId: id, number: state.number, snapshotVersion: columns.marked };
    if (columns.keys.length !== columns.entries.length)
      throw new SessionCorrupt({ sessionId: id, reason: `the Context Snapshot of epoch ${state.number} was read apart` });
    const record: EpochRecord = {
      number: state.number,
      baseline: columns.baseline,
      snapshot: snapshotFromEntries(
        rows,
        columns.keys.map((key, i) => [key, columns.entries[i] as string] as const),
      ),
      startedSeq: columns.started_seq,
      reason: columns.reason,
      systemPrompt: systemPromptFrom(rows, columns.system_prompt),
    };
    this.#epochs.set(id, { state, record });
    return record;
  }

  async updateSession(
    id: string,
    change: { location?: string; provider?: string; model?: string; epochDue?: Exclude<EpochReason, "initial"> },
  ): Promise<void> {
    this.#readAhead.delete(id);
    await this.#transaction(`updating session ${id}`, async (query) => {
      const row = await this.#sessionRow(id, query);
      await query(
        "UPDATE sessions SET location = $1, provider = $2, model = $3, epoch_due = $4, revision = revision + 1 WHERE id = $5",
        [
          change.location ?? row.location,
          change.provider ?? row.provider,
          change.model ?? row.model,
          change.epochDue ?? row.epoch_due,
          id,
        ],
      );
    });
  }

  async addPrompt(id: string, text: string): Promise<void> {
    this.#readAhead.delete(id);
    // One statement: the prompt is added only to a session that exists, and the next step's
    // read comes with it, after the last seq this store has seen (a runtime that has not read
    // the session reads all of it too).
    const afterSeq = this.#heads.get(id)?.lastSeq ?? 0;
    const held = this.#epochs.get(id);
    const result = await this.#query(
      `adding a prompt to session ${id}`,
      addPromptReadingSql,
      [id, held?.state.number ?? null, held?.state.snapshot_version ?? null, afterSeq, text],
      "context-host-add-prompt",
    );
    const read = this.#boundaryFrom(id, result.rows[0] as BoundaryRow | undefined);
    this.#readAhead.set(id, { afterSeq, at: performance.now(), read });
  }

  async pendingPrompts(id: string): Promise<PendingPrompt[]> {
    const result = await this.#query(
      `reading the prompts of session ${id}`,
      "SELECT id, text FROM pending_prompts WHERE session_id = $1 AND promoted_seq IS NULL ORDER BY id",
      [id],
    );
    return result.rows as PendingPrompt[];
  }

  async messages(id: string, afterSeq = 0): Promise<StoredMessage[]> {
    const doing = `reading the messages of session ${id}`;
    const messages = await this.#messageRows(id, afterSeq, (sql, values) => this.#query(doing, sql, values));
    // Rows prove the session exists; none may mean it does not.
    if (messages.length === 0 && (await this.#query(doing, "SELECT 1 FROM sessions WHERE id = $1", [id])).rows.length === 0)
      throw new SessionNotFound({ sessionId: id });
    return messages;
  }

  async #messageRows(id: string, afterSeq: number, query: Query): Promise<StoredMessage[]> {
    const result = await query(
      "SELECT seq, role, text, epoch, data, usage, provider_content FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq",
      [id, afterSeq],
    );
    return result.rows.map((row) => messageFromRow(id, row));
  }

  async activeEpoch(id: string): Promise<EpochRecord | undefined> {
    return (await this.#readHead(id, `reading the epoch of session ${id}`))?.epoch;
  }

  /** The session's head and active epoch in one statement (its rows read only when not held); none for an unknown session. */
  async #readHead(id: string, doing: string): Promise<{ head: SessionHead; epoch: EpochRecord | undefined } | undefined> {
    const held = this.#epochs.get(id);
    const result = await this.#query(
      doing,
      `SELECT s.revision, s.last_seq, s.epoch, s.snapshot_version, ${epochColumns} FROM sessions s WHERE s.id = $1`,
      [id, held?.state.number ?? null, held?.state.snapshot_version ?? null],
      "context-host-read-head",
    );
    const row = result.rows[0] as (HeadColumns & { epoch_row: EpochColumns | null }) | undefined;
    if (row === undefined) return undefined;
    const head = headOf(row);
    this.#heads.set(id, head);
    return { head, epoch: this.#epochFrom(id, row, row.epoch_row) };
  }

  /**
   * The session's head at `revision` and its active epoch: what this store holds when it is
   * at that revision (a boundary's read, or its own last commit), else read.
   */
  async #headAt(id: string, revision: number, doing: string): Promise<{ head: SessionHead; epoch: EpochRecord | undefined }> {
    const head = this.#heads.get(id);
    const held = this.#epochs.get(id);
    if (
      head !== undefined &&
      head.revision === revision &&
      (head.epoch === 0 ||
        (held !== undefined && isSameState(held.state, { number: head.epoch, snapshot_version: head.snapshotVersion })))
    ) {
      return { head, epoch: held?.record };
    }
    const read = await this.#readHead(id, doing);
    if (read === undefined) throw new SessionNotFound({ sessionId: id });
    if (read.head.revision !== revision) throw new RevisionConflict({ sessionId: id, expected: revision });
    return read;
  }

  /** Runs one commit's writes as one statement; `RevisionConflict` (or `SessionNotFound`) when it claimed nothing. */
  async #apply(id: string, writes: Writes, doing: string): Promise<void> {
    let claimed: { claimed: number; revision: number | null };
    try {
      const statement = applyStatement(id, writes);
      claimed = (await this.#query(doing, statement.text, statement.values, statement.name)).rows[0] as typeof claimed;
    } catch (error) {
      this.#forget(id);
      throw error;
    }
    this.#readAhead.delete(id);
    if (claimed.claimed === 1) {
      this.#heads.set(id, writes.head);
      return;
    }
    this.#forget(id);
    if (claimed.revision === null) throw new SessionNotFound({ sessionId: id });
    // Another writer moved the revision, or a prompt to promote is not pending (any more).
    throw new RevisionConflict({ sessionId: id, expected: writes.revision });
  }

  /** Forgets what this store holds of a session (a failed or lost commit may have been built on it). */
  #forget(id: string): void {
    this.#readAhead.delete(id);
    this.#heads.delete(id);
    this.#epochs.delete(id);
  }

  async commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    const doing = `committing a boundary of session ${id}`;
    const { head, epoch } = await this.#headAt(id, revision, doing);
    const { writes, committed } = planBoundary(id, head, epoch, commit);
    await this.#apply(id, writes, doing);
    // Held only once committed: a rolled-back epoch must never be taken for the stored one.
    this.#epochs.set(id, {
      state: { number: writes.head.epoch, snapshot_version: writes.head.snapshotVersion },
      record: committed.epoch,
    });
    return committed;
  }

  async commitReply(
    id: string,
    revision: number,
    reply: ReplyToCommit,
    toolResults: ReadonlyArray<{ callId: string; name: string; result: string }>,
  ): Promise<ReplyCommitted> {
    const doing = `committing a reply of session ${id}`;
    const { head } = await this.#headAt(id, revision, doing);
    const { writes, appended } = planReply(id, head, reply, toolResults);
    await this.#apply(id, writes, doing);
    return { appended };
  }

  async claimLease(id: string, lease: InFlightLease, now: number): Promise<boolean> {
    this.#readAhead.delete(id);
    const result = await this.#query(
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
    await this.#query(
      `releasing the lease of session ${id}`,
      "UPDATE sessions SET lease_holder = NULL, lease_expires = NULL WHERE id = $1 AND lease_holder = $2",
      [id, holder],
    );
  }

  async commitSummary(id: string, revision: number, text: string): Promise<void> {
    const doing = `committing a summary of session ${id}`;
    const { head } = await this.#headAt(id, revision, doing);
    await this.#apply(id, planSummary(head, text), doing);
  }

  async discoveredInstructions(id: string, location: string): Promise<string[]> {
    const result = await this.#query(
      `reading the instructions of session ${id}`,
      "SELECT file FROM discovered_instructions WHERE session_id = $1 AND location = $2 ORDER BY discovered",
      [id, location],
    );
    return result.rows.map((row) => (row as { file: string }).file);
  }

  async addDiscoveredInstructions(id: string, location: string, files: readonly string[]): Promise<void> {
    await this.#transaction(`recording the instructions of session ${id}`, async (query) => {
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
    await this.#pool.end();
  }
}
