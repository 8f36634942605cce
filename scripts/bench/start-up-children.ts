// What the start-up benches (`cold-start`, `many-plugins`) share: each measure runs in a
// child process of its own that prints one JSON line, and the floor of plugin start-up on
// this machine, `count` empty worker threads started at once.

import { spawn } from "node:child_process";
import { Worker } from "node:worker_threads";

/** Runs `file` under tsx with `args` in a child process (in `cwd`, with `env`); resolves with the JSON line it printed (a non-zero exit rejects with its stderr). */
export function runJsonChild<T>(
  file: string,
  args: readonly string[],
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", file, ...args], { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    proc.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      if (code !== 0) return reject(new Error(`child exited with ${signal ?? code}: ${stderr}`));
      resolve(JSON.parse(stdout.trim()) as T);
    });
  });
}

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
