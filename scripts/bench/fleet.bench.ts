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
// Each line is the median over BENCH_RUNS [3] rounds (duplicates: the sum); every host
// process warms up before the clock starts (fleet-worker.ts).
// Needs PostgreSQL (a throwaway server is started, as in the tests, reached through its Unix
// socket; BENCH_PG_VIA=tcp for 127.0.0.1) or DATABASE_URL.
// BENCH_VERBOSE=1 prints each run's time and where a step's CPU went (the host processes,
// the server) on stderr.
// BENCH_QUICK=1: 2 hosts, 20 sessions, 5 steps, 1 round.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import { startPostgres } from "../../test/session/postgres-server.ts";
import { runWorkers } from "./barrier.ts";
import { surplus } from "./boundary-key.ts";
import { emit, envInt, median } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const isVerbose = process.env.BENCH_VERBOSE === "1";
const hosts = envInt("BENCH_HOSTS", isQuick ? 2 : 4);
const sessions = envInt("BENCH_SESSIONS", isQuick ? 20 : 200);
const steps = envInt("BENCH_STEPS", isQuick ? 5 : 20);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 3);
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
  /** CPU time the host process used from GO to its end. */
  cpuMs: number;
}

/**
 * CPU time (ms) the bench's PostgreSQL server has used so far (BENCH_VERBOSE's split of where
 * a step's CPU goes): its postmaster (found by the port in its command line), what its ended
 * children used (a closed connection's backend) and its children running now.
 */
function postgresCpuMs(port: string): number {
  const stats = new Map<string, { ppid: string; ticks: number; command: string }>();
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      stats.set(pid, { ppid: fields[1] as string, ticks, command: readFileSync(`/proc/${pid}/cmdline`, "utf8") });
    } catch {
      // The process ended while it was read.
    }
  }
  const postmaster = [...stats].find(([, s]) => s.command.startsWith("/") && s.command.includes(`-p\0${port}`));
  if (postmaster === undefined) return Number.NaN;
  let ticks = postmaster[1].ticks;
  for (const s of stats.values()) if (s.ppid === postmaster[0]) ticks += s.ticks;
  return ticks * 10;
}

async function fleet(kind: string, where: string, ids: string[], processes: number) {
  const serverCpu = isVerbose ? postgresCpuMs(port) : 0;
  const outcomes = await runWorkers<Outcome>(
    worker,
    Array.from({ length: processes }, (_, i) => [kind, where, JSON.stringify(ids), String(steps), String(i + 1)]),
  );
  // From GO (all start together) to the last one's finish.
  const ms = Math.max(...outcomes.map((o) => o.ms));
  if (isVerbose) {
    const hostsCpu = outcomes.reduce((sum, o) => sum + o.cpuMs, 0);
    const steps = outcomes.reduce((sum, o) => sum + o.latencies.length, 0);
    process.stderr.write(
      `fleet ${kind} x${processes}: ${ms.toFixed(0)} ms, errors ${outcomes.map((o) => o.errors).join(" ")}, ` +
        `CPU per step: hosts ${(hostsCpu / steps).toFixed(3)} ms, postgres ${((postgresCpuMs(port) - serverCpu) / steps).toFixed(3)} ms\n`,
    );
  }
  const latencies = outcomes.flatMap((o) => o.latencies).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  const calls = outcomes.flatMap((o) => o.calls);
  return { ms, calls: calls.length, duplicates: surplus(calls), p50: at(0.5), p99: at(0.99) };
}

const server = await startPostgres();
if ("reason" in server) throw new Error(`fleet needs PostgreSQL: ${server.reason}`);
const port = new URL(server.url).port;
// BENCH_PG_VIA=tcp: the hosts reach the server over TCP (127.0.0.1) instead of its Unix socket.
const url = process.env.BENCH_PG_VIA === "tcp" ? server.url : (server.socketUrl ?? server.url);
const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-fleet-"));
try {
  // Rounds (BENCH_RUNS [3]), each the SQLite process and then the fleet at 1, 2, ... hosts on
  // fresh sessions (a file, a schema of their own): a shared machine's load moves every figure,
  // so each line is a median over the rounds.
  const counts = [...new Set([1, 2, hosts].filter((n) => n <= hosts))];
  const rates = new Map<string, number[]>();
  const record = (key: string, value: number) => rates.set(key, [...(rates.get(key) ?? []), value]);
  let duplicates = 0;
  let boundaries = 0;
  for (let round = 0; round < runs; round++) {
    const file = sessionsFile(path.join(dir, String(round)));
    const sqliteIds = await seed(new SqliteSessionStore(file));
    const single = await fleet("sqlite", file, sqliteIds, 1);
    record("sqlite", (await admittedIn(new SqliteSessionStore(file), sqliteIds)) / (single.ms / 1000));
    record("sqlite-p50", single.p50);
    record("sqlite-p99", single.p99);
    for (const count of counts) {
      const schema = `fleet_${round}_${count}`;
      const openPostgres = () => PostgresSessionStore.open({ connectionString: url, schema });
      const pgIds = await seed(await openPostgres());
      const many = await fleet("postgres", `${url}#${schema}`, pgIds, count);
      record(String(count), (await admittedIn(await openPostgres(), pgIds)) / (many.ms / 1000));
      if (count === hosts) {
        record("p50", many.p50);
        record("p99", many.p99);
        duplicates += many.duplicates;
        boundaries += many.calls - many.duplicates;
      }
    }
  }
  const of = (key: string) => median(rates.get(key) ?? []);
  for (const count of counts.filter((n) => n !== hosts)) {
    emit({
      bench: "fleet",
      metric: `steps-per-s-${count}-hosts`,
      value: of(String(count)),
      unit: "steps/s",
      baseline: of("sqlite"),
    });
  }
  emit({ bench: "fleet", metric: "steps-per-s", value: of(String(hosts)), unit: "steps/s", baseline: of("sqlite") });
  emit({ bench: "fleet", metric: "duplicate-provider-calls", value: duplicates, unit: "calls", baseline: boundaries });
  emit({ bench: "fleet", metric: "step-p50-ms", value: of("p50"), unit: "ms", baseline: of("sqlite-p50") });
  emit({ bench: "fleet", metric: "step-p99-ms", value: of("p99"), unit: "ms", baseline: of("sqlite-p99") });
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
