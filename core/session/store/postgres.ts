// Owns the fleet store: sessions in PostgreSQL through `pg`, for many host processes
// on many machines serving one set of sessions. The same contract as the SQLite store:
// versioned migrations, one transaction per boundary commit (the snapshot and its
// Mid-Conversation System Message together), writes guarded by the session's revision.
// Concurrent commits to one session serialise on its row lock; the revision guard
// turns the loser into a `RevisionConflict`.

import type pg from "pg";
import { ContextHostError, messageOf, SettingInvalid } from "../../base/errors.ts";
import type { Snapshot } from "../../system-context/index.ts";
import { RevisionConflict, SessionCorrupt, SessionNotFound, StoreSchemaNewer } from "../errors.ts";
import type { ProviderContent, ProviderReply, TokenUsage } from "../provider.ts";
import { entryWrites, snapshotFromEntries, systemPromptFrom } from "./epoch-rows.ts";
import { loadPg } from "./pg.ts";
import { messageFromRow, messageRow, type SessionRow, sessionFrom } from "./rows.ts";
import type {
  BoundaryCommit,
  BoundaryCommitted,
  BoundaryRead,
  EpochReason,
  EpochRecord,
  InFlightLease,
  MessageRole,
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

/** Each entry moves the schema one version up; never edit a released one. */
export const migrations: readonly string[] = [
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     location TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     revision INTEGER NOT NULL DEFAULT 0,
     epoch_due TEXT CHECK (epoch_due IN ('compaction', 'switch', 'move', 'replacement')),
     awaiting_reply BOOLEAN NOT NULL DEFAULT false
   );
   CREATE TABLE messages (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system-update', 'summary')),
     text TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     data TEXT,
     usage TEXT,
     provider_content TEXT,
     PRIMARY KEY (session_id, seq)
   );
   CREATE TABLE pending_prompts (
     id SERIAL PRIMARY KEY,
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     text TEXT NOT NULL,
     promoted_seq INTEGER
   );
   CREATE INDEX pending_prompts_by_session ON pending_prompts(session_id, promoted_seq);
   CREATE TABLE epochs (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     number INTEGER NOT NULL,
     baseline TEXT NOT NULL,
     snapshot TEXT NOT NULL,
     started_seq INTEGER NOT NULL,
     reason TEXT NOT NULL CHECK (reason IN ('initial', 'compaction', 'switch', 'move', 'replacement')),
     system_prompt TEXT,
     PRIMARY KEY (session_id, number)
   );
   CREATE TABLE discovered_instructions (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     location TEXT NOT NULL,
     file TEXT NOT NULL,
     discovered INTEGER NOT NULL,
     PRIMARY KEY (session_id, location, file)
   );`,
  // The in-flight lease of an awaited reply (decision 030): holder and expiry in ms since the epoch.
  "ALTER TABLE sessions ADD COLUMN lease_holder TEXT; ALTER TABLE sessions ADD COLUMN lease_expires BIGINT;",
  // A Context Snapshot is kept one row per source key (decision 094), so a Mid-Conversation
  // System Message writes only the entries it changed; `snapshot_version` counts an epoch's
  // changes (a reader's cached snapshot is current while it matches). An epoch whose old
  // snapshot text was not a JSON object (or had a key no text column holds) is marked -1
  // (read: corrupt); the check catches the cast's error, so a bad text never fails the
  // migration. A key given twice keeps its last value, as JSON.parse did.
  `CREATE TABLE snapshot_entries (
     session_id TEXT NOT NULL,
     epoch INTEGER NOT NULL,
     key TEXT NOT NULL,
     entry TEXT NOT NULL,
     PRIMARY KEY (session_id, epoch, key),
     FOREIGN KEY (session_id, epoch) REFERENCES epochs(session_id, number) ON DELETE CASCADE
   );
   ALTER TABLE epochs ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 0;
   CREATE FUNCTION snapshot_object_or_null(text) RETURNS json LANGUAGE plpgsql IMMUTABLE AS $$
   DECLARE
     parsed json;
   BEGIN
     parsed := $1::json;
     IF json_typeof(parsed) <> 'object' THEN RETURN NULL; END IF;
     PERFORM count(j.key) FROM json_each(parsed) AS j;
     RETURN parsed;
   EXCEPTION WHEN others THEN
     RETURN NULL;
   END $$;
   INSERT INTO snapshot_entries (session_id, epoch, key, entry)
     SELECT DISTINCT ON (e.session_id, e.number, j.key) e.session_id, e.number, j.key, j.value::text
     FROM epochs e, json_each(snapshot_object_or_null(e.snapshot)) WITH ORDINALITY AS j(key, value, n)
     ORDER BY e.session_id, e.number, j.key, j.n DESC;
   UPDATE epochs SET snapshot_version = -1 WHERE snapshot_object_or_null(snapshot) IS NULL;
   DROP FUNCTION snapshot_object_or_null(text);
   ALTER TABLE epochs DROP COLUMN snapshot;`,
  // The order sessions were created in, for `listSessions` (decision 150). Sessions of an
  // older schema are numbered in the order the table is read, all before newer ones.
  "ALTER TABLE sessions ADD COLUMN created BIGSERIAL;",
];

/** A session's row with what a boundary reads beside it (`readBoundary`). */
interface BoundaryRow extends SessionRow {
  epoch_number: number | null;
  epoch_version: number | null;
  last_seq: number;
  /** The pending prompts, oldest first (JSON, parsed by pg); null when none. */
  pending: PendingPrompt[] | null;
}

/** The active epoch as read: its state, and the rest only when it is not the state the store holds. */
interface EpochRow {
  number: number | null;
  snapshot_version: number | null;
  /** Whether the state differs from the one the store holds (then every column below is read). */
  stale: boolean;
  baseline: string | null;
  started_seq: number | null;
  reason: EpochReason | null;
  system_prompt: string | null;
  /** The snapshot's keys and, in the same order, their entries' JSON. */
  keys: string[] | null;
  entries: string[] | null;
  /** Only when asked for: the seq the next message gets. */
  next_seq?: number;
}

/** Which state of a session's active epoch a held record is: its number and its snapshot's version. */
interface EpochState {
  number: number;
  snapshot_version: number;
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

  async #query(doing: string, sql: string, values?: readonly unknown[]): Promise<pg.QueryResult> {
    try {
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
    const doing = `reading a boundary of session ${id}`;
    const query: Query = (sql, values) => this.#query(doing, sql, values);
    // One statement (one snapshot of the data): the session, its epoch's state, its pending
    // input and where its history ends agree.
    const result = await query(
      `SELECT s.*, e.number AS epoch_number, e.snapshot_version AS epoch_version,
         (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1) AS last_seq,
         (SELECT json_agg(json_build_object('id', id, 'text', text) ORDER BY id) FROM pending_prompts
           WHERE session_id = $1 AND promoted_seq IS NULL) AS pending
       FROM sessions s
       LEFT JOIN LATERAL (SELECT number, snapshot_version FROM epochs WHERE session_id = s.id ORDER BY number DESC LIMIT 1) AS e ON true
       WHERE s.id = $1`,
      [id],
    );
    const row = result.rows[0] as BoundaryRow | undefined;
    if (row === undefined) throw new SessionNotFound({ sessionId: id });
    const held = this.#epochs.get(id);
    let epoch: EpochRecord | undefined;
    if (row.epoch_number !== null && row.epoch_version !== null) {
      const isHeld =
        held !== undefined && held.state.number === row.epoch_number && held.state.snapshot_version === row.epoch_version;
      // Read again only when this store does not hold the epoch as it stands.
      epoch = isHeld ? held.record : (await this.#activeEpoch(id, query)).epoch;
    }
    const appended = row.last_seq > afterSeq ? await this.#messageRows(id, afterSeq, query) : [];
    return {
      session: sessionFrom(row),
      epoch,
      pending: row.pending ?? [],
      appended,
    };
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
    await this.#transaction(`adding a prompt to session ${id}`, async (query) => {
      await this.#sessionRow(id, query);
      await query("INSERT INTO pending_prompts (session_id, text) VALUES ($1, $2)", [id, text]);
    });
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
    const { epoch } = await this.#activeEpoch(id, (sql, values) =>
      this.#query(`reading the epoch of session ${id}`, sql, values),
    );
    return epoch;
  }

  /** The active epoch (and, with `withSeq`, the next message's seq), from the held record while its state is current. */
  async #activeEpoch(
    id: string,
    query: Query,
    withSeq = false,
  ): Promise<{ epoch: EpochRecord | undefined; state: EpochState | undefined; nextSeq: number }> {
    const held = this.#epochs.get(id);
    // One statement, so the state and the rows it reads agree; the Baseline and the entries
    // are read only when the state is not the one held (a CASE evaluates a branch only when taken).
    const result = await query(
      `SELECT e.number, e.snapshot_version, m.stale,
         CASE WHEN m.stale THEN e.baseline END AS baseline,
         CASE WHEN m.stale THEN e.started_seq END AS started_seq,
         CASE WHEN m.stale THEN e.reason END AS reason,
         CASE WHEN m.stale THEN e.system_prompt END AS system_prompt,
         CASE WHEN m.stale THEN ARRAY(SELECT s.key FROM snapshot_entries s
           WHERE s.session_id = $1 AND s.epoch = e.number ORDER BY s.key) END AS keys,
         CASE WHEN m.stale THEN ARRAY(SELECT s.entry FROM snapshot_entries s
           WHERE s.session_id = $1 AND s.epoch = e.number ORDER BY s.key) END AS entries${
             withSeq ? ",\n         (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = $1) AS next_seq" : ""
           }
       FROM (SELECT 1) AS one
       LEFT JOIN LATERAL (SELECT * FROM epochs WHERE session_id = $1 ORDER BY number DESC LIMIT 1) AS e ON true
       LEFT JOIN LATERAL (SELECT e.number IS DISTINCT FROM $2::integer OR e.snapshot_version IS DISTINCT FROM $3::integer AS stale) AS m ON true`,
      [id, held?.state.number ?? null, held?.state.snapshot_version ?? null],
    );
    const row = result.rows[0] as EpochRow;
    const nextSeq = row.next_seq ?? 0;
    if (row.number === null || row.snapshot_version === null) return { epoch: undefined, state: undefined, nextSeq };
    const state = { number: row.number, snapshot_version: row.snapshot_version };
    if (!row.stale && held !== undefined) return { epoch: held.record, state, nextSeq };
    const record: EpochRecord = {
      number: row.number,
      baseline: row.baseline as string,
      snapshot: this.#snapshotOf(id, row),
      startedSeq: row.started_seq as number,
      reason: row.reason as EpochReason,
      systemPrompt: systemPromptFrom(
        { sessionId: id, number: row.number, snapshotVersion: row.snapshot_version },
        row.system_prompt,
      ),
    };
    this.#epochs.set(id, { state, record });
    return { epoch: record, state, nextSeq };
  }

  /** An epoch's snapshot, put together from its entries and checked as a whole. */
  #snapshotOf(id: string, row: EpochRow): Snapshot {
    const epoch = { sessionId: id, number: row.number as number, snapshotVersion: row.snapshot_version ?? 0 };
    const keys = row.keys ?? [];
    const entries = row.entries ?? [];
    if (keys.length !== entries.length)
      throw new SessionCorrupt({ sessionId: id, reason: `the Context Snapshot of epoch ${epoch.number} was read apart` });
    return snapshotFromEntries(
      epoch,
      keys.map((key, i) => [key, entries[i] as string] as const),
    );
  }

  /** Advances the revision from `expected` (locking the session's row, and setting `set` with its `params` from $3 on); `RevisionConflict` if another runtime moved it. */
  async #claim(query: Query, id: string, expected: number, set: string, params: readonly unknown[] = []) {
    const result = await query(`UPDATE sessions SET revision = revision + 1${set} WHERE id = $1 AND revision = $2`, [
      id,
      expected,
      ...params,
    ]);
    if (result.rowCount === 0) {
      await this.#sessionRow(id, query);
      throw new RevisionConflict({ sessionId: id, expected });
    }
  }

  async #next(query: Query, id: string): Promise<{ seq: number; epoch: number }> {
    const result = await query(
      `SELECT (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = $1) AS seq,
              (SELECT COALESCE(MAX(number), 0) FROM epochs WHERE session_id = $1) AS epoch`,
      [id],
    );
    return result.rows[0] as { seq: number; epoch: number };
  }

  async #insertMessage(
    query: Query,
    id: string,
    seq: number,
    role: MessageRole,
    text: string,
    epoch: number,
    data?: object,
    reply?: { usage?: TokenUsage | undefined; providerContent?: ProviderContent | undefined },
  ): Promise<StoredMessage> {
    const row = messageRow(seq, role, text, epoch, data, reply);
    await query(
      "INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      [id, seq, role, text, epoch, row.data, row.usage, row.provider_content],
    );
    // Exactly what reading the row back gives.
    return messageFromRow(id, row);
  }

  async commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    try {
      const { committed, held } = await this.#transaction(`committing a boundary of session ${id}`, async (query) => {
        await this.#claim(
          query,
          id,
          revision,
          `, awaiting_reply = true, lease_holder = $3, lease_expires = $4${commit.settlesEpochDue ? ", epoch_due = NULL" : ""}`,
          [commit.lease?.holder ?? null, commit.lease?.expiresAt ?? null],
        );
        // The epoch as it stands (its rows read only if this store does not hold it as it is).
        const current = await this.#activeEpoch(id, query, true);
        let { epoch: active, state } = current;
        let seq = current.nextSeq;
        const appended: StoredMessage[] = [];
        if (commit.newEpoch !== undefined) {
          const { baseline, snapshot, reason, systemPrompt } = commit.newEpoch;
          const number = (active?.number ?? 0) + 1;
          const { keys, entries } = entryWrites(snapshot, undefined);
          // The epoch and all its entries in one statement.
          await query(
            `WITH epoch AS (
               INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt) VALUES ($1, $2, $3, $4, $5, $6)
             )
             INSERT INTO snapshot_entries (session_id, epoch, key, entry)
               SELECT $1, $2, u.key, u.entry FROM unnest($7::text[], $8::text[]) AS u(key, entry)`,
            [id, number, baseline, seq, reason, JSON.stringify(systemPrompt), keys, entries],
          );
          active = { number, baseline, snapshot, startedSeq: seq, reason, systemPrompt };
          state = { number, snapshot_version: 0 };
        }
        if (active === undefined || state === undefined)
          throw new SessionCorrupt({ sessionId: id, reason: "no Context Epoch after a boundary" });
        for (const prompt of commit.promote) {
          const promoted = await query(
            "UPDATE pending_prompts SET promoted_seq = $1 WHERE id = $2 AND session_id = $3 AND promoted_seq IS NULL",
            [seq, prompt.id, id],
          );
          if (promoted.rowCount !== 1) throw new RevisionConflict({ sessionId: id, expected: revision });
          appended.push(await this.#insertMessage(query, id, seq++, "user", prompt.text, active.number));
        }
        if (commit.systemUpdate !== undefined) {
          appended.push(await this.#insertMessage(query, id, seq++, "system-update", commit.systemUpdate.text, active.number));
          const { keys, entries, removed } = entryWrites(
            commit.systemUpdate.snapshot,
            active.snapshot,
            commit.systemUpdate.change,
          );
          // The changed entries upserted, the gone ones deleted and the version advanced, in one statement.
          await query(
            `WITH upserted AS (
               INSERT INTO snapshot_entries (session_id, epoch, key, entry)
                 SELECT $1, $2, u.key, u.entry FROM unnest($3::text[], $4::text[]) AS u(key, entry)
               ON CONFLICT (session_id, epoch, key) DO UPDATE SET entry = EXCLUDED.entry
             ), removed AS (
               DELETE FROM snapshot_entries WHERE session_id = $1 AND epoch = $2 AND key = ANY($5::text[])
             )
             UPDATE epochs SET snapshot_version = snapshot_version + 1 WHERE session_id = $1 AND number = $2`,
            [id, active.number, keys, entries, removed],
          );
          active = { ...active, snapshot: commit.systemUpdate.snapshot };
          state = { number: state.number, snapshot_version: state.snapshot_version + 1 };
        }
        return { committed: { revision: revision + 1, epoch: active, appended }, held: { state, record: active } };
      });
      // Held only once committed: a rolled-back epoch must never be taken for the stored one.
      this.#epochs.set(id, held);
      return committed;
    } catch (error) {
      // Whatever was held may be what a failed commit was built on; read it again.
      this.#epochs.delete(id);
      throw error;
    }
  }

  async commitReply(
    id: string,
    revision: number,
    reply: ProviderReply,
    toolResults: ReadonlyArray<{ callId: string; name: string; result: string }>,
  ): Promise<ReplyCommitted> {
    return this.#transaction(`committing a reply of session ${id}`, async (query) => {
      await this.#claim(query, id, revision, ", awaiting_reply = false, lease_holder = NULL, lease_expires = NULL");
      let { seq, epoch } = await this.#next(query, id);
      const toolCalls = reply.toolCalls !== undefined && reply.toolCalls.length > 0 ? reply.toolCalls : undefined;
      const appended = [
        await this.#insertMessage(
          query,
          id,
          seq++,
          "assistant",
          reply.text,
          epoch,
          toolCalls === undefined ? undefined : { toolCalls },
          {
            usage: reply.usage,
            providerContent: reply.providerContent,
          },
        ),
      ];
      for (const result of toolResults) {
        appended.push(
          await this.#insertMessage(query, id, seq++, "tool", result.result, epoch, { callId: result.callId, name: result.name }),
        );
      }
      return { appended };
    });
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
    await this.#transaction(`committing a summary of session ${id}`, async (query) => {
      await this.#claim(query, id, revision, ", epoch_due = 'compaction'");
      const { seq, epoch } = await this.#next(query, id);
      await this.#insertMessage(query, id, seq, "summary", text, epoch);
    });
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
