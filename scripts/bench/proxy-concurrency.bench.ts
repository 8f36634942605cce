// Bench `proxy-concurrency`: BENCH_CONVERSATIONS [500] streaming conversations open at once
// through one proxy (issue 47). The proxy runs in a process of its own on the compiled
// sources, as an installed package runs (proxy-child.ts; SQLite store, 2 plugins of 10
// sources in workers). The upstream streams each answer as a model does: a first event after
// 50 ms, then 100 events 100 ms apart (~10 s a stream). Each round starts every conversation's
// request, spread evenly over 80 % of a stream's length, so that all of them are open at once
// before the first ends (the bench checks it). Four rounds: straight to the upstream; through
// the proxy (each conversation's first turn: its Baseline); through the proxy again (the next
// turn: a boundary that extends it); straight again.
//
// Metrics:
//   errors        requests that failed (a status other than 200, a broken stream, a proxied
//                 request forwarded without context); baseline: the proxied requests. Goal: 0.
//   rss-mib       the proxy process's peak RSS (VmHWM); baseline: its RSS when idle before the
//                 load. Goal: value ≤ 300 MiB.
//   added-p99-ms  p99 time to the first byte of the proxied requests − the p99 of the direct
//                 ones; baseline: the direct p99. Goal: value ≤ 20 ms.
//
// Environment: BENCH_CONVERSATIONS [500; 50 with BENCH_QUICK=1].

import { readFileSync } from "node:fs";
import path from "node:path";
import { emit, envInt } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { startProxyChild } from "./proxy-child-process.ts";
import { claudeCodeBody, startBenchUpstream, writeBenchPlugins } from "./proxy-world.ts";

const bench = "proxy-concurrency";
const isQuick = process.env.BENCH_QUICK === "1";
const count = envInt("BENCH_CONVERSATIONS", isQuick ? 50 : 500);
const stream = { firstMs: 50, gapMs: 100, events: 100 };
const streamMs = stream.firstMs + stream.gapMs * stream.events;

const memoryOf = (pid: number, field: "VmRSS" | "VmHWM") => {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? Number.NaN) / 1024;
};
const p99 = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * 0.99) - 1)] as number;

await runBenchProcess(bench, async () => {
  const folder = benchFolder(bench);
  writeBenchPlugins(path.join(folder.path, "plugins"), 2, 10, path.join(folder.path, "tick"));
  const upstream = await startBenchUpstream(stream);
  const child = await startProxyChild(folder.path, upstream.url);
  const { url } = child;
  try {
    const idle = memoryOf(child.pid, "VmRSS");
    let failed = 0;
    let open = 0;
    let mostOpen = 0;
    /** One round: every conversation's next request, started evenly spread; their times to the first byte. */
    const round = async (base: string, turn: number): Promise<number[]> => {
      const spacing = (streamMs * 0.8) / count;
      const startedAt = performance.now();
      return Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const body = claudeCodeBody({ turns: 9 + turn, textBytes: 300, label: `k${i}`, stream: true });
          const wait = startedAt + i * spacing - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          const sentAt = performance.now();
          open++;
          mostOpen = Math.max(mostOpen, open);
          let firstByte = Number.NaN;
          try {
            const response = await fetch(`${base}/v1/messages`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-api-key": "sk-bench" },
              body,
            });
            const reader = (response.body as ReadableStream<Uint8Array>).getReader();
            let text = "";
            for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
              if (Number.isNaN(firstByte)) firstByte = performance.now() - sentAt;
              text += new TextDecoder().decode(chunk.value);
            }
            if (response.status !== 200 || !text.includes("message_stop")) failed++;
          } catch {
            failed++;
          } finally {
            open--;
          }
          return firstByte;
        }),
      );
    };
    const rounds = [
      { name: "direct, turn 1", ms: await round(upstream.url, 0) },
      { name: "proxied, turn 1 (Baselines)", ms: await round(url, 0) },
      { name: "proxied, turn 2", ms: await round(url, 1) },
      { name: "direct, turn 2", ms: await round(upstream.url, 1) },
    ];
    for (const { name, ms } of rounds) {
      const sorted = ms.filter((each) => !Number.isNaN(each)).sort((a, b) => a - b);
      process.stderr.write(
        `[${bench}] ${name}: first byte p50 ${sorted[sorted.length >> 1]?.toFixed(1)} ms, p99 ${p99(sorted).toFixed(1)} ms\n`,
      );
    }
    const direct = [...(rounds[0]?.ms ?? []), ...(rounds[3]?.ms ?? [])];
    const proxied = [...(rounds[1]?.ms ?? []), ...(rounds[2]?.ms ?? [])];
    const peak = memoryOf(child.pid, "VmHWM");
    const { errors } = await child.stop();
    if (mostOpen < count) throw new Error(`at most ${mostOpen} of ${count} streams were open at once`);
    const measured = [...direct, ...proxied].filter((ms) => !Number.isNaN(ms));
    process.stderr.write(`[${bench}] ${mostOpen} streams open at once; ${measured.length} first bytes measured\n`);
    emit({ bench, metric: "errors", value: failed + errors, unit: "requests", baseline: proxied.length });
    emit({ bench, metric: "rss-mib", value: peak, unit: "MiB", baseline: idle });
    emit({
      bench,
      metric: "added-p99-ms",
      // Negative when the proxied requests' tail was the shorter one (noise: the same machine runs both).
      value: p99(proxied.filter((ms) => !Number.isNaN(ms))) - p99(direct.filter((ms) => !Number.isNaN(ms))),
      unit: "ms",
      baseline: p99(direct.filter((ms) => !Number.isNaN(ms))),
    });
  } finally {
    child.kill();
    await upstream.close();
    folder.remove();
  }
});
