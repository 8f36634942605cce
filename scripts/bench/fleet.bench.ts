// Bench `fleet`: BENCH_HOSTS [4] host processes on one PostgreSQL database stepping the
// same BENCH_SESSIONS [200] sessions, BENCH_STEPS [20] steps each with a source that
// changes, against one process doing the same on SQLite in the same run.
//
// Lines:
//   `steps-per-s`: replies admitted (assistant messages stored at the end) per second of
//     the fleet (first start to last finish); baseline one process on SQLite.
//   `steps-per-s-1-hosts`, `steps-per-s-2-hosts`: the same with fewer hosts, to show how it scales.
//   `duplicate-provider-calls`: provider calls the fleet made beyond the distinct
//     boundaries they were for (a boundary is keyed by its request, which is rebuilt byte
//     for byte and names its session: boundary-key.ts), goal 0; baseline the distinct
//     boundaries called for (the ratio is the wasted share).
//   `step-p50-ms`, `step-p99-ms`: per-step latency in the fleet; baseline the SQLite ones.
// Needs PostgreSQL (a throwaway server is started, as in the tests) or DATABASE_URL.
// BENCH_QUICK=1: 2 hosts, 20 sessions, 5 steps.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import { startPostgres } from "../../test/session/postgres-server.ts";
import { runWorkers } from "./barrier.ts";
import { surplus } from "./boundary-key.ts";
import { emit, envInt } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const hosts = envInt("BENCH_HOSTS", isQuick ? 2 : 4);
const sessions = envInt("BENCH_SESSIONS", isQuick ? 20 : 200);
const steps = envInt("BENCH_STEPS", isQuick ? 5 : 20);
const worker = path.join(import.meta.dirname, "fleet-worker.ts");

async function seed(store: SessionStore): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const id = `fleet-${i}`;
    await store.createSession({ id, location: "/fleet", provider: "fleet", model: "m" });
    ids.push(id);
  }
  await store.close();
  return ids;
}

/** Replies stored in the sessions: what the run admitted (two hosts may each add one past STEPS). */
async function admittedIn(store: SessionStore, ids: readonly string[]): Promise<number> {
  let replies = 0;
  for (const id of ids) replies += (await store.messages(id)).filter((m) => m.role === "assistant").length;
  await store.close();
  return replies;
}

interface Outcome {
  calls: string[];
  ms: number;
  latencies: number[];
  errors: number;
}

async function fleet(kind: string, where: string, ids: string[], processes: number) {
  const outcomes = await runWorkers<Outcome>(
    worker,
    Array.from({ length: processes }, (_, i) => [kind, where, JSON.stringify(ids), String(steps), String(i + 1)]),
  );
  // From GO (all start together) to the last one's finish.
  const ms = Math.max(...outcomes.map((o) => o.ms));
  if (process.env.BENCH_VERBOSE === "1") {
    process.stderr.write(`fleet ${kind} x${processes}: ${ms.toFixed(0)} ms, errors ${outcomes.map((o) => o.errors).join(" ")}\n`);
  }
  const latencies = outcomes.flatMap((o) => o.latencies).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  const calls = outcomes.flatMap((o) => o.calls);
  return { ms, calls: calls.length, duplicates: surplus(calls), p50: at(0.5), p99: at(0.99) };
}

const server = await startPostgres();
if ("reason" in server) throw new Error(`fleet needs PostgreSQL: ${server.reason}`);
const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-fleet-"));
try {
  const file = sessionsFile(dir);
  const sqliteIds = await seed(new SqliteSessionStore(file));
  const single = await fleet("sqlite", file, sqliteIds, 1);
  const singleAdmitted = await admittedIn(new SqliteSessionStore(file), sqliteIds);
  const sqliteRate = singleAdmitted / (single.ms / 1000);
  // The fleet at 1, 2, ... hosts, each on a schema of its own, to show how it scales.
  const counts = [...new Set([1, 2, hosts].filter((n) => n <= hosts))];
  let many: Awaited<ReturnType<typeof fleet>> | undefined;
  let manyAdmitted = 0;
  for (const count of counts) {
    const openPostgres = () => PostgresSessionStore.open({ connectionString: server.url, schema: `fleet_${count}` });
    const pgIds = await seed(await openPostgres());
    many = await fleet("postgres", `${server.url}#fleet_${count}`, pgIds, count);
    manyAdmitted = await admittedIn(await openPostgres(), pgIds);
    const rate = manyAdmitted / (many.ms / 1000);
    if (count !== hosts) {
      emit({ bench: "fleet", metric: `steps-per-s-${count}-hosts`, value: rate, unit: "steps/s", baseline: sqliteRate });
    }
  }
  if (many === undefined) throw new Error("fleet: no PostgreSQL run");
  emit({
    bench: "fleet",
    metric: "steps-per-s",
    value: manyAdmitted / (many.ms / 1000),
    unit: "steps/s",
    baseline: sqliteRate,
  });
  emit({
    bench: "fleet",
    metric: "duplicate-provider-calls",
    value: many.duplicates,
    unit: "calls",
    baseline: many.calls - many.duplicates,
  });
  emit({ bench: "fleet", metric: "step-p50-ms", value: many.p50, unit: "ms", baseline: single.p50 });
  emit({ bench: "fleet", metric: "step-p99-ms", value: many.p99, unit: "ms", baseline: single.p99 });
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
