// Bench `proxy-concurrency`: BENCH_CONVERSATIONS [500] streaming conversations at once
// through one proxy (issue 47). The proxy runs in a process of its own (proxy-child.ts; SQLite
// store, 2 plugins of 10 sources in workers), the upstream streams each answer (first event
// after 20 ms, then 5 events 10 ms apart). Four rounds, each every conversation at once:
// straight to the upstream; through the proxy (each conversation's first turn: its Baseline);
// through the proxy again (the next turn: a boundary that extends it); straight again.
// Latency is to the stream's last byte.
//
// Metrics:
//   errors        requests that failed (a status other than 200, a broken stream, a request
//                 forwarded without context); baseline: the proxied requests. Goal: 0.
//   rss-mib       the proxy process's peak RSS (VmHWM); baseline: its RSS when idle before the
//                 load. Goal: value ≤ 300 MiB.
//   added-p99-ms  p99 latency of the proxied requests − p99 of the direct ones; baseline: the
//                 direct p99. Goal: value ≤ 20 ms.
//
// Environment: BENCH_CONVERSATIONS [500; 50 with BENCH_QUICK=1].

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { emit, envInt } from "./measure.ts";
import { benchFolder, runBenchProcess } from "./plugin-fixtures.ts";
import { claudeCodeBody, startBenchUpstream, writeBenchPlugins } from "./proxy-world.ts";

const bench = "proxy-concurrency";
const isQuick = process.env.BENCH_QUICK === "1";
const count = envInt("BENCH_CONVERSATIONS", isQuick ? 50 : 500);

const memoryOf = (pid: number, field: "VmRSS" | "VmHWM") => {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? Number.NaN) / 1024;
};
const p99 = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * 0.99) - 1)] as number;

await runBenchProcess(bench, async () => {
  const folder = benchFolder(bench);
  writeBenchPlugins(path.join(folder.path, "plugins"), 2, 10, path.join(folder.path, "tick"));
  const upstream = await startBenchUpstream({ firstMs: 20, gapMs: 10, events: 5 });
  const extension = path.extname(import.meta.filename);
  const child = spawn(
    process.execPath,
    [
      ...(extension === ".ts" ? ["--import", "tsx"] : []),
      path.join(import.meta.dirname, `proxy-child${extension}`),
      folder.path,
      upstream.url,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  try {
    const { url } = JSON.parse((await lines.next()).value as string) as { url: string };
    const idle = memoryOf(child.pid as number, "VmRSS");
    let failed = 0;
    const round = async (base: string, turn: number): Promise<number[]> =>
      Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const body = claudeCodeBody({ turns: 9 + turn, textBytes: 300, label: `k${i}`, stream: true });
          const startedAt = performance.now();
          try {
            const response = await fetch(`${base}/v1/messages`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-api-key": "sk-bench" },
              body,
            });
            const text = await response.text();
            if (response.status !== 200 || !text.includes("message_stop")) failed++;
          } catch {
            failed++;
          }
          return performance.now() - startedAt;
        }),
      );
    const direct = await round(upstream.url, 0);
    const proxied = [...(await round(url, 0)), ...(await round(url, 1))];
    direct.push(...(await round(upstream.url, 1)));
    const peak = memoryOf(child.pid as number, "VmHWM");
    (child.stdin as NodeJS.WritableStream).end();
    const { errors } = JSON.parse((await lines.next()).value as string) as { errors: number };
    emit({ bench, metric: "errors", value: failed + errors, unit: "requests", baseline: proxied.length });
    emit({ bench, metric: "rss-mib", value: peak, unit: "MiB", baseline: idle });
    emit({ bench, metric: "added-p99-ms", value: Math.max(0, p99(proxied) - p99(direct)), unit: "ms", baseline: p99(direct) });
  } finally {
    child.kill();
    await upstream.close();
    folder.remove();
  }
});
