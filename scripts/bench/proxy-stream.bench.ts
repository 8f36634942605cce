// Bench `proxy-stream`: does the proxy relay a stream as it arrives (issue 47)? The upstream
// streams slowly, as a model does: its first event BENCH_FIRST_MS [100] ms after the request (a fast model's time to first token),
// then BENCH_EVENTS [10] more, BENCH_GAP_MS [20] ms apart. A client sends a Claude
// Code-shaped streaming body (~100 KB; the next turn of one of 40 conversations, as in
// proxy-overhead) straight to it or through the proxy (2 plugins of 10 sources in workers; the
// proxy in a process of its own from the compiled package, as users run it),
// alternating, and times the first byte of the response body. A proxy that buffered the
// stream would show the whole stream's time; the bench fails if any proxied response's
// first chunk came after the upstream's last event was due.
//
// Metrics:
//   ttfb-ratio   median ms to the first body byte through the proxy; baseline: straight to
//                the upstream. Goal: ratio ≤ 1.05.
//   bare-ttfb-ratio  the same through bare-forwarder.ts (read, parse, stringify, forward; in
//                a process of its own): the least any proxy that reads the body adds.
//
// Environment: BENCH_RUNS [100; 10 with BENCH_QUICK=1], BENCH_FIRST_MS, BENCH_GAP_MS, BENCH_EVENTS.

import path from "node:path";
import { emit, envInt, median, timeMedians } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { startBareForwarder, startProxyChild } from "./proxy-child-process.ts";
import { claudeCodeBody, startBenchUpstream, writeBenchPlugins } from "./proxy-world.ts";

const bench = "proxy-stream";
const isQuick = process.env.BENCH_QUICK === "1";
const runs = envInt("BENCH_RUNS", isQuick ? 10 : 100);
const firstMs = envInt("BENCH_FIRST_MS", 100);
const gapMs = envInt("BENCH_GAP_MS", 20);
const events = envInt("BENCH_EVENTS", 10);
const conversations = 40;

await runBenchProcess(bench, async () => {
  const folder = benchFolder(bench);
  writeBenchPlugins(path.join(folder.path, "plugins"), 2, 10, path.join(folder.path, "tick"));
  const upstream = await startBenchUpstream({ firstMs, gapMs, events });
  const proxy = await startProxyChild(folder.path, upstream.url);
  const bare = await startBareForwarder(upstream.url);
  try {
    let body = "";
    const lastEventDue = firstMs + gapMs * events;
    // Each call records its own time to the first byte; timeMedians only interleaves them.
    const firstBytes = { direct: [] as number[], proxied: [] as number[], bare: [] as number[] };
    let isWarm = false;
    const firstByte = (base: string, through: keyof typeof firstBytes) => async () => {
      const isProxied = through !== "direct";
      const startedAt = performance.now();
      const response = await fetch(`${base}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-bench" },
        body,
      });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      const ms = performance.now() - startedAt;
      if (isProxied && ms >= lastEventDue) throw new Error(`the first chunk came after ${ms} ms: the stream was buffered`);
      if (isWarm) firstBytes[through].push(ms);
      let text = "";
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        text += new TextDecoder().decode(chunk.value);
      if (!text.includes("message_stop")) throw new Error("the stream did not end with message_stop");
    };
    await timeMedians([firstByte(upstream.url, "direct"), firstByte(proxy.url, "proxied"), firstByte(bare.url, "bare")], {
      runs,
      warmup: conversations,
      collect: false,
      setup(run) {
        isWarm = run >= conversations;
        body = claudeCodeBody({
          turns: 49 + Math.floor(run / conversations),
          textBytes: 650,
          label: `s${run % conversations}`,
          stream: true,
        });
      },
    });
    const report = await proxy.stop();
    if (report.errors > 0)
      throw new Error(`a proxied stream went without context or was not relayed whole: ${report.firstError}`);
    emit({ bench, metric: "ttfb-ratio", value: median(firstBytes.proxied), unit: "ms", baseline: median(firstBytes.direct) });
    emit({ bench, metric: "bare-ttfb-ratio", value: median(firstBytes.bare), unit: "ms", baseline: median(firstBytes.direct) });
  } catch (error) {
    proxy.kill();
    throw error;
  } finally {
    bare.stop();
    await upstream.close();
    folder.remove();
  }
});
