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
import { snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { loadPg } from "./pg.ts";
import { migrations } from "./postgres-schema.ts";
import { type MessageRow, messageFromRow, type SessionRow, sessionFrom } from "./rows.ts";
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

/** A session's row as a boundary reads it, with its pending input, what was appended and its epoch when not held. */
interface BoundaryRow extends SessionRow, HeadColumns {
  /** The pending prompts, oldest first (JSON, parsed by pg); null when none. */
  pending: PendingPrompt[] | null;
  /** The messages after the seq asked for (JSON, parsed by pg); null when none. */
  appended: MessageRow[] | null;
  epoch_row: EpochColumns | null;
}

/** The head's columns of a session's row. */
interface HeadColumns {
  revision: number;
  last_seq: number;
  epoch: number;
  snapshot_version: number;
}

/** The active epoch's columns, read only when the store does not hold its state. */
interface EpochColumns {
  baseline: string;
  started_seq: number;
  reason: EpochReason;
  system_prompt: string | null;
  /** -1: unreadable since its upgrade. */
  marked: number;
  /** The snapshot's keys and, in the same order, their entries' JSON. */
  keys: string[];
  entries: string[];
}

/** Which state of a session's active epoch a held record is: its number and its snapshot's version. */
interface EpochState {
  number: number;
  snapshot_version: number;
}

/**
 * The active epoch's columns as one JSON value, when the session's state is not the one
 * held (`$2`, `$3`: the held number and version) — a CASE evaluates its branch only when taken.
 */
const epochColumns = `CASE WHEN s.epoch > 0 AND (s.epoch IS DISTINCT FROM $2::integer OR s.snapshot_version IS DISTINCT FROM $3::integer) THEN
     (SELECT json_build_object('baseline', e.baseline, 'started_seq', e.started_seq, 'reason', e.reason,
        'system_prompt', e.system_prompt, 'marked', e.snapshot_version,
        'keys', ARRAY(SELECT k.key FROM snapshot_entries k WHERE k.session_id = s.id AND k.epoch = e.number ORDER BY k.key),
        'entries', ARRAY(SELECT k.entry FROM snapshot_entries k WHERE k.session_id = s.id AND k.epoch = e.number ORDER BY k.key))
      FROM epochs e WHERE e.session_id = s.id AND e.number = s.epoch) END AS epoch_row`;

/** One boundary's read (decision 171): the session's row, its pending input, its messages after `$4` and its epoch when not held. */
const readBoundarySql = `SELECT s.*,
     (SELECT json_agg(json_build_object('id', p.id, 'text', p.text) ORDER BY p.id) FROM pending_prompts p
       WHERE p.session_id = s.id AND p.promoted_seq IS NULL) AS pending,
     CASE WHEN s.last_seq > $4 THEN
       (SELECT json_agg(json_build_object('seq', m.seq, 'role', m.role, 'text', m.text, 'epoch', m.epoch, 'data', m.data,
          'usage', m.usage, 'provider_content', m.provider_content) ORDER BY m.seq)
        FROM messages m WHERE m.session_id = s.id AND m.seq > $4) END AS appended,
     ${epochColumns}
   FROM sessions s WHERE s.id = $1`;

/**
 * One commit's writes (decision 171) as one statement: the session's row advanced if it is
 * still at the revision read, and only then the epoch, its entries, the promoted prompts and
 * the messages; the statement's result says whether it was claimed. The claim also needs every
 * prompt to promote pending in this session, each listed once.
 */
const applySql = `WITH claimed AS (
     UPDATE sessions SET revision = $3, last_seq = $4, epoch = $5, snapshot_version = $6,
       awaiting_reply = COALESCE($7::boolean, awaiting_reply),
       lease_holder = CASE WHEN $8::boolean THEN lease_holder ELSE $9::text END,
       lease_expires = CASE WHEN $8::boolean THEN lease_expires ELSE $10::bigint END,
       epoch_due = CASE $11::text WHEN 'settled' THEN NULL WHEN 'compaction' THEN 'compaction' ELSE epoch_due END,
       seen_count = COALESCE($12::integer, seen_count), seen_digest = COALESCE($13::text, seen_digest),
       location = COALESCE($14::text, location), provider = COALESCE($15::text, provider), model = COALESCE($16::text, model)
     WHERE id = $1 AND revision = $2
       AND (SELECT count(*) FROM pending_prompts
             WHERE session_id = $1 AND promoted_seq IS NULL AND id = ANY($26::integer[])) = cardinality($26::integer[])
       AND cardinality(ARRAY(SELECT DISTINCT unnest($26::integer[]))) = cardinality($26::integer[])
     RETURNING id
   ), new_epoch AS (
     INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt)
       SELECT $1, $17::integer, $18::text, $19::integer, $20::text, $21::text FROM claimed WHERE $17::integer IS NOT NULL
   ), upserted AS (
     INSERT INTO snapshot_entries (session_id, epoch, key, entry)
       SELECT $1, $22::integer, u.key, u.entry FROM claimed, unnest($23::text[], $24::text[]) AS u(key, entry)
     ON CONFLICT (session_id, epoch, key) DO UPDATE SET entry = EXCLUDED.entry
   ), removed AS (
     DELETE FROM snapshot_entries
       WHERE session_id = $1 AND epoch = $22::integer AND key = ANY($25::text[]) AND EXISTS (SELECT 1 FROM claimed)
   ), promoted AS (
     UPDATE pending_prompts p SET promoted_seq = u.seq FROM claimed, unnest($26::integer[], $27::integer[]) AS u(id, seq)
       WHERE p.id = u.id AND p.session_id = $1 AND p.promoted_seq IS NULL
   ), appended AS (
     INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content)
       SELECT $1, u.seq, u.role, u.text, u.epoch, u.data, u.usage, u.provider_content FROM claimed,
         unnest($28::integer[], $29::text[], $30::text[], $31::integer[], $32::text[], $33::text[], $34::text[])
           AS u(seq, role, text, epoch, data, usage, provider_content)
   )
   SELECT (SELECT count(*) FROM claimed)::integer AS claimed, (SELECT revision FROM sessions WHERE id = $1) AS revision`;

/** The parameters of `applySql` for `writes` of session `id`. */
function applyParams(id: string, writes: Writes): unknown[] {
  const { head, lease, seen, where, newEpoch, entries, messages } = writes;
  const taken = lease === "kept" ? null : lease;
  return [
    id,
    writes.revision,
    head.revision,
    head.lastSeq,
    head.epoch,
    head.snapshotVersion,
    writes.awaitingReply === "kept" ? null : writes.awaitingReply,
    lease === "kept",
    taken?.holder ?? null,
    taken?.expiresAt ?? null,
    writes.epochDue,
    seen?.count ?? null,
    seen?.digest ?? null,
    where?.location ?? null,
    where?.provider ?? null,
    where?.model ?? null,
    newEpoch?.number ?? null,
    newEpoch?.baseline ?? null,
    newEpoch?.startedSeq ?? null,
    newEpoch?.reason ?? null,
    newEpoch?.systemPrompt ?? null,
    entries.epoch,
    entries.keys,
    entries.entries,
    entries.removed,
    writes.promote.map((p) => p.id),
    writes.promote.map((p) => p.seq),
    messages.map((m) => m.seq),
    messages.map((m) => m.role),
    messages.map((m) => m.text),
    messages.map((m) => m.epoch),
    messages.map((m) => m.data),
    messages.map((m) => m.usage),
    messages.map((m) => m.provider_content),
  ];
}

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
    const held = this.#epochs.get(id);
    const result = await this.#query(
      `reading a boundary of session ${id}`,
      readBoundarySql,
      [id, held?.state.number ?? null, held?.state.snapshot_version ?? null, afterSeq],
      "context-host-read-boundary",
    );
    const row = result.rows[0] as BoundaryRow | undefined;
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
      if (held !== undefined && held.state.number === state.number && held.state.snapshot_version === state.snapshot_version) {
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
    // One statement: the prompt is added only to a session that exists.
    const added = await this.#query(
      `adding a prompt to session ${id}`,
      "INSERT INTO pending_prompts (session_id, text) SELECT id, $2 FROM sessions WHERE id = $1",
      [id, text],
      "context-host-add-prompt",
    );
    if (added.rowCount === 0) throw new SessionNotFound({ sessionId: id });
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
        (held !== undefined && held.state.number === head.epoch && held.state.snapshot_version === head.snapshotVersion))
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
      claimed = (await this.#query(doing, applySql, applyParams(id, writes), "context-host-apply")).rows[0] as typeof claimed;
    } catch (error) {
      this.#forget(id);
      throw error;
    }
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

/** A session's head from its row's columns (PostgreSQL's integers arrive as numbers here: INTEGER columns). */
function headOf(row: HeadColumns): SessionHead {
  return { revision: row.revision, lastSeq: row.last_seq, epoch: row.epoch, snapshotVersion: row.snapshot_version };
}
