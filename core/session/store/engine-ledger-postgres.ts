// Owns the context engine's ledger on PostgreSQL (decision 102), for engines of many
// processes on many machines serving one set of sessions: the same records and the same
// revision-guarded commit as the SQLite ledger, one transaction per boundary, the row
// locked for it (`SELECT … FOR UPDATE`), so two engines admit a change once.

import type pg from "pg";
import { SettingInvalid } from "../../base/errors.ts";
import { RevisionConflict, SessionCorrupt } from "../errors.ts";
import {
  type AdmittedUpdate,
  type EngineLedger,
  type LedgerCommit,
  type LedgerRecord,
  ledgerRecord,
  nextLedgerRow,
} from "./engine-ledger.ts";
import { loadPg } from "./pg.ts";
import { StoreUnavailable } from "./postgres.ts";
import type { EpochReason } from "./store.ts";

/** Options of `PostgresEngineLedger.open`. */
export interface PostgresEngineLedgerOptions {
  /** A `postgres://` URL; default the `DATABASE_URL` environment variable. */
  readonly connectionString?: string;
  /** The schema its tables live in (created when missing); default `context_host`. */
  readonly schema?: string;
  /** Connections in the pool; default 4. */
  readonly poolSize?: number;
}

interface Row {
  id: string;
  revision: number;
  provider: string;
  model: string;
  location: string;
  epoch: number;
  reason: EpochReason;
  baseline: string;
  snapshot: unknown;
  seen_count: number;
  seen_digest: string;
}

/** The engine's ledger in PostgreSQL. */
export class PostgresEngineLedger implements EngineLedger {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  readonly #database: string;

  private constructor(pool: pg.Pool, schema: string, database: string) {
    this.#pool = pool;
    this.#schema = schema;
    this.#database = database;
  }

  /** Connects and creates the ledger's tables when missing. */
  static async open(options: PostgresEngineLedgerOptions = {}): Promise<PostgresEngineLedger> {
    const connectionString = options.connectionString ?? process.env.DATABASE_URL;
    if (connectionString === undefined || !/^postgres(ql)?:\/\//.test(connectionString)) {
      throw new SettingInvalid({
        setting: "connectionString",
        reason: `must be a postgres:// URL (or set DATABASE_URL), got ${JSON.stringify(connectionString)}`,
      });
    }
    const schema = options.schema ?? "context_host";
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) {
      throw new SettingInvalid({
        setting: "schema",
        reason: `must be a lower-case SQL identifier, got ${JSON.stringify(schema)}`,
      });
    }
    const poolSize = options.poolSize ?? 4;
    if (!Number.isInteger(poolSize) || poolSize < 1) {
      throw new SettingInvalid({ setting: "poolSize", reason: `must be a positive integer, got ${poolSize}` });
    }
    const { Pool } = await loadPg("PostgresEngineLedger.open");
    const pool = new Pool({ connectionString, max: poolSize });
    const database = new URL(connectionString).pathname.slice(1) || "postgres";
    const ledger = new PostgresEngineLedger(pool, schema, database);
    try {
      await ledger.#run("create the engine's tables", async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`context-host engine ledger ${schema}`]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.engine_sessions (
          id TEXT PRIMARY KEY,
          revision INTEGER NOT NULL,
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          location TEXT NOT NULL,
          epoch INTEGER NOT NULL,
          reason TEXT NOT NULL CHECK (reason IN ('initial', 'compaction', 'switch', 'move', 'replacement')),
          baseline TEXT NOT NULL,
          snapshot JSONB NOT NULL,
          seen_count INTEGER NOT NULL,
          seen_digest TEXT NOT NULL)`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.engine_updates (
          session_id TEXT NOT NULL REFERENCES ${schema}.engine_sessions(id) ON DELETE CASCADE,
          epoch INTEGER NOT NULL,
          ordinal INTEGER NOT NULL,
          position INTEGER NOT NULL,
          text TEXT NOT NULL,
          PRIMARY KEY (session_id, epoch, ordinal))`);
      });
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
    return ledger;
  }

  async read(id: string): Promise<LedgerRecord | undefined> {
    return this.#run("read a session", async (client) => {
      const { rows } = await client.query<Row>(`SELECT * FROM ${this.#schema}.engine_sessions WHERE id = $1`, [id]);
      const row = rows[0];
      return row === undefined ? undefined : this.#record(row, await this.#updates(client, id, row.epoch));
    });
  }

  async commit(id: string, revision: number | undefined, commit: LedgerCommit): Promise<LedgerRecord> {
    return this.#run("commit a boundary", async (client) => {
      const { rows } = await client.query<Row>(`SELECT * FROM ${this.#schema}.engine_sessions WHERE id = $1 FOR UPDATE`, [id]);
      const current = rows[0];
      const head = nextLedgerRow(id, current, revision, commit);
      const { epoch } = head;
      const snapshot = commit.newEpoch?.snapshot ?? commit.update?.snapshot ?? (current as Row).snapshot;
      const next: Row = { ...head, snapshot };
      await client.query(
        `INSERT INTO ${this.#schema}.engine_sessions
           (id, revision, provider, model, location, epoch, reason, baseline, snapshot, seen_count, seen_digest)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (id) DO UPDATE SET revision = $2, provider = $3, model = $4, location = $5, epoch = $6,
           reason = $7, baseline = $8, snapshot = $9, seen_count = $10, seen_digest = $11`,
        [
          id,
          next.revision,
          next.provider,
          next.model,
          next.location,
          next.epoch,
          next.reason,
          next.baseline,
          JSON.stringify(snapshot),
          next.seen_count,
          next.seen_digest,
        ],
      );
      const updates = commit.newEpoch === undefined ? await this.#updates(client, id, epoch) : [];
      if (commit.update !== undefined) {
        await client.query(
          `INSERT INTO ${this.#schema}.engine_updates (session_id, epoch, ordinal, position, text) VALUES ($1, $2, $3, $4, $5)`,
          [id, epoch, updates.length, commit.update.position, commit.update.text],
        );
        updates.push({ position: commit.update.position, text: commit.update.text });
      }
      return this.#record(next, updates);
    });
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async #updates(client: pg.PoolClient, id: string, epoch: number): Promise<AdmittedUpdate[]> {
    const { rows } = await client.query<AdmittedUpdate>(
      `SELECT position, text FROM ${this.#schema}.engine_updates WHERE session_id = $1 AND epoch = $2 ORDER BY ordinal`,
      [id, epoch],
    );
    return rows.map((row) => ({ position: row.position, text: row.text }));
  }

  /** Runs `work` in one transaction; the ledger's own errors pass through, the database's name what was being done. */
  async #run<T>(doing: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (cause) {
      throw new StoreUnavailable({ database: this.#database, doing, cause });
    }
    try {
      await client.query("BEGIN");
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      if (error instanceof RevisionConflict || error instanceof SessionCorrupt) throw error;
      throw new StoreUnavailable({ database: this.#database, doing, cause: error });
    } finally {
      client.release();
    }
  }

  #record(row: Row, updates: readonly AdmittedUpdate[]): LedgerRecord {
    const json = () => (typeof row.snapshot === "string" ? JSON.parse(row.snapshot) : row.snapshot);
    return ledgerRecord(row, json, updates, `database ${this.#database}`);
  }
}
