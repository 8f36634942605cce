// Bench `two-hosts` (issue 11): two host processes (`node --import tsx`) on one SQLite
// file step the same BENCH_SESSIONS [4] sessions for BENCH_DURATION_MS [5000] ms, each
// a prompt then a step, round after round in its own order; the provider answers after
// BENCH_LATENCY_MS [5] ms and asks for a tool for about a third of the boundaries. The
// baseline is the same run with the in-flight lease off (`leaseMs: 0`: every lease is
// expired as it is taken, so a process that finds a reply awaited calls the provider
// again, as before decision 030). Each of BENCH_RUNS [3] runs does both, in alternating
// order, on fresh files; lines print medians.
//
// Lines:
//   `duplicate-provider-calls`: provider calls of both processes minus the distinct
//     boundaries they were for (a call is for the boundary its request was built at:
//     requests are rebuilt byte for byte, so the key is a hash of the request, which
//     names its session; see boundary-key.ts). Goal 0.
//   `duplicate-tool-runs`: tool runs minus the distinct tool calls they ran.
//   `steps-per-s`: replies admitted (assistant messages in the database at the end) per
//     second of stepping (from GO to the later process's last step).
// BENCH_QUICK=1: 1 run of 1 s.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { runWorkers } from "./barrier.ts";
import { surplus } from "./boundary-key.ts";
import { emit, envInt, median } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const sessions = envInt("BENCH_SESSIONS", 4);
const durationMs = envInt("BENCH_DURATION_MS", isQuick ? 1000 : 5000);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 3);
const latencyMs = envInt("BENCH_LATENCY_MS", 5);
const worker = path.join(import.meta.dirname, "two-hosts-worker.ts");

interface WorkerOutput {
  calls: string[];
  toolRuns: string[];
  outcomes: Record<string, number>;
  ms: number;
}

interface RunResult {
  duplicateCalls: number;
  duplicateTools: number;
  stepsPerS: number;
}

async function once(leaseMs: number, run: number): Promise<RunResult> {
  const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-two-hosts-"));
  try {
    const file = sessionsFile(dir);
    const store = new SqliteSessionStore(file);
    const ids: string[] = [];
    for (let i = 0; i < sessions; i++) {
      const id = `two-hosts-${i}`;
      await store.createSession({ id, location: dir, provider: "bench", model: "m" });
      ids.push(id);
    }
    await store.close();
    const outputs = await runWorkers<WorkerOutput>(
      worker,
      [1, 2].map((tag) => [
        file,
        JSON.stringify(ids),
        String(durationMs),
        String(run * 10 + tag),
        String(leaseMs),
        String(latencyMs),
      ]),
    );
    const db = new Database(file, { readonly: true });
    const admitted = (db.prepare("SELECT COUNT(*) AS n FROM messages WHERE role = 'assistant'").get() as { n: number }).n;
    db.close();
    const ms = Math.max(...outputs.map((o) => o.ms));
    if (process.env.BENCH_VERBOSE === "1") {
      process.stderr.write(
        `two-hosts leaseMs=${leaseMs}: ${admitted} admitted, ${JSON.stringify(outputs.map((o) => o.outcomes))}\n`,
      );
    }
    return {
      duplicateCalls: surplus(outputs.flatMap((o) => o.calls)),
      duplicateTools: surplus(outputs.flatMap((o) => o.toolRuns)),
      stepsPerS: admitted / (ms / 1000),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const withLease: RunResult[] = [];
const withoutLease: RunResult[] = [];
for (let run = 0; run < runs; run++) {
  if (run % 2 === 0) {
    withLease.push(await once(30_000, run));
    withoutLease.push(await once(0, run));
  } else {
    withoutLease.push(await once(0, run));
    withLease.push(await once(30_000, run));
  }
}
const of = (results: RunResult[], field: keyof RunResult) => median(results.map((r) => r[field]));
emit({
  bench: "two-hosts",
  metric: "duplicate-provider-calls",
  value: of(withLease, "duplicateCalls"),
  unit: "calls",
  baseline: of(withoutLease, "duplicateCalls"),
});
emit({
  bench: "two-hosts",
  metric: "duplicate-tool-runs",
  value: of(withLease, "duplicateTools"),
  unit: "runs",
  baseline: of(withoutLease, "duplicateTools"),
});
emit({
  bench: "two-hosts",
  metric: "steps-per-s",
  value: of(withLease, "stepsPerS"),
  unit: "steps/s",
  baseline: of(withoutLease, "stepsPerS"),
});
