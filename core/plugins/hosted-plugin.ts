// Owns the host's handle on one plugin's runner (decisions 060, 160), whichever transport carries
// it, and the plugin's life (`plugin-life.ts`): it loads generations (bundled here, set up in the
// runner), observes their sources with one message per boundary (an unchanged source's texts are
// held here, its runner only compares), disposes them, and restarts a stopped worker with the
// active generation, backing off, until the plugin stops too often and is disabled until its file
// changes. The plugin set tells it what became of a load (`swapIn`, `retire`, …).

import { DeadlineExceeded } from "../base/deadline.ts";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { ContextHostError, messageOf } from "../base/errors.ts";
import { Scope } from "../base/scope.ts";
import { perEnv } from "../registry/per-env.ts";
import type { Registration, SourceEnv } from "../registry/registry.ts";
import {
  type Json,
  type PrerenderedObservation,
  prerenderedGroup,
  type RenderedText,
  type SourceFault,
  type SystemContext,
} from "../system-context/index.ts";
import { BundleFailed, bundlePlugin, type PluginBundle } from "./bundle.ts";
import type { ObservedKind } from "./events.ts";
import type { PluginLimits } from "./limits.ts";
import type { Location } from "./locations.ts";
import {
  attempted,
  attemptForgotten,
  type CrashLimits,
  closed,
  type Deadlines,
  deadlinesOf,
  disposed,
  type HostedGeneration,
  isRestartAsked,
  lives,
  liveTransport,
  loadBegan,
  loadEnded,
  numbered,
  overtakenForgotten,
  overtook,
  type PluginLife,
  rebuildBegan,
  restartDue,
  retired,
  setUp,
  startBegan,
  started,
  startFailed,
  stopped,
  swappedIn,
  unstarted,
} from "./plugin-life.ts";
import type {
  Activated,
  Describe,
  Evaluated,
  Observed,
  PluginTransport,
  PresentObservation,
  WorkerFault,
  WorkerText,
} from "./protocol.ts";
import { observationCodes, PluginWorkerFault, PluginWorkerStopped, sanitizeFault, sanitizeLocation } from "./protocol.ts";

/** A fault of plugin code that happened in its worker, located in the plugin's own file. */
class PluginCodeFault extends ContextHostError {
  readonly location: Location | undefined;
  constructor(message: string, location?: Location) {
    super(message);
    this.location = location;
  }
}

/**
 * The location of a fault of plugin code in its runner, which a render failure carries as its cause
 * (`textOf`).
 */
function locatedInRunner(error: unknown): Location | undefined {
  return error instanceof Error && error.cause instanceof PluginCodeFault ? error.cause.location : undefined;
}

export interface HostedPluginOptions {
  /** The plugin's file; plugin settings by plugin name; the namespaces no plugin may take. */
  readonly file: string;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly reserved: readonly string[];
  readonly limits: PluginLimits;
  /** The host's clock reading, sent with each request. */
  now(): number;
  /**
   * Starts the plugin's transport: a worker thread, or the host's own thread. A failure rejects (it
   * never throws).
   */
  startTransport(onStopped: (stopped: PluginWorkerStopped) => void): Promise<PluginTransport>;
  /** A problem of the plugin's worker (a stop, a failed restart) or a fault of its sources. */
  report(problem: WorkerFault): void;
  /** A source of the generation of `plugin`, with a fault on record, was observed without one. */
  resolved(plugin: string, key: string): void;
}

/** The outcome of one load. Every kind says which files it read (the plugin's watched inputs). */
export type Loaded =
  /** The bundle is identical to the last attempted one: nothing was evaluated. */
  | { readonly kind: "unchanged"; readonly inputs: readonly string[]; readonly hash: string }
  /**
   * esbuild failed (its inputs: the files read before), or the module, its definition, its
   * config or its setup did.
   */
  | {
      readonly kind: "bundle-failed" | "failed";
      readonly inputs: readonly string[];
      readonly fault: WorkerFault;
    }
  | { readonly kind: "activated"; readonly inputs: readonly string[]; readonly loaded: HostedGeneration };

/**
 * What a load is asked with. `ownDependenciesFirst`: a package's plugin (decision 131);
 * `isProvisional`: a failure is not final (the quiet re-check decides).
 */
export interface LoadRequest {
  readonly ownDependenciesFirst: boolean;
  readonly isProvisional: boolean;
}

/** One load's try at evaluating and setting up its bundle as `generation` in the runner. */
interface Attempt {
  readonly bundle: PluginBundle;
  readonly generation: number;
  /** `performance.now()` at the load's start; how long it bundled. */
  readonly startedAt: number;
  readonly bundleMs: number;
}

/** A time in ms, rounded to hundredths as load timings are reported. */
export const hundredths = (ms: number) => Math.round(ms * 100) / 100;

const unavailableObservation: PrerenderedObservation = Object.freeze({ kind: "unavailable" });
const absentObservation: PrerenderedObservation = Object.freeze({ kind: "absent" });

/** Extra time the host gives a request beyond the worker's own deadline, so the worker's wins a race. */
const graceMs = 100;

export class HostedPlugin {
  readonly #options: HostedPluginOptions;
  /** Its worker and its generations, moved only by the transitions of `plugin-life.ts` (`#move`). */
  #life: PluginLife = unstarted;
  /** The timer of a `restarting` life: it ends the back-off. */
  #backOff: NodeJS.Timeout | undefined;
  /** What each source's loader returned at its last observation without a fault. */
  readonly #observed = new Map<string, ObservedKind>();
  /** Source keys whose faults are in the current diagnostics (cleared at a swap). */
  readonly #faulted = new Set<string>();

  /** Starts the transport at once, so that it starts while the plugin is bundled. */
  constructor(options: HostedPluginOptions) {
    this.#options = options;
    void this.#current().catch(() => undefined);
  }

  /** The generation swapped in, which a restarted worker rebuilds. */
  get active(): HostedGeneration | undefined {
    return this.#life.generations.active;
  }

  /** What each source's loader returned at its last observation without a fault. */
  get observed(): ReadonlyMap<string, ObservedKind> {
    return this.#observed;
  }

  /**
   * The plugin set swapped `next` in: it is the active generation, and the faults of the one it
   * follows no longer hold.
   */
  swapIn(next: HostedGeneration): void {
    this.#move(swappedIn(this.#life, next));
    this.#faulted.clear();
  }

  /** The plugin set retired the active generation (the plugin left, or lost its namespace): returns it. */
  retire(): HostedGeneration | undefined {
    const { active } = this.#life.generations;
    this.#move(retired(this.#life));
    return active;
  }

  /** The outcome of loading the bundle with `hash` stands: identical content is not loaded again. */
  noteAttempt(hash: string): void {
    this.#move(attempted(this.#life, hash));
  }

  /** The next load loads its bundle even when the content is the one last attempted. */
  forgetAttempt(): void {
    this.#move(attemptForgotten(this.#life));
  }

  /**
   * A change overtook `generation` before its swap: the next load swaps it in if it bundles the
   * same content.
   */
  keepOvertaken(generation: HostedGeneration): void {
    this.#move(overtook(this.#life, generation));
  }

  /** The overtaken generation, no longer kept: the caller swaps it in or closes it. */
  takeOvertaken(): HostedGeneration | undefined {
    const { overtaken } = this.#life.generations;
    this.#move(overtakenForgotten(this.#life));
    return overtaken;
  }

  /**
   * One load, never rejecting: bundle here, stopping there when that failed or gave the bundle
   * last attempted; then, once `turn` has come, evaluate and set up in the runner. A plugin
   * disabled by stops is enabled again (its file changed). The overtaken generation is the
   * result again if the bundle is its content and it still lives in the worker (decision 195).
   */
  async load(request: LoadRequest, turn?: Promise<unknown>): Promise<Loaded> {
    const startedAt = performance.now();
    // What was known when the load was asked for: a change meanwhile is for the next load.
    const { attemptedHash, overtaken } = this.#life.generations;
    const { file } = this.#options;
    let bundle: PluginBundle;
    try {
      bundle = await bundlePlugin(file, { ownDependenciesFirst: request.ownDependenciesFirst });
    } catch (error) {
      return bundleFailed(file, error);
    }
    const { inputs, hash } = bundle;
    if (attemptedHash === hash) return { kind: "unchanged", inputs, hash };
    if (overtaken?.bundle.hash === hash && lives(this.#life, overtaken.generation)) {
      return { kind: "activated", inputs, loaded: overtaken };
    }
    const bundleMs = performance.now() - startedAt;
    await turn;
    this.#move(loadBegan(this.#life));
    try {
      // A restart under way rebuilds the active generation first, so the newer code is set up last.
      await this.#life.rebuild;
      const generation = this.#life.generations.numbered + 1;
      const loaded = await this.#loadIn({ bundle, generation, startedAt, bundleMs });
      // A failure on the first event of a burst may be a write seen half done: a save in place
      // takes no generation.
      if (loaded.kind === "activated" || !request.isProvisional) this.#move(numbered(this.#life, generation));
      if (loaded.kind === "failed" && !request.isProvisional) this.#move(attempted(this.#life, hash));
      return loaded;
    } finally {
      this.#move(loadEnded(this.#life));
      // After the caller swapped in (or dropped) what it loaded: only what is not living is rebuilt.
      if (isRestartAsked(this.#life)) setTimeout(() => this.#restart(), 0);
    }
  }

  /**
   * Evaluates and sets up `bundle` as `generation`, in a fresh worker once more if a stop not its
   * own ended the first try.
   */
  async #loadIn(attempt: Attempt, isRetry = false): Promise<Loaded> {
    const { bundle, generation, startedAt, bundleMs } = attempt;
    const { inputs } = bundle;
    let phase: DiagnosticPhase = "evaluate";
    try {
      // A transport that failed to start fails the load in its first phase.
      const worker = await this.#current();
      const { name, evaluateMs } = await this.#evaluate(worker, bundle, generation);
      phase = "setup";
      const { keys, setupMs } = await this.#activate(worker, name, generation);
      const readyAt = performance.now();
      const timings = {
        bundleMs: hundredths(bundleMs),
        evaluateMs: hundredths(evaluateMs),
        setupMs: hundredths(setupMs),
      };
      const loaded = this.#hosted({ name, generation, keys, bundle, startedAt, readyAt, timings });
      return { kind: "activated", inputs, loaded };
    } catch (error) {
      if (error instanceof PluginWorkerFault) return { kind: "failed", inputs, fault: error.fault };
      const stoppedIn = error instanceof PluginWorkerStopped ? error.phase : undefined;
      // The worker stopped for something else (a displaced generation's disposer, say): this
      // load was a bystander, tried once more in a fresh worker.
      const isOwn = stoppedIn === undefined || stoppedIn === phase || stoppedIn === "config";
      if (!isOwn && !isRetry && this.#life.kind !== "closed") {
        return this.#loadIn(attempt, true);
      }
      return { kind: "failed", inputs, fault: { phase: stoppedIn ?? phase, message: messageOf(error) } };
    }
  }

  /**
   * The registrations of a generation's sources, observed pre-rendered by the runner. Their
   * closures are made here, apart from the swap: closures made in one function share its V8
   * context, so one made in the swap would keep the generation it displaced alive.
   */
  registrations({ name, generation, keys }: HostedGeneration): Registration[] {
    const report = ({ key, phase, error }: SourceFault) => {
      const location = locatedInRunner(error);
      this.#report({ plugin: name, key, phase, message: messageOf(error), location });
    };
    const limits = { ...this.#options.limits, report };
    // A generation's sources in one env are observed together: one call, one message to the runner.
    const contextsIn = perEnv((env) => {
      const boundary = new Boundary(generation, env, name);
      const group = {
        observe: (asked: readonly string[], stored: readonly (Json | undefined)[]) => this.#observe(boundary, asked, stored),
      };
      return prerenderedGroup(keys, group, limits);
    });
    return keys.map((key, index) => ({
      key,
      origin: "plugin",
      load: (env: SourceEnv) => contextsIn(env)[index] as SystemContext,
    }));
  }

  /** Stops the worker (after the caller disposed what it wanted to). */
  async close(): Promise<void> {
    const life = this.#life;
    this.#move(closed(life));
    if (life.kind === "running") await life.transport.terminate();
    // A transport still starting terminates itself once it finds the plugin closed.
    if (life.kind === "starting") await life.transport.catch(() => undefined);
  }

  /** Moves the plugin's life on: a `restarting` life's back-off timer starts and ends with it. */
  #move(next: PluginLife) {
    const previous = this.#life;
    this.#life = next;
    if (previous.kind === "restarting" && next.kind !== "restarting") clearTimeout(this.#backOff);
    if (next.kind === "restarting" && previous.kind !== "restarting") {
      this.#backOff = setTimeout(() => this.#restart(), next.backOffMs);
    }
  }

  /** Reports a problem; a source's stays on record until the source is observed without one. */
  #report(problem: WorkerFault) {
    if (problem.key !== undefined) this.#faulted.add(problem.key);
    this.#options.report(problem);
  }

  /** The running worker, started if there is none (after a stop: a fresh one, with no generations). */
  #current(): Promise<PluginTransport> {
    const life = this.#life;
    if (life.kind === "closed") return Promise.reject(new ContextHostError("the plugin set is closed"));
    if (life.kind === "starting") return life.transport;
    const running = liveTransport(life);
    if (running !== undefined) return Promise.resolve(running);
    // The start's first step runs before it reads the life again.
    const transport = this.#start();
    this.#move(startBegan(this.#life, transport));
    return transport;
  }

  async #start(): Promise<PluginTransport> {
    let transport: PluginTransport;
    try {
      transport = await this.#options.startTransport((stop) => this.#stopped(transport, stop));
    } catch (error) {
      this.#move(startFailed(this.#life));
      throw error;
    }
    if (this.#life.kind === "closed") {
      await transport.terminate();
      throw new ContextHostError("the plugin set is closed");
    }
    this.#move(started(this.#life, transport));
    return transport;
  }

  #stopped(transport: PluginTransport, stop: PluginWorkerStopped) {
    const { limits } = this.#options;
    const next = stopped(this.#life, transport, { at: Date.now(), isCollateral: stop.isCollateral }, limits);
    // A stop of a transport no longer running (the plugin closed, say) changes nothing.
    if (next === this.#life) return;
    this.#move(next);
    const key = stop.key === undefined ? {} : { key: stop.key };
    const message = `${stop.reason}${whatFollows(next, stop, limits)}`;
    this.#report({ phase: stop.phase ?? "load", message, ...key });
  }

  /**
   * A restart came due: the active generation is rebuilt in a fresh worker, unless loads are in
   * flight (the last asks again).
   */
  #restart() {
    this.#move(restartDue(this.#life));
    if (this.#life.isRestartDue) return;
    // The rebuild's first step moves the life (a worker starting) before it is recorded.
    const rebuild = this.#rebuild();
    this.#move(rebuildBegan(this.#life, rebuild));
  }

  async #rebuild(): Promise<void> {
    const life = this.#life;
    const recipe = life.generations.active;
    if (recipe === undefined || life.kind === "closed" || life.kind === "disabled") return;
    const worker = await this.#current().catch(() => undefined);
    const now = this.#life;
    if (worker === undefined || now.generations.active !== recipe || lives(now, recipe.generation)) return;
    try {
      const { name } = await this.#evaluate(worker, recipe.bundle, recipe.generation);
      await this.#activate(worker, name, recipe.generation);
    } catch (error) {
      // A stop is reported by `#stopped`, a fault here.
      if (!(error instanceof PluginWorkerFault)) return;
      const { phase, message, location } = error.fault;
      this.#report({ phase, message: `after a restart: ${message}`, location });
    }
  }

  /** Evaluates a generation's module in `worker`: the plugin's name. Rejects as the transport does. */
  async #evaluate(worker: PluginTransport, bundle: PluginBundle, generation: number) {
    const { setupDeadlineMs: ms } = this.#options.limits;
    const { code, entry, baseDir, ownDependenciesFirst } = bundle;
    const startedAt = performance.now();
    const evaluated = await worker.request<Evaluated>(
      {
        type: "evaluate",
        generation,
        code,
        entry,
        baseDir,
        ...(ownDependenciesFirst ? { ownDependenciesFirst } : {}),
        reserved: this.#options.reserved,
      },
      ms + graceMs,
      () => ({ what: `the module code of ${entry}`, phase: "evaluate", ms }),
    );
    const name = evaluated?.name;
    if (typeof name !== "string") {
      const fault: WorkerFault = { phase: "evaluate", message: "the worker sent no plugin name" };
      throw new PluginWorkerFault({ fault });
    }
    return { name, evaluateMs: performance.now() - startedAt };
  }

  /**
   * Sets up an evaluated generation in `worker` with the settings under its plugin's name; it
   * lives there from then on, with its sources' deadlines. Rejects as the transport does.
   */
  async #activate(worker: PluginTransport, name: string, generation: number) {
    const { setupDeadlineMs: ms } = this.#options.limits;
    const { settings } = this.#options;
    const config = Object.hasOwn(settings, name) ? settings[name] : undefined;
    const startedAt = performance.now();
    const activated = await worker.request<Activated>(
      { type: "activate", generation, config, now: this.#options.now(), setupDeadlineMs: ms },
      ms + graceMs,
      () => ({ what: "setup", phase: "setup", ms }),
    );
    const deadlines = sourceDeadlines(activated, this.#options.limits.deadlineMs);
    this.#move(setUp(this.#life, worker, generation, deadlines));
    return { keys: [...deadlines.keys()], setupMs: performance.now() - startedAt };
  }

  /** A generation set up in the worker, with its host-side scope: closing it runs its disposers there. */
  #hosted(made: Omit<HostedGeneration, "scope">): HostedGeneration {
    const { name, generation } = made;
    const scope = new Scope(`plugin ${name} generation ${generation}`);
    void scope.add(() => this.#dispose(generation, scope.name));
    return { ...made, scope };
  }

  /** Runs a living generation's disposers in its worker, within the dispose deadline. */
  async #dispose(generation: number, scopeName: string): Promise<void> {
    const worker = liveTransport(this.#life);
    if (worker === undefined || !lives(this.#life, generation)) return;
    this.#move(disposed(this.#life, generation));
    const ms = this.#options.limits.disposeDeadlineMs;
    const what = `disposers of ${scopeName}`;
    try {
      await worker.request({ type: "dispose", generation }, ms, () => ({ what, phase: "dispose" }));
    } catch (error) {
      if (error instanceof PluginWorkerFault) throw new PluginCodeFault(error.fault.message);
      // The worker was stopped: that was reported, and it restarts with the active generation.
      throw new DeadlineExceeded({ what, ms });
    }
  }

  /**
   * Observes sources of a boundary by one request: all unavailable while their generation does
   * not live in a running worker.
   */
  #observe(
    boundary: Boundary,
    keys: readonly string[],
    stored: readonly (Json | undefined)[],
  ): Promise<PrerenderedObservation[]> {
    const worker = liveTransport(this.#life);
    const deadlines = deadlinesOf(this.#life, boundary.generation);
    if (worker === undefined || deadlines === undefined) return Promise.resolve(keys.map(() => unavailableObservation));
    const { deadlineMs } = this.#options.limits;
    // A loop, not a callback: a closure made per call loses its optimized code at every full collection.
    const waiting: Waiting[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      waiting[i] = { stored: stored[i], held: boundary.heldOf(key), deadlineMs: deadlines.get(key) ?? deadlineMs };
    }
    return this.#flush(worker, boundary, waiting);
  }

  async #flush(worker: PluginTransport, boundary: Boundary, waiting: readonly Waiting[]): Promise<PrerenderedObservation[]> {
    let result: Observed;
    try {
      result = await this.#requestObservations(worker, boundary, waiting);
    } catch {
      // Reported where it happened: a stop by `#stopped`, nothing else rejects.
      return waiting.map(() => unavailableObservation);
    }
    const { kinds, present, faults } = columnsOf(result);
    const faulted = this.#reportFaults(faults);
    const observations: PrerenderedObservation[] = new Array(waiting.length);
    const again: number[] = [];
    let presentAt = 0;
    for (let index = 0; index < waiting.length; index++) {
      const w = waiting[index] as Waiting;
      const code = kinds[index] ?? observationCodes.unavailable;
      const arrived = code === observationCodes.present ? present[presentAt++] : undefined;
      // The runner no longer had the held observation's value: asked once more, with the value.
      if (code === observationCodes["ask-again"] && w.held.forgetUnchanged()) {
        again.push(index);
        continue;
      }
      if (faulted?.has(w.held.key) !== true) this.#observedWithoutFault(boundary.plugin, w.held.key, code);
      observations[index] = fromWorker(worker, w, code, arrived);
    }
    if (again.length === 0) return observations;
    const askedAgain = await this.#flush(
      worker,
      boundary,
      again.map((index) => waiting[index] as Waiting),
    );
    for (let k = 0; k < again.length; k++) observations[again[k] as number] = askedAgain[k] ?? unavailableObservation;
    return observations;
  }

  /** One observe request for a boundary's waiting sources. Rejects as the transport does. */
  #requestObservations(worker: PluginTransport, boundary: Boundary, waiting: readonly Waiting[]) {
    const { generation, env } = boundary;
    const { deadlineMs, renderDeadlineMs } = this.#options.limits;
    const columns = asked(worker, waiting, deadlinesOf(this.#life, generation));
    return worker.request<Observed>(
      { type: "observe", generation, env, now: this.#options.now(), deadlineMs, ...columns },
      longestDeadline(waiting) + renderDeadlineMs + graceMs,
      describeObserving(waiting),
    );
  }

  /** Reports the faults an observe request met (64 at most): returns their keys, none if there were none. */
  #reportFaults(faults: readonly WorkerFault[]): Set<string | undefined> | undefined {
    if (faults.length === 0) return undefined;
    for (const fault of faults.slice(0, 64)) {
      if (typeof fault !== "object" || fault === null) continue;
      // A fault of one of its sources: never another plugin's name.
      const { plugin: _, ...sanitized } = sanitizeFault(fault);
      this.#report({ ...sanitized, phase: sanitized.phase === "value" ? "value" : "load" });
    }
    return new Set(faults.map((fault) => fault?.key));
  }

  /**
   * A source was observed without a fault: what its loader returned is noted, and a fault on record
   * resolved.
   */
  #observedWithoutFault(plugin: string, key: string, code: number) {
    this.#observed.set(key, observedKinds[code] ?? "value");
    // Cheap at every boundary: only a source with a fault on record resolves anything.
    if (this.#faulted.size > 0 && this.#faulted.delete(key)) this.#options.resolved(plugin, key);
  }
}

/** A load whose bundle failed: its inputs are the files esbuild read before. */
function bundleFailed(file: string, error: unknown): Loaded {
  const failure = error instanceof BundleFailed ? error : undefined;
  const fault: WorkerFault = { phase: "bundle", message: messageOf(error), location: failure?.location };
  return { kind: "bundle-failed", inputs: failure?.inputs ?? [file], fault };
}

/** What follows a stop, as its report says it. */
function whatFollows(life: PluginLife, stop: PluginWorkerStopped, { crashWindowMs }: CrashLimits): string {
  const count = life.crashes.length;
  const within = `within ${crashWindowMs / 1000} s`;
  if (life.kind === "disabled") {
    return `; it stopped ${count} times ${within} and is disabled until its file changes`;
  }
  if (life.kind !== "restarting") return "";
  const counted = stop.isCollateral ? "" : ` (stop ${count} ${within})`;
  return `; restarting it with the last good generation${counted}`;
}

/**
 * The deadline of each source a setup activated, by key: its own if it set a usable one, else
 * `deadlineMs`.
 */
function sourceDeadlines(activated: Activated | undefined, deadlineMs: number): Map<string, number> {
  const deadlines = new Map<string, number>();
  const sources = Array.isArray(activated?.sources) ? activated.sources : [];
  for (const source of sources) {
    if (typeof source?.key !== "string") continue;
    const own = source.deadlineMs;
    const isUsable = typeof own === "number" && Number.isFinite(own) && own > 0;
    deadlines.set(source.key, isUsable ? own : deadlineMs);
  }
  return deadlines;
}

// Observing a boundary's sources in one message

/** A generation's sources in one env, observed together: one message asks for all those a boundary composes. */
class Boundary {
  readonly generation: number;
  readonly env: SourceEnv;
  readonly plugin: string;
  /** What the host holds of each of its sources, by key. */
  readonly #held = new Map<string, Held>();

  constructor(generation: number, env: SourceEnv, plugin: string) {
    this.generation = generation;
    this.env = env;
    this.plugin = plugin;
  }

  /** What the host holds of source `key`, made at its first observation. */
  heldOf(key: string): Held {
    let held = this.#held.get(key);
    if (held === undefined) {
      held = new Held(key);
      this.#held.set(key, held);
    }
    return held;
  }
}

type Present = Extract<PrerenderedObservation, { kind: "present" }>;
type Texts = Pick<Present, "baseline" | "removed">;

/**
 * A present observation as this path hands it on: one class whatever texts it carries, so
 * the loads `prerendered.ts` makes of each arrival (`kind`, `value`, `removed`, `previous`) see
 * one hidden class. Made as object literals and spreads they saw many, so V8 looked them up
 * in a cache every full collection empties (`node --log-ic`, 24 boundaries of the bench, half
 * of them after a forced collection: each of those loads missed 226–248 times).
 */
class PresentArrival implements Present {
  readonly kind = "present" as const;
  readonly value: unknown;
  readonly baseline: RenderedText;
  readonly removed: RenderedText | undefined;
  readonly previous: Present["previous"];

  constructor(value: unknown, texts: Texts, previous?: Present["previous"]) {
    this.value = value;
    this.baseline = texts.baseline;
    this.removed = texts.removed;
    this.previous = previous;
  }
}

/** The last present observation that arrived: its number in the runner, its transport and its texts. */
interface Arrival {
  readonly number: number;
  readonly transport: PluginTransport;
  readonly texts: Texts;
}

/**
 * One source of a generation in one env, and what the host holds of it: the texts of its last
 * observation, and `unchanged`: that observation with the admitted value known to be its own
 * (the very object the snapshot holds, so the runner is not sent it again), the same object
 * while both stay.
 */
class Held {
  readonly key: string;
  #arrival: Arrival | undefined;
  #unchanged: Present | undefined;

  constructor(key: string) {
    this.key = key;
  }

  get arrival(): Arrival | undefined {
    return this.#arrival;
  }

  get unchanged(): Present | undefined {
    return this.#unchanged;
  }

  /**
   * A present observation arrived, numbered: its texts are held, and no admitted value is known to
   * be its own yet.
   */
  arrived(arrival: Arrival): void {
    this.#arrival = arrival;
    this.#unchanged = undefined;
  }

  /**
   * The held texts, with `stored` (the admitted value, the very object: no check again) when they
   * came from `transport`.
   */
  unchangedFrom(transport: PluginTransport, stored: Json | undefined): PrerenderedObservation {
    const arrival = this.#arrival;
    if (arrival?.transport !== transport || stored === undefined) return unavailableObservation;
    if (this.#unchanged?.value !== stored) {
      this.#unchanged = new PresentArrival(stored, arrival.texts);
    }
    return this.#unchanged;
  }

  /**
   * The runner no longer has the value of the observation held as unchanged: forgets it; false if
   * none was held.
   */
  forgetUnchanged(): boolean {
    if (this.#unchanged === undefined) return false;
    this.#unchanged = undefined;
    return true;
  }
}

/** One source asked for: the value admitted for it, what the host holds of it, its loader's deadline. */
interface Waiting {
  readonly stored: Json | undefined;
  readonly held: Held;
  readonly deadlineMs: number;
}

/** What a loader's `unavailable` and `absent` are among the kinds observed (`HostedPlugin.observed`); any other code: a value. */
const observedKinds: Readonly<Record<number, ObservedKind>> = {
  [observationCodes.unavailable]: "unavailable",
  [observationCodes.absent]: "absent",
};

/** The columns of an observe reply, each as far as it is one (a source with no code is unavailable). */
function columnsOf(result: Observed | undefined) {
  return {
    kinds: result?.kinds instanceof Uint8Array ? result.kinds : new Uint8Array(0),
    present: Array.isArray(result?.present) ? result.present : [],
    faults: Array.isArray(result?.faults) ? result.faults : [],
  };
}

/**
 * What arrived for one source (`code`, and `arrived` when present); the texts of a present one
 * are held for later boundaries.
 */
function fromWorker(
  transport: PluginTransport,
  waiting: Waiting,
  code: number,
  arrived: PresentObservation | undefined,
): PrerenderedObservation {
  if (code === observationCodes.absent) return absentObservation;
  const { held, stored } = waiting;
  if (code === observationCodes.unchanged) return held.unchangedFrom(transport, stored);
  if (code !== observationCodes.present || typeof arrived !== "object" || arrived === null) return unavailableObservation;
  const removed = arrived.removed === undefined ? {} : { removed: textOf(arrived.removed) };
  const texts: Texts = { baseline: textOf(arrived.baseline), ...removed };
  if (typeof arrived.number === "number") held.arrived({ number: arrived.number, transport, texts });
  const previous = arrived.previous;
  if (typeof previous !== "object" || previous === null) return new PresentArrival(arrived.value, texts);
  const update = previous.update === undefined ? {} : { update: textOf(previous.update) };
  return new PresentArrival(arrived.value, texts, { decodes: previous.decodes === true, ...update });
}

/** The sources of one observe request, by column. */
function asked(worker: PluginTransport, waiting: readonly Waiting[], deadlines: Deadlines | undefined) {
  // The number of the observation whose texts the host holds, from this worker; 0: none.
  // Loops, not callbacks: a closure made per call loses its optimized code at every full collection.
  const held = new Float64Array(waiting.length);
  const stored: Array<readonly [number, unknown]> = [];
  for (let index = 0; index < waiting.length; index++) {
    const w = waiting[index] as Waiting;
    const { arrival, unchanged } = w.held;
    const number = w.stored !== undefined && arrival?.transport === worker ? arrival.number : 0;
    held[index] = number;
    // The admitted value is the held observation's: the runner compares with its own copy.
    const isHeldValue = number > 0 && unchanged?.value === w.stored;
    if (w.stored !== undefined && !isHeldValue) stored.push([index, w.stored]);
  }
  const keys = isEveryKeyInOrder(waiting, deadlines) ? {} : { keys: keysOf(waiting) };
  return { ...keys, stored, held };
}

/** The keys of a batch's sources, in its order. */
function keysOf(waiting: readonly Waiting[]): string[] {
  const keys: string[] = new Array(waiting.length);
  for (let index = 0; index < waiting.length; index++) keys[index] = (waiting[index] as Waiting).held.key;
  return keys;
}

/**
 * Whether the batch holds every source of the generation, in its order: then the request need not
 * name them.
 */
function isEveryKeyInOrder(waiting: readonly Waiting[], deadlines: Deadlines | undefined): boolean {
  if (deadlines === undefined || waiting.length !== deadlines.size) return false;
  let index = 0;
  for (const key of deadlines.keys()) {
    if (waiting[index]?.held.key !== key) return false;
    index++;
  }
  return true;
}

/** The longest loader deadline among a batch's sources. */
function longestDeadline(waiting: readonly Waiting[]): number {
  let longest = 0;
  for (const w of waiting) longest = Math.max(longest, w.deadlineMs);
  return longest;
}

/**
 * What an observe request of `waiting` was doing when it missed its deadline: the source at
 * `index`, in `phase`.
 */
function describeObserving(waiting: readonly Waiting[]): Describe {
  return (phase, index) => {
    const key = waiting[index]?.held.key;
    if (phase === undefined || phase === "load") {
      return { what: `loader ${key ?? "of the plugin"}`, phase: "load", key, ms: waiting[index]?.deadlineMs };
    }
    if (phase === "value") return { what: `the codec of ${key}`, phase, key };
    return { what: `renderer "${phase}" of ${key}`, phase, key };
  };
}

function textOf(text: WorkerText | undefined): RenderedText {
  if (typeof text !== "object" || text === null) return { ok: false, reason: "produced no rendering" };
  if (text.ok === true) return { ok: true, text: text.text };
  const reason = typeof text.reason === "string" ? text.reason.slice(0, 4096) : "failed";
  return { ok: false, reason, cause: new PluginCodeFault(reason, sanitizeLocation(text.location)) };
}
