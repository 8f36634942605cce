// Owns watching plugin files: one chokidar watcher over the plugin folders and every
// file a plugin's bundle read, and the reload schedule of one plugin. Watchers report a
// write before it finished and drop repeated writes without a trailing event
// (MEASURED.md), so a plugin reloads on the first event of a burst and is checked once
// more when the burst is quiet; the bundle hash makes an unchanged re-check cheap.

import path from "node:path";
import { type FSWatcher, watch } from "chokidar";

export interface PluginWatcherOptions {
  readonly folders: readonly string[];
  /** A file appeared or disappeared in a plugin folder: discovery should run again. */
  onFolderChange(): void;
  /** A watched file changed (or appeared, or disappeared). */
  onFileChange(file: string): void;
  /** The watcher failed; watching goes on where it can. */
  onError(error: unknown): void;
}

/** The plugin folders and the files plugins read, watched with chokidar. */
export class PluginWatcher {
  readonly #options: PluginWatcherOptions;
  readonly #watcher: FSWatcher;
  #watched = new Set<string>();
  #isClosed = false;

  private constructor(options: PluginWatcherOptions) {
    this.#options = options;
    this.#watcher = watch([...options.folders], { ignoreInitial: true, depth: 1, atomic: true });
    this.#watcher.on("all", (event, changed) => {
      if (this.#isClosed) return;
      if (event === "add" || event === "unlink" || event === "addDir" || event === "unlinkDir") options.onFolderChange();
      options.onFileChange(path.resolve(changed));
    });
    this.#watcher.on("error", (error) => options.onError(error));
  }

  /** Starts watching the folders; resolves once the watcher is ready. */
  static async start(options: PluginWatcherOptions): Promise<PluginWatcher> {
    const watcher = new PluginWatcher(options);
    // chokidar never says "ready" when it watches nothing (`plugins: []`).
    if (options.folders.length > 0) await new Promise<void>((resolve) => watcher.#watcher.once("ready", () => resolve()));
    return watcher;
  }

  /**
   * Keeps the watcher on exactly `files` (besides the folders). Returns the files it did
   * not cover yet: one may have changed after a load read it and before its watch was up.
   */
  watchExactly(files: ReadonlySet<string>): ReadonlySet<string> {
    if (this.#isClosed) return new Set();
    const added = [...files].filter((file) => !this.#watched.has(file));
    const dropped = [...this.#watched].filter((file) => !files.has(file));
    let unseen = new Set<string>();
    if (added.length > 0) {
      const watched = this.#watcher.getWatched();
      unseen = new Set(added.filter((file) => !watched[path.dirname(file)]?.includes(path.basename(file))));
      this.#watcher.add(added);
    }
    const folders = this.#options.folders;
    if (dropped.length > 0) this.#watcher.unwatch(dropped.filter((file) => !folders.some((f) => path.dirname(file) === f)));
    this.#watched = new Set(files);
    return unseen;
  }

  /** Releases the watcher. */
  async close(): Promise<void> {
    this.#isClosed = true;
    await this.#watcher.close();
  }
}

/** Why a reload runs: the first event of a burst (provisional: the write may be unfinished), or the burst went quiet. */
export type ReloadCause = "first-event" | "quiet";

/**
 * When one plugin reloads after file events: at once on the first event of a burst, and
 * once more `quietMs` after the last event. The quiet re-check is what catches a write
 * the watcher coalesced away or reported before it finished.
 */
export class ReloadSchedule {
  #timer: NodeJS.Timeout | undefined;
  #isCancelled = false;

  constructor(
    readonly quietMs: number,
    readonly reload: (cause: ReloadCause) => void,
  ) {}

  /** Whether a quiet re-check is still due. */
  get isPending(): boolean {
    return this.#timer !== undefined;
  }

  /** A file of the plugin changed. */
  event(): void {
    if (this.#isCancelled) return;
    const isFirst = this.#timer === undefined;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#isCancelled) this.reload("quiet");
    }, this.quietMs);
    if (isFirst) this.reload("first-event");
  }

  /** Checks the plugin once more after the quiet time, without a reload now (a file may have changed unseen). */
  recheck(): void {
    if (this.#isCancelled || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#isCancelled) this.reload("quiet");
    }, this.quietMs);
  }

  /** No reload runs any more (the plugin was removed, or the set closed). */
  cancel(): void {
    this.#isCancelled = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
