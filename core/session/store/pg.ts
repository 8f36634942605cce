// Owns the PostgreSQL client (`pg`, an optional peer dependency: decision 151): loading it,
// only when a PostgreSQL store opens, so a host that never opens one neither needs nor loads
// it; and running the store's statements on its pool, each failure named.

import type pg from "pg";
import { ContextHostError } from "../../base/errors.ts";
import { PostgresClientMissing, postgresClientPackage, StoreUnavailable } from "../errors.ts";

/** The part of `pg` the stores use. */
export type PgModule = typeof pg;

let loading: Promise<PgModule> | undefined;

/** Loads `pg` once per process; rejects with `PostgresClientMissing` naming `opening` when it is not installed. */
export function loadPg(opening: string): Promise<PgModule> {
  loading ??= (async () => {
    // Named through a constant: a program bundled with this module resolves the optional
    // peer at run time, never at bundling.
    const module = (await import(postgresClientPackage)) as { default?: PgModule } & PgModule;
    return module.default ?? module;
  })();
  return loading.catch((error: unknown) => {
    loading = undefined;
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND")
      throw new PostgresClientMissing({ opening, cause: error });
    throw error;
  });
}

/** One statement inside a transaction. */
export type Query = (sql: string, values?: readonly unknown[]) => Promise<pg.QueryResult>;

/** A store's pool: every failure of a statement is a `StoreUnavailable` naming the database and what was being done. */
export class StorePool {
  constructor(
    readonly pool: pg.Pool,
    /** Where the sessions are, as errors name it: host, port, database and schema (never the password). */
    readonly database: string,
  ) {}

  /**
   * Runs one statement. A `name` makes it a prepared statement (parsed and planned once per
   * connection): the few statements of every step are (decision 171).
   */
  async query(doing: string, sql: string, values?: readonly unknown[], name?: string): Promise<pg.QueryResult> {
    try {
      if (name !== undefined) return await this.pool.query({ name, text: sql, values: values as unknown[] });
      return await this.pool.query(sql, values as unknown[]);
    } catch (error) {
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    }
  }

  /** Runs `work` in one transaction; a named error from `work` rolls back and is rethrown as it is. */
  async transaction<T>(doing: string, work: (query: Query) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    }
    let isBroken = false;
    try {
      await client.query("BEGIN");
      const result = await work((sql, values) => client.query(sql, values as unknown[]));
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        isBroken = true;
      });
      if (error instanceof ContextHostError) throw error;
      throw new StoreUnavailable({ database: this.database, doing, cause: error });
    } finally {
      client.release(isBroken);
    }
  }
}
