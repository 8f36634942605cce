// A bounded cache of one value per source env (location and session), for the sources whose
// `SystemContext` is built once per env and reused at every boundary (codecs, closures),
// instead of once per boundary. Least recently used first out.

import { RecentMap } from "../base/recent-map.ts";
import type { SourceEnv } from "./registry.ts";

/** How many distinct session envs a source keeps a value for by default. */
// Sized for a proxy, whose every conversation (side requests included) is a session of its own.
export const maxEnvs = 1024;

/**
 * `make(env)` once per distinct env, kept while among the `limit` most recently used; `make`
 * is given a frozen copy of the env holding only `location` and `sessionId`.
 */
export function perEnv<T>(make: (env: SourceEnv) => T, limit = maxEnvs): (env: SourceEnv) => T {
  const values = new RecentMap<string, T>(limit);
  // The env of the last call: every source of a boundary is asked for the same one.
  let last: { location: string; sessionId: string | undefined; value: T } | undefined;
  return (env) => {
    if (last !== undefined && last.location === env.location && last.sessionId === env.sessionId) return last.value;
    const id = env.sessionId === undefined ? env.location : `${env.location}\u0000${env.sessionId}`;
    let value = values.get(id);
    if (value === undefined) {
      const frozen: SourceEnv = Object.freeze(
        env.sessionId === undefined ? { location: env.location } : { location: env.location, sessionId: env.sessionId },
      );
      value = make(frozen);
      values.set(id, value);
    }
    last = { location: env.location, sessionId: env.sessionId, value };
    return value;
  };
}
