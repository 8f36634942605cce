// Bench `mcp-boundary`: what MCP sources cost a boundary when nothing changed. A host exposes
// BENCH_MCP_RESOURCES [50; 50] subscribed resources of an MCP server (the SDK's server API over
// Streamable HTTP on 127.0.0.1, in this process), none of which changes.
//
// Metric `boundary-ms`: the median `host.step` (a prompt admitted, the sources observed, the
// reply committed; a provider that answers at once). Baseline, measured interleaved in the
// same run: the same host without MCP servers. Goal: ratio ≤ 1.2.
// Metric `reads-per-boundary`: the reads the server counted over the measured boundaries, per
// boundary (goal 0: an unchanged resource costs no read). Baseline: the same for a host whose
// server offers no subscriptions and no `ttlMs` hint, so every resource is read at every boundary.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes the
// quick ones the defaults): BENCH_MCP_RESOURCES [50; 50], BENCH_RUNS [200; 20], BENCH_WARMUP
// [20; 3], BENCH_GC=0 to skip the full GC before each timed call [1; 0], BENCH_TMPDIR.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHost, type Host, type HostOptions, type Provider } from "../../core/index.ts";
import { startHttpWorld, type WorldState } from "./mcp-world.ts";
import { emit, envInt, timeMedians } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const size = envInt("BENCH_MCP_RESOURCES", 50);
const runs = envInt("BENCH_RUNS", isQuick ? 20 : 200);
const warmup = envInt("BENCH_WARMUP", isQuick ? 3 : 20);
const collect = envInt("BENCH_GC", isQuick ? 0 : 1) !== 0;
const runsPerSession = 50;
if (size < 1) throw new RangeError("BENCH_MCP_RESOURCES must be at least 1");

const resources = Array.from({ length: size }, (_, i) => ({
  uri: `bench://resource/${String(i).padStart(3, "0")}`,
  name: `Resource ${i}`,
  text: `Resource ${i}: ${"steady value ".repeat(8)}`,
}));
const state: WorldState = { resources, instructions: "Bench server." };

const dataDir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-mcp-boundary-"));
const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
process.once("SIGTERM", () => {
  cleanUp();
  process.exit(143);
});

const provider: Provider = { send: async () => ({ text: "ok" }) };
const hostOptions = (name: string, extra: Partial<HostOptions>): HostOptions => ({
  dataDir: path.join(dataDir, name),
  providers: { scripted: provider },
  plugins: [],
  watch: false,
  ...extra,
});

/** A session whose first boundary (the Baseline) is done, on `host`. */
async function freshSession(host: Host): Promise<string> {
  const id = await host.createSession({ location: dataDir, provider: "scripted", model: "bench" });
  await host.prompt(id, "start");
  const result = await host.step(id);
  if (result.kind !== "replied") throw new Error(`first step returned "${result.kind}"`);
  return id;
}

const subscribed = await startHttpWorld(state);
const polled = await startHttpWorld({ ...state, subscribe: false });
try {
  const withMcp = await createHost(
    hostOptions("with-mcp", { mcpServers: { bench: { url: subscribed.url, resources: ["*"], deadlineMs: 10_000 } } }),
  );
  const without = await createHost(hostOptions("without", {}));
  const polling = await createHost(
    hostOptions("polling", { mcpServers: { bench: { url: polled.url, resources: ["*"], deadlineMs: 10_000 } } }),
  );
  const ids = { withMcp: "", without: "" };
  const readsOf = (world: typeof subscribed.world) => [...world.reads.values()].reduce((sum, n) => sum + n, 0);
  let readsBefore = 0;

  const step = (host: Host, which: keyof typeof ids) => async () => {
    const result = await host.step(ids[which]);
    if (result.kind !== "replied") throw new Error(`step returned "${result.kind}", expected "replied"`);
  };
  const [withMs, withoutMs] = await timeMedians([step(withMcp, "withMcp"), step(without, "without")], {
    runs,
    warmup,
    collect,
    setup: async (run) => {
      if (run % runsPerSession === 0) {
        ids.withMcp = await freshSession(withMcp);
        ids.without = await freshSession(without);
        const snapshot = (await withMcp.epoch(ids.withMcp))?.snapshot ?? {};
        const count = Object.keys(snapshot).filter(
          (key) => key.startsWith("mcp/bench/") && key !== "mcp/bench/instructions",
        ).length;
        if (count !== size) throw new Error(`the Baseline holds ${count} MCP resources, expected ${size}`);
      }
      if (run === warmup) readsBefore = readsOf(subscribed.world);
      await withMcp.prompt(ids.withMcp, `prompt ${run}`);
      await without.prompt(ids.without, `prompt ${run}`);
    },
  });
  const readsPerBoundary = (readsOf(subscribed.world) - readsBefore) / runs;

  // The polling host: every resource read at every boundary.
  const pollingId = await freshSession(polling);
  const pollingBefore = readsOf(polled.world);
  const pollingRuns = Math.min(runs, 20);
  for (let run = 0; run < pollingRuns; run++) {
    await polling.prompt(pollingId, `prompt ${run}`);
    const result = await polling.step(pollingId);
    if (result.kind !== "replied") throw new Error(`polling step returned "${result.kind}"`);
  }
  const pollingReads = (readsOf(polled.world) - pollingBefore) / pollingRuns;

  await Promise.all([withMcp.close(), without.close(), polling.close()]);
  emit({ bench: "mcp-boundary", metric: "boundary-ms", value: withMs as number, unit: "ms", baseline: withoutMs as number });
  emit({ bench: "mcp-boundary", metric: "reads-per-boundary", value: readsPerBoundary, unit: "reads", baseline: pollingReads });
} finally {
  await Promise.all([subscribed.close(), polled.close()]);
  cleanUp();
}
