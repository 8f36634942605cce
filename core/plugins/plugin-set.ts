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
import { Listeners } from "../base/listeners.ts";
import type { Registry } from "../registry/registry.ts";
import type { LoadTimings, PluginEvent, PluginInfo, PluginOrigin } from "./events.ts";
import { type FoundPlugins, findPlugins, hostPackageVersion, lookUpPackage, readPluginEntry } from "./find.ts";
import { type HostedGeneration, HostedPlugin, hundredths, type Loaded } from "./hosted-plugin.ts";
import { type PluginLimits, resolvePluginLimits } from "./limits.ts";
import { began, changed, discovered, finished, idle, isStale, type LoadState, removed } from "./load-state.ts";
import { compareText, Namespaces } from "./namespaces.ts";
import { PluginWorkers, workerProgram } from "./plugin-worker.ts";
import type { WorkerFault } from "./protocol.ts";
import { InThreadTransport } from "./runner.ts";
import { PluginWatcher, type WatchedPlugin } from "./watching.ts";

/** What a plugin set is started with; a limit not given takes its default (`limits.ts`). */
export interface PluginSetOptions extends Partial<PluginLimits> {
  /** Folders of plugins, plugin files (absolute or relative to `projectRoot`), names of installed plugin packages (decisions 130, 131). */
  readonly folders: readonly string[];
  /** Where relative entries and package names resolve from (default: the `location` service, else the working folder). */
  readonly projectRoot?: string;
  /** The version packages' peer ranges of context-host are checked against (default: this package's; none known: unchecked). */
  readonly hostVersion?: string;
  readonly registry: Registry;
  /** The host's awilix container with `clock`, `logger` and `location` registered. */
  readonly container: AwilixContainer;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Hot reload on file changes (default true). */
  readonly watch?: boolean;
  /** Quiet time after a burst of changes before the plugin is checked once more (default 50 ms); the first change reloads at once. */
  readonly debounceMs?: number;
  /** Namespaces of the host's core sources (`core` always): no plugin may take them, so no plugin key collides with a core source. */
  readonly reservedNamespaces?: readonly string[];
  /** The host's diagnostics channel (a new one when not given). */
  readonly diagnostics?: Diagnostics;
  /** Where plugin code runs (decision 060): each plugin in its own worker thread (default), or in the host's own thread (`none`: trusted code, comparisons). */
  readonly isolation?: Isolation;
}

export type Isolation = "worker" | "none";

/**
 * One discovered plugin file and its life. Its loads stand in `load` (a `LoadState`, moved
 * only by its transitions); the rest is what the loads left: the active generation (its handle's), the
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
  /** Why the last load failed (its diagnostic was emitted). */
  failed?: Diagnostic;
  /** Files the last bundle attempt read, and when they reload the plugin. */
  readonly inputs: WatchedPlugin;
  /**
   * Identities of the diagnostics this file reported since its problems were last resolved.
   * Not by plugin name: a file that lost the name to another still has its problem when the other reloads.
   */
  readonly reported: Set<string>;
  /** This file's work, one task after another: loads, swaps, closes of its generations. */
  queue: Promise<void>;
  /** A generation a change overtook before its swap: the next load swaps it in if it bundles the same content (decision 195). */
  overtaken?: HostedGeneration;
}

/** The phases of a source's faults at a boundary (as opposed to its generation's). */
const boundaryPhases = new Set(["load", "value", "baseline", "update", "removed"]);

export class PluginSet {
  readonly #options: PluginSetOptions;
  readonly #projectRoot: string;
  readonly #hostVersion: string | undefined;
  /** The hash of the package.json and the folder of each package the last scan found, by name. */
  #packages: ReadonlyMap<string, string> = new Map();
  /** Packages whose installed folder changed since the last quiet re-check. */
  readonly #replacedPackages = new Set<string>();
  /** The package problems the last scan reported, by diagnostic identity. */
  #packageProblems = new Map<string, Diagnostic>();
  readonly #entries = new Map<string, PluginEntry>();
  readonly #listeners = new Listeners<PluginEvent>();
  readonly #diagnostics: Diagnostics;
  readonly #namespaces = new Namespaces();
  readonly #reserved: readonly string[];
  readonly #limits: PluginLimits;
  /** Where plugin code runs; none: the host's own thread. */
  readonly #workers: PluginWorkers | undefined;
  readonly #clock: Clock;
  /** Tasks queued on entries and not yet ended (an entry may leave before its tasks end). */
  readonly #tasks = new Set<Promise<void>>();
  #settledWaiters: Array<() => void> = [];
  readonly #watcher: PluginWatcher;
  /** The rescan due after a burst of folder changes, and the re-check of packages when their installs are quiet. */
  readonly #timers = new Map<"rescan" | "package re-check", NodeJS.Timeout>();
  #isClosed = false;
  /** The first loads have settled: later activations and removals re-check the settings' names. */
  #isStarted = false;

  private constructor(options: PluginSetOptions) {
    const { container } = options;
    const service = <T>(name: string, fallback: T): T =>
      container.hasRegistration(name) ? (container.resolve(name) as T) : fallback;
    this.#options = options;
    this.#diagnostics = options.diagnostics ?? new Diagnostics();
    const clock = service<Clock>("clock", systemClock);
    const logger = service<Logger | undefined>("logger", undefined);
    const location = String(service("location", process.cwd()));
    this.#clock = clock;
    this.#projectRoot = path.resolve(options.projectRoot ?? location);
    this.#hostVersion = options.hostVersion ?? hostPackageVersion();
    this.#reserved = [...new Set(["core", ...(options.reservedNamespaces ?? [])])];
    this.#limits = resolvePluginLimits(options);
    const { maxDepth, maxValueBytes } = this.#limits;
    const init = { location, clock: clock === systemClock ? ("system" as const) : ("host" as const), maxDepth, maxValueBytes };
    // A plugin's printed and logged lines reach the host's logger with control characters escaped.
    const log = (level: "info" | "warn" | "error", message: string) => {
      try {
        logger?.[level](escapeControl(message));
      } catch {
        // A failing logger must not break the host.
      }
    };
    this.#workers = options.isolation === "none" ? undefined : new PluginWorkers(this.#limits, init, log);
    // The workers' program is built while the watcher starts (decision 190).
    if (this.#workers !== undefined) void workerProgram().catch(() => {});
    // Quiet time after a burst of changes before a plugin or the packages are checked once more.
    const quietMs = Math.max(100, (options.debounceMs ?? 50) * 2);
    const folders = options.folders.flatMap((entry) => {
      const spec = readPluginEntry(entry, this.#projectRoot);
      return spec.kind === "path" ? [spec.path] : [];
    });
    this.#watcher = new PluginWatcher({
      folders,
      isWatching: options.watch ?? true,
      quietMs,
      onFolderChange: () => this.#scheduleRescan(),
      // A package was installed, replaced, removed or changed: look packages up now, and once more when quiet (files may still be written).
      onPackageChange: (name) => {
        this.#replacedPackages.add(name);
        this.#scheduleRescan();
        this.#after("package re-check", quietMs, () => {
          this.#rescan();
          this.#replacedPackages.clear();
        });
      },
      // A folder gone, a limit reached: reported; watching goes on where it can.
      onError: (error) => {
        const message = `watcher: ${messageOf(error)}`;
        const diagnostic = { origin: "watcher", plugin: "host", file: folders.join(", "), phase: "watch", message } as const;
        this.#emit({ kind: "diagnostic", diagnostic });
      },
    });
  }

  /** Loads every plugin (by name) once the watcher is up, so no change is missed. */
  static async start(options: PluginSetOptions): Promise<PluginSet> {
    const set = new PluginSet(options);
    await set.#watcher.ready;
    set.#rescan();
    await set.settled();
    set.#isStarted = true;
    set.#checkSettingsNames();
    return set;
  }

  /**
   * Warns about each `settings` entry no plugin takes (a typo: `todo` for `todos`), naming the
   * plugins there are; the warning is resolved once a plugin of that name is there. A plugin
   * whose load failed still counts by the name its problem gives; while a package's plugins are
   * not loaded (its own diagnostic says why), their names are unknown and nothing is said.
   * Checked once the first loads have settled, and again whenever a plugin is activated or removed.
   */
  #checkSettingsNames() {
    const settings = this.#options.settings ?? {};
    const isAnyUnknown = this.#packageProblems.size > 0;
    const names = new Set<string>();
    for (const entry of this.#entries.values()) {
      const name = entry.hosted.active?.name ?? entry.failed?.plugin;
      if (name !== undefined) names.add(name);
    }
    const known = [...names].sort(compareText);
    for (const name of Object.keys(settings)) {
      const setting = `pluginSettings.${name}`;
      // The list of plugins in the message changes: the older warning no longer holds.
      this.#diagnostics.resolve((d) => d.origin === "plugin" && d.phase === "config" && d.file === setting);
      if (names.has(name) || isAnyUnknown) continue;
      const there = known.length === 0 ? "there are no plugins" : `the plugins: ${known.join(", ")}`;
      const message = `no plugin is named ${JSON.stringify(name)}, so these settings are not used (${there})`;
      this.#emit({ kind: "diagnostic", diagnostic: { origin: "plugin", plugin: name, file: setting, phase: "config", message } });
    }
  }

  /** Receives every later event. Returns an unsubscribe. */
  subscribe(listener: (event: PluginEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Every diagnostic emitted so far, oldest first. */
  get diagnostics(): readonly Diagnostic[] {
    return this.#diagnostics.history;
  }

  /** Active plugins in name order. */
  plugins(): PluginInfo[] {
    const infos: PluginInfo[] = [];
    for (const { hosted, file, origin } of this.#entries.values()) {
      const { active, observed } = hosted;
      if (active === undefined) continue;
      const { name, generation, keys, startedAt, readyAt } = active;
      const kinds = keys.flatMap((key) => (observed.has(key) ? [[key, observed.get(key)]] : []));
      const loadMs = Math.round(readyAt - startedAt);
      infos.push({ name, file, origin, generation, keys, observed: Object.fromEntries(kinds), loadMs });
    }
    return infos.sort((a, b) => compareText(a.name, b.name));
  }

  /** Plugin files whose latest load failed, and packages not loaded (not installed, incompatible), each with why. */
  failures(): Array<{ readonly file: string; readonly diagnostic: Diagnostic }> {
    const failed = [...this.#entries.values()].flatMap(({ file, failed }) => (failed ? [{ file, diagnostic: failed }] : []));
    return [...failed, ...[...this.#packageProblems.values()].map((diagnostic) => ({ file: diagnostic.file, diagnostic }))];
  }

  /** Resolves once no load is queued or running and no re-check is due (told by the events that end them, no polling). */
  settled(): Promise<void> {
    if (this.#isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  #isSettled(): boolean {
    if (this.#tasks.size > 0 || this.#timers.size > 0 || this.#watcher.isPending) return false;
    for (const entry of this.#entries.values()) if (entry.load.kind === "due" || entry.load.kind === "loading") return false;
    return true;
  }

  #checkSettled() {
    if (this.#settledWaiters.length === 0 || !this.#isSettled()) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  /** Queues `task` on the entry's queue (after `after`); the set is busy until it ends. */
  #enqueue(entry: PluginEntry, task: () => Promise<void>, after: Promise<unknown> = entry.queue): Promise<void> {
    const queued = after
      .then(task)
      .catch(() => {})
      .finally(() => {
        this.#tasks.delete(queued);
        this.#checkSettled();
      });
    this.#tasks.add(queued);
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
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await this.#watcher.close();
    const entries = [...this.#entries.values()];
    for (const entry of entries) entry.load = removed;
    // Every queued task ends first: the loads under way, and the closes of displaced holders' generations they queued.
    while (this.#tasks.size > 0) await Promise.all(this.#tasks);
    // Disposers run within the dispose deadline; then the worker stops, whatever it still runs.
    await Promise.all(entries.map((entry) => this.#deactivate(entry).then(() => entry.hosted.close())));
    this.#entries.clear();
    this.#listeners.clear();
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  #emit(event: PluginEvent) {
    // A repeated identical diagnostic counts up in the channel and is not announced again.
    if (event.kind === "diagnostic" && !this.#diagnostics.report(event.diagnostic)) return;
    this.#listeners.emit(event);
    if (this.#isStarted && (event.kind === "activated" || event.kind === "removed")) this.#checkSettingsNames();
  }

  /** Reports a problem of the entry's file, under its own plugin and file unless the problem names others. */
  #diagnose(entry: PluginEntry, problem: WorkerFault) {
    const { location, ...rest } = problem;
    const diagnostic: Diagnostic = {
      ...rest,
      ...location,
      origin: "plugin",
      plugin: rest.plugin ?? entry.hosted.active?.name ?? entry.id,
      file: location?.file ?? entry.file,
    };
    entry.reported.add(diagnosticIdentity(diagnostic));
    this.#emit({ kind: "diagnostic", diagnostic });
    return diagnostic;
  }

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
        created.add(this.#newEntry(plugin.id, plugin.file, plugin.origin));
        continue;
      }
      known.origin = plugin.origin;
      const name = plugin.origin.kind === "package" ? plugin.origin.name : undefined;
      if (name !== undefined && known.load.kind !== "removed" && (updated.has(name) || this.#replacedPackages.has(name))) {
        // An updated package reloads its plugins even when their bundles are byte for byte the
        // same (its dependencies may have changed); a replaced one is loaded again if they differ.
        if (updated.has(name)) known.hosted.attemptedHash = undefined;
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
        entry.load = discovered(this.#load(entry, false, this.#workers === undefined ? previous : undefined));
        previous = this.#drain(entry, previous);
      }
    }
  }

  /** Watches where the packages a scan found are installed, reports their new problems and resolves gone ones; returns those whose package.json changed. */
  #notePackages(found: FoundPlugins): Set<string> {
    const updated = new Set<string>();
    for (const [name, seen] of found.packages) if ((this.#packages.get(name) ?? seen) !== seen) updated.add(name);
    this.#packages = found.packages;
    this.#watcher.watchInstallPlaces(found.installPlaces);
    const known = this.#packageProblems;
    this.#packageProblems = new Map();
    for (const { package: plugin, file, message } of found.problems) {
      const diagnostic: Diagnostic = { origin: "plugin", plugin, file, phase: "package", message };
      this.#packageProblems.set(diagnosticIdentity(diagnostic), diagnostic);
    }
    const isGone = (id: string) => known.has(id) && !this.#packageProblems.has(id);
    this.#diagnostics.resolve((d) => d.phase === "package" && isGone(diagnosticIdentity(d)));
    for (const [id, diagnostic] of this.#packageProblems) if (!known.has(id)) this.#emit({ kind: "diagnostic", diagnostic });
    return updated;
  }

  /** A plugin file a scan found for the first time, entered in the set. */
  #newEntry(id: string, file: string, origin: PluginOrigin): PluginEntry {
    const { container, settings = {} } = this.#options;
    const limits = this.#limits;
    const entry: PluginEntry = {
      id,
      file,
      origin,
      hosted: new HostedPlugin({
        file,
        settings,
        reserved: this.#reserved,
        limits,
        now: () => this.#clock.now(),
        startTransport: async (onStopped) =>
          this.#workers === undefined ? new InThreadTransport({ container, limits }) : this.#workers.start(file, onStopped),
        // The runner's stops and faults become the entry's diagnostics.
        report: (problem) => this.#diagnose(entry, problem),
        resolved: (plugin, key) => {
          const isResolved = (d: Diagnostic) => d.plugin === plugin && d.key === key && boundaryPhases.has(d.phase);
          this.#diagnostics.resolve((d) => isResolved(d) && entry.reported.has(diagnosticIdentity(d)));
        },
      }),
      load: idle,
      inputs: this.#watcher.track(file, (isProvisional) => void this.#markDirty(entry, isProvisional)),
      reported: new Set(),
      queue: Promise.resolve(),
    };
    this.#entries.set(file, entry);
    return entry;
  }

  #scheduleRescan() {
    this.#after("rescan", this.#options.debounceMs ?? 50, () => this.#rescan());
  }

  /** Runs `task` once `ms` pass without another call for the same timer; the set is not settled meanwhile. */
  #after(timer: "rescan" | "package re-check", ms: number, task: () => void) {
    clearTimeout(this.#timers.get(timer));
    const timeout = setTimeout(() => {
      this.#timers.delete(timer);
      task();
      this.#checkSettled();
    }, ms);
    this.#timers.set(timer, timeout);
  }

  #remove(entry: PluginEntry) {
    entry.load = removed;
    this.#watcher.forget(entry.inputs);
    void this.#enqueue(entry, async () => {
      this.#entries.delete(entry.file);
      await this.#deactivate(entry);
      await entry.hosted.close();
      this.#resolveProblems(entry);
      this.#revive(this.#namespaces.release(entry.file));
    });
  }

  #markDirty(entry: PluginEntry, isProvisional: boolean): Promise<void> {
    entry.load = changed(entry.load, isProvisional);
    return this.#drain(entry);
  }

  /** Runs loads of one plugin one at a time until no change is left unseen. */
  #drain(entry: PluginEntry, after?: Promise<unknown>): Promise<void> {
    const drain = async () => {
      while (entry.load.kind === "due" && !this.#isClosed) {
        const { isProvisional, preload } = entry.load;
        entry.load = began(entry.load);
        await this.#loadOnce(entry, isProvisional, preload).finally(() => {
          entry.load = finished(entry.load);
        });
      }
    };
    return this.#enqueue(entry, drain, after);
  }

  /** One load of a plugin, never rejecting. */
  async #load(entry: PluginEntry, isProvisional: boolean, turn?: Promise<unknown>): Promise<Loaded> {
    const { origin, inputs } = entry;
    // A package replaced since it was looked up (by a version not for this host) is not run; the scan that follows says why.
    if (origin.kind === "package") {
      const lookup = lookUpPackage(origin.name, this.#projectRoot, this.#hostVersion);
      if (!lookup.plugins.some((plugin) => plugin.file === entry.file)) {
        this.#scheduleRescan();
        // No content was bundled: no hash that could match the active generation's (nothing is restored).
        return { kind: "unchanged", inputs: inputs.files, hash: "" };
      }
    }
    const { overtaken } = entry;
    return entry.hosted.load({ ownDependenciesFirst: origin.kind === "package", isProvisional, overtaken }, turn);
  }

  async #loadOnce(entry: PluginEntry, isProvisional: boolean, preload: Promise<Loaded> | undefined): Promise<void> {
    const result = await (preload ?? this.#load(entry, isProvisional));
    const { overtaken } = entry;
    entry.overtaken = undefined;
    if (overtaken !== undefined && !("loaded" in result && result.loaded === overtaken)) await this.#closeScope(entry, overtaken);
    // A bundle that failed read only part of the plugin: the files read before stay watched.
    const isPartial = result.kind === "bundle-failed";
    this.#watcher.read(entry.inputs, isPartial ? [...new Set([...entry.inputs.files, ...result.inputs])] : result.inputs);
    if (result.kind === "unchanged") {
      // The active generation's content again after a failed load (an undo): the failure no longer holds.
      const active = entry.hosted.active;
      if (active !== undefined && entry.failed !== undefined && active.bundle.hash === result.hash) {
        entry.failed = undefined;
        // The problems of its failed loads no longer hold; its sources' boundary faults stay until they load again.
        const isLoadProblem = (d: Diagnostic) => d.origin === "plugin" && !boundaryPhases.has(d.phase);
        this.#diagnostics.resolve((d) => isLoadProblem(d) && entry.reported.delete(diagnosticIdentity(d)));
        this.#emit({ kind: "restored", plugin: active.name, file: entry.file, generation: active.generation });
      }
      return;
    }
    if (result.kind !== "activated") {
      // A failure on the first event of a burst may be a write seen half done: the quiet re-check decides whether it holds.
      if (!isProvisional) entry.failed = this.#diagnose(entry, result.fault);
      return;
    }
    if (entry.load.kind === "removed" || this.#isClosed) return this.#closeScope(entry, result.loaded);
    // A change arrived meanwhile: the next load wins, with this generation if it bundles the same content; not a
    // package's: an update of the package loads it again even then (its dependencies are not in the bundle).
    if (isStale(entry.load) && entry.origin.kind === "package") return this.#closeScope(entry, result.loaded);
    if (isStale(entry.load)) {
      entry.overtaken = result.loaded;
      return;
    }
    entry.hosted.attemptedHash = result.loaded.bundle.hash;
    await this.#swap(entry, result.loaded);
  }

  /**
   * Swaps a generation in: its registrations replace those of the one it follows (and of a file
   * whose namespace it takes) in one registry version. Closes the one it follows (a refused one:
   * itself); a displaced holder's is closed on the holder's own queue.
   */
  async #swap(entry: PluginEntry, next: HostedGeneration): Promise<void> {
    const refuse = (message: string) => {
      entry.failed = this.#diagnose(entry, { plugin: next.name, phase: "namespace", message });
      return this.#closeScope(entry, next);
    };
    const claim = this.#namespaces.check(next.name, entry.file);
    if (claim.kind === "refused") {
      return refuse(
        `namespace "${next.name}" is already taken by ${claim.holder}; ${entry.file} is not loaded (the path that sorts first keeps it)`,
      );
    }
    const holder = claim.displaced === undefined ? undefined : this.#entries.get(claim.displaced);
    const previous = entry.hosted.active;
    const held = holder?.hosted.active;
    try {
      this.#options.registry.batch((batch) => {
        for (const retired of [previous, held]) if (retired !== undefined) batch.retire(retired.scope);
        for (const registration of entry.hosted.registrations(next)) batch.register(next.scope, registration);
      });
    } catch (error) {
      // A key the host already registers: nothing of this generation is applied.
      return refuse(messageOf(error));
    }
    this.#namespaces.hold(next.name, entry.file, claim.displaced);
    if (holder !== undefined && held !== undefined) {
      holder.hosted.active = undefined;
      const message = `namespace "${next.name}" is taken by ${entry.file}, whose path sorts first; ${holder.file} is unloaded`;
      holder.failed = this.#diagnose(holder, { plugin: next.name, phase: "namespace", message });
      this.#emit({ kind: "removed", plugin: held.name, file: holder.file });
      void this.#enqueue(holder, () => this.#closeScope(holder, held));
    }
    entry.hosted.active = next;
    entry.failed = undefined;
    this.#resolveProblems(entry);
    entry.hosted.faulted.clear();
    const now = performance.now();
    const { startedAt, readyAt } = next;
    const timings: LoadTimings = { loadMs: hundredths(now - startedAt), ...next.timings, swapMs: hundredths(now - readyAt) };
    this.#emit({ kind: "activated", plugin: next.name, file: entry.file, generation: next.generation, timings });
    if (previous !== undefined && previous.name !== next.name) this.#revive(this.#namespaces.takeWaiters(entry.file));
    if (previous !== undefined) await this.#closeScope(entry, previous);
  }

  /** Closes a generation within the dispose deadline; a failure or a miss is a diagnostic. */
  async #closeScope(entry: PluginEntry, { name, scope }: HostedGeneration) {
    try {
      await withinDeadline(() => scope.close(), this.#limits.disposeDeadlineMs, `disposers of ${scope.name}`);
    } catch (error) {
      this.#diagnose(entry, { plugin: name, phase: "dispose", message: messageOf(error) });
    }
  }

  /** Removes an entry's generation and emits `removed`; closes a generation kept from an overtaken load. */
  async #deactivate(entry: PluginEntry) {
    if (entry.overtaken !== undefined) await this.#closeScope(entry, entry.overtaken);
    entry.overtaken = undefined;
    const active = entry.hosted.active;
    if (active === undefined) return;
    entry.hosted.active = undefined;
    this.#options.registry.retire(active.scope);
    this.#emit({ kind: "removed", plugin: active.name, file: entry.file });
    await this.#closeScope(entry, active);
  }

  /**
   * A generation took over (or the plugin left): the problems this file reported no longer
   * hold, unless another file reported the same (a fault in a module both import).
   */
  #resolveProblems(entry: PluginEntry) {
    const mine = new Set(entry.reported);
    entry.reported.clear();
    if (mine.size === 0) return;
    for (const other of this.#entries.values()) if (other !== entry) for (const id of other.reported) mine.delete(id);
    this.#diagnostics.resolve((d) => d.origin === "plugin" && mine.has(diagnosticIdentity(d)));
  }

  /** Plugins that lost their namespace try again now that its holder let go. */
  #revive(files: readonly string[]) {
    for (const file of files) {
      const other = this.#entries.get(file);
      if (other === undefined || other.load.kind === "removed") continue;
      other.hosted.attemptedHash = undefined;
      void this.#markDirty(other, false);
    }
  }
}
