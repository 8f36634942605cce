// Bench `many-plugins`: what an organisation with a big plugin folder sees (issue 31). A
// host runs, watching an empty plugin folder; BENCH_PLUGINS [200; 20] plugin files are
// dropped into it at once (as a `git pull` or an unpacked archive would), and the host
// takes them in as it runs: discovery by the watcher, bundling, a worker per plugin up to
// the default bound and shared workers beyond it (decision 185), evaluation, setup, the swap.
//
//   `all-active-ms`  value: from the first file written until every plugin is active (its
//                    sources registered), ms; baseline: the floor, as many empty worker
//                    threads started at once in a fresh process (cold-start's floor).
//                    Goal: every plugin active within 10 s on the project's machine.
//   `rss-mb`         value: the host process's RSS (its workers are part of it) once every
//                    plugin is active and has served one boundary, MiB; baseline: the same
//                    host with the folder empty. Goal: under 1.5 GiB.
//
// Each run is a fresh child process (this file with `child`); figures are medians over
// BENCH_RUNS [3; 1] runs. BENCH_TMPDIR: where the temp folder goes.

import { writeFileSync } from "node:fs";
import path from "node:path";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, median } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { emptyWorkersMs, runJsonChild } from "./start-up-children.ts";

const bench = "many-plugins";
const selfFile = import.meta.filename;
const isQuick = process.env.BENCH_QUICK === "1";
const pluginCount = envInt("BENCH_PLUGINS", isQuick ? 20 : 200);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 3);
const MiB = 1024 * 1024;

function pluginCode(index: number): string {
  const name = `org${String(index).padStart(3, "0")}`;
  return `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "${name}",
  setup(api) {
    api.source({
      key: "${name}/status",
      schema: Type.Object({ index: Type.Integer(), team: Type.String() }),
      load: () => ({ index: ${index}, team: "team-${index % 17}" }),
      baseline: (v) => "Service " + v.index + " belongs to " + v.team + ".",
      update: (_previous, v) => "Service " + v.index + " now belongs to " + v.team + ".",
    });
  },
});
`;
}

interface ChildResult {
  readonly ms: number;
  readonly rss: number;
  readonly emptyRss: number;
}

async function child(folder: string, count: number): Promise<void> {
  const scope = new Scope(bench);
  const sources = await startContextSources(
    { cwd: folder, plugins: [folder], builtins: false, watch: true, logger: silentLogger },
    scope,
  );
  const emptyRss = process.memoryUsage().rss;
  const active = () => sources.plugins.plugins().length;
  const allActive = new Promise<void>((resolve) => {
    const unsubscribe = sources.plugins.subscribe(() => {
      if (active() < count) return;
      unsubscribe();
      resolve();
    });
  });
  const start = performance.now();
  for (let i = 0; i < count; i++) writeFileSync(path.join(folder, `org${String(i).padStart(3, "0")}.ts`), pluginCode(i));
  const timeout = setTimeout(() => {
    const failures = sources.plugins.failures().map((f) => f.diagnostic.message);
    process.stderr.write(
      `[${bench}] ${active()} of ${count} plugins active after 120 s; failures: ${JSON.stringify(failures.slice(0, 5))}\n`,
    );
    process.exit(1);
  }, 120_000);
  await allActive;
  const ms = performance.now() - start;
  clearTimeout(timeout);
  const generation = await SystemContext.initialize(await sources.registry.compose({ location: folder }));
  if (Object.keys(generation.snapshot).length !== count)
    throw new Error(`${Object.keys(generation.snapshot).length} sources rendered`);
  const rss = process.memoryUsage().rss;
  process.stdout.write(`${JSON.stringify({ ms, rss, emptyRss } satisfies ChildResult)}\n`);
  await scope.close();
}

async function floorChild(count: number): Promise<void> {
  const ms = await emptyWorkersMs(count);
  process.stdout.write(`${JSON.stringify({ ms, rss: 0, emptyRss: 0 } satisfies ChildResult)}\n`);
}

function runChild(args: readonly string[]): Promise<ChildResult> {
  return runJsonChild<ChildResult>(selfFile, args);
}

const [kind, argument] = process.argv.slice(2);
if (kind === "child") await child(argument as string, pluginCount);
else if (kind === "floor") await floorChild(Number(argument));
else
  await runBenchProcess(bench, async () => {
    const ms: number[] = [];
    const floor: number[] = [];
    const rss: number[] = [];
    const emptyRss: number[] = [];
    for (let run = 0; run < runs; run++) {
      const folder = benchFolder(bench);
      try {
        const result = await runChild(["child", folder.path]);
        ms.push(result.ms);
        rss.push(result.rss);
        emptyRss.push(result.emptyRss);
      } finally {
        folder.remove();
      }
      floor.push((await runChild(["floor", String(pluginCount)])).ms);
    }
    emit({ bench, metric: "all-active-ms", value: median(ms), unit: "ms", baseline: median(floor) });
    emit({ bench, metric: "rss-mb", value: median(rss) / MiB, unit: "MiB", baseline: median(emptyRss) / MiB });
  });
