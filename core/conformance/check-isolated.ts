// Owns checking a plugin the way the host runs it (decision 083): in a worker thread of its
// own, with a heap limit and a deadline on the host's clock. What the plugin does to its
// thread (a loop, `process.exit`, an uncaught throw, running out of memory) becomes a
// `plugin-loads` finding naming the plugin; the caller goes on with the next plugin.

import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { messageOf } from "../base/errors.ts";
import { bundleWorkerProgram } from "../plugins/worker/plugin-worker.ts";
import { type CheckPluginOptions, type PluginFinding, provisionalPluginName } from "./check-plugin.ts";

const entryFile = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./check-worker.ts" : "./check-worker.js", import.meta.url),
);
// The captured timer: nothing in this realm runs plugin code, but keep the deadline's own.
const { setTimeout: startTimer, clearTimeout: stopTimer } = globalThis;
let program: Promise<string> | undefined;

/** How `checkPluginIsolated` runs one plugin's check: the check's own options, and its worker's bounds. */
export interface IsolatedCheckOptions extends CheckPluginOptions {
  /** How long one plugin's whole check may take, ms (default 60 s). */
  readonly checkDeadlineMs?: number;
  /** Heap limit of the check's worker, MiB (default 256). */
  readonly heapMb?: number;
}

/** Runs `checkPlugin` on one plugin in a worker of its own; never rejects for what the plugin does. */
export async function checkPluginIsolated(file: string, options: IsolatedCheckOptions = {}): Promise<PluginFinding[]> {
  const { checkDeadlineMs = 60_000, heapMb = 256, ...checkOptions } = options;
  program ??= bundleWorkerProgram(entryFile, ["esbuild"]).catch((error: unknown) => {
    program = undefined;
    throw error;
  });
  const code = await program;
  const plugin = provisionalPluginName(file);
  const failed = (message: string, fix: string): PluginFinding[] => [
    { file, plugin, check: "plugin-loads", severity: "error", message, fix },
  ];
  return new Promise<PluginFinding[]>((resolve) => {
    let settled = false;
    let lastError: unknown;
    const worker = new Worker(code, {
      eval: true,
      workerData: { file, options: checkOptions },
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
      stdout: true,
      stderr: true,
    });
    // What the plugin prints is not the check's output.
    worker.stdout.resume();
    worker.stderr.resume();
    const finish = (findings: PluginFinding[]) => {
      if (settled) return;
      settled = true;
      stopTimer(timer);
      void worker.terminate().catch(() => {});
      resolve(findings);
    };
    const timer = startTimer(
      () =>
        finish(
          failed(
            `the check did not finish within ${checkDeadlineMs} ms (its worker was stopped)`,
            "make module code, setup, loaders, renderers and disposers settle",
          ),
        ),
      checkDeadlineMs,
    );
    worker.on("message", (message: { ok: boolean; findings?: PluginFinding[]; message?: string }) => {
      if (message.ok && Array.isArray(message.findings)) finish(message.findings);
      else finish(failed(`the check itself failed: ${message.message ?? "no reason"}`, "report this as a context-host bug"));
    });
    worker.on("error", (error) => {
      lastError = error;
    });
    worker.on("exit", (exitCode) => {
      const error = lastError as (Error & { code?: string }) | undefined;
      const why =
        error?.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `ran out of memory (heap limit ${heapMb} MiB)`
          : error !== undefined
            ? `crashed: ${messageOf(error)}`
            : `ended with exit code ${exitCode}`;
      finish(
        failed(
          `the plugin's worker ${why} before its check finished`,
          "do not call process.exit, let no error or rejection go unhandled, keep memory bounded",
        ),
      );
    });
  });
}
