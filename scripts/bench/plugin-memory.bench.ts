// Bench `plugin-memory`, metric `rss-mb-per-plugin`: the resident memory one isolated
// plugin (issue 10: each plugin in its own worker) costs the host process.
//
//   value     (RSS of a host with 10 plugins − RSS of a host with 0 plugins) / 10, isolated
//             (`isolation: "worker"`)
//   baseline  the same with `isolation: "none"` (plugins in the host's own realm)
//   goal      value ≤ 10 MiB
//
// Every configuration is measured in a fresh child process (this file run with `--child`),
// so no configuration inherits another's heap, code or freed-but-kept pages: the child
// creates the host (createHost, a real SQLite file, the plugin folder), runs one boundary
// of a session (every loader and renderer ran, so each worker holds what serving costs),
// runs a full GC a few times, waits for the heap to settle and prints its RSS; then it
// idles BENCH_IDLE_MS [12,000; 0] as a host between boundaries does and prints its RSS
// again: a second line, `idle-rss-mb-per-plugin`, from those (V8 returns a worker's unused
// heap pages only after seconds without work; decision 061). Workers'
// memory is part of the process RSS. The four configurations run in turn, BENCH_RUNS
// times, and each figure is the median of its runs.
//
// The plugins are alike: five small sources each and a table of about 512 KiB of their own
// data, which every loader reads, so each plugin has a footprint in the host's own realm
// too: without it an in-process plugin costs well under the RSS noise between processes
// (measured: −0.26 to +0.09 MiB per plugin) and the baseline would be no number to divide
// by. The value is the isolated plugin's whole cost, that table included. Each
// source renders the id of the thread it ran on; a child fails unless the isolated host's
// plugins run off the host's thread and the in-process host's on it.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1):
// BENCH_PLUGINS [10; 10], BENCH_RUNS [5; 1], BENCH_TMPDIR.

import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { createHost, type Provider } from "../../core/index.ts";
import { collectGarbage, emit, envInt, median } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";

const bench = "plugin-memory";
const isQuick = process.env.BENCH_QUICK === "1";
const pluginCount = envInt("BENCH_PLUGINS", 10);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 5);
const idleMs = envInt("BENCH_IDLE_MS", isQuick ? 0 : 12_000);
const sourcesPerPlugin = 5;
/** Strings of 48 one-byte characters: about 64 bytes of heap each, with the array slot. */
const tableEntries = 8192;
const tableKiB = (tableEntries * 64) / 1024;
const MiB = 1024 * 1024;
type Isolation = "worker" | "none";

function pluginCode(p: number): string {
  return `import { threadId } from "node:worker_threads";
import { definePlugin } from "context-host";
import Type from "typebox";

const schema = Type.Object({ item: Type.Integer(), tags: Type.Array(Type.String()), thread: Type.Integer(), entries: Type.Integer() });
// The plugin's own data (as a bundled dependency's tables would be): about ${tableKiB} KiB of heap.
const table = Array.from({ length: ${tableEntries} }, (_, i) => "entry " + i + " of plugin ${p}".padEnd(48, "."));

export default definePlugin({
  name: "memory${p}",
  setup(api) {
    for (let i = 0; i < ${sourcesPerPlugin}; i++) {
      api.source({
        key: "memory${p}/s" + i,
        schema,
        load: () => ({ item: i, tags: ["bench", "group-" + (i % 3)], thread: threadId, entries: table.length }),
        baseline: (v) => "Plugin ${p}, item " + v.item + ", tags " + v.tags.join(", ") + " (thread " + v.thread + ").",
        update: (_previous, v) => "Plugin ${p}, item " + v.item + " now (thread " + v.thread + ").",
      });
    }
  },
});
`;
}

/** The child: one host, one boundary, then its settled RSS in bytes on stdout. */
async function child(isolation: Isolation, count: number, root: string): Promise<void> {
  const plugins = path.join(root, `plugins-${count}`);
  const provider: Provider = { send: async () => ({ text: "ok" }) };
  const host = await createHost({
    dataDir: path.join(root, `data-${isolation}-${count}-${process.pid}`),
    providers: { bench: provider },
    builtins: false,
    plugins: [plugins],
    watch: false,
    isolation,
  });
  try {
    const active = host.plugins().length;
    if (active !== count) throw new Error(`isolation ${isolation}: ${active} plugins active, expected ${count}`);
    const id = await host.createSession({ location: root, provider: "bench", model: "bench" });
    await host.prompt(id, "start");
    const step = await host.step(id);
    if (step.kind !== "replied") throw new Error(`isolation ${isolation}: step returned "${step.kind}"`);
    if (count > 0) {
      const threads = new Set([...step.request.system.join("\n").matchAll(/\(thread (\d+)\)/g)].map((m) => Number(m[1])));
      const isRight = isolation === "worker" ? threads.size > 0 && !threads.has(0) : threads.size === 1 && threads.has(0);
      if (!isRight) {
        throw new Error(
          `isolation ${isolation}: plugin sources ran on thread(s) ${[...threads].join(", ") || "(none rendered)"}; ` +
            `expected ${isolation === "worker" ? "worker threads, not the host's thread 0" : "the host's thread 0 only"}`,
        );
      }
    }
    for (let i = 0; i < 3; i++) {
      collectGarbage();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const rss = process.memoryUsage().rss;
    // Then idle, as a host between boundaries is: V8 gives a worker's unused heap pages back
    // only after some seconds without work (decision 061), so the steady state shows later.
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 100));
    process.stdout.write(`${JSON.stringify({ rss, idleRss: process.memoryUsage().rss })}\n`);
  } finally {
    await host.close();
  }
}

const run = promisify(execFile);

/** RSS in bytes of a fresh child process with `count` plugins under `isolation`: after its boundary, and after idling. */
async function measure(isolation: Isolation, count: number, root: string): Promise<{ rss: number; idleRss: number }> {
  const { stdout } = await run(
    process.execPath,
    ["--expose-gc", "--import", "tsx", import.meta.filename, "--child", isolation, String(count), root],
    { cwd: process.cwd(), env: process.env, maxBuffer: 1 << 20 },
  );
  const line = stdout.trim().split("\n").at(-1) ?? "";
  const { rss, idleRss } = JSON.parse(line) as { rss?: unknown; idleRss?: unknown };
  if (typeof rss !== "number" || typeof idleRss !== "number") {
    throw new Error(`child ${isolation}/${count} printed ${JSON.stringify(stdout)}`);
  }
  return { rss, idleRss };
}

const args = process.argv.slice(2);
if (args[0] === "--child") {
  await runBenchProcess(bench, () => child(args[1] as Isolation, Number(args[2]), args[3] as string));
} else {
  await runBenchProcess(bench, async () => {
    if (pluginCount < 1) throw new RangeError("BENCH_PLUGINS must be at least 1");
    const folder = benchFolder(bench);
    try {
      for (const count of [0, pluginCount]) {
        const plugins = path.join(folder.path, `plugins-${count}`);
        mkdirSync(plugins);
        for (let p = 0; p < count; p++) writeFileSync(path.join(plugins, `memory${p}.ts`), pluginCode(p));
      }
      const perPlugin: Record<Isolation, number[]> = { worker: [], none: [] };
      const idlePerPlugin: Record<Isolation, number[]> = { worker: [], none: [] };
      for (let r = 0; r < runs; r++) {
        for (const isolation of ["worker", "none"] as const) {
          // In turn, not at once: children measured side by side would compete for memory.
          const empty = await measure(isolation, 0, folder.path);
          const full = await measure(isolation, pluginCount, folder.path);
          perPlugin[isolation].push((full.rss - empty.rss) / pluginCount / MiB);
          idlePerPlugin[isolation].push((full.idleRss - empty.idleRss) / pluginCount / MiB);
        }
      }
      const value = median(perPlugin.worker);
      const baseline = median(perPlugin.none);
      if (!(baseline > 0)) {
        throw new Error(
          `the in-process baseline is not measurable: ${baseline.toFixed(3)} MiB per plugin (runs: ${perPlugin.none.map((v) => v.toFixed(3)).join(", ")}); raise BENCH_PLUGINS or BENCH_RUNS`,
        );
      }
      emit({ bench, metric: "rss-mb-per-plugin", value, unit: "MiB", baseline });
      emit({
        bench,
        metric: "idle-rss-mb-per-plugin",
        value: median(idlePerPlugin.worker),
        unit: "MiB",
        baseline: median(idlePerPlugin.none),
      });
    } finally {
      folder.remove();
    }
  });
}
