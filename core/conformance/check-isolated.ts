// Owns checking a plugin the way the host runs it (decisions 083, 110): in a worker thread of
// its own, with a heap limit and deadlines on the host's clock. The worker says which plugin
// code runs (module code, setup, a loader, a renderer, the disposers) with the host's deadline
// for it; what the plugin does to its thread there (a busy loop past the deadline,
// `process.exit`, an uncaught throw, running out of memory) becomes a finding of that step's
// rule naming the key; the caller goes on with the next plugin. Checking several plugins
// together also finds two that declare one namespace, as a host loading both would.

import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { messageOf } from "../base/errors.ts";
import { bundleWorkerProgram } from "../plugins/bundle.ts";
import { type CheckName, type CheckPluginOptions, type PluginFinding, provisionalPluginName } from "./check-plugin.ts";
import type { CheckStep } from "./progress.ts";

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

/** Extra time an isolated check gives a step beyond the host's deadline, so the worker's own deadline wins a race. */
const graceMs = 1000;

/** The rule a step answers to, what it was running, and how to fix a step that never returned. */
function stepRule(step: CheckStep): { check: CheckName; what: string; fix: string } {
  switch (step.kind) {
    case "evaluate":
    case "setup":
      return {
        check: step.generation === 2 ? "setup-repeats" : "plugin-loads",
        what: step.kind === "evaluate" ? "the module code" : `setup (generation ${step.generation ?? 1})`,
        fix: "do no blocking work at import time or in setup; start slow work in loaders",
      };
    case "load":
      return {
        check: "loader-settles",
        what: "the loader",
        fix: "return or settle within the deadline without blocking the thread (no busy loops or synchronous waits); return SystemContext.unavailable when the value cannot be observed now",
      };
    case "value":
      return {
        check: "value-schema",
        what: "the codec (encoding or decoding a value)",
        fix: "make the codec's encode and decode quick and total",
      };
    case "dispose":
      return {
        check: "dispose-releases",
        what: `the disposers of generation ${step.generation ?? 1}`,
        fix: "let every disposer return promptly; never block the thread in one",
      };
    case "checks":
      return {
        check: "plugin-loads",
        what: "the check",
        fix: "do not call process.exit, let no error or rejection go unhandled, keep memory bounded",
      };
    default:
      return {
        check: "renderer-settles",
        what: `renderer "${step.kind}"`,
        fix: "render from the value alone, quickly; never loop or wait in a renderer",
      };
  }
}

/** Runs `checkPlugin` on one plugin in a worker of its own; never rejects for what the plugin does. */
export async function checkPluginIsolated(file: string, options: IsolatedCheckOptions = {}): Promise<PluginFinding[]> {
  return (await checkInWorker(file, options)).findings;
}

/**
 * Checks plugins as one host would load them together, each in a worker of its own (at most
 * `concurrency` at once, default 1): besides each plugin's findings, two files declaring the same
 * plugin name, of which a host loads only the one whose path sorts first (its `namespace`
 * diagnostic), are a `plugin-loads` finding of every other. Findings in the order of `files`.
 * `context-host check` runs this.
 */
export async function checkPluginsIsolated(
  files: readonly string[],
  options: IsolatedCheckOptions & { readonly concurrency?: number } = {},
): Promise<PluginFinding[]> {
  const { concurrency = 1, ...checkOptions } = options;
  const results: Array<{ findings: PluginFinding[]; name: string | undefined }> = new Array(files.length);
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < files.length) {
      const index = next++;
      results[index] = await checkInWorker(files[index] as string, checkOptions);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, work));
  const holders = new Map<string, string>();
  for (const [index, file] of files.entries()) {
    const name = results[index]?.name;
    if (name === undefined) continue;
    const holder = holders.get(name);
    if (holder === undefined || file < holder) holders.set(name, file);
  }
  return files.flatMap((file, index) => {
    const { findings, name } = results[index] as { findings: PluginFinding[]; name: string | undefined };
    const holder = name === undefined ? undefined : holders.get(name);
    if (name === undefined || holder === undefined || holder === file) return findings;
    return [
      ...findings,
      {
        file,
        plugin: name,
        check: "plugin-loads" as const,
        severity: "error" as const,
        message: `the namespace "${name}" is also declared by ${holder}, whose path sorts first: a host loading both loads that file and refuses this one`,
        fix: "give each plugin a name of its own",
      },
    ];
  });
}

async function checkInWorker(
  file: string,
  options: IsolatedCheckOptions,
): Promise<{ findings: PluginFinding[]; name: string | undefined }> {
  const { checkDeadlineMs = 60_000, heapMb = 256, ...checkOptions } = options;
  program ??= bundleWorkerProgram(entryFile, ["esbuild"]).catch((error: unknown) => {
    program = undefined;
    throw error;
  });
  const code = await program;
  let plugin = provisionalPluginName(file);
  let name: string | undefined;
  return new Promise((resolve) => {
    let settled = false;
    let lastError: unknown;
    /** The step under way, and the findings made so far: what is known if the worker never reports. */
    let current: CheckStep = { kind: "checks" };
    const made: PluginFinding[] = [];
    const stopped = (message: string, fix: string, check: CheckName = "plugin-loads", key = current.key): PluginFinding[] => [
      ...made,
      { file, plugin, ...(key === undefined ? {} : { key }), check, severity: "error", message, fix },
    ];
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
    let stepTimer: ReturnType<typeof startTimer> | undefined;
    const finish = (findings: PluginFinding[]) => {
      if (settled) return;
      settled = true;
      stopTimer(timer);
      stopTimer(stepTimer);
      void worker.terminate().catch(() => {});
      resolve({ findings, name });
    };
    const timer = startTimer(
      () =>
        finish(
          stopped(
            `the check did not finish within ${checkDeadlineMs} ms (its worker was stopped)`,
            "make module code, setup, loaders, renderers and disposers settle",
          ),
        ),
      checkDeadlineMs,
    );
    // A step of plugin code that never returns (a busy loop) cannot fire its own deadline: this one stops it, as the host does.
    const onStep = (step: CheckStep) => {
      current = step;
      stopTimer(stepTimer);
      stepTimer = undefined;
      const ms = step.ms;
      if (ms === undefined) return;
      stepTimer = startTimer(() => {
        const rule = stepRule(step);
        finish(
          stopped(
            `${rule.what} did not return within ${ms} ms; the check stopped its worker, as the host stops a plugin's worker that misses a deadline (the checks after it did not run)`,
            rule.fix,
            rule.check,
          ),
        );
      }, ms + graceMs);
    };
    worker.on("message", (message: WorkerMessage) => {
      if (message.type === "step") onStep(message.step);
      else if (message.type === "named") {
        name = message.plugin;
        plugin = message.plugin;
      } else if (message.type === "finding") {
        made.push(message.finding);
        plugin = message.finding.plugin;
      } else if (message.type === "done" && Array.isArray(message.findings)) finish(message.findings);
      else
        finish(
          stopped(
            `the check itself failed: ${(message as { message?: string }).message ?? "no reason"}`,
            "report this as a context-host bug",
          ),
        );
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
      const rule = stepRule(current);
      finish(
        stopped(
          current.kind === "checks"
            ? `the plugin's worker ${why} before its check finished`
            : `the plugin's worker ${why} while ${rule.what} ran`,
          "do not call process.exit, let no error or rejection go unhandled, keep memory bounded",
          rule.check,
        ),
      );
    });
  });
}

/** What the check's worker posts (check-worker.ts). */
type WorkerMessage =
  | { readonly type: "named"; readonly plugin: string }
  | { readonly type: "step"; readonly step: CheckStep }
  | { readonly type: "finding"; readonly finding: PluginFinding }
  | { readonly type: "done"; readonly findings: PluginFinding[] }
  | { readonly type: "failed"; readonly message: string };
