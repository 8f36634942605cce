// Bench of the pure core: `initialize` and `reconcile` of many small sources, each
// against the canonical JSON encoding of the same values measured in the same run.
//
// Both sides run once per run, interleaved, order reversed every other run, a full GC
// (with --expose-gc) before each call; loaders return the values already held, so both
// sides start from the same objects. The context is composed once, as a host does.
//
// Environment (defaults in brackets): BENCH_SIZE sources [1000], BENCH_CHANGED sources
// changed between boundaries [10], BENCH_RUNS measured runs [50], BENCH_WARMUP [10],
// BENCH_GC=0 to skip the full GC before each timed call [1].

import Type from "typebox";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, timeMedians } from "./measure.ts";

const size = envInt("BENCH_SIZE", 1000);
const changed = Math.min(envInt("BENCH_CHANGED", 10), size);
const runs = envInt("BENCH_RUNS", 50);
const warmup = envInt("BENCH_WARMUP", 10);
const collect = envInt("BENCH_GC", 1) !== 0;
if (size < 1 || changed < 1) throw new RangeError("BENCH_SIZE and BENCH_CHANGED must be at least 1");

interface Item {
  id: string;
  name: string;
  count: number;
  tags: string[];
  flag: boolean;
}

/** The schema a host would write for one source; built anew for every source, as real sources do. */
function itemSchema() {
  return Type.Object({
    id: Type.String(),
    name: Type.String(),
    count: Type.Integer({ minimum: 0 }),
    tags: Type.Array(Type.String()),
    flag: Type.Boolean(),
  });
}

const pad = String(size).length;
const ids = Array.from({ length: size }, (_, i) => String(i).padStart(Math.max(4, pad), "0"));
const values: Item[] = ids.map((id, i) => ({
  id,
  name: `item ${id}`,
  count: i,
  tags: ["bench", `group-${i % 7}`],
  flag: i % 2 === 0,
}));

const describe = (item: Item) =>
  `${item.name} (${item.id}): count ${item.count}, tags ${item.tags.join(", ")}${item.flag ? ", flagged" : ""}`;

const context = SystemContext.combine(
  ids.map((id, i) =>
    SystemContext.make({
      key: `bench/s${id}`,
      schema: itemSchema(),
      load: () => values[i] as Item,
      baseline: (current) => `Item ${describe(current)}.`,
      update: (previous, current) => `Item ${current.id} changed: now ${describe(current)} (count was ${previous.count}).`,
      removed: (previous) => `Item ${previous.id} no longer applies.`,
    }),
  ),
);

/** Changes `changed` values spread over the whole context, a different set on every run. */
function change(run: number): void {
  const stride = Math.floor(size / changed);
  for (let j = 0; j < changed; j++) {
    const i = (j * stride + (run % stride)) % size;
    const item = values[i] as Item;
    values[i] = { ...item, count: item.count + 1, flag: !item.flag, tags: [...item.tags] };
  }
}

let sink = 0;
/** The baseline: canonical JSON of every current value. */
function encodeAll(): void {
  for (const value of values) sink += SystemContext.canonicalJson(value as unknown as SystemContext.Json).length;
}

let snapshot = (await SystemContext.initialize(context)).snapshot;

// initialize: a fresh Baseline System Context of every source.
const [initializeMs, initializeBaselineMs] = await timeMedians(
  [
    async () => {
      const generation = await SystemContext.initialize(context);
      sink += generation.baseline.length;
    },
    encodeAll,
  ],
  { runs, warmup, collect },
);
emit({ bench: "initialize", metric: "median-ms", value: initializeMs!, unit: "ms", baseline: initializeBaselineMs! });

// reconcile: `changed` sources differ from the active snapshot at every boundary.
const [reconcileMs, reconcileBaselineMs] = await timeMedians(
  [
    async () => {
      const result = await SystemContext.reconcile(context, snapshot);
      if (result.kind !== "updated") throw new Error(`reconcile returned "${result.kind}", expected "updated"`);
      snapshot = result.snapshot;
    },
    encodeAll,
  ],
  { runs, warmup, collect, setup: change },
);
emit({ bench: "reconcile", metric: "median-ms", value: reconcileMs!, unit: "ms", baseline: reconcileBaselineMs! });

if (sink === 0) throw new Error("nothing was measured");
