// Bench `proxy-overhead`: what the context proxy adds to one request (issue 47). A client
// sends a Claude Code-shaped Messages body (~100 KB, 100 messages, a trailing environment
// message with a cache marker) either straight to an upstream that answers at once, or
// through the proxy (real SQLite store; BENCH_PLUGINS [2] plugins of BENCH_SOURCES_EACH [10]
// sources, 20 in all, each plugin in its worker). Each run sends the next turn of one of
// 40 conversations in turn (its history grows by two messages), so every proxied request
// runs a real boundary — observe every source, compare, commit — on a history of about 100
// messages; every 10th run one source changes and its update is admitted. The warm-up covers
// each conversation's first request (its Baseline). Direct and proxied calls alternate
// (measure.ts), the same bytes each.
//
// The proxy runs as users run it: `context-host proxy` in a process of its own, from the
// compiled package (proxy-child.ts). The same measure is then taken once more with the proxy
// in the bench's own process, sharing one thread with the client and the upstream.
//
// Metrics:
//   added-ms     median proxied − median direct; baseline: the median time to JSON.parse
//                and JSON.stringify the same body (the floor of any proxy that reads it).
//                Goals: value ≤ 2 ms, ratio ≤ 3.
//   request-ms   median proxied request; baseline: the median direct one.
//   added-ms-in-process  added-ms with the proxy in the bench's process and thread.
//   bare-added-ms  what the least proxy that reads the body adds (bare-forwarder.ts: read,
//                parse, stringify, forward; in a process of its own), median bare − median
//                direct; baseline: parse + stringify. The floor of `added-ms` on this machine.
//   added-over-bare-ms  median proxied − median bare: what sessions, sources and placement
//                add to that floor; baseline: the bare forwarder's added-ms.
//
// Environment: BENCH_RUNS [200; 20 with BENCH_QUICK=1], BENCH_WARMUP [40; 40], BENCH_PLUGINS,
// BENCH_SOURCES_EACH, BENCH_TMPDIR; BENCH_ISOLATION=none runs the plugins in the proxy's
// thread; BENCH_COLLECT=1 forces a full collection before every call.

import { writeFileSync } from "node:fs";
import path from "node:path";
import { createContextProxy } from "../../core/index.ts";
import { emit, envInt, median, timeMedians } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { startBareForwarder, startProxyChild } from "./proxy-child-process.ts";
import { benchProxyOptions, claudeCodeBody, startBenchUpstream, writeBenchPlugins } from "./proxy-world.ts";

const bench = "proxy-overhead";
const isQuick = process.env.BENCH_QUICK === "1";
const runs = envInt("BENCH_RUNS", isQuick ? 20 : 200);
const conversations = 40;
const warmup = envInt("BENCH_WARMUP", conversations);
const plugins = envInt("BENCH_PLUGINS", 2);
const sourcesEach = envInt("BENCH_SOURCES_EACH", 10);
const baseTurns = 49; // 1 + 2 × 49 history messages + the trailing environment message = 100, at first

/** A proxy to measure, started on the bench folder and the upstream; `stop` checks what it forwarded. */
interface Measured {
  readonly url: string;
  readonly sources: number;
  stop(): Promise<{
    errors: number;
    updates: number;
    firstError: string;
    boundaryMs: readonly number[];
    totalMs: readonly number[];
  }>;
}

/** The proxy as users run it: `context-host proxy` in a process of its own, from the compiled package. */
async function ownProcess(folder: string, upstream: string): Promise<Measured> {
  return startProxyChild(folder, upstream);
}

/** The proxy in the bench's own process, sharing its thread with the client and the upstream. */
async function inProcess(folder: string, upstream: string): Promise<Measured> {
  const proxy = await createContextProxy({
    ...benchProxyOptions(folder, upstream),
    ...(process.env.BENCH_ISOLATION === "none" ? { isolation: "none" as const } : {}),
  });
  return {
    url: proxy.url,
    sources: proxy.engine.plugins().reduce((sum, plugin) => sum + plugin.keys.length, 0),
    stop: async () => {
      const events = proxy.recent();
      await proxy.close();
      const failed = events.filter((event) => event.forwarded !== "with-context");
      return {
        errors: failed.length,
        updates: events.filter((event) => event.update !== undefined).length,
        firstError: failed[0]?.reason ?? "",
        boundaryMs: events.map((event) => event.timings.boundaryMs),
        totalMs: events.map((event) => event.timings.totalMs),
      };
    },
  };
}

/** Medians of one layout: direct, proxied, through the bare forwarder, and the parse + stringify floor, over the same bodies. */
async function measure(layout: (folder: string, upstream: string) => Promise<Measured>) {
  const folder = benchFolder(bench);
  const tickFile = path.join(folder.path, "tick");
  writeBenchPlugins(path.join(folder.path, "plugins"), plugins, sourcesEach, tickFile);
  const upstream = await startBenchUpstream({ firstMs: 0, gapMs: 0, events: 1 });
  const proxy = await layout(folder.path, upstream.url);
  const bare = await startBareForwarder(upstream.url);
  try {
    if (proxy.sources !== plugins * sourcesEach) {
      throw new Error(`expected ${plugins * sourcesEach} plugin sources, loaded ${proxy.sources}`);
    }
    let body = "";
    const send = (base: string) => async () => {
      const response = await fetch(`${base}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01" },
        body,
      });
      if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    const floor = () => JSON.stringify(JSON.parse(body));
    const sizes: number[] = [];
    const [direct, proxied, forwarded, parsed] = await timeMedians([send(upstream.url), send(proxy.url), send(bare.url), floor], {
      // No forced full collection before each call (decision 204): a running proxy's garbage is
      // collected when V8 chooses.
      collect: process.env.BENCH_COLLECT === "1",
      runs,
      warmup,
      setup(run) {
        if (run % 10 === 9) writeFileSync(tickFile, String(run));
        const turn = Math.floor(run / conversations);
        body = claudeCodeBody({ turns: baseTurns + turn, textBytes: 650, label: `c${run % conversations}`, stream: false });
        sizes.push(body.length);
      },
    });
    const report = await proxy.stop();
    if (report.errors > 0) throw new Error(`${report.errors} request(s) went unchanged: ${report.firstError}`);
    if (report.updates === 0) throw new Error("no update was admitted");
    return {
      direct: direct as number,
      proxied: proxied as number,
      parsed: parsed as number,
      bare: forwarded as number,
      size: median(sizes),
      boundary: median(report.boundaryMs),
      inProxy: median(report.totalMs),
    };
  } finally {
    bare.stop();
    await upstream.close();
    folder.remove();
  }
}

await runBenchProcess(bench, async () => {
  const own = await measure(ownProcess);
  const shared = await measure(inProcess);
  for (const [name, m] of [
    ["own process", own],
    ["in process", shared],
  ] as const) {
    process.stderr.write(
      `[${bench}] ${name}: body ${Math.round((m.size / 1024) * 10) / 10} KiB median; direct ${m.direct.toFixed(3)} ms, proxied ${m.proxied.toFixed(3)} ms, bare forwarder ${m.bare.toFixed(3)} ms (in the proxy ${m.inProxy.toFixed(3)}, its boundary ${m.boundary.toFixed(3)}), parse+stringify ${m.parsed.toFixed(3)} ms\n`,
    );
  }
  emit({ bench, metric: "added-ms", value: own.proxied - own.direct, unit: "ms", baseline: own.parsed });
  emit({ bench, metric: "request-ms", value: own.proxied, unit: "ms", baseline: own.direct });
  emit({ bench, metric: "added-ms-in-process", value: shared.proxied - shared.direct, unit: "ms", baseline: shared.parsed });
  emit({ bench, metric: "bare-added-ms", value: own.bare - own.direct, unit: "ms", baseline: own.parsed });
  emit({ bench, metric: "added-over-bare-ms", value: own.proxied - own.bare, unit: "ms", baseline: own.bare - own.direct });
});
