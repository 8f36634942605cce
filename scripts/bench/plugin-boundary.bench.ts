// Bench `plugin-boundary`: what plugin isolation (issue 10) adds to a Safe Provider-Turn
// Boundary. Two hosts (createHost, real SQLite files, a provider that answers at once)
// load the same plugin folder: BENCH_PLUGINS [10] plugins of BENCH_SOURCES/BENCH_PLUGINS
// sources each, BENCH_SOURCES [50] Context Sources in all. One host runs them isolated
// (`isolation: "worker"`, each plugin in its own worker), the other in-process
// (`isolation: "none"`).
//
// Timed: one `host.step` on a session whose Baseline is already established, with EVERY
// plugin source changed since the last boundary (the worst case for the boundary between
// host and plugins: every loader runs, every value crosses it, and every source's update
// text is rendered and crosses back into one Mid-Conversation System Message). Untimed
// before every run: the tick file every loader reads is rewritten and a prompt admitted
// in both hosts. The two hosts are measured interleaved in the same run (measure.ts).
//
// Metrics:
//   boundary-ms  median ms of the isolated host's step; baseline: the in-process host's.
//                Goal: ratio ≤ 4.
//   added-ms     the absolute added latency (isolated − in-process medians); baseline:
//                the in-process median (so the ratio is the relative overhead, ratio − 1 of
//                the line above).
//
// Each source renders the id of the thread its plugin runs on, and the bench fails unless
// the isolated host's plugins run off the host's thread and the in-process host's on it:
// a host that ignored the option would otherwise be measured against itself.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1):
// BENCH_PLUGINS [10; 10], BENCH_SOURCES [50; 50], BENCH_RUNS [100; 10],
// BENCH_WARMUP [10; 2], BENCH_TMPDIR.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createHost, type Host, type Provider } from "../../core/index.ts";
import { emit, envInt, timeMedians } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";

const bench = "plugin-boundary";
const isQuick = process.env.BENCH_QUICK === "1";
const pluginCount = envInt("BENCH_PLUGINS", 10);
const sourceCount = envInt("BENCH_SOURCES", 50);
const runs = envInt("BENCH_RUNS", isQuick ? 10 : 100);
const warmup = envInt("BENCH_WARMUP", isQuick ? 2 : 10);
const runsPerSession = 50;
if (pluginCount < 1 || sourceCount < pluginCount)
  throw new RangeError("need BENCH_PLUGINS ≥ 1 and BENCH_SOURCES ≥ BENCH_PLUGINS");

/** Plugin `p`'s source count: the sources spread evenly, the first plugins take the remainder. */
const sourcesOf = (p: number) => Math.floor(sourceCount / pluginCount) + (p < sourceCount % pluginCount ? 1 : 0);

function pluginCode(p: number, tickFile: string): string {
  return `import { readFileSync } from "node:fs";
import { threadId } from "node:worker_threads";
import { definePlugin } from "context-host";
import Type from "typebox";

const schema = Type.Object({ tick: Type.Integer(), item: Type.Integer(), tags: Type.Array(Type.String()), thread: Type.Integer() });
const describe = (v) => "item " + v.item + " at tick " + v.tick + ", tags " + v.tags.join(", ") + " (thread " + v.thread + ")";

export default definePlugin({
  name: "bench${p}",
  setup(api) {
    for (let i = 0; i < ${sourcesOf(p)}; i++) {
      api.source({
        key: "bench${p}/s" + String(i).padStart(3, "0"),
        schema,
        load: () => ({ tick: Number(readFileSync(${JSON.stringify(tickFile)}, "utf8")), item: i, tags: ["bench", "group-" + (i % 7)], thread: threadId }),
        baseline: (v) => "Plugin ${p}, " + describe(v) + ".",
        update: (_previous, v) => "Plugin ${p}, " + describe(v) + " now.",
      });
    }
  },
});
`;
}

/** The thread ids the sources of a rendered text report. */
function threadsIn(text: string): Set<number> {
  return new Set([...text.matchAll(/\(thread (\d+)\)/g)].map((m) => Number(m[1])));
}

await runBenchProcess(bench, async () => {
  const folder = benchFolder(bench);
  const hosts: Host[] = [];
  try {
    const plugins = path.join(folder.path, "plugins");
    mkdirSync(plugins);
    const tickFile = path.join(folder.path, "tick.txt");
    writeFileSync(tickFile, "0");
    for (let p = 0; p < pluginCount; p++) writeFileSync(path.join(plugins, `bench${p}.ts`), pluginCode(p, tickFile));
    // Answers at once and keeps nothing (a scripted provider's recording copy is not the boundary's cost).
    const provider: Provider = { send: async () => ({ text: "ok" }) };

    const open = async (isolation: "worker" | "none") => {
      const dataDir = path.join(folder.path, `data-${isolation}`);
      const host = await createHost({
        dataDir,
        providers: { bench: provider },
        builtins: false,
        plugins: [plugins],
        watch: false,
        isolation,
      });
      hosts.push(host);
      const keys = host.plugins().flatMap((plugin) => plugin.keys);
      if (keys.length !== sourceCount)
        throw new Error(`isolation ${isolation}: ${keys.length} plugin sources active, expected ${sourceCount}`);
      return { isolation, host, id: "" };
    };
    const isolated = await open("worker");
    const inProcess = await open("none");

    /** A fresh session whose first boundary (the Baseline) is not measured; checks where its plugins ran. */
    const newSession = async (side: typeof isolated) => {
      side.id = await side.host.createSession({ location: folder.path, provider: "bench", model: "bench" });
      await side.host.prompt(side.id, "start");
      const first = await side.host.step(side.id);
      if (first.kind !== "replied") throw new Error(`isolation ${side.isolation}: first step returned "${first.kind}"`);
      const threads = threadsIn(first.request.system.join("\n"));
      const onHostThread = threads.has(0);
      if (threads.size === 0 || (side.isolation === "worker" ? onHostThread : !onHostThread || threads.size > 1)) {
        throw new Error(
          `isolation ${side.isolation}: plugin sources ran on thread(s) ${[...threads].join(", ") || "(none rendered)"}; ` +
            `expected ${side.isolation === "worker" ? "worker threads, not the host's thread 0" : "the host's thread 0 only"}`,
        );
      }
    };

    const stepOf = (side: typeof isolated) => async () => {
      const result = await side.host.step(side.id);
      if (result.kind !== "replied") throw new Error(`isolation ${side.isolation}: step returned "${result.kind}"`);
      const update = result.request.messages.at(-1);
      // Every source changed: its one Mid-Conversation System Message names every source.
      const text = update !== undefined && "text" in update ? update.text : "";
      const updated = (text.match(/ now\./g) ?? []).length;
      if (updated !== sourceCount)
        throw new Error(`isolation ${side.isolation}: ${updated} sources updated, expected ${sourceCount}`);
    };

    const [isolatedMs, inProcessMs] = await timeMedians([stepOf(isolated), stepOf(inProcess)], {
      runs,
      warmup,
      setup: async (run) => {
        for (const side of [isolated, inProcess]) if (run % runsPerSession === 0) await newSession(side);
        writeFileSync(tickFile, String(run + 1));
        for (const side of [isolated, inProcess]) await side.host.prompt(side.id, `prompt ${run}`);
      },
    });
    const value = isolatedMs as number;
    const baseline = inProcessMs as number;
    emit({ bench, metric: "boundary-ms", value, unit: "ms", baseline });
    emit({ bench, metric: "added-ms", value: value - baseline, unit: "ms", baseline });
  } finally {
    for (const host of hosts) await host.close();
    folder.remove();
  }
});
