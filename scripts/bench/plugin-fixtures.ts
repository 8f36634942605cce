// What the plugin-host benches (cold-start, reload-latency, reload-heap) share: a temp
// folder that is removed even when the bench is interrupted, the services a plugin host
// starts with, and the process entry that reports a failure and exits.

import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type AwilixContainer, asValue, createContainer } from "awilix";
import { silentLogger, systemClock } from "../../core/base/clock.ts";

/** A temp folder of a bench; `remove` deletes it. */
export interface BenchFolder {
  readonly path: string;
  remove(): void;
}

/**
 * A fresh folder (real path) named `context-host-bench-<name>-…` under BENCH_TMPDIR or the
 * OS's temp folder. It is removed when `remove` is called, and also when the bench is
 * interrupted or terminated first (a runner or test that times out sends SIGTERM).
 */
export function benchFolder(name: string): BenchFolder {
  const folder = realpathSync(mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), `context-host-bench-${name}-`)));
  const remove = () => rmSync(folder, { recursive: true, force: true });
  const onSignal = (signal: NodeJS.Signals) => {
    remove();
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return {
    path: folder,
    remove() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      remove();
    },
  };
}

/**
 * The services a plugin host resolves for plugins at `location`: the system clock and a
 * silent logger (what `startContextSources` registers for the benches). Only for code that
 * activates generations without a plugin set — the `import()` baseline of reload-heap.
 */
export function hostContainer(location: string): AwilixContainer {
  const container = createContainer();
  container.register({ clock: asValue(systemClock), logger: asValue(silentLogger), location: asValue(location) });
  return container;
}

/**
 * Runs the entry point of a bench process: a failure is printed on stderr as `[bench] …`
 * and sets exit code 1. Then exits, since chokidar or esbuild may leave a handle behind
 * (everything is closed and written by then).
 */
export async function runBenchProcess(bench: string, entry: () => Promise<void>): Promise<never> {
  try {
    await entry();
  } catch (error) {
    process.stderr.write(`[${bench}] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
  process.exit();
}
