// The floor of plugin start-up on this machine: `count` empty worker threads started at
// once, timed until each has run its first line (the `cold-start` and `many-plugins`
// benches measure against it).

import { Worker } from "node:worker_threads";

/** Milliseconds until `count` empty workers started at once have each run their first line. */
export async function emptyWorkersMs(count: number): Promise<number> {
  const start = performance.now();
  const workers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Worker>((resolve, reject) => {
          const worker = new Worker(`require("node:worker_threads").parentPort.postMessage("up")`, { eval: true });
          worker.once("message", () => resolve(worker));
          worker.once("error", reject);
        }),
    ),
  );
  const ms = performance.now() - start;
  await Promise.all(workers.map((worker) => worker.terminate()));
  return ms;
}
