// Owns the rule both stores migrate by: a schema is moved up one released migration at a
// time from the version it is at, and a schema newer than this code is refused, not touched.

import { StoreSchemaNewer } from "../errors.ts";

/**
 * The migrations to run on a schema at `version`, each with the version it moves the schema
 * to; `StoreSchemaNewer` naming `where` when the schema is newer than `migrations`.
 */
export function migrationsAfter(
  where: string,
  version: number,
  migrations: readonly string[],
): ReadonlyArray<{ readonly sql: string; readonly version: number }> {
  if (version > migrations.length) throw new StoreSchemaNewer({ file: where, version, supported: migrations.length });
  return migrations.slice(version).map((sql, i) => ({ sql, version: version + i + 1 }));
}
