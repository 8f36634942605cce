// Bench `session-length`: what one updating `host.step` costs as a session grows. Two
// sessions on one host (real SQLite file), one with BENCH_SHORT [100] messages of history
// and one with BENCH_LONG [5000]; a provider that does nothing with the request; one core
// Context Source changed and one prompt admitted before every step, so each step promotes
// input and admits a Mid-Conversation System Message.
//
// Metric `step-ms-5000`: median step of the long session; baseline the short session's,
// measured interleaved in the same run (goal: ratio <= 1.5, a step does not grow with
// the session's length beyond building the request).
// Metric `step-vs-json-5000`: the same long step against `JSON.stringify` of its request,
// the least any host must spend on a request of that size (goal: ratio <= 1.5).
//
// The histories are written straight into the SQLite file in one transaction (the rows a
// session of that length would have), so the bench runs in seconds.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1
// makes the quick ones the defaults): BENCH_SHORT [100; 100], BENCH_LONG [5000; 5000],
// BENCH_RUNS [40; 10], BENCH_WARMUP [5; 2], BENCH_GC=0 to skip the full GC before each
// timed call [1; 0], BENCH_TMPDIR where the temp data folder goes [the OS's].

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import Type from "typebox";
import { createHost, type Provider, type ProviderRequest } from "../../core/index.ts";
import { sessionsFile } from "../../core/session/store/sqlite.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, seededRandom, timeMedians } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const short = envInt("BENCH_SHORT", 100);
const long = envInt("BENCH_LONG", 5000);
const runs = envInt("BENCH_RUNS", isQuick ? 10 : 40);
const warmup = envInt("BENCH_WARMUP", isQuick ? 2 : 5);
const collect = envInt("BENCH_GC", isQuick ? 0 : 1) !== 0;
if (short < 2 || long < short) throw new RangeError("need 2 <= BENCH_SHORT <= BENCH_LONG");

const rng = seededRandom(9);
const words = "the of a to in file test build fix type error module session context source update cache plugin".split(" ");
const sentence = (min: number, max: number) =>
  Array.from({ length: min + Math.floor(rng() * (max - min)) }, () => words[Math.floor(rng() * words.length)]).join(" ");

let branch = 0;
const branchSource: CoreSource = {
  key: "bench/branch",
  load: () =>
    SystemContext.make({
      key: "bench/branch",
      schema: Type.Integer(),
      load: () => branch,
      baseline: (n) => `Git branch: feature-${n}`,
      update: (_previous, n) => `The git branch is now feature-${n}.`,
    }),
};

/** Does nothing with the request but keep the last one. */
let lastRequest: ProviderRequest | undefined;
const provider: Provider = {
  send: async (request) => {
    lastRequest = request;
    return { text: "ok" };
  },
};

/** Appends `count` alternating user/assistant messages to a session's history, in one transaction. */
function writeHistory(file: string, id: string, count: number): void {
  const db = new Database(file);
  try {
    const { seq } = db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM messages WHERE session_id = ?").get(id) as {
      seq: number;
    };
    const insert = db.prepare("INSERT INTO messages (session_id, seq, role, text, epoch, data) VALUES (?, ?, ?, ?, 1, NULL)");
    db.transaction(() => {
      for (let i = 1; i <= count; i++) insert.run(id, seq + i, i % 2 === 1 ? "user" : "assistant", sentence(3, 30));
      // As a store would: the session's head (where its history ends) and its revision advance with the messages.
      db.prepare("UPDATE sessions SET last_seq = ?, revision = revision + 1 WHERE id = ?").run(seq + count, id);
    })();
  } finally {
    db.close();
  }
}

const dataDir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-session-length-"));
const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
process.once("SIGTERM", () => {
  cleanUp();
  process.exit(143);
});

try {
  const host = await createHost({
    dataDir,
    providers: { quiet: provider },
    core: [branchSource],
    builtins: false,
    plugins: [],
    watch: false,
  });
  const open = async (length: number) => {
    const id = await host.createSession({ location: dataDir, provider: "quiet", model: "bench" });
    await host.prompt(id, "start");
    await host.step(id); // the Baseline: user + assistant
    writeHistory(sessionsFile(dataDir), id, length - 2);
    return id;
  };
  const shortId = await open(short);
  const longId = await open(long);
  let longRequest: ProviderRequest | undefined;

  const step = async (id: string) => {
    const result = await host.step(id);
    if (result.kind !== "replied") throw new Error(`step returned "${result.kind}", expected "replied"`);
    return result.request;
  };
  const [shortMs, longMs, jsonMs] = await timeMedians(
    [
      () => step(shortId),
      async () => {
        longRequest = await step(longId);
      },
      () => JSON.stringify(longRequest ?? lastRequest),
    ],
    {
      runs,
      warmup,
      collect,
      setup: async () => {
        branch += 1;
        await host.prompt(shortId, sentence(3, 30));
        await host.prompt(longId, sentence(3, 30));
      },
    },
  );
  await host.close();
  emit({ bench: "session-length", metric: `step-ms-${long}`, value: longMs as number, unit: "ms", baseline: shortMs as number });
  emit({
    bench: "session-length",
    metric: `step-vs-json-${long}`,
    value: longMs as number,
    unit: "ms",
    baseline: jsonMs as number,
  });
} finally {
  cleanUp();
}
