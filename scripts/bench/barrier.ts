// A start barrier for the multi-process benches (`two-hosts`, `fleet`): every worker
// process opens its host, prints `READY` and waits for `GO` on stdin, so start-up time
// (tsx, the store's migrations) stays out of what is measured and all start together.
// A worker's last non-empty stdout line is its result (JSON).

import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";

const root = path.resolve(import.meta.dirname, "../..");

/** In a worker: says READY and resolves when the bench says GO. */
export async function awaitGo(): Promise<void> {
  process.stdout.write("READY\n");
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) if (line === "GO") break;
  lines.close();
}

/** Runs the worker scripts (`args` each) up to the barrier, then lets them all go; resolves with their result lines parsed. */
export async function runWorkers<T>(script: string, args: readonly (readonly string[])[]): Promise<T[]> {
  const workers = args.map((list) => {
    // BENCH_CHILD_FLAGS: more Node.js flags for the workers (say `--cpu-prof`), to profile them.
    const flags = (process.env.BENCH_CHILD_FLAGS ?? "").split(" ").filter((flag) => flag !== "");
    const child = spawn(process.execPath, [...flags, "--import", "tsx", script, ...list], {
      cwd: root,
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
    let last = "";
    const ready = new Promise<void>((resolve, reject) => {
      lines.on("line", (line) => {
        if (line === "READY") resolve();
        else if (line.trim() !== "") last = line;
      });
      child.on("error", reject);
      child.on("close", () => reject(new Error(`${path.basename(script)} stopped before READY`)));
    });
    const done = new Promise<T>((resolve, reject) => {
      child.on("close", (code, signal) => {
        if (code !== 0) reject(new Error(`${path.basename(script)} failed (code ${code}, signal ${signal})`));
        else resolve(JSON.parse(last) as T);
      });
    });
    ready.catch(() => {});
    done.catch(() => {});
    return { child, ready, done };
  });
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (error) {
    for (const w of workers) w.child.kill();
    throw error;
  }
  for (const w of workers) w.child.stdin.end("GO\n");
  return Promise.all(workers.map((w) => w.done));
}
