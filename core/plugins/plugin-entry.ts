// Owns one discovered plugin file's record in the plugin set: where its loads stand (a
// `LoadState`, moved only by its transitions), its last failure, its queue of tasks and the
// diagnostics it reported. The plugin's own life (worker, generations) is its handle's.

import type { Diagnostic } from "../base/diagnostics.ts";
import type { PluginOrigin } from "./events.ts";
import type { HostedPlugin, Loaded } from "./hosted-plugin.ts";
import { began, changed, discovered, finished, idle, type LoadState, removed } from "./load-state.ts";
import type { WatchedPlugin } from "./watching.ts";

export class PluginEntry {
  readonly id: string;
  readonly file: string;
  /** The host's handle on the plugin's runner (its transport starts with the entry). */
  readonly hosted: HostedPlugin;
  /** Files the last bundle attempt read, and when they reload the plugin. */
  readonly inputs: WatchedPlugin;
  /**
   * Identities of the diagnostics this file reported since its problems were last resolved.
   * Not by plugin name: a file that lost the name to another still has its problem when the
   * other reloads.
   */
  readonly reported = new Set<string>();
  #origin: PluginOrigin;
  #load: LoadState = idle;
  /** Why the last load failed (its diagnostic was emitted). A failed reload keeps the active generation. */
  #failed: Diagnostic | undefined;
  /** This file's work, one task after another: loads, swaps, closes of its generations. */
  #queue: Promise<void> = Promise.resolve();

  constructor(found: {
    readonly id: string;
    readonly file: string;
    readonly origin: PluginOrigin;
    readonly hosted: HostedPlugin;
    readonly inputs: WatchedPlugin;
  }) {
    this.id = found.id;
    this.file = found.file;
    this.#origin = found.origin;
    this.hosted = found.hosted;
    this.inputs = found.inputs;
  }

  /** Its folder, or its package and the version last found. */
  get origin(): PluginOrigin {
    return this.#origin;
  }

  get load(): LoadState {
    return this.#load;
  }

  get failed(): Diagnostic | undefined {
    return this.#failed;
  }

  /** A scan found the file again, from `origin` (a package perhaps at another version). */
  foundAgain(origin: PluginOrigin): void {
    this.#origin = origin;
  }

  /** A scan found the file for the first time: its first load, `preload`, already runs. */
  discovered(preload: Promise<Loaded>): void {
    this.#load = discovered(preload);
  }

  /** A file it reads changed (`isProvisional`: only a burst's first event so far). */
  changed(isProvisional: boolean): void {
    this.#load = changed(this.#load, isProvisional);
  }

  /** The due load begins. */
  loadBegan(): void {
    this.#load = began(this.#load);
  }

  /** The load ended: a change that arrived meanwhile is due now. */
  loadFinished(): void {
    this.#load = finished(this.#load);
  }

  /** The file left (or the set closed): no load starts any more. */
  removed(): void {
    this.#load = removed;
  }

  /** The last load failed, as `diagnostic` says. */
  failedWith(diagnostic: Diagnostic): void {
    this.#failed = diagnostic;
  }

  /** The last failure no longer holds. */
  clearFailure(): void {
    this.#failed = undefined;
  }

  /**
   * Queues `task` after the entry's last task (or after `after`); `ended` runs once it has.
   * The queued task never rejects.
   */
  enqueue(task: () => Promise<void>, after: Promise<unknown> | undefined, ended: () => void): Promise<void> {
    const queued = (after ?? this.#queue)
      .then(task)
      .catch(() => {})
      .finally(ended);
    this.#queue = queued;
    return queued;
  }
}
