// Bench `reload-latency`, metric `write-to-active-ms`: how long after a plugin file is
// written its new generation is active (the host's `activated` event), with the real
// watcher (chokidar) and the host's reload schedule included, the plugin in its own worker
// (the default isolation). Median over edits. The breakdown lines (`watch-ms`: write to
// the load's start; `bundle-ms`, `evaluate-ms`, `setup-ms`; `swap-ms`: ready to swapped in)
// are medians of the same edits, from the `activated` event's timings.
//
// Baseline, measured in the same run: what the same change costs without hot reload — a
// cold `node --import tsx` start of a host process that loads the same plugin to its first
// Baseline System Context (spawn → the child reports its baseline), median over spawns.
// The spawns are interleaved with the edits, so drift on a shared machine hits both alike.
//
// This file is also the cold host itself: `reload-latency.bench.ts cold-host DIR`.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes
// a small run for tests): BENCH_EDITS measured edits [20; 3], BENCH_COLD_RUNS measured cold
// starts [5; 1], BENCH_WARMUP unmeasured edits [2; 1], BENCH_COLD_WARMUP unmeasured cold
// starts [1; 0], BENCH_TMPDIR where the temp folder goes [the OS's]. BENCH_VERBOSE=1 prints
// every sample on stderr.

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import type { LoadTimings, PluginEvent } from "../../core/plugins/events.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, median } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";

const bench = "reload-latency";
const selfFile = import.meta.filename;
const projectRoot = path.resolve(import.meta.dirname, "../..");
const isQuick = process.env.BENCH_QUICK === "1";
const isVerbose = process.env.BENCH_VERBOSE === "1";

/** Longest wait for one activation before the bench fails (a lost reload is a failure, not a slow sample). */
const activationTimeoutMs = 10_000;
/**
 * Pause after the host has settled and before the next write: chokidar drops a second
 * `change` of the same path within 50 ms, which would measure the watcher, not the host.
 */
const quietGapMs = 60;

/** The plugin under edit: small, typed with TypeBox, its version in its source text. */
function pluginSource(version: number): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";

const version = ${version};

export default definePlugin({
  name: "latency",
  setup(api) {
    api.source({
      key: "latency/version",
      schema: Type.Object({ version: Type.Integer(), note: Type.String() }),
      load: () => ({ version, note: "plugin under edit" }),
      baseline: (v) => \`Plugin version \${v.version} (\${v.note}).\`,
      update: (_previous, v) => \`Plugin version is now \${v.version}.\`,
    });
  },
});
`;
}

const baselineText = (version: number) => `Plugin version ${version} (plugin under edit).`;

/** Starts the plugins of `folder` (no built-in sources); closing `scope` stops them. */
async function startHost(folder: string, watch: boolean) {
  const scope = new Scope(bench);
  const sources = await startContextSources(
    { cwd: folder, plugins: [folder], builtins: false, watch, logger: silentLogger },
    scope,
  );
  return { host: sources.plugins, registry: sources.registry, scope };
}

/** The child: a host process that starts, loads the folder's plugin, renders its first Baseline and reports it. */
async function coldHost(folder: string): Promise<void> {
  const { registry, scope } = await startHost(folder, true);
  const generation = await SystemContext.initialize(await registry.compose({ location: folder }));
  process.stdout.write(`${JSON.stringify({ baseline: generation.baseline })}\n`);
  await scope.close();
}

/** Spawns a cold host; resolves with milliseconds from spawn to its first Baseline, after it exited. */
function coldStart(folder: string, version: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, ["--import", "tsx", selfFile, "cold-host", folder], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let readyMs: number | undefined;
    let baseline = "";
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (readyMs !== undefined) return;
      readyMs = performance.now() - start;
      try {
        baseline = (JSON.parse(line) as { baseline: string }).baseline;
      } catch {
        baseline = line;
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code !== 0 || readyMs === undefined) {
        reject(new Error(`cold host exited with ${signal ?? code} before its baseline: ${stderr}`));
      } else if (!baseline.includes(baselineText(version))) {
        reject(new Error(`cold host rendered ${JSON.stringify(baseline)}, expected it to include version ${version}`));
      } else {
        resolve(readyMs);
      }
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const edits = envInt("BENCH_EDITS", isQuick ? 3 : 20);
  const coldRuns = envInt("BENCH_COLD_RUNS", isQuick ? 1 : 5);
  const warmup = envInt("BENCH_WARMUP", isQuick ? 1 : 2);
  const coldWarmup = envInt("BENCH_COLD_WARMUP", isQuick ? 0 : 1);
  if (edits < 1 || coldRuns < 1) throw new RangeError("BENCH_EDITS and BENCH_COLD_RUNS must be at least 1");

  const temp = benchFolder("latency");
  const folder = temp.path;
  try {
    const file = path.join(folder, "latency.ts");
    let version = 0;
    writeFileSync(file, pluginSource(version));
    // No debounceMs: the host's default (50 ms) is part of what is measured.
    const { host, registry, scope } = await startHost(folder, true);
    try {
      const activations: Array<{ readonly at: number; readonly timings: LoadTimings }> = [];
      let wake: (() => void) | undefined;
      host.subscribe((event: PluginEvent) => {
        if (event.kind !== "activated" || event.file !== file) return;
        activations.push({ at: performance.now(), timings: event.timings });
        wake?.();
      });
      const nextActivation = async (): Promise<{ readonly at: number; readonly timings: LoadTimings }> => {
        const deadline = performance.now() + activationTimeoutMs;
        while (activations.length === 0) {
          const left = deadline - performance.now();
          if (left <= 0) throw new Error(`no activation within ${activationTimeoutMs} ms of writing version ${version}`);
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(resolve, left);
          });
          clearTimeout(timer);
          wake = undefined;
        }
        return activations.shift() as { readonly at: number; readonly timings: LoadTimings };
      };
      const activeBaseline = async () => (await SystemContext.initialize(await registry.compose({ location: folder }))).baseline;
      if (!(await activeBaseline()).includes(baselineText(version))) throw new Error("the plugin did not load at start");

      /** Writes the next version in place; milliseconds until the generation holding it is active, and where they went. */
      const edit = async (): Promise<{ readonly ms: number; readonly timings: LoadTimings }> => {
        await host.settled();
        await sleep(quietGapMs);
        activations.length = 0;
        version++;
        const start = performance.now();
        await writeFile(file, pluginSource(version));
        // An activation of something else (e.g. a half-written file) does not count: wait for this version.
        for (;;) {
          const { at, timings } = await nextActivation();
          if ((await activeBaseline()).includes(baselineText(version))) return { ms: at - start, timings };
        }
      };

      for (let i = 0; i < warmup; i++) await edit();
      for (let i = 0; i < coldWarmup; i++) await coldStart(folder, version);
      const editMs: number[] = [];
      const parts: Record<"watch" | "bundle" | "evaluate" | "setup" | "swap", number[]> = {
        watch: [],
        bundle: [],
        evaluate: [],
        setup: [],
        swap: [],
      };
      const coldMs: number[] = [];
      // Cold starts spread evenly among the edits.
      const coldAfter = (k: number) => Math.floor(((k + 1) * edits) / coldRuns) - 1;
      for (let i = 0; i < edits; i++) {
        const { ms, timings } = await edit();
        editMs.push(ms);
        // The watch part: from the write to the load's start (the watcher's event, and the schedule).
        parts.watch.push(ms - timings.loadMs);
        parts.bundle.push(timings.bundleMs ?? Number.NaN);
        parts.evaluate.push(timings.evaluateMs ?? Number.NaN);
        parts.setup.push(timings.setupMs ?? Number.NaN);
        parts.swap.push(timings.swapMs ?? Number.NaN);
        while (coldMs.length < coldRuns && coldAfter(coldMs.length) <= i) {
          await host.settled();
          coldMs.push(await coldStart(folder, version));
        }
      }
      if (isVerbose) {
        const show = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(" ");
        process.stderr.write(`[${bench}] write-to-active ms: ${show(editMs)}\n[${bench}] cold start ms: ${show(coldMs)}\n`);
      }
      emit({ bench, metric: "write-to-active-ms", value: median(editMs), unit: "ms", baseline: median(coldMs) });
      // The breakdown of the same edits (medians of each part, so they need not add up exactly),
      // each against the same baseline: the part's share of a cold start.
      for (const [part, values] of Object.entries(parts)) {
        emit({ bench, metric: `${part}-ms`, value: median(values), unit: "ms", baseline: median(coldMs) });
      }
    } finally {
      await scope.close();
    }
  } finally {
    temp.remove();
  }
}

await runBenchProcess(bench, () => (process.argv[2] === "cold-host" ? coldHost(path.resolve(process.argv[3] ?? ".")) : main()));
