// Bench `pg-round-trips`: the queries `pg` sends per Host step on PostgreSQL (issue 32,
// decision 171), counted, not timed. BENCH_STEPS [30] steps of BENCH_SESSIONS [10] sessions,
// a source that changes every other step (so steps alternate between an update and none).
//
// Line `queries-per-step`: the mean over the steps of two hosts taking turns on every
// session (each step finds the session moved by the other host) of the queries a prompt
// and the step after it send (the prompt's statement brings the boundary's read: decision
// 178), goal ≤ 3; baseline the
// same steps on the same store reached through the port's required methods only (no
// `readBoundary`: the session, its epoch, its pending prompts and its history read apart),
// as a store without the one-statement read would be.
// Needs PostgreSQL (a throwaway server is started, as in the tests) or DATABASE_URL.

import pg from "pg";
import Type from "typebox";
import { createHost, type Host } from "../../core/index.ts";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import * as SystemContext from "../../core/system-context.ts";
import { startPostgres } from "../../test/session/postgres-server.ts";
import { emit, envInt } from "./measure.ts";

const steps = envInt("BENCH_STEPS", process.env.BENCH_QUICK === "1" ? 6 : 30);
const sessions = envInt("BENCH_SESSIONS", process.env.BENCH_QUICK === "1" ? 3 : 10);

let sent = 0;
let counting = false;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (counting) sent += 1;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

let tick = 0;
const context = SystemContext.make({
  key: "bench/tick",
  schema: Type.Integer(),
  load: () => Math.floor(tick / 2),
  baseline: (n) => `Tick ${n}.`,
  update: (_previous, n) => `Tick ${n} now.`,
});

/** The store through the port's required methods only. */
function withoutReadBoundary(store: SessionStore): SessionStore {
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(store)).filter(
    (name) => name !== "constructor" && name !== "readBoundary" && typeof (store as never)[name] === "function",
  );
  return Object.fromEntries(
    methods.map((name) => [
      name,
      (...args: unknown[]) => (store as unknown as Record<string, (...a: unknown[]) => unknown>)[name]?.(...args),
    ]),
  ) as unknown as SessionStore;
}

async function openHost(url: string, schema: string, apart = false): Promise<Host> {
  const store = await PostgresSessionStore.open({ connectionString: url, schema, poolSize: 2 });
  return createHost({
    store: apart ? withoutReadBoundary(store) : store,
    providers: { bench: { send: async () => ({ text: "ok" }) } },
    core: [{ key: "bench/tick", load: () => context }],
    builtins: false,
    plugins: [],
    watch: false,
    onDiagnostic: false,
  });
}

/** The mean queries of a prompt and the step after it, `hosts` taking turns on every session. */
async function queriesPerStep(hosts: readonly Host[]): Promise<number> {
  const first = hosts[0] as Host;
  const ids: string[] = [];
  for (let i = 0; i < sessions; i++) ids.push(await first.createSession({ location: "/", provider: "bench", model: "m" }));
  let counted = 0;
  sent = 0;
  for (let step = 0; step < steps; step++) {
    for (const id of ids) {
      const host = hosts[step % hosts.length] as Host;
      tick += 1;
      counting = true;
      await host.prompt(id, `step ${step}`);
      const result = await host.step(id);
      counting = false;
      if (result.kind !== "replied") throw new Error(`pg-round-trips: a step ${result.kind}`);
      counted += 1;
    }
  }
  return sent / counted;
}

const server = await startPostgres();
if ("reason" in server) throw new Error(`pg-round-trips needs PostgreSQL: ${server.reason}`);
try {
  const turns = [await openHost(server.url, "trips"), await openHost(server.url, "trips")];
  const apart = [await openHost(server.url, "trips_apart", true), await openHost(server.url, "trips_apart", true)];
  const value = await queriesPerStep(turns);
  const baseline = await queriesPerStep(apart);
  for (const host of [...turns, ...apart]) await host.close();
  emit({ bench: "pg-round-trips", metric: "queries-per-step", value, unit: "queries", baseline });
} finally {
  server.stop();
}
