// A context proxy in a process of its own, as users run `context-host proxy` (and, through
// `startProxyChild`, as the proxy benches run it from the compiled package): started on the
// folder and upstream given as arguments (and BENCH_ISOLATION), it prints its URL as one
// JSON line, runs until stdin closes, then prints what it forwarded as one more line.

import { createContextProxy } from "../../core/index.ts";
import { benchProxyOptions } from "./proxy-world.ts";

const [folder, upstream] = process.argv.slice(2) as [string, string];
const proxy = await createContextProxy({
  ...benchProxyOptions(folder, upstream),
  ...(process.env.BENCH_ISOLATION === "none" ? { isolation: "none" as const } : {}),
});
const report = { errors: 0, withContext: 0, updates: 0, firstError: "", boundaryMs: [] as number[], totalMs: [] as number[] };
proxy.onBoundary((event) => {
  report.boundaryMs.push(event.timings.boundaryMs);
  report.totalMs.push(event.timings.totalMs);
  if (event.forwarded === "with-context") report.withContext++;
  if (event.update !== undefined) report.updates++;
  if (event.forwarded !== "with-context" || event.outcome !== "relayed") {
    report.errors++;
    report.firstError ||= `${event.forwarded} ${event.outcome}: ${event.reason ?? event.error ?? ""}`;
  }
});
const sources = proxy.engine.plugins().reduce((sum, plugin) => sum + plugin.keys.length, 0);
process.stdout.write(`${JSON.stringify({ url: proxy.url, sources })}\n`);
process.stdin.resume();
process.stdin.on("end", async () => {
  process.stdout.write(`${JSON.stringify(report)}\n`);
  await proxy.close();
  process.exit(0);
});
