// Owns the plugin host: discovery, the load pipeline bundle → evaluate → activate
// → swap, per-plugin generations, namespaces, watching and hot reload. A plugin
// never takes the host down: every failure becomes a diagnostic and the last good
// generation stays active.

import path from "node:path";
import type { AwilixContainer } from "awilix";
import { type FSWatcher, watch } from "chokidar";
import { type Diagnostic, Diagnostics } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import type { Registration, Registry } from "../registry/registry.ts";
import type { SourceFault } from "../system-context/index.ts";
import { BundleError, bundlePlugin, type PluginBundle } from "./bundle.ts";
import { discoverPlugins } from "./discover.ts";
import { evaluateBundle, locationsOf } from "./evaluate.ts";
import { type ActivatedGeneration, ActivationError, activateGeneration } from "./generation.ts";
import { guardedRegistration } from "./guarded-source.ts";
import type { BundleLocations } from "./locations.ts";

export interface PluginSetOptions {
  /** Plugin folders (absolute or relative to the working folder). */
  readonly folders: readonly string[];
  readonly registry: Registry;
  /** The host's awilix container with `clock`, `logger` and `location` registered. */
  readonly container: AwilixContainer;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Hot reload on file changes (default true). */
  readonly watch?: boolean;
  /** Quiet time after a change before reloading (default 50 ms). */
  readonly debounceMs?: number;
  /** Default loader deadline (default 2 s); a source may set its own. */
  readonly deadlineMs?: number;
  /** Longest accepted rendering (default 64 KiB). */
  readonly maxTextLength?: number;
  /** How long `setup` may run (default 10 s). */
  readonly setupDeadlineMs?: number;
  /**
   * Namespaces of the host's core sources (`core` always): a plugin may not take them, so a
   * plugin key can never collide with a core source at composition.
   */
  readonly reservedNamespaces?: readonly string[];
  /** The host's diagnostics channel (a new one when not given). */
  readonly diagnostics?: Diagnostics;
}

/** What the host reports: diagnostics and generation changes, in order. */
export type PluginEvent =
  | { readonly kind: "diagnostic"; readonly diagnostic: Diagnostic }
  | { readonly kind: "activated"; readonly plugin: string; readonly file: string; readonly generation: number }
  | { readonly kind: "removed"; readonly plugin: string; readonly file: string };

/** An active plugin, as `plugins()` lists it. */
export interface PluginInfo {
  readonly name: string;
  readonly file: string;
  readonly generation: number;
  readonly keys: readonly string[];
}

interface Active {
  readonly name: string;
  readonly generation: number;
  readonly hash: string;
  readonly scope: ActivatedGeneration["scope"];
  readonly registrations: readonly Registration[];
}

/** One discovered plugin file and its life. */
interface PluginEntry {
  readonly id: string;
  readonly file: string;
  active: Active | undefined;
  /** Hash of the last bundle a load was attempted with: identical content is not loaded twice. */
  attemptedHash: string | undefined;
  /** Files the last bundle attempt read: a change to any of them reloads the plugin. */
  inputs: readonly string[];
  attempts: number;
  /** The last load attempt failed (its diagnostic was emitted). */
  failed: Diagnostic | undefined;
  /** Another file holds this plugin's namespace. */
  displacedBy: string | undefined;
  /** A change arrived that no load has seen yet. */
  isDirty: boolean;
  isRemoved: boolean;
  timer: NodeJS.Timeout | undefined;
  /** Whether the post-burst re-check (for writes the watcher coalesced) is still due. */
  isVerifyDue: boolean;
  queue: Promise<void>;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export class PluginSet {
  readonly #options: PluginSetOptions;
  readonly #folders: readonly string[];
  readonly #entries = new Map<string, PluginEntry>();
  readonly #listeners = new Set<(event: PluginEvent) => void>();
  readonly #diagnostics: Diagnostics;
  #watcher: FSWatcher | undefined;
  #rescanTimer: NodeJS.Timeout | undefined;
  #isClosed = false;
  /** Scopes of generations swapped out, closed after the swap (their disposers may be slow). */
  #pendingClose: Array<ActivatedGeneration["scope"]> = [];
  /** Files the watcher is asked to watch. */
  #watched = new Set<string>();

  private constructor(options: PluginSetOptions) {
    this.#options = options;
    this.#diagnostics = options.diagnostics ?? new Diagnostics();
    this.#folders = options.folders.map((folder) => path.resolve(folder));
  }

  /** Discovers and loads every plugin (sorted by name), then starts watching if asked. */
  static async start(options: PluginSetOptions): Promise<PluginSet> {
    const host = new PluginSet(options);
    if (options.watch ?? true) await host.#startWatching();
    host.#rescan();
    await host.settled();
    return host;
  }

  /** Receives every later event. Returns an unsubscribe. */
  subscribe(listener: (event: PluginEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Every diagnostic emitted so far, oldest first. */
  get diagnostics(): readonly Diagnostic[] {
    return this.#diagnostics.history;
  }

  /** Active plugins in name order. */
  plugins(): PluginInfo[] {
    return [...this.#entries.values()]
      .filter((entry) => entry.active !== undefined)
      .map((entry) => {
        const active = entry.active as Active;
        return {
          name: active.name,
          file: entry.file,
          generation: active.generation,
          keys: active.registrations.map((r) => r.key),
        };
      })
      .sort((a, b) => compareText(a.name, b.name));
  }

  /** Plugin files whose latest load failed, with the diagnostic that says why. */
  failures(): Array<{ readonly file: string; readonly diagnostic: Diagnostic }> {
    return [...this.#entries.values()]
      .filter((entry) => entry.failed !== undefined)
      .map((entry) => ({ file: entry.file, diagnostic: entry.failed as Diagnostic }));
  }

  /** Resolves once no load is queued or running. */
  async settled(): Promise<void> {
    for (;;) {
      const pending = [...this.#entries.values()].map((entry) => entry.queue);
      await Promise.all(pending);
      const isBusy = [...this.#entries.values()].some((entry) => entry.timer !== undefined || entry.isDirty);
      if (!isBusy && this.#rescanTimer === undefined) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Reloads one plugin (by entry file) now, bypassing the debounce. */
  reload(file: string): Promise<void> {
    const entry = this.#entries.get(path.resolve(file));
    if (entry === undefined) return Promise.resolve();
    entry.isDirty = true;
    return this.#drain(entry);
  }

  /** Stops watching and closes every generation; releases every watcher, timer and scope. */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    clearTimeout(this.#rescanTimer);
    this.#rescanTimer = undefined;
    await this.#watcher?.close();
    for (const entry of this.#entries.values()) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      entry.isRemoved = true;
    }
    await Promise.all([...this.#entries.values()].map((entry) => entry.queue));
    for (const entry of this.#entries.values()) await this.#deactivate(entry, false);
    this.#entries.clear();
    this.#listeners.clear();
  }

  #emit(event: PluginEvent) {
    // A repeated identical diagnostic counts up in the channel and is not announced again.
    if (event.kind === "diagnostic" && !this.#diagnostics.report(event.diagnostic)) return;
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must not break the host.
      }
    }
  }

  #diagnose(entry: PluginEntry, diagnostic: Omit<Diagnostic, "plugin" | "file"> & { file?: string; plugin?: string }) {
    const full: Diagnostic = {
      ...diagnostic,
      plugin: diagnostic.plugin ?? entry.active?.name ?? entry.id,
      file: diagnostic.file ?? entry.file,
    };
    this.#emit({ kind: "diagnostic", diagnostic: full });
    return full;
  }

  // ── discovery ────────────────────────────────────────────────────────────

  #rescan() {
    if (this.#isClosed) return;
    const seen = new Set<string>();
    const created = new Set<PluginEntry>();
    for (const folder of this.#folders) {
      for (const found of discoverPlugins(folder)) {
        if (seen.has(found.file)) continue;
        seen.add(found.file);
        if (!this.#entries.has(found.file)) {
          const entry: PluginEntry = {
            id: found.id,
            file: found.file,
            active: undefined,
            attemptedHash: undefined,
            inputs: [found.file],
            attempts: 0,
            failed: undefined,
            displacedBy: undefined,
            isDirty: true,
            isRemoved: false,
            timer: undefined,
            isVerifyDue: false,
            queue: Promise.resolve(),
          };
          this.#entries.set(found.file, entry);
          created.add(entry);
        }
      }
    }
    // New plugins load one after another in sorted order of name, so their setups, events and
    // diagnostics come in that order; each plugin's own queue keeps its later loads in order.
    const entries = [...this.#entries.values()].sort((a, b) => compareText(a.id, b.id) || compareText(a.file, b.file));
    let previous: Promise<void> = Promise.resolve();
    for (const entry of entries) {
      if (!seen.has(entry.file)) {
        this.#remove(entry);
      } else if (created.has(entry)) {
        entry.queue = previous.then(
          () => {},
          () => {},
        );
        previous = this.#drain(entry);
      } else if (entry.isDirty && entry.attempts === 0) {
        void this.#drain(entry);
      }
    }
  }

  #remove(entry: PluginEntry) {
    entry.isRemoved = true;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.queue = entry.queue.then(async () => {
      this.#entries.delete(entry.file);
      await this.#deactivate(entry, true);
      this.#watchInputs();
    });
  }

  // ── the load pipeline ───────────────────────────────────────────────────

  /** Runs loads of one plugin one at a time until no change is left unseen. */
  #drain(entry: PluginEntry): Promise<void> {
    entry.queue = entry.queue.then(async () => {
      while (entry.isDirty && !entry.isRemoved && !this.#isClosed) {
        entry.isDirty = false;
        await this.#loadOnce(entry);
      }
    });
    return entry.queue;
  }

  async #loadOnce(entry: PluginEntry): Promise<void> {
    let bundle: PluginBundle;
    try {
      bundle = await bundlePlugin(entry.file);
    } catch (error) {
      const location = error instanceof BundleError ? error.location : undefined;
      if (error instanceof BundleError) this.#setInputs(entry, [...new Set([...entry.inputs, ...error.inputs])]);
      entry.failed = this.#diagnose(entry, { phase: "bundle", message: messageOf(error), ...location });
      return;
    }
    this.#setInputs(entry, bundle.inputs);
    if (entry.attemptedHash === bundle.hash) return; // identical content: nothing to reload
    entry.attemptedHash = bundle.hash;
    const generation = ++entry.attempts;
    const locations = locationsOf(bundle, generation);
    let activated: ActivatedGeneration;
    try {
      let exports: Record<string, unknown>;
      try {
        exports = evaluateBundle(bundle, generation);
      } catch (error) {
        throw new ActivationError("evaluate", `module code threw: ${messageOf(error)}`, undefined, undefined, { cause: error });
      }
      activated = await activateGeneration({
        exports,
        generation,
        container: this.#options.container,
        settings: this.#options.settings ?? {},
        setupDeadlineMs: this.#options.setupDeadlineMs ?? 10_000,
        reservedNamespaces: new Set(["core", ...(this.#options.reservedNamespaces ?? [])]),
      });
    } catch (error) {
      const failure = error instanceof ActivationError ? error : new ActivationError("evaluate", messageOf(error), undefined);
      const cause = failure.cause ?? failure;
      const location = locations.locate(cause);
      entry.failed = this.#diagnose(entry, {
        phase: failure.phase,
        message: failure.message,
        ...(failure.plugin === undefined ? {} : { plugin: failure.plugin }),
        ...(failure.key === undefined ? {} : { key: failure.key }),
        ...location,
      });
      return;
    }
    // A change arrived while this generation was being built: it is stale, the next load wins.
    if (entry.isDirty || entry.isRemoved || this.#isClosed) {
      await activated.scope.close().catch(() => {});
      return;
    }
    this.#swap(entry, activated, bundle, locations);
    await this.#afterSwap(entry);
  }

  /** Atomically replaces the entry's generation in the registry; settles namespace ownership. */
  #swap(entry: PluginEntry, next: ActivatedGeneration, bundle: PluginBundle, locations: BundleLocations) {
    const holder = [...this.#entries.values()].find((other) => other !== entry && other.active?.name === next.name);
    if (holder !== undefined && compareText(holder.file, entry.file) < 0) {
      entry.displacedBy = holder.file;
      entry.failed = this.#diagnose(entry, {
        plugin: next.name,
        phase: "namespace",
        message: `namespace "${next.name}" is already taken by ${holder.file}; ${entry.file} is not loaded (the path that sorts first keeps it)`,
      });
      this.#pendingClose.push(next.scope);
      return;
    }
    const guard = this.#guardFor(entry, next.name, locations);
    const registrations = next.sources.map((source) => guardedRegistration(source, guard));
    const previous = entry.active;
    try {
      this.#options.registry.batch((batch) => {
        if (holder?.active !== undefined) for (const r of holder.active.registrations) batch.unregister(r);
        if (previous !== undefined) for (const r of previous.registrations) batch.unregister(r);
        for (const r of registrations) batch.register(next.scope, r);
      });
    } catch (error) {
      // A key the host already registers (a core source): nothing of this generation is applied.
      entry.failed = this.#diagnose(entry, { plugin: next.name, phase: "namespace", message: messageOf(error) });
      this.#pendingClose.push(next.scope);
      return;
    }
    if (holder?.active !== undefined) {
      const displaced = holder.active;
      holder.active = undefined;
      holder.displacedBy = entry.file;
      holder.failed = this.#diagnose(holder, {
        plugin: next.name,
        phase: "namespace",
        message: `namespace "${next.name}" is taken by ${entry.file}, whose path sorts first; ${holder.file} is unloaded`,
      });
      this.#emit({ kind: "removed", plugin: displaced.name, file: holder.file });
      this.#pendingClose.push(displaced.scope);
    }
    entry.active = { name: next.name, generation: next.generation, hash: bundle.hash, scope: next.scope, registrations };
    entry.failed = undefined;
    entry.displacedBy = undefined;
    if (previous !== undefined) this.#pendingClose.push(previous.scope);
    this.#resolveProblems(entry, next.name);
    this.#emit({ kind: "activated", plugin: next.name, file: entry.file, generation: next.generation });
    if (previous !== undefined && previous.name !== next.name) this.#reviveDisplaced(entry.file);
  }

  /**
   * The fault guard of one generation's sources. It is built here, not inside `#swap`, on
   * purpose: closures created in one function share one V8 context, so a `report` closure
   * made in `#swap` would hold `#swap`'s `previous` (captured by the batch callback) for as
   * long as the registration lives, and every generation would keep the one before it alive.
   */
  #guardFor(entry: PluginEntry, plugin: string, locations: BundleLocations) {
    return {
      deadlineMs: this.#options.deadlineMs ?? 2000,
      maxTextLength: this.#options.maxTextLength ?? 64 * 1024,
      report: (fault: SourceFault) => {
        const location = locations.locate(fault.error);
        this.#diagnose(entry, {
          plugin,
          key: fault.key,
          phase: fault.phase,
          message: messageOf(fault.error),
          ...location,
        });
      },
    };
  }

  async #afterSwap(entry: PluginEntry) {
    const scopes = this.#pendingClose.splice(0);
    for (const scope of scopes) {
      try {
        await scope.close();
      } catch (error) {
        this.#diagnose(entry, { phase: "dispose", message: messageOf(error) });
      }
    }
  }

  /** Removes an entry's generation from the registry and closes its scope. */
  async #deactivate(entry: PluginEntry, shouldReviveDisplaced: boolean) {
    const active = entry.active;
    if (active === undefined) return;
    entry.active = undefined;
    this.#options.registry.batch((batch) => {
      for (const r of active.registrations) batch.unregister(r);
    });
    this.#emit({ kind: "removed", plugin: active.name, file: entry.file });
    if (entry.isRemoved) this.#resolveProblems(entry, active.name);
    try {
      await active.scope.close();
    } catch (error) {
      this.#diagnose(entry, { plugin: active.name, phase: "dispose", message: messageOf(error) });
    }
    if (shouldReviveDisplaced) this.#reviveDisplaced(entry.file);
  }

  /** A generation took over (or the plugin left): the problems of earlier generations no longer hold. */
  #resolveProblems(entry: PluginEntry, plugin: string) {
    this.#diagnostics.resolve((d) => d.file === entry.file || entry.inputs.includes(d.file) || d.plugin === plugin);
  }

  /** Plugins that lost their namespace to `file` try again now that it let go. */
  #reviveDisplaced(file: string) {
    for (const other of this.#entries.values()) {
      if (other.displacedBy === file && !other.isRemoved) {
        other.displacedBy = undefined;
        other.attemptedHash = undefined;
        other.isDirty = true;
        void this.#drain(other);
      }
    }
  }

  // ── watching ────────────────────────────────────────────────────────────

  async #startWatching() {
    const watcher = watch([...this.#folders], { ignoreInitial: true, depth: 1, atomic: true });
    this.#watcher = watcher;
    watcher.on("all", (event, changed) => this.#onFileEvent(event, path.resolve(changed)));
    // A watcher error (a folder gone, a limit reached) is reported; watching goes on where it can.
    watcher.on("error", (error) =>
      this.#emit({
        kind: "diagnostic",
        diagnostic: {
          plugin: "host",
          file: this.#folders.join(", "),
          phase: "discover",
          message: `watcher: ${messageOf(error)}`,
        },
      }),
    );
    await new Promise<void>((resolve) => watcher.once("ready", () => resolve()));
  }

  #setInputs(entry: PluginEntry, inputs: readonly string[]) {
    entry.inputs = inputs;
    this.#watchInputs();
  }

  /** Keeps the watcher on exactly the entry files and their imported files. */
  #watchInputs() {
    const watcher = this.#watcher;
    if (watcher === undefined || this.#isClosed) return;
    const wanted = new Set<string>();
    for (const entry of this.#entries.values()) for (const input of entry.inputs) wanted.add(input);
    const added = [...wanted].filter((file) => !this.#watched.has(file));
    const dropped = [...this.#watched].filter((file) => !wanted.has(file));
    if (added.length > 0) {
      // A file the watcher did not cover yet may change after the load read it and before
      // its watch is up; such plugins are checked again shortly (the bundle hash makes it cheap).
      const watched = watcher.getWatched();
      const unseen = new Set(added.filter((file) => !watched[path.dirname(file)]?.includes(path.basename(file))));
      watcher.add(added);
      for (const entry of this.#entries.values()) {
        if (entry.inputs.some((input) => unseen.has(input))) this.#scheduleLoad(entry);
      }
    }
    if (dropped.length > 0) watcher.unwatch(dropped.filter((file) => !this.#folders.some((f) => path.dirname(file) === f)));
    this.#watched = wanted;
  }

  #onFileEvent(event: string, file: string) {
    if (this.#isClosed) return;
    if (event === "add" || event === "unlink" || event === "addDir" || event === "unlinkDir") this.#scheduleRescan();
    for (const entry of this.#entries.values()) {
      if (entry.inputs.includes(file)) this.#scheduleLoad(entry);
    }
  }

  #scheduleRescan() {
    clearTimeout(this.#rescanTimer);
    this.#rescanTimer = setTimeout(() => {
      this.#rescanTimer = undefined;
      this.#rescan();
    }, this.#options.debounceMs ?? 50);
  }

  /**
   * Debounced reload. Watchers may report a write before it finished and coalesce
   * repeated writes without a trailing event, so after the burst is quiet the plugin
   * is checked once more (the bundle hash makes an unchanged re-check cheap).
   */
  #scheduleLoad(entry: PluginEntry) {
    const debounceMs = this.#options.debounceMs ?? 50;
    entry.isVerifyDue = true;
    clearTimeout(entry.timer);
    entry.timer = setTimeout(async () => {
      entry.timer = undefined;
      entry.isDirty = true;
      await this.#drain(entry);
      if (!entry.isVerifyDue || entry.timer !== undefined || entry.isRemoved || this.#isClosed) return;
      entry.timer = setTimeout(
        () => {
          entry.timer = undefined;
          if (!entry.isVerifyDue) return;
          entry.isVerifyDue = false;
          entry.isDirty = true;
          void this.#drain(entry);
        },
        Math.max(100, debounceMs * 2),
      );
    }, debounceMs);
  }
}
