// Bench `boundary`: one Safe Provider-Turn Boundary of a session with BENCH_SIZE core
// Context Sources [100], BENCH_CHANGED of them [3] changed before every boundary.
//
// Metric `median-ms`: `host.step` through `createHost` on a real SQLite file, with a
// provider that answers at once and does nothing with the request: read the session, compose the sources,
// reconcile, commit the promoted prompt and the Mid-Conversation System Message with its
// snapshot advance in one transaction, build the request, and commit the reply.
// Baseline, measured interleaved in the same run: `SystemContext.reconcile` of the same
// composed sources against a snapshot held in memory, i.e. the same boundary without the
// store. The ratio is what durability costs on top of reconciling.
//
// Untimed before every run: the values change and a prompt is admitted. A fresh session
// every 50 runs keeps the history (read at every boundary) from growing without bound.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1
// makes the quick ones the defaults): BENCH_SIZE [100; 100], BENCH_CHANGED [3; 3],
// BENCH_RUNS [200; 20], BENCH_WARMUP [20; 3], BENCH_GC=0 to skip the full GC before each
// timed call [1; 0], BENCH_TMPDIR where the temp data folder goes [the OS's].

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Type from "typebox";
import { createHost, type Provider } from "../../core/index.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, timeMedians } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const size = envInt("BENCH_SIZE", 100);
const changed = Math.min(envInt("BENCH_CHANGED", 3), size);
const runs = envInt("BENCH_RUNS", isQuick ? 20 : 200);
const warmup = envInt("BENCH_WARMUP", isQuick ? 3 : 20);
const collect = envInt("BENCH_GC", isQuick ? 0 : 1) !== 0;
const runsPerSession = 50;
if (size < 1 || changed < 1) throw new RangeError("BENCH_SIZE and BENCH_CHANGED must be at least 1");

interface Item {
  id: string;
  count: number;
  tags: string[];
  flag: boolean;
}

const ids = Array.from({ length: size }, (_, i) => String(i).padStart(4, "0"));
const values: Item[] = ids.map((id, i) => ({ id, count: i, tags: ["bench", `group-${i % 7}`], flag: i % 2 === 0 }));
const describe = (item: Item) => `${item.id}: count ${item.count}, tags ${item.tags.join(", ")}${item.flag ? ", flagged" : ""}`;

const contexts = ids.map((id, i) =>
  SystemContext.make({
    key: `bench/s${id}`,
    schema: Type.Object({ id: Type.String(), count: Type.Integer(), tags: Type.Array(Type.String()), flag: Type.Boolean() }),
    load: () => values[i] as Item,
    baseline: (current) => `Item ${describe(current)}.`,
    update: (_previous, current) => `Item ${describe(current)} now.`,
    removed: (previous) => `Item ${previous.id} no longer applies.`,
  }),
);
const core: CoreSource[] = contexts.map((context, i) => ({ key: `bench/source${ids[i]}`, load: () => context }));
const composed = SystemContext.combine(contexts);

/** Changes `changed` values spread over the sources, a different set on every run. */
function change(run: number): void {
  const stride = Math.max(1, Math.floor(size / changed));
  for (let j = 0; j < changed; j++) {
    const i = (j * stride + run) % size;
    const item = values[i] as Item;
    values[i] = { ...item, count: item.count + 1, flag: !item.flag };
  }
}

const dataDir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-boundary-"));
const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
process.once("SIGTERM", () => {
  cleanUp();
  process.exit(143);
});

try {
  // Answers at once and does nothing with the request (a scripted provider's recording copy is not the store's cost).
  const provider: Provider = { send: async () => ({ text: "ok" }) };
  const host = await createHost({ dataDir, providers: { scripted: provider }, core, builtins: false, plugins: [], watch: false });
  let id = "";
  let snapshot = (await SystemContext.initialize(composed)).snapshot;

  const [stepMs, reconcileMs] = await timeMedians(
    [
      async () => {
        const result = await host.step(id);
        if (result.kind !== "replied") throw new Error(`step returned "${result.kind}", expected "replied"`);
      },
      async () => {
        const result = await SystemContext.reconcile(composed, snapshot);
        if (result.kind !== "updated") throw new Error(`reconcile returned "${result.kind}", expected "updated"`);
        snapshot = result.snapshot;
      },
    ],
    {
      runs,
      warmup,
      collect,
      setup: async (run) => {
        if (run % runsPerSession === 0) {
          // A fresh session: its first boundary (the Baseline) is not measured.
          id = await host.createSession({ location: dataDir, provider: "scripted", model: "bench" });
          await host.prompt(id, "start");
          await host.step(id);
        }
        change(run);
        await host.prompt(id, `prompt ${run}`);
      },
    },
  );
  await host.close();
  emit({ bench: "boundary", metric: "median-ms", value: stepMs as number, unit: "ms", baseline: reconcileMs as number });
} finally {
  cleanUp();
}
