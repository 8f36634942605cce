// Bench `cold-start`, metric `compiled-ms`: process start to the first Baseline System
// Context through the compiled package — `node dist/scripts/cli/context-host.js render`
// with one plugin (a TypeBox schema, two sources) in a temp folder — timed from spawning
// the process to the Baseline's first byte on its stdout. Everything a user waits for is
// counted: node's start, the host's module imports (TypeBox, awilix, esbuild, chokidar,
// better-sqlite3), bundling and setting up the plugin, and rendering.
//
// Baseline, in the same run: the same program from its TypeScript sources through tsx
// (`node --import tsx scripts/cli/context-host.ts render`), as the package ran before it
// shipped compiled JavaScript (decision 006). Runs alternate between the two, each in a
// fresh process; medians over runs. The bench builds dist/ first (`scripts/build.mjs`).
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes
// a small run for tests): BENCH_PLUGINS [1; 1], BENCH_RUNS processes of each kind [9; 1],
// BENCH_WARMUP unmeasured processes of each kind [1; 0], BENCH_TMPDIR where the temp folder
// goes [the OS's]. BENCH_VERBOSE=1 prints samples on stderr.

import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { emit, envInt, median } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";

const bench = "cold-start";
const projectRoot = path.resolve(import.meta.dirname, "../..");
const isQuick = process.env.BENCH_QUICK === "1";
const isVerbose = process.env.BENCH_VERBOSE === "1";

/** One generated plugin: a TypeBox object schema and two sources. */
function pluginSource(index: number): string {
  const name = `cold${index}`;
  return `import { definePlugin, SystemContext } from "context-host/plugin";
import Type from "typebox";

export default definePlugin({
  name: "${name}",
  setup(api) {
    api.source({
      key: "${name}/status",
      schema: Type.Object({ index: Type.Integer(), tags: Type.Array(Type.String()) }),
      load: () => ({ index: ${index}, tags: ["generated", "bench"] }),
      baseline: (s) => \`${name} is plugin #\${s.index} (\${s.tags.join(", ")}).\`,
      update: (_previous, s) => \`${name} is now plugin #\${s.index}.\`,
    });
    api.source({
      key: "${name}/gone",
      schema: Type.String(),
      load: () => SystemContext.absent,
      baseline: (s) => s,
      update: (_previous, s) => s,
    });
  },
});
`;
}

/** The two ways to start the program, as [command, ...args] before `render`'s own arguments. */
const programs = {
  compiled: [path.join(projectRoot, "dist/scripts/cli/context-host.js")],
  tsx: ["--import", "tsx", path.join(projectRoot, "scripts/cli/context-host.ts")],
} as const;

/**
 * Starts one `render` process over `folder`; resolves with the milliseconds from spawning
 * it to the first byte of its stdout, once it has exited 0 having printed every plugin's
 * baseline text.
 */
function timeToBaseline(program: readonly string[], folder: string, plugins: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let firstByte: number | undefined;
    const proc = spawn(process.execPath, [...program, "render", "--plugins", folder, "--location", folder], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      firstByte ??= performance.now();
      stdout += chunk.toString();
    });
    proc.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      if (code !== 0 || firstByte === undefined) return reject(new Error(`render exited with ${signal ?? code}: ${stderr}`));
      for (let i = 0; i < plugins; i++) {
        if (!stdout.includes(`cold${i} is plugin #${i}`))
          return reject(new Error(`render's Baseline lacks plugin cold${i}: ${stdout}`));
      }
      resolve(firstByte - start);
    });
  });
}

async function main(): Promise<void> {
  const plugins = envInt("BENCH_PLUGINS", 1);
  const runs = envInt("BENCH_RUNS", isQuick ? 1 : 9);
  const warmup = envInt("BENCH_WARMUP", isQuick ? 0 : 1);
  if (plugins < 1 || runs < 1) throw new RangeError("BENCH_PLUGINS and BENCH_RUNS must be at least 1");

  execFileSync(process.execPath, [path.join(projectRoot, "scripts/build.mjs")], {
    cwd: projectRoot,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const root = benchFolder("cold-compiled");
  try {
    const folder = path.join(root.path, "plugins");
    mkdirSync(folder);
    for (let i = 0; i < plugins; i++) writeFileSync(path.join(folder, `cold${i}.ts`), pluginSource(i));

    const compiled: number[] = [];
    const tsx: number[] = [];
    for (let run = 0; run < warmup + runs; run++) {
      // Alternate which kind goes first, so drift falls on both alike.
      const order = run % 2 === 0 ? (["compiled", "tsx"] as const) : (["tsx", "compiled"] as const);
      for (const kind of order) {
        const ms = await timeToBaseline(programs[kind], folder, plugins);
        if (run >= warmup) (kind === "compiled" ? compiled : tsx).push(ms);
      }
    }
    if (isVerbose) {
      const show = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(" ");
      process.stderr.write(`[${bench}] compiled ms: ${show(compiled)}\n[${bench}] tsx ms: ${show(tsx)}\n`);
    }
    emit({ bench, metric: "compiled-ms", value: median(compiled), unit: "ms", baseline: median(tsx) });
  } finally {
    root.remove();
  }
}

await runBenchProcess(bench, main);
