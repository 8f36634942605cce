// Bench `cold-start`, metric `ms`: a fresh host process with 50 generated plugins (in a
// temp folder) to its first Baseline System Context — `startContextSources` (no built-in
// sources; its `PluginSet.start`: discover, watch, bundle, evaluate, set up) +
// `registry.compose` + `SystemContext.initialize` — timed inside the child from just before
// `startContextSources`, so node's and tsx's start-up and the host's own module imports are
// not counted (they do not depend on plugins). Median over runs, each in a fresh child
// process (cold JIT). The disk caches are warm after the warm-up child, as after any first
// start: the worker program's (decision 092), its V8 code cache (decision 193) and the plugin
// bundles' (decision 191), so a measured child starts no esbuild and compiles no program.
// `CONTEXT_HOST_CACHE=off` measures a first-ever start (every program and bundle built,
// esbuild's service started in each child).
//
// Baseline, in the same run: the same host, the same steps, the same child set-up, with
// an empty plugin folder. The ratio is what the plugins cost relative to a host without
// them; value − baseline is the plugins' own time. Runs alternate between the two.
//
// A second line, metric `ms-vs-worker-floor`, compares the same value with what the
// design cannot go below: a child that only starts as many empty worker threads as there
// are plugins, all at once, and waits until each has run its first line (each plugin runs
// in a worker of its own, decision 060). On a machine with few cores that floor alone can
// exceed the goal; the ratio says how much the plugins add beyond their threads.
//
// This file is also the child: `cold-start.bench.ts child DIR` prints one JSON line.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes
// a small run for tests): BENCH_PLUGINS [50; 5], BENCH_RUNS children of each kind [5; 1],
// BENCH_WARMUP unmeasured children of each kind [1; 0], BENCH_TMPDIR where the temp folder
// goes [the OS's]. BENCH_VERBOSE=1 prints samples on stderr.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, median } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { emptyWorkersMs, runJsonChild } from "./start-up-children.ts";

const bench = "cold-start";
const selfFile = import.meta.filename;
const projectRoot = path.resolve(import.meta.dirname, "../..");
const isQuick = process.env.BENCH_QUICK === "1";
const isVerbose = process.env.BENCH_VERBOSE === "1";

/** What a child reports. */
interface ChildResult {
  readonly ms: number;
  readonly plugins: number;
  readonly keys: number;
  readonly failures: number;
}

/** One generated plugin: a config schema with a default, two typed sources, a disposer. */
function pluginSource(index: number): string {
  const name = `p${String(index).padStart(2, "0")}`;
  return `import { definePlugin } from "context-host";
import Type from "typebox";

const Status = Type.Object({
  index: Type.Integer({ minimum: 0 }),
  label: Type.String(),
  tags: Type.Array(Type.String()),
  enabled: Type.Boolean(),
});

export default definePlugin({
  name: "${name}",
  config: Type.Object({ label: Type.String({ default: "plugin ${index}" }) }),
  setup(api, config) {
    const { clock } = api.services;
    const startedAt = clock.now();
    api.source({
      key: "${name}/status",
      schema: Status,
      load: () => ({ index: ${index}, label: config.label, tags: ["generated", "bench"], enabled: ${index % 2 === 0} }),
      baseline: (s) => \`\${s.label} (#\${s.index}) is \${s.enabled ? "on" : "off"}; tags: \${s.tags.join(", ")}.\`,
      update: (previous, s) => \`\${s.label} changed from \${previous.enabled ? "on" : "off"} to \${s.enabled ? "on" : "off"}.\`,
      removed: (s) => \`\${s.label} is gone.\`,
    });
    api.source({
      key: "${name}/uptime",
      schema: Type.Integer({ minimum: 0 }),
      load: () => Math.max(0, Math.floor((clock.now() - startedAt) / 3_600_000)),
      baseline: (hours) => \`${name} has run for \${hours} h.\`,
      update: (_previous, hours) => \`${name} has now run for \${hours} h.\`,
    });
    api.onDispose(() => {});
  },
});
`;
}

/** The child: start a host over `folder`, render the first Baseline, report the time. */
async function child(folder: string): Promise<void> {
  const scope = new Scope(bench);
  const start = performance.now();
  const sources = await startContextSources(
    { cwd: folder, plugins: [folder], builtins: false, watch: true, logger: silentLogger },
    scope,
  );
  const { registry, plugins: host } = sources;
  const generation = await SystemContext.initialize(await registry.compose({ location: folder }));
  const ms = performance.now() - start;
  if (generation.baseline.length === 0 && registry.state.registrations.length > 0) throw new Error("empty baseline");
  const result: ChildResult = {
    ms,
    plugins: host.plugins().length,
    keys: registry.state.registrations.length,
    failures: host.failures().length,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await scope.close();
}

/** The floor child: `count` empty worker threads started at once, until each has run its first line. */
async function floorChild(count: number): Promise<void> {
  const ms = await emptyWorkersMs(count);
  const result: ChildResult = { ms, plugins: count, keys: count * 2, failures: 0 };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Runs one child over `folder`; checks it loaded `plugins` plugins without a failure. */
async function runChild(folder: string, plugins: number, kind = "child"): Promise<number> {
  const result = await runJsonChild<ChildResult>(selfFile, [kind, kind === "floor" ? String(plugins) : folder], {
    cwd: projectRoot,
  });
  if (result.plugins !== plugins || result.keys !== plugins * 2 || result.failures !== 0) {
    throw new Error(`child loaded ${JSON.stringify(result)}, expected ${plugins} plugins, ${plugins * 2} keys`);
  }
  return result.ms;
}

async function main(): Promise<void> {
  const plugins = envInt("BENCH_PLUGINS", isQuick ? 5 : 50);
  const runs = envInt("BENCH_RUNS", isQuick ? 1 : 5);
  const warmup = envInt("BENCH_WARMUP", isQuick ? 0 : 1);
  if (plugins < 1 || runs < 1) throw new RangeError("BENCH_PLUGINS and BENCH_RUNS must be at least 1");

  const root = benchFolder("cold");
  try {
    const full = path.join(root.path, "plugins");
    const empty = path.join(root.path, "empty");
    mkdirSync(full);
    mkdirSync(empty);
    for (let i = 0; i < plugins; i++) writeFileSync(path.join(full, `p${String(i).padStart(2, "0")}.ts`), pluginSource(i));

    const withPlugins: number[] = [];
    const withNone: number[] = [];
    const floor: number[] = [];
    for (let run = 0; run < warmup + runs; run++) {
      // Alternate which kind goes first, so drift falls on both alike.
      const pair = [() => runChild(full, plugins), () => runChild(empty, 0)];
      const [first, second] = run % 2 === 0 ? pair : pair.reverse();
      const a = await (first as () => Promise<number>)();
      const b = await (second as () => Promise<number>)();
      if (run < warmup) continue;
      withPlugins.push(run % 2 === 0 ? a : b);
      withNone.push(run % 2 === 0 ? b : a);
      floor.push(await runChild(empty, plugins, "floor"));
    }
    if (isVerbose) {
      const show = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(" ");
      process.stderr.write(
        `[${bench}] ${plugins} plugins ms: ${show(withPlugins)}\n[${bench}] 0 plugins ms: ${show(withNone)}\n[${bench}] ${plugins} empty workers ms: ${show(floor)}\n`,
      );
    }
    emit({ bench, metric: "ms", value: median(withPlugins), unit: "ms", baseline: median(withNone) });
    emit({ bench, metric: "ms-vs-worker-floor", value: median(withPlugins), unit: "ms", baseline: median(floor) });
  } finally {
    root.remove();
  }
}

await runBenchProcess(bench, () =>
  process.argv[2] === "child"
    ? child(path.resolve(process.argv[3] ?? "."))
    : process.argv[2] === "floor"
      ? floorChild(Number(process.argv[3]))
      : main(),
);
