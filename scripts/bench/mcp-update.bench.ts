// Bench `mcp-update`: from a resource's update notification to the change admitted at the next
// boundary. A host exposes BENCH_MCP_RESOURCES [50; 50] subscribed resources of an MCP server
// (the SDK's server API over Streamable HTTP on 127.0.0.1, in this process). Before every boundary
// one resource changes and its server notifies; the boundary must admit exactly that change.
//
// Metric `reads-per-update`: the reads the server counted over the measured boundaries, per
// update (goal exactly 1: only the changed resource is read). Baseline: the same for a host whose
// server offers no subscriptions and no `ttlMs` hint (every resource read at every boundary).
// Metric `read-ms`: the median time of the boundary's read of the changed resource, as the host
// measured it. Baseline: the same `resources/read` by a bare SDK client on the same server,
// subscribed too, reading each resource once its update notification arrived.
//
// Environment (defaults in brackets, quick defaults after the semicolon; BENCH_QUICK=1 makes the
// quick ones the defaults): BENCH_MCP_RESOURCES [50; 50], BENCH_RUNS [200; 20], BENCH_WARMUP
// [20; 3], BENCH_TMPDIR.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createHost, type Host, type HostOptions, type Provider } from "../../core/index.ts";
import { startHttpWorld, type World, type WorldState } from "./mcp-world.ts";
import { emit, envInt, median, timeOnce } from "./measure.ts";

const isQuick = process.env.BENCH_QUICK === "1";
const size = envInt("BENCH_MCP_RESOURCES", 50);
const runs = envInt("BENCH_RUNS", isQuick ? 20 : 200);
const warmup = envInt("BENCH_WARMUP", isQuick ? 3 : 20);
const runsPerSession = 50;
if (size < 1) throw new RangeError("BENCH_MCP_RESOURCES must be at least 1");

const uriOf = (i: number) => `bench://resource/${String(i).padStart(3, "0")}`;
const state: WorldState = {
  resources: Array.from({ length: size }, (_, i) => ({ uri: uriOf(i), name: `Resource ${i}`, text: `Resource ${i}: value 0` })),
};

const dataDir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-mcp-update-"));
const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
process.once("SIGTERM", () => {
  cleanUp();
  process.exit(143);
});

const provider: Provider = { send: async () => ({ text: "ok" }) };
const hostOptions = (name: string, url: string): HostOptions => ({
  dataDir: path.join(dataDir, name),
  providers: { scripted: provider },
  plugins: [],
  watch: false,
  builtins: false,
  mcpServers: { bench: { url, resources: ["*"], instructions: false, deadlineMs: 10_000 } },
});
const readsOf = (world: World) => [...world.reads.values()].reduce((sum, n) => sum + n, 0);

async function freshSession(host: Host): Promise<string> {
  const id = await host.createSession({ location: dataDir, provider: "scripted", model: "bench" });
  await host.prompt(id, "start");
  const result = await host.step(id);
  if (result.kind !== "replied") throw new Error(`first step returned "${result.kind}"`);
  return id;
}

/** Waits (untimed) until the host has marked `uri` changed: the notification arrived. */
async function marked(host: Host, uri: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (host.mcpServers()[0]?.resources.find((r) => r.uri === uri)?.state !== "changed") {
    if (Date.now() > deadline) throw new Error(`the update of ${uri} was not marked within 10 s`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `runs` boundaries on `host`, one update before each; the reads per update and the host's read times. */
async function updates(
  host: Host,
  world: World,
  wait: boolean,
  runs: number,
): Promise<{ readsPerUpdate: number; readMs: number[] }> {
  let id = "";
  let reads = 0;
  const readMs: number[] = [];
  for (let run = 0; run < warmup + runs; run++) {
    if (run % runsPerSession === 0) id = await freshSession(host);
    const readsBefore = readsOf(world);
    const uri = uriOf(run % size);
    await world.apply({ op: "update", uri, text: `Resource ${run % size}: value ${run + 1}` });
    if (wait) await marked(host, uri);
    await host.prompt(id, `prompt ${run}`);
    const result = await host.step(id);
    if (result.kind !== "replied") throw new Error(`step returned "${result.kind}"`);
    if (run >= warmup) reads += readsOf(world) - readsBefore;
    const admitted = result.request.messages.at(-1);
    if (admitted?.role !== "system-update" || !admitted.text.includes(`value ${run + 1}`)) {
      throw new Error(`boundary ${run} did not admit the update of ${uri}`);
    }
    const ms = host.mcpServers()[0]?.resources.find((r) => r.uri === uri)?.readMs;
    if (run >= warmup && ms !== undefined) readMs.push(ms);
  }
  return { readsPerUpdate: reads / runs, readMs };
}

const subscribed = await startHttpWorld(state);
const polled = await startHttpWorld({ ...state, subscribe: false });
const bare = new Client({ name: "bench", version: "0.0.0" });
try {
  const host = await createHost(hostOptions("subscribed", subscribed.url));
  const polling = await createHost(hostOptions("polling", polled.url));
  const measured = await updates(host, subscribed.world, true, runs);
  // The polling host reads every resource at every boundary: a few boundaries tell.
  const baseline = await updates(polling, polled.world, false, Math.min(runs, 20));

  // The same read by a bare SDK client in the same conditions: subscribed, it reads a resource
  // once its update notification arrived.
  let notified: string | undefined;
  bare.setNotificationHandler("notifications/resources/updated", (notification) => {
    notified = notification.params.uri;
  });
  await bare.connect(new StreamableHTTPClientTransport(new URL(subscribed.url)));
  await Promise.all(state.resources.map((resource) => bare.subscribeResource({ uri: resource.uri })));
  const bareMs: number[] = [];
  for (let run = 0; run < warmup + runs; run++) {
    const uri = uriOf(run % size);
    notified = undefined;
    await subscribed.world.apply({ op: "update", uri, text: `bare ${run}` });
    const deadline = Date.now() + 10_000;
    while (notified !== uri) {
      if (Date.now() > deadline) throw new Error(`the bare client got no notification for ${uri} within 10 s`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const ms = await timeOnce(() => bare.readResource({ uri }, { cacheMode: "bypass" }));
    if (run >= warmup) bareMs.push(ms);
  }
  await Promise.all([host.close(), polling.close()]);
  emit({
    bench: "mcp-update",
    metric: "reads-per-update",
    value: measured.readsPerUpdate,
    unit: "reads",
    baseline: baseline.readsPerUpdate,
  });
  emit({ bench: "mcp-update", metric: "read-ms", value: median(measured.readMs), unit: "ms", baseline: median(bareMs) });
} finally {
  await bare.close().catch(() => {});
  await Promise.all([subscribed.close(), polled.close()]);
  cleanUp();
}
