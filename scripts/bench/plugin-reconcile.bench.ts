// Bench `plugin-reconcile`, metric `compose-reconcile-ms`: one boundary over BENCH_SIZE
// [1000] plugin Context Sources (10 plugins of BENCH_SIZE/10 sources, loaded from a real
// plugin folder by the plugin set), 1 % of them changed before every boundary: compose
// the registry for the boundary's env and reconcile against the snapshot. Baseline,
// measured interleaved in the same run: canonical JSON of the same 1,000 values — the
// least any comparison of them must cost. The ratio is what the plugin path adds. Every
// timed call follows a full collection (`timeMedians`' default); a second line,
// `compose-reconcile-ms-unforced`, times the same boundaries without them (decision 187).
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1):
// BENCH_SIZE [1000; 1000], BENCH_RUNS [100; 10], BENCH_WARMUP [10; 2], BENCH_ISOLATION
// [the plugin set's default], BENCH_TMPDIR.

import { writeFileSync } from "node:fs";
import path from "node:path";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import { canonicalJson, initialize, type Json, reconcile } from "../../core/system-context/index.ts";
import { emit, envInt, timeMedians } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";

const bench = "plugin-reconcile";
const isQuick = process.env.BENCH_QUICK === "1";
const size = envInt("BENCH_SIZE", 1000);
const runs = envInt("BENCH_RUNS", isQuick ? 10 : 100);
const warmup = envInt("BENCH_WARMUP", isQuick ? 2 : 10);
const isolation = (() => {
  const given = process.env.BENCH_ISOLATION;
  if (given === undefined || given === "") return undefined;
  if (given !== "worker" && given !== "none") throw new RangeError(`BENCH_ISOLATION must be "worker" or "none", not ${given}`);
  return given;
})();
const plugins = 10;
const perPlugin = Math.max(1, Math.floor(size / plugins));

/** The value of source `g` at boundary `run`: it changes exactly when run ≡ g (mod 100), so 1 % per boundary. */
function valueAt(g: number, run: number) {
  return { id: `s${g}`, count: Math.floor((run + 100 - (g % 100)) / 100), tags: ["bench", `group-${g % 7}`], flag: g % 2 === 0 };
}

function pluginCode(p: number): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";

const valueAt = ${valueAt.toString()};
const schema = Type.Object({ id: Type.String(), count: Type.Integer(), tags: Type.Array(Type.String()), flag: Type.Boolean() });

export default definePlugin({
  name: "bench${p}",
  setup(api) {
    const clock = api.services.clock;
    for (let i = 0; i < ${perPlugin}; i++) {
      const g = ${p * perPlugin} + i;
      api.source({
        key: "bench${p}/s" + String(i).padStart(4, "0"),
        schema,
        load: () => valueAt(g, clock.now()),
        baseline: (v) => "Item " + v.id + ": count " + v.count + ", tags " + v.tags.join(", ") + (v.flag ? ", flagged" : "") + ".",
        update: (_p, v) => "Item " + v.id + ": count " + v.count + " now.",
        removed: (p) => "Item " + p.id + " no longer applies.",
      });
    }
  },
});
`;
}

await runBenchProcess(bench, async () => {
  const folder = benchFolder(bench);
  try {
    for (let p = 0; p < plugins; p++) writeFileSync(path.join(folder.path, `bench${p}.ts`), pluginCode(p));
    let run = 0;
    const scope = new Scope(bench);
    const { registry } = await startContextSources(
      {
        cwd: folder.path,
        plugins: [folder.path],
        builtins: false,
        watch: false,
        logger: silentLogger,
        clock: { now: () => run },
        ...(isolation === undefined ? {} : { isolation }),
      },
      scope,
    );
    const count = plugins * perPlugin;
    if (registry.state.registrations.length !== count)
      throw new Error(`expected ${count} sources, have ${registry.state.registrations.length}`);
    const env = { location: folder.path, sessionId: "bench" };
    let snapshot = (await initialize(await registry.compose(env))).snapshot;
    let values: unknown[] = [];
    const measure = (collect: boolean, first: number) =>
      timeMedians(
        [
          async () => {
            const result = await reconcile(await registry.compose(env), snapshot);
            if (result.kind !== "updated") throw new Error(`reconcile returned "${result.kind}", expected "updated"`);
            snapshot = result.snapshot;
          },
          () => canonicalJson(values as Json),
        ],
        {
          runs,
          warmup,
          collect,
          setup: (index) => {
            run = first + index + 1;
            values = Array.from({ length: count }, (_, g) => valueAt(g, run));
          },
        },
      );
    const [boundaryMs, jsonMs] = await measure(true, 0);
    // The same boundaries as they come, without a full collection forced before each: what
    // a collection's concurrent sweeping costs a boundary that starts right after it (10
    // worker threads and V8's helper threads on this machine's cores) shows as the difference.
    const [unforcedMs, unforcedJsonMs] = await measure(false, warmup + runs);
    await scope.close();
    emit({ bench, metric: "compose-reconcile-ms", value: boundaryMs as number, unit: "ms", baseline: jsonMs as number });
    emit({
      bench,
      metric: "compose-reconcile-ms-unforced",
      value: unforcedMs as number,
      unit: "ms",
      baseline: unforcedJsonMs as number,
    });
  } finally {
    folder.remove();
  }
});
