// A context proxy in a process of its own, for the proxy-concurrency bench (so its memory is
// its own): started on the folder and upstream given as arguments, it prints its URL as one
// JSON line and runs until stdin closes.

import { createContextProxy } from "../../core/index.ts";
import { benchProxyOptions } from "./proxy-world.ts";

const [folder, upstream] = process.argv.slice(2) as [string, string];
const proxy = await createContextProxy(benchProxyOptions(folder, upstream));
let errors = 0;
proxy.onBoundary((event) => {
  if (event.forwarded !== "with-context" || event.outcome !== "relayed") errors++;
});
process.stdout.write(`${JSON.stringify({ url: proxy.url })}\n`);
process.stdin.resume();
process.stdin.on("end", async () => {
  process.stdout.write(`${JSON.stringify({ errors })}\n`);
  await proxy.close();
  process.exit(0);
});
