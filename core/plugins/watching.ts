// Owns watching plugin files (chokidar: the plugin folders and exactly the files each plugin's last
// load read; fs.watch: where plugin packages are installed) and when a change reloads a plugin: on
// a burst's first event and once more when it is quiet, as watchers report unfinished writes and
// drop repeated ones (MEASURED.md); the bundle hash keeps that cheap.

import { type FSWatcher as FolderWatch, statSync, watch as watchFolder } from "node:fs";
import path from "node:path";
import { type FSWatcher, watch } from "chokidar";
import type { InstallPlace } from "./find.ts";

export interface PluginWatcherOptions {
  readonly folders: readonly string[];
  /** False: nothing is watched, and no change reloads a plugin. */
  readonly isWatching: boolean;
  /** Quiet time after the last event of a burst before the plugin is checked once more. */
  readonly quietMs: number;
  /** A file appeared or disappeared in a plugin folder. */
  onFolderChange(): void;
  /** A plugin package was installed, replaced or removed (`watchInstallPlaces`). */
  onPackageChange(name: string): void;
  onError(error: unknown): void;
}

/** One plugin's watched inputs and its reload schedule. */
export class WatchedPlugin {
  /** Files the last bundle attempt read. */
  #files: readonly string[];
  /**
   * Runs at once on the first event of a burst (`isProvisional`: the write may be unfinished), and
   * once more when the burst is quiet.
   */
  readonly #reload: (isProvisional: boolean) => void;
  /** The re-check due when the burst is quiet. */
  #quietCheck: NodeJS.Timeout | undefined;

  constructor(file: string, reload: (isProvisional: boolean) => void) {
    this.#files = [file];
    this.#reload = reload;
  }

  get files(): readonly string[] {
    return this.#files;
  }

  /** Whether a re-check is due. */
  get isPending(): boolean {
    return this.#quietCheck !== undefined;
  }

  /** Its last load read `files` (the watcher watches them: `PluginWatcher.read`). */
  read(files: readonly string[]): void {
    this.#files = files;
  }

  /**
   * A file it read changed (`isSeen`), or may have changed unseen: checked once more when
   * quiet, and at once on a burst's first event.
   */
  changed(isSeen: boolean, quietMs: number): void {
    const isFirst = this.#quietCheck === undefined;
    if (!isSeen && !isFirst) return;
    clearTimeout(this.#quietCheck);
    this.#quietCheck = setTimeout(() => {
      this.#quietCheck = undefined;
      this.#reload(false);
    }, quietMs);
    if (isSeen && isFirst) this.#reload(true);
  }

  /** No re-check runs any more. */
  stop(): void {
    clearTimeout(this.#quietCheck);
  }
}

export class PluginWatcher {
  readonly #options: PluginWatcherOptions;
  /** Undefined when not watching. */
  readonly #watcher: FSWatcher | undefined;
  /** Resolves once the watcher is ready (loads read files only after this). */
  readonly ready: Promise<void>;
  readonly #plugins = new Set<WatchedPlugin>();
  #watched = new Set<string>();
  /** Where plugin packages are installed, and the folders watched for them (each by its inode). */
  #installPlaces: readonly InstallPlace[] = [];
  readonly #installFolders = new Map<string, { readonly watch: FolderWatch; readonly inode: number }>();
  #isClosed = false;

  constructor(options: PluginWatcherOptions) {
    this.#options = options;
    const watcher = options.isWatching ? watchPluginFolders(options.folders) : undefined;
    this.#watcher = watcher;
    watcher?.on("all", (event, changed) => {
      if (this.#isClosed) return;
      if (folderChanges.has(event)) options.onFolderChange();
      const file = path.resolve(changed);
      for (const plugin of this.#plugins) {
        if (plugin.files.includes(file)) plugin.changed(true, options.quietMs);
      }
    });
    watcher?.on("error", (error) => options.onError(error));
    // chokidar never says "ready" when it watches nothing (`plugins: []`, or plugins only from packages).
    this.ready =
      watcher === undefined || options.folders.length === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => watcher.once("ready", () => resolve()));
  }

  /** Tracks one plugin whose entry file is `file`. */
  track(file: string, reload: (isProvisional: boolean) => void): WatchedPlugin {
    const plugin = new WatchedPlugin(file, reload);
    this.#plugins.add(plugin);
    return plugin;
  }

  /** The plugin's last load read `files`. */
  read(plugin: WatchedPlugin, files: readonly string[]): void {
    plugin.read(files);
    this.#watchExactly();
  }

  /** The plugin is gone: no reload runs any more. */
  forget(plugin: WatchedPlugin): void {
    plugin.stop();
    this.#plugins.delete(plugin);
    this.#watchExactly();
  }

  /** Whether a re-check is due. */
  get isPending(): boolean {
    return [...this.#plugins].some((plugin) => plugin.isPending);
  }

  /** Keeps the watcher on exactly the plugins' files (besides the folders). */
  #watchExactly(): void {
    if (this.#watcher === undefined || this.#isClosed) return;
    const files = new Set([...this.#plugins].flatMap((plugin) => plugin.files));
    const added = [...files].filter((file) => !this.#watched.has(file));
    const dropped = [...this.#watched].filter((file) => !files.has(file));
    const watched: Record<string, string[]> = added.length === 0 ? {} : this.#watcher.getWatched();
    const isCovered = (file: string) => watched[path.dirname(file)]?.includes(path.basename(file)) === true;
    const unseen = new Set(added.filter((file) => !isCovered(file)));
    if (added.length > 0) this.#watcher.add(added);
    // A file right in a plugin folder stays watched with its folder.
    const isInFolder = (file: string) => this.#options.folders.includes(path.dirname(file));
    if (dropped.length > 0) this.#watcher.unwatch(dropped.filter((file) => !isInFolder(file)));
    this.#watched = files;
    // A file not covered yet may have changed after the load read it.
    for (const plugin of this.#plugins) {
      if (plugin.files.some((input) => unseen.has(input))) plugin.changed(false, this.#options.quietMs);
    }
  }

  /**
   * Watches where plugin packages are installed, with a plain `fs.watch` of each folder:
   * chokidar judges a change by modification time, and npm's files all carry the same one.
   */
  watchInstallPlaces(places: readonly InstallPlace[]): void {
    if (this.#watcher === undefined || this.#isClosed) return;
    this.#installPlaces = places;
    const inodes = new Map(places.map((place) => [place.folder, inodeOf(place.folder)]));
    // A folder replaced since it was watched (a package's own, after an update) is watched anew.
    for (const [folder, watched] of this.#installFolders) {
      if (inodes.get(folder) === watched.inode) continue;
      watched.watch.close();
      this.#installFolders.delete(folder);
    }
    for (const [folder, inode] of inodes) {
      if (this.#installFolders.has(folder)) continue;
      try {
        const watch = watchFolder(folder, { persistent: false }, (_event, entry) => {
          if (this.#isClosed || entry === null) return;
          for (const place of this.#installPlaces) {
            const isChanged = place.folder === folder && place.entry === String(entry);
            if (isChanged) this.#options.onPackageChange(place.package);
          }
        });
        watch.on("error", (error) => this.#options.onError(error));
        this.#installFolders.set(folder, { watch, inode });
      } catch (error) {
        this.#options.onError(error);
      }
    }
  }

  /** No reload runs any more. */
  async close(): Promise<void> {
    this.#isClosed = true;
    for (const plugin of this.#plugins) this.forget(plugin);
    for (const watched of this.#installFolders.values()) watched.watch.close();
    this.#installFolders.clear();
    await this.#watcher?.close();
  }
}

function inodeOf(folder: string): number {
  try {
    return statSync(folder).ino;
  } catch {
    return -1;
  }
}

/** The chokidar events by which a plugin folder gains or loses a plugin. */
const folderChanges = new Set(["add", "unlink", "addDir", "unlinkDir"]);

/** Watches the plugin folders and their direct entries (a folder plugin's own files are watched by name). */
function watchPluginFolders(folders: readonly string[]): FSWatcher {
  return watch([...folders], { ignoreInitial: true, depth: 1, atomic: true });
}
