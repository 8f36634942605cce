// Owns watching plugin files: one chokidar watcher over the plugin folders and every file a
// plugin's bundle read, and plain watches of where plugin packages are installed.

import { type FSWatcher as FolderWatch, statSync, watch as watchFolder } from "node:fs";
import path from "node:path";
import { type FSWatcher, watch } from "chokidar";

export interface PluginWatcherOptions {
  readonly folders: readonly string[];
  /** A file appeared or disappeared in a plugin folder. */
  onFolderChange(): void;
  onFileChange(file: string): void;
  onError(error: unknown): void;
  /** A plugin package was installed, replaced or removed (`watchInstallPlaces`). */
  onPackageChange?(name: string): void;
}

export class PluginWatcher {
  readonly #options: PluginWatcherOptions;
  readonly #watcher: FSWatcher;
  #watched = new Set<string>();
  /** The folders plugin packages are installed in, each watched for those packages' entries. */
  #installFolders = new Map<
    string,
    { readonly watch: FolderWatch; readonly inode: number; entries: Map<string, readonly string[]> }
  >();
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

  /** Resolves once the watcher is ready. */
  static async start(options: PluginWatcherOptions): Promise<PluginWatcher> {
    const watcher = new PluginWatcher(options);
    // chokidar never says "ready" when it watches nothing (`plugins: []`, or plugins only from packages).
    if (options.folders.length > 0) await new Promise<void>((resolve) => watcher.#watcher.once("ready", () => resolve()));
    return watcher;
  }

  /** Keeps the watcher on exactly `files` (besides the folders); returns those it did not cover yet (changed unseen, maybe). */
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

  /**
   * Watches where plugin packages are installed, with a plain `fs.watch` of each folder:
   * chokidar judges a change by modification time, and npm's files all carry the same one.
   */
  watchInstallPlaces(places: ReadonlyArray<{ readonly folder: string; readonly entry: string; readonly package: string }>): void {
    if (this.#isClosed) return;
    const wanted = new Map<string, Map<string, string[]>>();
    for (const place of places) {
      const entries = wanted.get(place.folder) ?? new Map<string, string[]>();
      entries.set(place.entry, [...(entries.get(place.entry) ?? []), place.package]);
      wanted.set(place.folder, entries);
    }
    const inodes = new Map([...wanted.keys()].map((folder) => [folder, inodeOf(folder)]));
    // A folder replaced since it was watched (a package's own, after an update) is watched anew.
    for (const [folder, watched] of this.#installFolders) {
      if (wanted.has(folder) && inodes.get(folder) === watched.inode) continue;
      watched.watch.close();
      this.#installFolders.delete(folder);
    }
    for (const [folder, entries] of wanted) {
      const known = this.#installFolders.get(folder);
      if (known !== undefined) {
        known.entries = entries;
        continue;
      }
      try {
        const watched = {
          inode: inodes.get(folder) ?? -1,
          watch: watchFolder(folder, { persistent: false }, (_event, entry) => {
            const names = entry === null ? undefined : watched.entries.get(String(entry));
            if (names !== undefined && !this.#isClosed) for (const name of names) this.#options.onPackageChange?.(name);
          }),
          entries,
        };
        watched.watch.on("error", (error) => this.#options.onError(error));
        this.#installFolders.set(folder, watched);
      } catch (error) {
        this.#options.onError(error);
      }
    }
  }

  async close(): Promise<void> {
    this.#isClosed = true;
    for (const watched of this.#installFolders.values()) watched.watch.close();
    this.#installFolders.clear();
    await this.#watcher.close();
  }
}

function inodeOf(folder: string): number {
  try {
    return statSync(folder).ino;
  } catch {
    return -1;
  }
}
