// Owns the plugin set: one entry per discovered plugin file (`plugin-entry.ts`), each with its
// own queue of loads and its load state, the swap of a loaded generation into the registry,
// and the events the host hears. What becomes of a load it tells the plugin's handle
// (`HostedPlugin`), which alone owns the plugin's life. A plugin never takes the host down:
// every failure becomes a diagnostic and the last good generation stays active.

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
import { HostedPlugin, hundredths, type Loaded } from "./hosted-plugin.ts";
import { type PluginLimits, resolvePluginLimits } from "./limits.ts";
import { isStale } from "./load-state.ts";
import { compareText, Namespaces } from "./namespaces.ts";
import { PluginEntry } from "./plugin-entry.ts";
import type { HostedGeneration } from "./plugin-life.ts";
import { PluginWorkers, workerProgram } from "./plugin-worker.ts";
import type { PluginTransport, PluginWorkerStopped, WorkerFault } from "./protocol.ts";
import { InThreadTransport } from "./runner.ts";
import { PluginWatcher } from "./watching.ts";

/** What a plugin set is started with; a limit not given takes its default (`limits.ts`). */
export interface PluginSetOptions extends Partial<PluginLimits> {
  /**
   * Folders of plugins, plugin files (absolute or relative to `projectRoot`), names of
   * installed plugin packages (decisions 130, 131).
   */
  readonly folders: readonly string[];
  /**
   * Where relative entries and package names resolve from (default: the `location` service, else
   * the working folder).
   */
  readonly projectRoot?: string;
  /**
   * The version packages' peer ranges of context-host are checked against (default: this
   * package's; none known: unchecked).
   */
  readonly hostVersion?: string;
  readonly registry: Registry;
  /** The host's awilix container with `clock`, `logger` and `location` registered. */
  readonly container: AwilixContainer;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Hot reload on file changes (default true). */
  readonly watch?: boolean;
  /**
   * Quiet time after a burst of changes before the plugin is checked once more (default
   * 50 ms); the first change reloads at once.
   */
  readonly debounceMs?: number;
  /**
   * Namespaces of the host's core sources (`core` always): no plugin may take them, so no
   * plugin key collides with a core source.
   */
  readonly reservedNamespaces?: readonly string[];
  /** The host's diagnostics channel (a new one when not given). */
  readonly diagnostics?: Diagnostics;
  /**
   * Where plugin code runs (decision 060): each plugin in its own worker thread (default), or
   * in the host's own thread (`none`: trusted code, comparisons).
   */
  readonly isolation?: Isolation;
}

export type Isolation = "worker" | "none";

/** The phases of a source's faults at a boundary (as opposed to its generation's). */
const boundaryPhases = new Set(["load", "value", "baseline", "update", "removed"]);

/** A plugin file whose latest load failed, or a package not loaded, and why. */
type Failure = { readonly file: string; readonly diagnostic: Diagnostic };

/**
 * The timers of the set: the rescan after a burst of folder changes, the re-check of packages when
 * their installs are quiet.
 */
type Timer = "rescan" | "package re-check";

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
  readonly #timers = new Map<Timer, NodeJS.Timeout>();
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
    this.#workers = options.isolation === "none" ? undefined : this.#startWorkers(location, clock, logger);
    // Quiet time after a burst of changes before a plugin or the packages are checked once more.
    const quietMs = Math.max(100, (options.debounceMs ?? 50) * 2);
    this.#watcher = this.#watch(quietMs);
  }

  /**
   * Where plugins run, each in a worker; the workers' program is built while the watcher starts
   * (decision 190).
   */
  #startWorkers(location: string, clock: Clock, logger: Logger | undefined): PluginWorkers {
    const { maxDepth, maxValueBytes } = this.#limits;
    const init = {
      location,
      clock: clock === systemClock ? ("system" as const) : ("host" as const),
      maxDepth,
      maxValueBytes,
    };
    // A plugin's printed and logged lines reach the host's logger with control characters escaped.
    const log = (level: "info" | "warn" | "error", message: string) => {
      try {
        logger?.[level](escapeControl(message));
      } catch {
        // A failing logger must not break the host.
      }
    };
    const workers = new PluginWorkers(this.#limits, init, log);
    void workerProgram().catch(() => {});
    return workers;
  }

  /** Watches the plugin folders, the plugins' files and where packages are installed. */
  #watch(quietMs: number): PluginWatcher {
    const folders = this.#options.folders.flatMap((entry) => {
      const spec = readPluginEntry(entry, this.#projectRoot);
      return spec.kind === "path" ? [spec.path] : [];
    });
    return new PluginWatcher({
      folders,
      isWatching: this.#options.watch ?? true,
      quietMs,
      onFolderChange: () => this.#scheduleRescan(),
      // A package was installed, replaced, removed or changed: look packages up now, and once
      // more when quiet (files may still be written).
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
        const diagnostic: Diagnostic = {
          origin: "watcher",
          plugin: "host",
          file: folders.join(", "),
          phase: "watch",
          message: `watcher: ${messageOf(error)}`,
        };
        this.#emit({ kind: "diagnostic", diagnostic });
      },
    });
  }

  /** Loads every plugin (by name) once the watcher is up, so no change is missed. */
  static async start(options: PluginSetOptions): Promise<PluginSet> {
    const set = new PluginSet(options);
    await set.#loadAll();
    return set;
  }

  /** The first loads, once the watcher is up; when they have settled, the settings' names are checked. */
  async #loadAll() {
    await this.#watcher.ready;
    this.#rescan();
    await this.settled();
    this.#isStarted = true;
    this.#checkSettingsNames();
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
    const names = this.#pluginNames();
    const known = [...names].sort(compareText);
    for (const name of Object.keys(settings)) {
      const setting = `pluginSettings.${name}`;
      // The list of plugins in the message changes: the older warning no longer holds.
      this.#diagnostics.resolve((d) => d.origin === "plugin" && d.phase === "config" && d.file === setting);
      if (names.has(name) || isAnyUnknown) continue;
      const there = known.length === 0 ? "there are no plugins" : `the plugins: ${known.join(", ")}`;
      const message = `no plugin is named ${JSON.stringify(name)}, so these settings are not used (${there})`;
      const diagnostic: Diagnostic = {
        origin: "plugin",
        plugin: name,
        file: setting,
        phase: "config",
        message,
      };
      this.#emit({ kind: "diagnostic", diagnostic });
    }
  }

  /** The names of the plugins there are: active, or named by the problem of their failed load. */
  #pluginNames(): Set<string> {
    const names = new Set<string>();
    for (const entry of this.#entries.values()) {
      const name = entry.hosted.active?.name ?? entry.failed?.plugin;
      if (name !== undefined) names.add(name);
    }
    return names;
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

  /**
   * Plugin files whose latest load failed, and packages not loaded (not installed, incompatible),
   * each with why.
   */
  failures(): Failure[] {
    const failures: Failure[] = [];
    for (const { file, failed } of this.#entries.values()) {
      if (failed !== undefined) failures.push({ file, diagnostic: failed });
    }
    for (const diagnostic of this.#packageProblems.values()) {
      failures.push({ file: diagnostic.file, diagnostic });
    }
    return failures;
  }

  /**
   * Resolves once no load is queued or running and no re-check is due (told by the events that end
   * them, no polling).
   */
  settled(): Promise<void> {
    if (this.#isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  #isSettled(): boolean {
    if (this.#tasks.size > 0 || this.#timers.size > 0 || this.#watcher.isPending) return false;
    const isLoadDue = (entry: PluginEntry) => entry.load.kind === "due" || entry.load.kind === "loading";
    return ![...this.#entries.values()].some(isLoadDue);
  }

  #checkSettled() {
    if (this.#settledWaiters.length === 0 || !this.#isSettled()) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  /** Queues `task` on the entry's queue (after `after`); the set is busy until it ends. */
  #enqueue(entry: PluginEntry, task: () => Promise<void>, after?: Promise<unknown>): Promise<void> {
    const queued = entry.enqueue(task, after, () => {
      this.#tasks.delete(queued);
      this.#checkSettled();
    });
    this.#tasks.add(queued);
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
    for (const entry of entries) entry.removed();
    // Every queued task ends first: the loads under way, and the closes of displaced holders'
    // generations they queued.
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
    const isNameChange = event.kind === "activated" || event.kind === "removed";
    if (this.#isStarted && isNameChange) this.#checkSettingsNames();
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
      if (known === undefined) created.add(this.#newEntry(plugin.id, plugin.file, plugin.origin));
      else this.#foundAgain(known, plugin.origin, updated);
    }
    // New plugins load one after another in sorted order of name, so their setups, events and
    // diagnostics come in that order; each plugin's own queue keeps its later loads in order.
    const entries = [...this.#entries.values()].sort(byName);
    let previous: Promise<void> = Promise.resolve();
    for (const entry of entries) {
      if (!seen.has(entry.file)) this.#remove(entry);
      else if (created.has(entry)) previous = this.#loadFirst(entry, previous);
    }
  }

  /**
   * A scan found a known plugin file again. An updated package reloads its plugins even when
   * their bundles are byte for byte the same (its dependencies may have changed); a replaced
   * one is loaded again if they differ.
   */
  #foundAgain(entry: PluginEntry, origin: PluginOrigin, updated: ReadonlySet<string>) {
    entry.foundAgain(origin);
    const name = origin.kind === "package" ? origin.name : undefined;
    if (name === undefined || entry.load.kind === "removed") return;
    if (!updated.has(name) && !this.#replacedPackages.has(name)) return;
    if (updated.has(name)) entry.hosted.forgetAttempt();
    void this.#markDirty(entry, false);
  }

  /**
   * The first load of a plugin a scan found, swapped in after `previous` (the plugin before it
   * in name order). Plugins bundle at once and, each in its own worker, set up concurrently (a
   * stuck one costs start-up one deadline); in the host's thread their setups take turns in name
   * order, so their side effects come in that order.
   */
  #loadFirst(entry: PluginEntry, previous: Promise<void>): Promise<void> {
    const turn = this.#workers === undefined ? previous : undefined;
    entry.discovered(this.#load(entry, false, turn));
    return this.#drain(entry, previous);
  }

  /**
   * Watches where the packages a scan found are installed, reports their new problems and
   * resolves gone ones; returns those whose package.json changed.
   */
  #notePackages(found: FoundPlugins): Set<string> {
    const updated = new Set<string>();
    for (const [name, seen] of found.packages) {
      if ((this.#packages.get(name) ?? seen) !== seen) updated.add(name);
    }
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
    for (const [id, diagnostic] of this.#packageProblems) {
      if (!known.has(id)) this.#emit({ kind: "diagnostic", diagnostic });
    }
    return updated;
  }

  /** A plugin file a scan found for the first time, entered in the set. */
  #newEntry(id: string, file: string, origin: PluginOrigin): PluginEntry {
    const hosted = new HostedPlugin({
      file,
      settings: this.#options.settings ?? {},
      reserved: this.#reserved,
      limits: this.#limits,
      now: () => this.#clock.now(),
      startTransport: (onStopped) => this.#startTransport(file, onStopped),
      // The runner's stops and faults become the entry's diagnostics.
      report: (problem) => this.#diagnose(entry, problem),
      resolved: (plugin, key) => this.#resolveBoundaryFault(entry, plugin, key),
    });
    const inputs = this.#watcher.track(file, (isProvisional) => void this.#markDirty(entry, isProvisional));
    const entry: PluginEntry = new PluginEntry({ id, file, origin, hosted, inputs });
    this.#entries.set(file, entry);
    return entry;
  }

  /** A plugin's transport: a worker thread (its own, or shared), or the host's own thread. */
  async #startTransport(file: string, onStopped: (stopped: PluginWorkerStopped) => void): Promise<PluginTransport> {
    if (this.#workers !== undefined) return this.#workers.start(file, onStopped);
    return new InThreadTransport({ container: this.#options.container, limits: this.#limits });
  }

  /** A source of the entry's plugin was observed without the fault it reported at a boundary. */
  #resolveBoundaryFault(entry: PluginEntry, plugin: string, key: string) {
    const isResolved = (d: Diagnostic) => d.plugin === plugin && d.key === key && boundaryPhases.has(d.phase);
    this.#diagnostics.resolve((d) => isResolved(d) && entry.reported.has(diagnosticIdentity(d)));
  }

  #scheduleRescan() {
    this.#after("rescan", this.#options.debounceMs ?? 50, () => this.#rescan());
  }

  /** Runs `task` once `ms` pass without another call for the same timer; the set is not settled meanwhile. */
  #after(timer: Timer, ms: number, task: () => void) {
    clearTimeout(this.#timers.get(timer));
    const timeout = setTimeout(() => {
      this.#timers.delete(timer);
      task();
      this.#checkSettled();
    }, ms);
    this.#timers.set(timer, timeout);
  }

  #remove(entry: PluginEntry) {
    entry.removed();
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
    entry.changed(isProvisional);
    return this.#drain(entry);
  }

  /** Runs loads of one plugin one at a time until no change is left unseen. */
  #drain(entry: PluginEntry, after?: Promise<unknown>): Promise<void> {
    const drain = async () => {
      while (entry.load.kind === "due" && !this.#isClosed) {
        const { isProvisional, preload } = entry.load;
        entry.loadBegan();
        await this.#loadOnce(entry, isProvisional, preload).finally(() => entry.loadFinished());
      }
    };
    return this.#enqueue(entry, drain, after);
  }

  /** One load of a plugin, never rejecting. */
  async #load(entry: PluginEntry, isProvisional: boolean, turn?: Promise<unknown>): Promise<Loaded> {
    const { origin, inputs } = entry;
    // A package replaced since it was looked up (by a version not for this host) is not run;
    // the scan that follows says why.
    if (origin.kind === "package" && !this.#isStillInstalled(entry, origin.name)) {
      this.#scheduleRescan();
      // No content was bundled: no hash that could match the active generation's (nothing is restored).
      return { kind: "unchanged", inputs: inputs.files, hash: "" };
    }
    const request = { ownDependenciesFirst: origin.kind === "package", isProvisional };
    return entry.hosted.load(request, turn);
  }

  /** Whether package `name`, looked up now, still has the entry's plugin for this host. */
  #isStillInstalled(entry: PluginEntry, name: string): boolean {
    const lookup = lookUpPackage(name, this.#projectRoot, this.#hostVersion);
    return lookup.plugins.some((plugin) => plugin.file === entry.file);
  }

  /**
   * One load and what becomes of it: a kept overtaken generation it does not use is closed, the
   * files it read are watched, and its generation is swapped in, kept as overtaken or closed.
   */
  async #loadOnce(entry: PluginEntry, isProvisional: boolean, preload: Promise<Loaded> | undefined) {
    const result = await (preload ?? this.#load(entry, isProvisional));
    const overtaken = entry.hosted.takeOvertaken();
    const isOvertakenAgain = result.kind === "activated" && result.loaded === overtaken;
    if (overtaken !== undefined && !isOvertakenAgain) await this.#closeScope(entry, overtaken);
    this.#noteInputs(entry, result);
    if (result.kind === "unchanged") {
      this.#restoreIfUndone(entry, result.hash);
      return;
    }
    if (result.kind !== "activated") {
      // A failure on the first event of a burst may be a write seen half done: the quiet
      // re-check decides whether it holds.
      if (!isProvisional) entry.failedWith(this.#diagnose(entry, result.fault));
      return;
    }
    if (entry.load.kind === "removed" || this.#isClosed) return this.#closeScope(entry, result.loaded);
    // A change arrived meanwhile: the next load wins, with this generation if it bundles the
    // same content; not a package's: an update of the package loads it again even then (its
    // dependencies are not in the bundle).
    if (isStale(entry.load) && entry.origin.kind === "package") return this.#closeScope(entry, result.loaded);
    if (isStale(entry.load)) {
      entry.hosted.keepOvertaken(result.loaded);
      return;
    }
    entry.hosted.noteAttempt(result.loaded.bundle.hash);
    await this.#swap(entry, result.loaded);
  }

  /**
   * The files a load read are the plugin's watched inputs; a bundle that failed read only part of
   * them: the files read before stay.
   */
  #noteInputs(entry: PluginEntry, result: Loaded) {
    const isPartial = result.kind === "bundle-failed";
    const inputs = isPartial ? [...new Set([...entry.inputs.files, ...result.inputs])] : result.inputs;
    this.#watcher.read(entry.inputs, inputs);
  }

  /**
   * The active generation's content again after a failed load (an undo): the failure no
   * longer holds, nor do the problems of its failed loads; its sources' boundary faults stay
   * until they load again.
   */
  #restoreIfUndone(entry: PluginEntry, hash: string) {
    const { active } = entry.hosted;
    if (active === undefined || entry.failed === undefined || active.bundle.hash !== hash) return;
    entry.clearFailure();
    const isLoadProblem = (d: Diagnostic) => d.origin === "plugin" && !boundaryPhases.has(d.phase);
    this.#diagnostics.resolve((d) => isLoadProblem(d) && entry.reported.delete(diagnosticIdentity(d)));
    this.#emit({ kind: "restored", plugin: active.name, file: entry.file, generation: active.generation });
  }

  /**
   * Swaps a generation in: its registrations replace those of the one it follows (and of a file
   * whose namespace it takes) in one registry version. Closes the one it follows (a refused one:
   * itself); a displaced holder's is closed on the holder's own queue.
   */
  async #swap(entry: PluginEntry, next: HostedGeneration): Promise<void> {
    const claim = this.#namespaces.check(next.name, entry.file);
    if (claim.kind === "refused") {
      const message =
        `namespace "${next.name}" is already taken by ${claim.holder}; ` +
        `${entry.file} is not loaded (the path that sorts first keeps it)`;
      return this.#refuse(entry, next, message);
    }
    const holder = claim.displaced === undefined ? undefined : this.#entries.get(claim.displaced);
    const previous = entry.hosted.active;
    const held = holder?.hosted.active;
    try {
      this.#options.registry.batch((batch) => {
        if (previous !== undefined) batch.retire(previous.scope);
        if (held !== undefined) batch.retire(held.scope);
        for (const registration of entry.hosted.registrations(next)) batch.register(next.scope, registration);
      });
    } catch (error) {
      // A key the host already registers: nothing of this generation is applied.
      return this.#refuse(entry, next, messageOf(error));
    }
    this.#namespaces.hold(next.name, entry.file, claim.displaced);
    if (holder !== undefined && held !== undefined) this.#unloadDisplaced(holder, entry, next.name);
    entry.hosted.swapIn(next);
    entry.clearFailure();
    this.#resolveProblems(entry);
    const { name, generation } = next;
    this.#emit({ kind: "activated", plugin: name, file: entry.file, generation, timings: timingsOf(next) });
    // A plugin renamed let go of its namespace: the files that lost it to this one try again.
    const isRenamed = previous !== undefined && previous.name !== name;
    if (isRenamed) this.#revive(this.#namespaces.takeWaiters(entry.file));
    if (previous !== undefined) await this.#closeScope(entry, previous);
  }

  /** `next` may not be swapped in, as `message` says: that is the entry's failure, and `next` is closed. */
  #refuse(entry: PluginEntry, next: HostedGeneration, message: string): Promise<void> {
    entry.failedWith(this.#diagnose(entry, { plugin: next.name, phase: "namespace", message }));
    return this.#closeScope(entry, next);
  }

  /**
   * `holder` lost namespace `name` to `taker`, whose path sorts first: its generation is unloaded
   * on its own queue.
   */
  #unloadDisplaced(holder: PluginEntry, taker: PluginEntry, name: string) {
    const held = holder.hosted.retire();
    if (held === undefined) return;
    const taken = `namespace "${name}" is taken by ${taker.file}, whose path sorts first`;
    const message = `${taken}; ${holder.file} is unloaded`;
    holder.failedWith(this.#diagnose(holder, { plugin: name, phase: "namespace", message }));
    this.#emit({ kind: "removed", plugin: held.name, file: holder.file });
    void this.#enqueue(holder, () => this.#closeScope(holder, held));
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
    const overtaken = entry.hosted.takeOvertaken();
    if (overtaken !== undefined) await this.#closeScope(entry, overtaken);
    const active = entry.hosted.retire();
    if (active === undefined) return;
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
    for (const other of this.#entries.values()) {
      if (other === entry) continue;
      for (const id of other.reported) mine.delete(id);
    }
    this.#diagnostics.resolve((d) => d.origin === "plugin" && mine.has(diagnosticIdentity(d)));
  }

  /** Plugins that lost their namespace try again now that its holder let go. */
  #revive(files: readonly string[]) {
    for (const file of files) {
      const other = this.#entries.get(file);
      if (other === undefined || other.load.kind === "removed") continue;
      other.hosted.forgetAttempt();
      void this.#markDirty(other, false);
    }
  }
}

/** Plugin entries in the order new plugins load: by name (file or folder), then by path. */
function byName(a: PluginEntry, b: PluginEntry): number {
  return compareText(a.id, b.id) || compareText(a.file, b.file);
}

/** Where the load that built `next` spent its time, until now (its swap). */
function timingsOf(next: HostedGeneration): LoadTimings {
  const now = performance.now();
  return {
    loadMs: hundredths(now - next.startedAt),
    ...next.timings,
    swapMs: hundredths(now - next.readyAt),
  };
}
