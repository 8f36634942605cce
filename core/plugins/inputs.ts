// Owns the plugins' watched inputs: which files each plugin's last load read (the watcher
// kept on exactly those), and when a change reloads the plugins that read it. Watchers report
// a write before it finished and drop repeated writes without a trailing event (MEASURED.md),
// so a plugin reloads on the first event of a burst and once more when the burst is quiet;
// the bundle hash makes an unchanged re-check cheap.

import type { PluginWatcher } from "./watching.ts";

/** Why a reload runs: the first event of a burst (provisional: the write may be unfinished), or the burst went quiet. */
export type ReloadCause = "first-event" | "quiet";

/** One plugin's watched inputs and its reload schedule: at once on the first event of a burst, and once more `quietMs` after the last. */
export class TrackedInputs {
  /** Files the last bundle attempt read. */
  files: readonly string[];
  #timer: NodeJS.Timeout | undefined;
  #isCancelled: boolean;

  constructor(
    file: string,
    isWatching: boolean,
    readonly quietMs: number,
    readonly reload: (cause: ReloadCause) => void,
  ) {
    this.files = [file];
    this.#isCancelled = !isWatching;
  }

  get isPending(): boolean {
    return this.#timer !== undefined;
  }

  changed(): void {
    if (this.#isCancelled) return;
    const isFirst = this.#timer === undefined;
    this.#quietCheck();
    if (isFirst) this.reload("first-event");
  }

  /** Checks the plugin once more after the quiet time (a file may have changed unseen). */
  recheck(): void {
    if (!this.#isCancelled && this.#timer === undefined) this.#quietCheck();
  }

  /** No reload runs any more (the plugin was removed, or the set closed). */
  cancel(): void {
    this.#isCancelled = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #quietCheck() {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#isCancelled) this.reload("quiet");
    }, this.quietMs);
  }
}

/** The watched inputs of every plugin of a set. */
export class WatchedInputs {
  readonly #tracked = new Set<TrackedInputs>();
  #watcher: PluginWatcher | undefined;
  #isClosed = false;

  constructor(
    readonly isWatching: boolean,
    readonly quietMs: number,
  ) {}

  /** Watches through `watcher` from now on (loads read files only after this). */
  watchWith(watcher: PluginWatcher): void {
    this.#watcher = watcher;
    watcher.watchExactly(this.#wanted());
  }

  /** Tracks one plugin whose entry file is `file`. */
  track(file: string, reload: (cause: ReloadCause) => void): TrackedInputs {
    const tracked = new TrackedInputs(file, this.isWatching, this.quietMs, reload);
    this.#tracked.add(tracked);
    return tracked;
  }

  set(plugin: TrackedInputs, files: readonly string[]): void {
    plugin.files = files;
    this.watch();
  }

  /** The plugin is gone (the watcher follows at the next `watch`). */
  forget(plugin: TrackedInputs): void {
    this.#tracked.delete(plugin);
  }

  changed(file: string): void {
    for (const tracked of this.#tracked) if (tracked.files.includes(file)) tracked.changed();
  }

  get isPending(): boolean {
    for (const tracked of this.#tracked) if (tracked.isPending) return true;
    return false;
  }

  /** Keeps the watcher on exactly the tracked plugins' files. */
  watch(): void {
    if (this.#watcher === undefined || this.#isClosed) return;
    const unseen = this.#watcher.watchExactly(this.#wanted());
    if (unseen.size === 0) return;
    // A file not covered yet may have changed after the load read it.
    for (const tracked of this.#tracked) if (tracked.files.some((input) => unseen.has(input))) tracked.recheck();
  }

  #wanted(): Set<string> {
    const wanted = new Set<string>();
    for (const tracked of this.#tracked) for (const input of tracked.files) wanted.add(input);
    return wanted;
  }

  /** No reload runs any more. */
  close(): void {
    this.#isClosed = true;
    for (const tracked of this.#tracked) tracked.cancel();
  }
}
