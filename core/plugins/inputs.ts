// Owns the plugins' watched inputs: which files each plugin's last load read, keeping the
// watcher on exactly those files, and routing a changed file to the reload schedule of
// every plugin that read it. The plugin set says what a load read; this says when to reload.

import { type PluginWatcher, type ReloadCause, ReloadSchedule } from "./watching.ts";

/** One plugin's watched inputs and its reload schedule (none when nothing is watched). */
export interface TrackedInputs {
  /** Files the last bundle attempt read: a change to any of them reloads the plugin. */
  readonly files: readonly string[];
  /** Whether a quiet re-check of the plugin is still due. */
  readonly isPending: boolean;
}

interface Tracked extends TrackedInputs {
  files: readonly string[];
  readonly schedule: ReloadSchedule | undefined;
}

/** The watched inputs of every plugin of a set. */
export class WatchedInputs {
  readonly #tracked = new Set<Tracked>();
  #watcher: PluginWatcher | undefined;
  #isClosed = false;

  /**
   * `isWatching`: plugins reload on changes (through the watcher `watchWith` gives, once it is
   * up); `quietMs`: the quiet time after a burst of changes before a plugin is checked once more.
   */
  constructor(
    readonly isWatching: boolean,
    readonly quietMs: number,
  ) {}

  /** Watches through `watcher` from now on (loads read files only after this: none is re-checked). */
  watchWith(watcher: PluginWatcher): void {
    this.#watcher = watcher;
    watcher.watchExactly(this.#wanted());
  }

  /** Tracks one plugin whose entry file is `file`; `reload` runs when its schedule says so. */
  track(file: string, reload: (cause: ReloadCause) => void): TrackedInputs {
    const tracked: Tracked = {
      files: [file],
      schedule: this.isWatching ? new ReloadSchedule(this.quietMs, reload) : undefined,
      get isPending() {
        return this.schedule?.isPending === true;
      },
    };
    this.#tracked.add(tracked);
    return tracked;
  }

  /** The files a load of the plugin read; the watcher follows. */
  set(plugin: TrackedInputs, files: readonly string[]): void {
    (plugin as Tracked).files = files;
    this.watch();
  }

  /** The plugin reloads no more (it is being removed); its files stay watched until `forget`. */
  cancel(plugin: TrackedInputs): void {
    (plugin as Tracked).schedule?.cancel();
  }

  /** The plugin is gone: its files are no longer wanted (the watcher follows at the next `watch`). */
  forget(plugin: TrackedInputs): void {
    this.#tracked.delete(plugin as Tracked);
  }

  /** A watched file changed: every plugin that read it reloads. */
  changed(file: string): void {
    for (const tracked of this.#tracked) if (tracked.files.includes(file)) tracked.schedule?.event();
  }

  /** Whether any plugin's quiet re-check is still due. */
  get isPending(): boolean {
    for (const tracked of this.#tracked) if (tracked.isPending) return true;
    return false;
  }

  /** Keeps the watcher on exactly the tracked plugins' files. */
  watch(): void {
    if (this.#watcher === undefined || this.#isClosed) return;
    const unseen = this.#watcher.watchExactly(this.#wanted());
    if (unseen.size === 0) return;
    // A file not covered yet may have changed after the load read it: check once more.
    for (const tracked of this.#tracked) if (tracked.files.some((input) => unseen.has(input))) tracked.schedule?.recheck();
  }

  #wanted(): Set<string> {
    const wanted = new Set<string>();
    for (const tracked of this.#tracked) for (const input of tracked.files) wanted.add(input);
    return wanted;
  }

  /** No reload runs any more and the watcher is left alone. */
  close(): void {
    this.#isClosed = true;
    for (const tracked of this.#tracked) tracked.schedule?.cancel();
  }
}
