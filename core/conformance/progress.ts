// Owns what a check tells whoever runs it while it runs: the step under way (so the runner of
// an isolated check can name the loader or renderer that never returned, as the host names
// the one that missed its deadline), each finding as it is made, and where in the plugin's
// own files an error was thrown. Also keeps the check's thread alive while a plugin's
// promise is pending, so a deadline fires instead of the thread running out of work.

import type { Location } from "../plugins/locations.ts";

/** What a check is doing: plugin code it is running (with the deadline the host would give it), or its own work. */
export interface CheckStep {
  readonly kind: "evaluate" | "setup" | "load" | "value" | "baseline" | "update" | "removed" | "dispose" | "checks";
  /** The source whose code runs, for a source's steps. */
  readonly key?: string;
  /** The generation being evaluated, set up or disposed (2: the reload `setup-repeats` makes). */
  readonly generation?: number;
  /** How long the host lets this step run, in ms. */
  readonly ms?: number;
}

/** Where a finding's error was thrown, in the plugin's own file. */
export type FindingLocation = Location;

/** What a check reports while it runs (all optional; the in-process face passes none but `locate`). */
export interface CheckHooks<F = unknown> {
  /** The plugin's name, once its definition is read. */
  named?(plugin: string): void;
  step?(step: CheckStep): void;
  finding?(finding: F): void;
  locate?(error: unknown): FindingLocation | undefined;
}

// Taken when this module loads, before any plugin code runs: a plugin that replaces the
// global timers does not stop the check's own.
const { setInterval: startInterval, clearInterval: stopInterval } = globalThis;

/**
 * Runs `work` with the thread held alive: a loader whose promise can never settle leaves
 * nothing else to wait for, and the host's deadline timers do not hold a thread (they are
 * unreferenced), so without this a check's worker would end before the deadline fired.
 */
export async function keepingAlive<T>(work: () => Promise<T>): Promise<T> {
  const held = startInterval(() => {}, 1 << 30);
  try {
    return await work();
  } finally {
    stopInterval(held);
  }
}
