// Owns loading the PostgreSQL client (`pg`, an optional peer dependency: decision 151). It is
// imported only when a PostgreSQL store opens, so a host that never opens
// one neither needs nor loads it.

import type pg from "pg";
import { PostgresClientMissing, postgresClientPackage } from "../errors.ts";

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
