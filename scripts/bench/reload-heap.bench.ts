// Bench `reload-heap`: heap growth, after full garbage collection, over many reloads of
// a plugin that holds a 1 MiB string literal (different in every version, so every reload
// is a real new generation). Reloads are driven by rewriting the file and calling
// `host.reload(file)` (no watcher: this measures memory, not latency).
//
// Baseline, measured in the same run: the same pipeline — esbuild bundle with the same
// options, the same activation and registry swap, the previous scope closed — but
// evaluated the usual ESM way, by a cache-busting `import()` of a new file URL per
// version. Node never evicts an ES module, so that strategy cannot survive 1,000 reloads
// of a 1 MiB plugin: it runs in its own child process with fewer reloads (100).
//
// Two lines:
// - `heap-growth-mb`: value = our growth over BENCH_RELOADS reloads (1,000), in MiB.
//   The baseline is EXTRAPOLATED: the import() strategy's measured growth per reload
//   × BENCH_RELOADS, i.e. what it would hold after as many reloads had it survived them.
// - `heap-growth-per-reload-kb`: both figures as measured, per reload, in KiB: ours over
//   BENCH_RELOADS reloads, the import() strategy's over BENCH_BASELINE_RELOADS.
// - `worker-heap-growth-mb`: the part of ours in the plugin's worker (isolation "worker",
//   the default: the generations live there, decision 060), same baseline as the first.
// Ours is the host's heap plus its plugin worker's heap, each after full collections.
//
// Needs `global.gc`: the bench runner passes `--expose-gc`; without it this file re-runs
// itself in a child that has it. `reload-heap.bench.ts import-baseline` is the baseline child.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes
// a small run for tests): BENCH_RELOADS [1000; 30], BENCH_BASELINE_RELOADS [100; 10],
// BENCH_WARMUP unmeasured reloads before the first heap reading [10; 3], BENCH_STRING_KB
// size of the plugin's string [1024; 1024], BENCH_TMPDIR where temp folders go [the OS's].
// BENCH_VERBOSE=1 prints heap readings on stderr.

import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { type ContextSources, startContextSources } from "../../core/host/context-sources.ts";
import type { PluginSource } from "../../core/plugins/define.ts";
import { type ActivatedGeneration, activateGeneration, pluginOf } from "../../core/plugins/generation.ts";
import { type Registration, Registry } from "../../core/registry/registry.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, median } from "./measure.ts";
import { benchFolder, hostContainer, runBenchProcess } from "./plugin-fixtures.ts";
import { runningWorkers, workerHeapBytes } from "./worker-heap.ts";

const bench = "reload-heap";
const selfFile = import.meta.filename;
const projectRoot = path.resolve(import.meta.dirname, "../..");
const isQuick = process.env.BENCH_QUICK === "1";
const isVerbose = process.env.BENCH_VERBOSE === "1";

const reloads = envInt("BENCH_RELOADS", isQuick ? 30 : 1000);
const baselineReloads = envInt("BENCH_BASELINE_RELOADS", isQuick ? 10 : 100);
const warmup = envInt("BENCH_WARMUP", isQuick ? 3 : 10);
const stringKb = envInt("BENCH_STRING_KB", 1024);
if (reloads < 1 || baselineReloads < 1 || stringKb < 1) {
  throw new RangeError("BENCH_RELOADS, BENCH_BASELINE_RELOADS and BENCH_STRING_KB must be at least 1");
}

const MiB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;

/** Letters, deterministic, no run long enough for anything to compress or share. */
const filler = (() => {
  const letters: string[] = [];
  let state = 0x2545f491;
  for (let i = 0; i < stringKb * 1024; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    letters.push(String.fromCharCode(97 + ((state >>> 16) % 26)));
  }
  return letters.join("");
})();

/** The plugin: its string literal (and so the file's hash) differs in every version. */
function pluginSource(version: number): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";

const text = "${version}:${filler.slice(String(version).length + 1)}";

export default definePlugin({
  name: "heavy",
  setup(api) {
    api.source({
      key: "heavy/text",
      schema: Type.Object({ version: Type.Integer(), length: Type.Integer() }),
      load: () => ({ version: ${version}, length: text.length }),
      baseline: (v) => \`Text version \${v.version}, \${v.length} characters.\`,
      update: (_previous, v) => \`Text version is now \${v.version}.\`,
    });
  },
});
`;
}

const baselineText = (version: number) => `Text version ${version}, ${filler.length} characters.`;

/**
 * `heapUsed` after full collections: 8 passes (weak callbacks and finalizers run in
 * between), the median of the last 4 readings — single readings still wander by ~0.3 MiB.
 */
async function settledHeap(): Promise<number> {
  if (gc === undefined) throw new Error("global.gc is missing: run node with --expose-gc");
  const readings: number[] = [];
  for (let pass = 0; pass < 8; pass++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    readings.push(process.memoryUsage().heapUsed);
  }
  return median(readings.slice(-4));
}

/** A reload strategy: `load(version)` makes that version the active generation; `activeBaseline` renders it. */
interface Strategy {
  load(version: number): Promise<void>;
  /** The heap of the worker the plugin's generations live in, after full collections, and its thread id (isolated plugins). */
  workerHeap?(): Promise<{ readonly bytes: number; readonly threadId: number }>;
  activeBaseline(): Promise<string>;
  close(): Promise<void>;
}

/** Heap growth in bytes over `count` reloads, after `warmup` unmeasured ones: the host's, and its plugin worker's. */
async function growth(strategy: Strategy, count: number): Promise<{ readonly host: number; readonly worker: number }> {
  let version = 0;
  await strategy.load(version);
  for (let i = 0; i < warmup; i++) await strategy.load(++version);
  // Renders once before the first reading too, so lazily built state is on both sides.
  if (!(await strategy.activeBaseline()).includes(baselineText(version))) throw new Error(`version ${version} is not active`);
  const before = await settledHeap();
  const workerBefore = await strategy.workerHeap?.();
  for (let i = 0; i < count; i++) await strategy.load(++version);
  if (!(await strategy.activeBaseline()).includes(baselineText(version))) throw new Error(`version ${version} is not active`);
  const after = await settledHeap();
  const workerAfter = await strategy.workerHeap?.();
  if (workerBefore !== undefined && workerAfter?.threadId !== workerBefore.threadId)
    throw new Error("the plugin's worker was restarted during the reloads: its heap readings do not compare");
  const worker = workerBefore === undefined || workerAfter === undefined ? 0 : workerAfter.bytes - workerBefore.bytes;
  if (isVerbose) {
    process.stderr.write(
      `[${bench}] ${process.argv[2] ?? "host"}: heapUsed ${(before / MiB).toFixed(1)} → ${(after / MiB).toFixed(1)} MiB over ${count} reloads` +
        `${workerBefore === undefined ? "" : `; worker ${(workerBefore.bytes / MiB).toFixed(1)} → ${((workerAfter?.bytes ?? 0) / MiB).toFixed(1)} MiB`}\n`,
    );
  }
  return { host: after - before, worker };
}

/** Ours: the real plugin host (bundle → vm.compileFunction → activate → swap). */
async function hostStrategy(folder: string): Promise<Strategy> {
  const file = path.join(folder, "heavy.ts");
  const scope = new Scope(bench);
  let sources: ContextSources | undefined;
  return {
    async load(version) {
      writeFileSync(file, pluginSource(version));
      if (sources === undefined)
        sources = await startContextSources(
          { cwd: folder, plugins: [folder], builtins: false, watch: false, logger: silentLogger },
          scope,
        );
      else await sources.plugins.reload(file);
      const host = sources.plugins;
      const active = host.plugins()[0]?.generation;
      if (active !== version + 1) {
        const why = host.diagnostics.at(-1)?.message ?? "no diagnostic";
        throw new Error(`after loading version ${version} generation ${active} is active, expected ${version + 1}: ${why}`);
      }
    },
    async workerHeap() {
      // Measured from outside: the plugin's worker is the one worker thread its host runs.
      const workers = runningWorkers();
      if (workers.length !== 1) throw new Error(`expected the plugin's one worker, found ${workers.length} worker threads`);
      const worker = workers[0] as (typeof workers)[number];
      // Settled like the host's heap: the median of the last 2 of 4 snapshots (each after a collection).
      const readings: number[] = [];
      for (let pass = 0; pass < 4; pass++) readings.push(await workerHeapBytes(worker));
      return { bytes: median(readings.slice(-2)), threadId: worker.threadId };
    },
    async activeBaseline() {
      if (sources === undefined) throw new Error("no version is loaded");
      return (await SystemContext.initialize(await sources.registry.compose({ location: folder }))).baseline;
    },
    async close() {
      await scope.close();
    },
  };
}

/** The baseline: the same pipeline, but each version bundled as ESM and evaluated by `import()` of a new file URL. */
function importStrategy(folder: string): Strategy {
  const file = path.join(folder, "heavy.ts");
  const container = hostContainer(folder);
  const registry = new Registry();
  // The bundle's two packages resolve to the host's own copies, as the host's `require` does.
  const shared = new Map([
    ["context-host", pathToFileURL(path.join(projectRoot, "core/index.ts")).href],
    ["typebox", import.meta.resolve("typebox")],
  ]);
  const sharedPackages: esbuild.Plugin = {
    name: "shared-packages",
    setup(build) {
      build.onResolve({ filter: /^(context-host|typebox)$/ }, (args) => ({
        path: shared.get(args.path) as string,
        external: true,
      }));
    },
  };
  const guard = { deadlineMs: 2000, maxTextLength: 64 * 1024, report() {}, observed() {} };
  let active: { scope: ActivatedGeneration["scope"]; registrations: readonly Registration[] } | undefined;
  return {
    async load(version) {
      writeFileSync(file, pluginSource(version));
      const result = await esbuild.build({
        entryPoints: [file],
        absWorkingDir: folder,
        outfile: path.join(folder, "heavy.bundle.mjs"),
        bundle: true,
        write: false,
        format: "esm",
        platform: "node",
        target: "node20",
        packages: "external",
        sourcemap: "inline",
        sourcesContent: true,
        logLevel: "silent",
        plugins: [sharedPackages],
      });
      // A new file name per version: the cache-busting that makes `import()` evaluate it again.
      const versioned = path.join(folder, `heavy-${version}.mjs`);
      writeFileSync(versioned, result.outputFiles[0]?.text ?? "");
      const exports = (await import(pathToFileURL(versioned).href)) as Record<string, unknown>;
      rmSync(versioned);
      const next = await activateGeneration({
        plugin: pluginOf(exports),
        config: undefined,
        generation: version + 1,
        container,
        setupDeadlineMs: 10_000,
      });
      const registrations = next.sources.map((source) => containedRegistration(source, guard));
      const previous = active;
      registry.batch((batch) => {
        for (const r of previous?.registrations ?? []) batch.unregister(r);
        for (const r of registrations) batch.register(next.scope, r);
      });
      active = { scope: next.scope, registrations };
      await previous?.scope.close();
    },
    async activeBaseline() {
      return (await SystemContext.initialize(await registry.compose({ location: folder }))).baseline;
    },
    async close() {
      await active?.scope.close();
    },
  };
}

/** The baseline's registration of a source: contained in the host's thread, built once per env. */
function containedRegistration(
  source: PluginSource,
  guard: { readonly maxTextLength: number; report(fault: SystemContext.SourceFault): void },
): Registration {
  const contexts = new Map<string, SystemContext.SystemContext>();
  return {
    key: source.key,
    origin: "plugin",
    load: (env) => {
      let context = contexts.get(env.location);
      if (context === undefined) {
        const { removed } = source;
        context = SystemContext.contain(
          {
            key: source.key,
            schema: source.schema,
            load: () => source.load(env),
            baseline: (current) => source.baseline(current),
            update: (previous, current) => source.update(previous, current),
            ...(removed === undefined ? {} : { removed: (previous: unknown) => removed.call(source, previous) }),
          },
          { report: guard.report, maxTextLength: guard.maxTextLength },
        );
        contexts.set(env.location, context);
      }
      return context;
    },
  };
}

/** Runs a strategy in a fresh temp folder and removes it afterwards. */
async function measureIn(
  make: (folder: string) => Strategy | Promise<Strategy>,
  count: number,
): Promise<{ readonly host: number; readonly worker: number }> {
  const folder = benchFolder("heap");
  try {
    const strategy = await make(folder.path);
    try {
      return await growth(strategy, count);
    } finally {
      await strategy.close();
    }
  } finally {
    folder.remove();
  }
}

/** Runs `node --expose-gc --import tsx <this file> ...args` and resolves with its stdout. */
function runChild(args: readonly string[], execArgv: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", ...execArgv, selfFile, ...args], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    // A child that outlives us would keep running and keep its temp folder: pass signals on.
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${[path.basename(selfFile), ...args].join(" ")} exited with ${signal ?? code}`));
    });
  });
}

async function main(): Promise<void> {
  // The baseline first, in its own process: its leak must not weigh on our measurement.
  const baselineOutput = await runChild(["import-baseline"], ["--import", "tsx"]);
  const baselineBytes = (JSON.parse(baselineOutput.trim()) as { growthBytes: number }).growthBytes;
  // Isolated (the default): the generations live in the plugin's worker; both heaps count.
  const ours = await measureIn(hostStrategy, reloads);
  const ourBytes = ours.host + ours.worker;

  const importPerReload = baselineBytes / baselineReloads;
  emit({
    bench,
    metric: "heap-growth-mb",
    value: ourBytes / MiB,
    unit: "MiB",
    // Extrapolated: the import() strategy's measured growth per reload × our reload count.
    baseline: (importPerReload * reloads) / MiB,
  });
  emit({
    bench,
    metric: "heap-growth-per-reload-kb",
    value: ourBytes / reloads / 1024,
    unit: "KiB",
    baseline: importPerReload / 1024,
  });
  emit({
    bench,
    metric: "worker-heap-growth-mb",
    value: ours.worker / MiB,
    unit: "MiB",
    baseline: (importPerReload * reloads) / MiB,
  });
}

await runBenchProcess(bench, async () => {
  if (process.argv[2] === "import-baseline") {
    const growthBytes = (await measureIn(importStrategy, baselineReloads)).host;
    process.stdout.write(`${JSON.stringify({ growthBytes })}\n`);
  } else if (gc === undefined) {
    // Same node flags (e.g. tsx's loader), plus --expose-gc; its lines are ours.
    process.stdout.write(await runChild(process.argv.slice(2), process.execArgv));
  } else {
    await main();
  }
});
