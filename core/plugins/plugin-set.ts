// Owns the plugin set: one entry per discovered plugin file, each with its own queue of loads
// and its load state (`load-state.ts`), the swap of a loaded generation into the registry, and
// the events the host hears. A plugin never takes the host down: every failure becomes a
// diagnostic and the last good generation stays active.

import path from "node:path";
import type { AwilixContainer } from "awilix";
import { type Clock, type Logger, systemClock } from "../base/clock.ts";
import { withinDeadline } from "../base/deadline.ts";
import { type Diagnostic, Diagnostics, diagnosticIdentity, escapeControl } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import type { Scope } from "../base/scope.ts";
import type { Registration, Registry } from "../registry/registry.ts";
import type { SourceFault } from "../system-context/index.ts";
import type { LoadTimings, ObservedKind, PluginEvent, PluginInfo, PluginOrigin } from "./events.ts";
import { type FoundPlugins, findPlugins, readPluginEntry } from "./find.ts";
import { type HostedGeneration, HostedPlugin, type Loaded, locatedInRunner } from "./hosted-plugin.ts";
import { type TrackedInputs, WatchedInputs } from "./inputs.ts";
import { type PluginLimits, resolvePluginLimits } from "./limits.ts";
import { began, changed, discovered, finished, idle, isStale, type LoadState, removed } from "./load-state.ts";
import type { Location } from "./locations.ts";
import { compareText, Namespaces } from "./namespaces.ts";
import { hostPackageVersion, lookUpPackage } from "./packages.ts";
import { InThreadTransport } from "./transport.ts";
import { PluginWatcher } from "./watching.ts";
import { PluginWorkers, workerProgram } from "./worker/plugin-worker.ts";

export type { LoadTimings, PluginEvent, PluginInfo, PluginOrigin } from "./events.ts";

/** What a plugin set is started with; each limit not given takes its default (`limits.ts`). */
export interface PluginSetOptions extends Partial<PluginLimits> {
  /**
   * Where the plugins are: folders of plugins, plugin files (absolute or relative to
   * `projectRoot`), and names of installed plugin packages (decisions 130, 131).
   */
  readonly folders: readonly string[];
  /** The host project: relative entries and package names resolve from here (default: the `location` service, else the working folder). */
  readonly projectRoot?: string;
  /** The host's version that packages' peer ranges of context-host are checked against (default: this package's version; none known: unchecked). */
  readonly hostVersion?: string;
  readonly registry: Registry;
  /** The host's awilix container with `clock`, `logger` and `location` registered. */
  readonly container: AwilixContainer;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Hot reload on file changes (default true). */
  readonly watch?: boolean;
  /** Quiet time after the last change of a burst before the plugin is checked once more (default 50 ms); the first change reloads at once. */
  readonly debounceMs?: number;
  /** Namespaces of the host's core sources (`core` always): no plugin may take them, so no plugin key collides with a core source. */
  readonly reservedNamespaces?: readonly string[];
  /** The host's diagnostics channel (a new one when not given). */
  readonly diagnostics?: Diagnostics;
  /**
   * Where plugin code runs (decision 060): `worker` (the default), each plugin in its own
   * worker thread with a heap limit, deadlines kept by the host; `none`, in the host's own
   * process and realm, for trusted first-party plugins and comparison benchmarks.
   */
  readonly isolation?: Isolation;
}

/** Where plugin code runs: in its own worker thread (default), or in the host's process. */
export type Isolation = "worker" | "none";

const hundredths = (ms: number) => Math.round(ms * 100) / 100;

/** The generation of a plugin that is swapped in. */
interface Active {
  readonly name: string;
  readonly generation: number;
  /** Hash of the bundle it was loaded from. */
  readonly hash: string;
  readonly scope: Scope;
  readonly keys: readonly string[];
  readonly loadMs: number;
}

/**
 * One discovered plugin file and its life. Its loads stand in `load` (a `LoadState`, moved
 * only by its transitions); the rest is what the loads left: the active generation, the
 * last failure (both may hold at once: a failed reload keeps the last good generation).
 */
interface PluginEntry {
  readonly id: string;
  readonly file: string;
  /** Its folder, or its package and the version last found. */
  origin: PluginOrigin;
  /** The host's handle on the plugin's runner (its transport starts with the entry). */
  readonly hosted: HostedPlugin;
  load: LoadState;
  active: Active | undefined;
  /** The last load attempt failed (its diagnostic was emitted). */
  failed: Diagnostic | undefined;
  /** Hash of the last bundle a load was attempted with: identical content is not loaded twice. */
  attemptedHash: string | undefined;
  /** Generation numbers handed out so far. */
  attempts: number;
  /** Files the last bundle attempt read, and when they reload the plugin. */
  readonly inputs: TrackedInputs;
  /** Source keys whose faults are in the current diagnostics. */
  readonly faulted: Set<string>;
  /** What each source's loader returned at its last observation without a fault. */
  readonly observed: Map<string, ObservedKind>;
  /**
   * Identities of the diagnostics this file reported since its problems were last resolved:
   * what a reload or removal of this file clears. Not the plugin name: a file that lost the
   * name to another still has its problem when the other reloads.
   */
  readonly reported: Set<string>;
  /** This file's work, one task after another: loads, swaps, closes of its generations. */
  queue: Promise<void>;
}

/** The phases of a source's faults at a boundary (as opposed to its generation's). */
const boundaryPhases = new Set(["load", "value", "baseline", "update", "removed"]);

export class PluginSet {
  readonly #options: PluginSetOptions;
  /** The paths among the `plugins` entries: the folders the watcher watches. */
  readonly #folders: readonly string[];
  readonly #projectRoot: string;
  readonly #hostVersion: string | undefined;
  /** The packages the last scan found (their package.json's hash and folder), by name: a change reloads their plugins. */
  #packages = new Map<string, string>();
  /** Packages whose installed folder changed since the last quiet re-check: their plugins are checked again. */
  readonly #replacedPackages = new Set<string>();
  /** The package problems the last scan reported, by diagnostic identity. */
  #packageProblems = new Map<string, Diagnostic>();
  readonly #entries = new Map<string, PluginEntry>();
  readonly #listeners = new Set<(event: PluginEvent) => void>();
  readonly #diagnostics: Diagnostics;
  readonly #namespaces = new Namespaces();
  readonly #inputs: WatchedInputs;
  /** Namespaces no plugin may take (`core` and the host's core sources'). */
  readonly #reserved: readonly string[];
  readonly #limits: PluginLimits;
  readonly #workers: PluginWorkers | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #location: string;
  /** Tasks queued on entries and not yet ended: the set is settled only when none is left. */
  #tasks = 0;
  #settledWaiters: Array<() => void> = [];
  #watcher: PluginWatcher | undefined;
  #rescanTimer: NodeJS.Timeout | undefined;
  /** The quiet re-check after a package's package.json changed. */
  #packageRecheckTimer: NodeJS.Timeout | undefined;
  #isClosed = false;
  /** Closes of displaced holders' scopes still under way (an entry may leave before its close ends). */
  readonly #closing = new Set<Promise<void>>();

  private constructor(options: PluginSetOptions) {
    const { container } = options;
    const service = <T>(name: string, fallback: T): T =>
      container.hasRegistration(name) ? (container.resolve(name) as T) : fallback;
    this.#options = options;
    this.#diagnostics = options.diagnostics ?? new Diagnostics();
    this.#clock = service<Clock>("clock", systemClock);
    this.#logger = service<Logger | undefined>("logger", undefined);
    this.#location = String(service("location", process.cwd()));
    this.#projectRoot = path.resolve(options.projectRoot ?? this.#location);
    this.#hostVersion = options.hostVersion ?? hostPackageVersion();
    this.#folders = options.folders.flatMap((entry) => {
      const spec = readPluginEntry(entry, this.#projectRoot);
      return spec.kind === "path" ? [spec.path] : [];
    });
    this.#reserved = [...new Set(["core", ...(options.reservedNamespaces ?? [])])];
    this.#limits = resolvePluginLimits(options);
    this.#workers = options.isolation === "none" ? undefined : new PluginWorkers(this.#limits);
    this.#inputs = new WatchedInputs(options.watch ?? true, Math.max(100, (options.debounceMs ?? 50) * 2));
  }

  /**
   * Discovers and loads every plugin (sorted by name) once the watcher is up, so no change to
   * a file a load reads is missed. The workers' program is prepared while the watcher comes
   * up (decision 190).
   */
  static async start(options: PluginSetOptions): Promise<PluginSet> {
    const set = new PluginSet(options);
    if (set.#workers !== undefined) void workerProgram().catch(() => {});
    if (options.watch ?? true) {
      set.#watcher = await PluginWatcher.start({
        folders: set.#folders,
        onFolderChange: () => set.#scheduleRescan(),
        onFileChange: (file) => set.#inputs.changed(file),
        onPackageChange: (name) => {
          set.#replacedPackages.add(name);
          set.#packageChanged();
        },
        // A watcher error (a folder gone, a limit reached) is reported; watching goes on where it can.
        onError: (error) => {
          const message = `watcher: ${messageOf(error)}`;
          const diagnostic = {
            origin: "watcher",
            plugin: "host",
            file: set.#folders.join(", "),
            phase: "watch",
            message,
          } as const;
          set.#emit({ kind: "diagnostic", diagnostic });
        },
      });
      set.#inputs.watchWith(set.#watcher);
    }
    set.#rescan();
    await set.settled();
    return set;
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
    const infos: PluginInfo[] = [];
    for (const { active, file, origin, observed } of this.#entries.values()) {
      if (active === undefined) continue;
      const { name, generation, keys, loadMs } = active;
      const kinds = keys.flatMap((key) => (observed.has(key) ? [[key, observed.get(key)]] : []));
      infos.push({ name, file, origin, generation, keys, observed: Object.fromEntries(kinds), loadMs });
    }
    return infos.sort((a, b) => compareText(a.name, b.name));
  }

  /**
   * Plugin files whose latest load failed, with the diagnostic that says why, and plugin
   * packages that are not loaded (not installed, incompatible), by their package.json.
   */
  failures(): Array<{ readonly file: string; readonly diagnostic: Diagnostic }> {
    const failed = [...this.#entries.values()].flatMap(({ file, failed }) =>
      failed === undefined ? [] : [{ file, diagnostic: failed }],
    );
    return [...failed, ...[...this.#packageProblems.values()].map((diagnostic) => ({ file: diagnostic.file, diagnostic }))];
  }

  /** Resolves once no load is queued or running and no re-check is due (told by the events that end them). */
  settled(): Promise<void> {
    if (this.#isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  #isSettled(): boolean {
    if (this.#tasks > 0 || this.#inputs.isPending) return false;
    if (this.#rescanTimer !== undefined || this.#packageRecheckTimer !== undefined) return false;
    for (const entry of this.#entries.values()) if (entry.load.kind === "due" || entry.load.kind === "loading") return false;
    return true;
  }

  /** Something ended: whoever waits in `settled()` is told when nothing is left. */
  #checkSettled() {
    if (this.#settledWaiters.length === 0 || !this.#isSettled()) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  /** Queues `task` on the entry's queue, after what it holds; the set is busy until it ends. */
  #enqueue(entry: PluginEntry, task: () => Promise<void>, after: Promise<unknown> = entry.queue): Promise<void> {
    this.#tasks++;
    const queued = after
      .then(task)
      .catch(() => {})
      .finally(() => {
        this.#tasks--;
        this.#checkSettled();
      });
    entry.queue = queued;
    return queued;
  }

  /** Reloads one plugin (by entry file) now, bypassing the watcher. */
  reload(file: string): Promise<void> {
    const entry = this.#entries.get(path.resolve(file));
    return entry === undefined ? Promise.resolve() : this.#markDirty(entry, false);
  }

  /** Stops watching and closes every generation; releases every watcher, timer and scope. */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#inputs.close();
    clearTimeout(this.#rescanTimer);
    this.#rescanTimer = undefined;
    clearTimeout(this.#packageRecheckTimer);
    this.#packageRecheckTimer = undefined;
    await this.#watcher?.close();
    const entries = [...this.#entries.values()];
    for (const entry of entries) entry.load = removed;
    await Promise.all(entries.map((entry) => entry.queue));
    // A load that displaced a holder left its close on the holder's queue.
    await Promise.all(this.#closing);
    // Each plugin's disposers run in its runner, within the dispose deadline; then its worker
    // is stopped, whatever it still runs (a leaked timer, a loop).
    await Promise.all(entries.map((entry) => this.#deactivate(entry).then(() => entry.hosted.close())));
    this.#entries.clear();
    this.#listeners.clear();
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
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

  /** Reports a problem of the entry's file: its own plugin and file unless the problem names others. */
  #diagnose(
    entry: PluginEntry,
    problem: Omit<Diagnostic, "origin" | "plugin" | "file"> & { file?: string; plugin?: string; location?: Location },
  ) {
    const { location, ...rest } = problem;
    const diagnostic: Diagnostic = {
      ...rest,
      ...location,
      origin: "plugin",
      plugin: rest.plugin ?? entry.active?.name ?? entry.id,
      file: location?.file ?? rest.file ?? entry.file,
    };
    entry.reported.add(diagnosticIdentity(diagnostic));
    this.#emit({ kind: "diagnostic", diagnostic });
    return diagnostic;
  }

  // ── discovery ────────────────────────────────────────────────────────────

  #rescan() {
    if (this.#isClosed) return;
    const seen = new Set<string>();
    const created = new Set<PluginEntry>();
    const found = findPlugins(this.#options.folders, this.#projectRoot, this.#hostVersion);
    const updated = this.#notePackages(found);
    for (const plugin of found.plugins) {
      seen.add(plugin.file);
      const known = this.#entries.get(plugin.file);
      if (known === undefined) {
        const entry = this.#newEntry(plugin.id, plugin.file, plugin.origin);
        this.#entries.set(plugin.file, entry);
        created.add(entry);
        continue;
      }
      known.origin = plugin.origin;
      const name = plugin.origin.kind === "package" ? plugin.origin.name : undefined;
      if (name !== undefined && known.load.kind !== "removed" && (updated.has(name) || this.#replacedPackages.has(name))) {
        // An updated package reloads its plugins even when their bundles are byte for byte the
        // same (its dependencies may have changed); a replaced one is loaded again if they differ.
        if (updated.has(name)) known.attemptedHash = undefined;
        void this.#markDirty(known, false);
      }
    }
    // New plugins load one after another in sorted order of name, so their setups, events and
    // diagnostics come in that order; each plugin's own queue keeps its later loads in order.
    const entries = [...this.#entries.values()].sort((a, b) => compareText(a.id, b.id) || compareText(a.file, b.file));
    let previous: Promise<void> = Promise.resolve();
    for (const entry of entries) {
      if (!seen.has(entry.file)) this.#remove(entry);
      else if (created.has(entry)) {
        // Plugins bundle at once and, each in its own worker, set up concurrently (a stuck one
        // costs start-up one deadline); in the host's thread their setups take turns in name
        // order, so their side effects come in that order. They are swapped in in name order.
        entry.load = discovered(this.#load(entry, this.#workers === undefined ? previous : undefined));
        previous = this.#drain(entry, previous);
      }
    }
  }

  /**
   * Records the packages a scan found: where they are installed is watched, their problems
   * reported (and earlier ones that no longer hold resolved). Returns the names of packages
   * whose package.json changed since the last scan.
   */
  #notePackages(found: FoundPlugins): Set<string> {
    const packages = new Map(found.packages.map((found) => [found.name, `${found.manifestHash} ${found.root}`]));
    const updated = new Set(
      [...packages].filter(([name, seen]) => (this.#packages.get(name) ?? seen) !== seen).map(([name]) => name),
    );
    this.#packages = packages;
    this.#watcher?.watchInstallPlaces(found.installPlaces);
    const known = this.#packageProblems;
    this.#packageProblems = new Map(
      found.problems.map(({ package: plugin, file, message }) => {
        const diagnostic: Diagnostic = { origin: "plugin", plugin, file, phase: "package", message };
        return [diagnosticIdentity(diagnostic), diagnostic];
      }),
    );
    const gone = new Set([...known.keys()].filter((id) => !this.#packageProblems.has(id)));
    if (gone.size > 0) this.#diagnostics.resolve((d) => d.phase === "package" && gone.has(diagnosticIdentity(d)));
    for (const [id, diagnostic] of this.#packageProblems) if (!known.has(id)) this.#emit({ kind: "diagnostic", diagnostic });
    return updated;
  }

  /**
   * A package was installed, replaced (`npm update` replaces its folder) or removed, or its
   * package.json changed: look the packages up again now, and once more when the burst is
   * quiet, since the files may still be being written.
   */
  #packageChanged() {
    this.#scheduleRescan();
    clearTimeout(this.#packageRecheckTimer);
    this.#packageRecheckTimer = setTimeout(() => {
      this.#packageRecheckTimer = undefined;
      this.#rescan();
      this.#replacedPackages.clear();
      this.#checkSettled();
    }, this.#inputs.quietMs);
  }

  #newEntry(id: string, file: string, origin: PluginOrigin): PluginEntry {
    const entry: PluginEntry = {
      id,
      file,
      origin,
      hosted: this.#hostedFor(() => entry),
      load: idle,
      active: undefined,
      failed: undefined,
      attemptedHash: undefined,
      attempts: 0,
      inputs: this.#inputs.track(file, (cause) => void this.#markDirty(entry, cause === "first-event")),
      faulted: new Set(),
      observed: new Map(),
      reported: new Set(),
      queue: Promise.resolve(),
    };
    // Its worker starts now, while the plugin is bundled: start-up overlaps.
    entry.hosted.warm();
    return entry;
  }

  #scheduleRescan() {
    clearTimeout(this.#rescanTimer);
    this.#rescanTimer = setTimeout(() => {
      this.#rescanTimer = undefined;
      this.#rescan();
      this.#checkSettled();
    }, this.#options.debounceMs ?? 50);
  }

  #remove(entry: PluginEntry) {
    entry.load = removed;
    entry.inputs.cancel();
    void this.#enqueue(entry, async () => {
      this.#entries.delete(entry.file);
      this.#inputs.forget(entry.inputs);
      await this.#deactivate(entry);
      await entry.hosted.close();
      this.#resolveProblems(entry);
      this.#revive(this.#namespaces.release(entry.file));
      this.#inputs.watch();
    });
  }

  // ── loads, one plugin at a time ─────────────────────────────────────────

  /** A change no load has seen yet; a provisional one (first event of a burst) does not demote a final one. */
  #markDirty(entry: PluginEntry, isProvisional: boolean): Promise<void> {
    entry.load = changed(entry.load, isProvisional);
    return this.#drain(entry);
  }

  /** Runs loads of one plugin one at a time until no change is left unseen (after `after`, by default its queue). */
  #drain(entry: PluginEntry, after?: Promise<unknown>): Promise<void> {
    const drain = async () => {
      while (entry.load.kind === "due" && !this.#isClosed) {
        const { isProvisional, preload } = entry.load;
        entry.load = began(entry.load);
        try {
          await this.#loadOnce(entry, isProvisional, preload);
        } finally {
          entry.load = finished(entry.load);
        }
      }
    };
    return this.#enqueue(entry, drain, after);
  }

  /** One load of a plugin: bundle, then evaluate and set up where its code runs. Never rejects. */
  async #load(entry: PluginEntry, turn?: Promise<unknown>): Promise<Loaded> {
    const { origin, inputs } = entry;
    // A package may have been replaced since it was looked up (an update to a version this
    // host is not for): its code is not run; the scan that follows says why.
    if (origin.kind === "package") {
      const lookup = lookUpPackage(origin.name, this.#projectRoot, this.#hostVersion);
      if (lookup.kind !== "found" || !lookup.plugins.some((plugin) => plugin.file === entry.file)) {
        this.#scheduleRescan();
        // No content was bundled: no hash that could match the active generation's (nothing is restored).
        return { kind: "unchanged", inputs: inputs.files, hash: "" };
      }
    }
    const request = {
      file: entry.file,
      generation: entry.attempts + 1,
      attemptedHash: entry.attemptedHash,
      ownDependenciesFirst: origin.kind === "package",
      settings: this.#options.settings ?? {},
      reserved: this.#reserved,
      startedAt: performance.now(),
    };
    try {
      return await entry.hosted.load(request, turn);
    } catch (error) {
      return { kind: "bundle-failed", inputs: inputs.files, fault: { phase: "evaluate", message: messageOf(error) } };
    }
  }

  /**
   * The handle on one plugin's runner, behind the set's transport: its stops and faults become
   * the entry's diagnostics. `entryOf` is read only when something is reported.
   */
  #hostedFor(entryOf: () => PluginEntry): HostedPlugin {
    const { container } = this.#options;
    const limits = this.#limits;
    const clock = this.#clock;
    const logger = this.#logger;
    const workers = this.#workers;
    const init = {
      location: this.#location,
      clock: clock === systemClock ? ("system" as const) : ("host" as const),
      maxDepth: limits.maxDepth,
      maxValueBytes: limits.maxValueBytes,
    };
    // A plugin's printed and logged lines reach the host's logger with control characters escaped.
    const log = (level: "info" | "warn" | "error", message: string) => {
      try {
        logger?.[level](escapeControl(message));
      } catch {
        // A failing logger must not break the host.
      }
    };
    return new HostedPlugin({
      limits,
      now: () => clock.now(),
      startTransport: async (onStopped) =>
        workers === undefined
          ? new InThreadTransport({ container, limits })
          : workers.start({ plugin: entryOf().file, init, log, onStopped }),
      report: (problem) => {
        const entry = entryOf();
        if (problem.key !== undefined) entry.faulted.add(problem.key);
        const { location: at, ...rest } = problem;
        this.#diagnose(entry, { ...rest, ...at });
      },
    });
  }

  async #loadOnce(entry: PluginEntry, isProvisional: boolean, preload: Promise<Loaded> | undefined): Promise<void> {
    const result = await (preload ?? this.#load(entry));
    if (result.kind === "unchanged") {
      this.#inputs.set(entry.inputs, result.inputs);
      // Exactly the active generation's content again after a failed load (an editor's undo,
      // or a comment added: esbuild leaves comments out): the failure no longer holds.
      const active = entry.active;
      if (active !== undefined && entry.failed !== undefined && active.hash === result.hash) {
        entry.failed = undefined;
        this.#resolveLoadProblems(entry);
        this.#emit({ kind: "restored", plugin: active.name, file: entry.file, generation: active.generation });
      }
      return;
    }
    if (result.kind === "bundle-failed") {
      this.#inputs.set(entry.inputs, [...new Set([...entry.inputs.files, ...result.inputs])]);
      // A write may still be under way: the quiet re-check decides whether the failure holds.
      if (!isProvisional) entry.failed = this.#diagnose(entry, result.fault);
      return;
    }
    this.#inputs.set(entry.inputs, result.inputs);
    // A module that fails on the first event of a burst may be a write seen half done (an
    // editor truncates, then writes): nothing is recorded, so the quiet re-check loads
    // the content again and decides, and a save in place takes no generation.
    if (result.kind === "failed" && isProvisional) return;
    const generation = ++entry.attempts;
    if (result.kind === "failed") {
      entry.attemptedHash = result.hash;
      entry.failed = this.#diagnose(entry, result.fault);
      return;
    }
    // A change arrived while this generation was being built: it is stale, the next load wins
    // (and may load the same content again: it was never swapped in).
    if (isStale(entry.load) || this.#isClosed) {
      await this.#closeScope(entry, result.loaded.name, result.loaded.scope);
      return;
    }
    entry.attemptedHash = result.hash;
    const displaced = this.#swap(entry, result, generation);
    if (displaced !== undefined) await this.#closeScope(entry, displaced.name, displaced.scope);
  }

  /**
   * Swaps a generation in: its registrations replace those of the generation it follows
   * (and of a file whose namespace it takes) in one registry version. Returns the generation
   * of this file it displaced, for the caller to close; a refused generation displaces
   * itself. A displaced holder's scope is closed on the holder's own queue, its faults its own.
   */
  #swap(
    entry: PluginEntry,
    load: Extract<Loaded, { kind: "activated" }>,
    generation: number,
  ): { readonly name: string; readonly scope: Scope } | undefined {
    const next = load.loaded;
    const claim = this.#namespaces.check(next.name, entry.file);
    if (claim.kind === "refused") {
      this.#namespaces.record(next.name, entry.file, claim);
      entry.failed = this.#diagnose(entry, {
        plugin: next.name,
        phase: "namespace",
        message: `namespace "${next.name}" is already taken by ${claim.holder}; ${entry.file} is not loaded (the path that sorts first keeps it)`,
      });
      return next;
    }
    const holder = claim.displaced === undefined ? undefined : this.#entries.get(claim.displaced);
    const registrations = this.#registrationsOf(entry, next);
    const previous = entry.active;
    const held = holder?.active;
    try {
      this.#options.registry.batch((batch) => {
        for (const retired of [previous, held]) if (retired !== undefined) batch.retire(retired.scope);
        for (const registration of registrations) batch.register(next.scope, registration);
      });
    } catch (error) {
      // A key the host already registers (a core source): nothing of this generation is applied.
      entry.failed = this.#diagnose(entry, { plugin: next.name, phase: "namespace", message: messageOf(error) });
      return next;
    }
    this.#namespaces.record(next.name, entry.file, claim);
    entry.hosted.swappedIn(next.scope);
    if (holder !== undefined && held !== undefined) {
      holder.active = undefined;
      holder.failed = this.#diagnose(holder, {
        plugin: next.name,
        phase: "namespace",
        message: `namespace "${next.name}" is taken by ${entry.file}, whose path sorts first; ${holder.file} is unloaded`,
      });
      this.#emit({ kind: "removed", plugin: held.name, file: holder.file });
      // Closed after what the holder's queue already holds.
      const closing = this.#enqueue(holder, () => this.#closeScope(holder, held.name, held.scope));
      this.#closing.add(closing);
      void closing.then(() => this.#closing.delete(closing));
    }
    const { startedAt, readyAt } = load;
    entry.active = {
      name: next.name,
      generation,
      scope: next.scope,
      keys: registrations.map((r) => r.key),
      hash: load.hash,
      loadMs: Math.round(readyAt - startedAt),
    };
    entry.failed = undefined;
    this.#resolveProblems(entry);
    entry.faulted.clear();
    const now = performance.now();
    const timings: LoadTimings = {
      loadMs: hundredths(now - startedAt),
      bundleMs: hundredths(load.bundleMs),
      evaluateMs: hundredths(load.evaluateMs),
      setupMs: hundredths(load.setupMs),
      swapMs: hundredths(now - readyAt),
    };
    this.#emit({ kind: "activated", plugin: next.name, file: entry.file, generation, timings });
    if (previous !== undefined && previous.name !== next.name) this.#revive(this.#namespaces.takeWaiters(entry.file));
    return previous;
  }

  /**
   * The registrations of one generation's sources, their faults reported as the entry's. They
   * are built here, not inside `#swap`, on purpose: closures created in one function share one
   * V8 context, so a `report` closure made in `#swap` would hold `#swap`'s `previous` (captured
   * by the batch callback) for as long as the registration lives, and every generation would
   * keep the one before it alive.
   */
  #registrationsOf(entry: PluginEntry, next: HostedGeneration): Registration[] {
    const plugin = next.name;
    const report = (fault: SourceFault) => {
      entry.faulted.add(fault.key);
      const location = locatedInRunner(fault.error);
      this.#diagnose(entry, { plugin, key: fault.key, phase: fault.phase, message: messageOf(fault.error), location });
    };
    const observed = (key: string, kind: ObservedKind) => {
      entry.observed.set(key, kind);
      // Cheap at every boundary: only a source with a fault on record resolves anything.
      if (!entry.faulted.delete(key)) return;
      this.#diagnostics.resolve(
        (d) => d.plugin === plugin && d.key === key && boundaryPhases.has(d.phase) && entry.reported.has(diagnosticIdentity(d)),
      );
    };
    return next.keys.map((key) => entry.hosted.registration(next.generation, key, report, observed));
  }

  /** Closes a generation's scope within the dispose deadline; a failure or a miss is a diagnostic. */
  async #closeScope(entry: PluginEntry, plugin: string, scope: Scope) {
    try {
      await withinDeadline(() => scope.close(), this.#limits.disposeDeadlineMs, `disposers of ${scope.name}`);
    } catch (error) {
      this.#diagnose(entry, { plugin, phase: "dispose", message: messageOf(error) });
    }
  }

  /** Removes an entry's generation (closing its scope removes its registrations) and emits `removed`. */
  async #deactivate(entry: PluginEntry) {
    const active = entry.active;
    if (active === undefined) return;
    entry.active = undefined;
    this.#options.registry.retire(active.scope);
    this.#emit({ kind: "removed", plugin: active.name, file: entry.file });
    await this.#closeScope(entry, active.name, active.scope);
  }

  /**
   * A generation took over (or the plugin left): the problems this file reported no longer
   * hold. Only its own: another file's problem under the same plugin name (one that lost the
   * namespace to it, or that it displaced) holds until that file loads or leaves; and one
   * identical problem another file reported too (a fault in a module both import) stays.
   */
  #resolveProblems(entry: PluginEntry) {
    const mine = new Set(entry.reported);
    entry.reported.clear();
    if (mine.size === 0) return;
    for (const other of this.#entries.values()) if (other !== entry) for (const id of other.reported) mine.delete(id);
    this.#diagnostics.resolve((d) => d.origin === "plugin" && mine.has(diagnosticIdentity(d)));
  }

  /**
   * The problems of this file's failed loads (bundle, module code, config, setup, namespace)
   * no longer hold; those its active generation's sources reported at boundaries stay until
   * they load again.
   */
  #resolveLoadProblems(entry: PluginEntry) {
    this.#diagnostics.resolve(
      (d) => d.origin === "plugin" && !boundaryPhases.has(d.phase) && entry.reported.delete(diagnosticIdentity(d)),
    );
  }

  /** Plugins that lost their namespace try again now that its holder let go. */
  #revive(files: readonly string[]) {
    for (const file of files) {
      const other = this.#entries.get(file);
      if (other === undefined || other.load.kind === "removed") continue;
      other.attemptedHash = undefined;
      void this.#markDirty(other, false);
    }
  }
}
