// Owns the host's handle on one plugin's runner (decisions 060, 160), whichever transport carries
// it: it loads generations (bundled here, set up in the runner), observes their sources with one
// message per boundary (an unchanged source's texts are held here, its runner only compares),
// disposes them, and restarts a stopped worker with the last good generation, backing off,
// until the plugin stops too often and is disabled until its file changes.

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
import type { LoadTimings, ObservedKind } from "./events.ts";
import type { PluginLimits } from "./limits.ts";
import type { Location } from "./locations.ts";
import type { Activated, Evaluated, Observed, PluginTransport, PresentObservation, WorkerFault, WorkerText } from "./protocol.ts";
import { observationCodes, PluginWorkerFault, PluginWorkerStopped, sanitizeFault, sanitizeLocation } from "./protocol.ts";

/** A fault of plugin code that happened in its worker, located in the plugin's own file. */
class PluginCodeFault extends ContextHostError {
  readonly location: Location | undefined;
  constructor(message: string, location?: Location) {
    super(message);
    this.location = location;
  }
}

/** The location of a fault of plugin code in its runner, which a render failure carries as its cause (`textOf`). */
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
  /** Starts the plugin's transport: a worker thread, or the host's own thread. */
  startTransport(onStopped: (stopped: PluginWorkerStopped) => void): Promise<PluginTransport>;
  /** A problem of the plugin's worker (a stop, a failed restart) or a fault of its sources. */
  report(problem: WorkerFault): void;
  /** A source of the generation of `plugin`, with a fault on record, was observed without one. */
  resolved(plugin: string, key: string): void;
}

/** A generation loaded into the runner, ready to be swapped in: closing its scope runs its disposers there. */
export interface HostedGeneration {
  readonly name: string;
  readonly generation: number;
  readonly scope: Scope;
  readonly keys: readonly string[];
  /** What a restarted worker rebuilds it from (its config follows from its name). */
  readonly bundle: PluginBundle;
  /** `performance.now()` at the start of the load that built it and when it was ready; the steps' times (`hundredths`). */
  readonly startedAt: number;
  readonly readyAt: number;
  readonly timings: Pick<LoadTimings, "bundleMs" | "evaluateMs" | "setupMs">;
}

/** The outcome of one load. Every kind says which files it read (the plugin's watched inputs). */
export type Loaded =
  /** The bundle is identical to the last attempted one: nothing was evaluated. */
  | { readonly kind: "unchanged"; readonly inputs: readonly string[]; readonly hash: string }
  /** esbuild failed (its inputs: the files read before), or the module, its definition, its config or its setup did. */
  | { readonly kind: "bundle-failed" | "failed"; readonly inputs: readonly string[]; readonly fault: WorkerFault }
  | { readonly kind: "activated"; readonly inputs: readonly string[]; readonly loaded: HostedGeneration };

/** The phase of the request under way, which a failed load names. */
type Phase = { current: DiagnosticPhase };
type Texts = Pick<Present, "baseline" | "removed">;
type Present = Extract<PrerenderedObservation, { kind: "present" }>;

/** A generation's sources in one env, observed together: one message asks for all those a boundary composes. */
interface Boundary {
  readonly generation: number;
  readonly env: SourceEnv;
  readonly plugin: string;
  /** What the host holds of each of its sources, by key. */
  readonly held: Map<string, Held>;
}

/**
 * One source of a generation in one env, and what the host holds of it: the texts of its last
 * observation, and `unchanged`: that observation with the admitted value known to be its own
 * (the very object the snapshot holds, so the runner is not sent it again), the same object
 * while both stay.
 */
interface Held {
  readonly key: string;
  arrival: { readonly number: number; readonly transport: PluginTransport; readonly texts: Texts } | undefined;
  unchanged: Present | undefined;
}

/** One source asked for: the value admitted for it, what the host holds of it, its loader's deadline. */
interface Waiting {
  readonly stored: Json | undefined;
  readonly held: Held;
  readonly deadlineMs: number;
}

/** A time in ms, rounded to hundredths as load timings are reported. */
export const hundredths = (ms: number) => Math.round(ms * 100) / 100;

const unavailableObservation: PrerenderedObservation = Object.freeze({ kind: "unavailable" });
const absentObservation: PrerenderedObservation = Object.freeze({ kind: "absent" });

/** Extra time the host gives a request beyond the worker's own deadline, so the worker's wins a race. */
const graceMs = 100;

export class HostedPlugin {
  readonly #options: HostedPluginOptions;
  /**
   * Hash of the last bundle whose load's outcome stands (a final failure, or a generation the
   * plugin set kept): identical content is not loaded again. The plugin set clears it to load anyway.
   */
  attemptedHash: string | undefined;
  /** What each source's loader returned at its last observation without a fault. */
  readonly observed = new Map<string, ObservedKind>();
  /** Source keys whose faults are in the current diagnostics (the plugin set clears them at a swap). */
  readonly faulted = new Set<string>();
  /** Generation numbers handed out so far. */
  #generations = 0;
  #worker: PluginTransport | undefined;
  #starting: Promise<PluginTransport> | undefined;
  /** Generations living in the current worker (none once it stopped), with their sources' deadlines. */
  readonly #living = new Map<number, Map<string, number>>();
  /** Loads in flight; a restart due meanwhile waits for them. */
  #loads = 0;
  #isRestartDue = false;
  /** The last restart (it never rejects): a load waits for it. */
  #restarting: Promise<void> | undefined;
  /** The generation swapped in (the plugin set holds it here), as a restarted worker rebuilds it. */
  active: HostedGeneration | undefined;
  readonly #crashes: number[] = [];
  #isDisabled = false;
  #isClosed = false;
  #restartTimer: NodeJS.Timeout | undefined;

  /** Starts the transport at once, so that it starts while the plugin is bundled. */
  constructor(options: HostedPluginOptions) {
    this.#options = options;
    void this.#current().catch(() => undefined);
  }

  /**
   * One load, never rejecting: bundle here, stopping there when that failed or gave the bundle
   * last attempted; then, once `turn` has come, evaluate and set up in the runner. A plugin
   * disabled by stops is enabled again (its file changed). `ownDependenciesFirst`: a package's
   * plugin (decision 131); `isProvisional`: a failure is not final (the quiet re-check decides).
   * `overtaken`: a generation a change overtook before it was swapped in, the result again if
   * the bundle is its content and it still lives in the worker (decision 195).
   */
  async load(
    request: { readonly ownDependenciesFirst: boolean; readonly isProvisional: boolean; readonly overtaken?: HostedGeneration },
    turn?: Promise<unknown>,
  ): Promise<Loaded> {
    const startedAt = performance.now();
    // The attempt known when the load was asked for: a reset meanwhile is for the next load.
    const attemptedHash = this.attemptedHash;
    const { file } = this.#options;
    let bundle: PluginBundle;
    try {
      bundle = await bundlePlugin(file, { ownDependenciesFirst: request.ownDependenciesFirst });
    } catch (error) {
      const failure = error instanceof BundleFailed ? error : undefined;
      const fault: WorkerFault = { phase: "bundle", message: messageOf(error), location: failure?.location };
      return { kind: "bundle-failed", inputs: failure?.inputs ?? [file], fault };
    }
    const { inputs, hash } = bundle;
    if (attemptedHash === hash) return { kind: "unchanged", inputs, hash };
    const { overtaken } = request;
    if (overtaken?.bundle.hash === hash && this.#living.has(overtaken.generation))
      return { kind: "activated", inputs, loaded: overtaken };
    const bundleMs = performance.now() - startedAt;
    await turn;
    if (this.#isDisabled) this.#crashes.length = 0;
    this.#isDisabled = false;
    this.#loads++;
    try {
      // A restart under way rebuilds the active generation first, so the newer code is set up last.
      await this.#restarting;
      const generation = this.#generations + 1;
      const loaded = await this.#loadIn(bundle, generation, startedAt, bundleMs);
      // A failure on the first event of a burst may be a write seen half done: a save in place takes no generation.
      if (loaded.kind === "activated" || !request.isProvisional) this.#generations = generation;
      if (loaded.kind === "failed" && !request.isProvisional) this.attemptedHash = hash;
      return loaded;
    } finally {
      this.#loads--;
      // After the caller swapped in (or dropped) what it loaded: only what is not living is rebuilt (that clears the mark).
      if (this.#loads === 0 && this.#isRestartDue) this.#scheduleRestart(0);
    }
  }

  async #loadIn(bundle: PluginBundle, generation: number, startedAt: number, bundleMs: number, isRetry = false): Promise<Loaded> {
    const { inputs } = bundle;
    const phase: Phase = { current: "evaluate" };
    try {
      // A transport that failed to start fails the load in its first phase.
      const worker = await this.#current();
      const { name, keys, evaluateMs, setupMs } = await this.#setUp(worker, bundle, generation, phase);
      const readyAt = performance.now();
      const timings = { bundleMs: hundredths(bundleMs), evaluateMs: hundredths(evaluateMs), setupMs: hundredths(setupMs) };
      const loaded = this.#hosted({ name, generation, keys, bundle, startedAt, readyAt, timings });
      return { kind: "activated", inputs, loaded };
    } catch (error) {
      if (error instanceof PluginWorkerFault) return { kind: "failed", inputs, fault: error.fault };
      const stoppedIn = error instanceof PluginWorkerStopped ? error.phase : undefined;
      // The worker stopped for something else (a displaced generation's disposer, say): this
      // load was a bystander, tried once more in a fresh worker.
      const isOwn = stoppedIn === undefined || stoppedIn === phase.current || stoppedIn === "config";
      if (!isOwn && !isRetry && !this.#isClosed) return this.#loadIn(bundle, generation, startedAt, bundleMs, true);
      return { kind: "failed", inputs, fault: { phase: stoppedIn ?? phase.current, message: messageOf(error) } };
    }
  }

  /**
   * The registrations of a generation's sources, observed pre-rendered by the runner. Their
   * closures are made here, apart from the swap: closures made in one function share its V8
   * context, so one made in the swap would keep the generation it displaced alive.
   */
  registrations({ name, generation, keys }: HostedGeneration): Registration[] {
    const report = ({ key, phase, error }: SourceFault) =>
      this.#report({ plugin: name, key, phase, message: messageOf(error), location: locatedInRunner(error) });
    const limits = { ...this.#options.limits, report };
    const contextsIn = perEnv((env) => {
      const boundary: Boundary = { generation, env, plugin: name, held: new Map() };
      return prerenderedGroup(keys, { observe: (asked, stored) => this.#observe(boundary, asked, stored) }, limits);
    });
    return keys.map((key, index) => ({
      key,
      origin: "plugin",
      load: (env: SourceEnv) => contextsIn(env)[index] as SystemContext,
    }));
  }

  /** Stops the worker (after the caller disposed what it wanted to). */
  async close(): Promise<void> {
    this.#isClosed = true;
    clearTimeout(this.#restartTimer);
    const worker = this.#worker ?? (await this.#starting?.catch(() => undefined));
    this.#worker = undefined;
    await worker?.terminate();
  }

  /** Reports a problem; a source's stays on record until the source is observed without one. */
  #report(problem: WorkerFault) {
    if (problem.key !== undefined) this.faulted.add(problem.key);
    this.#options.report(problem);
  }

  /** The running worker, started if there is none (after a stop: a fresh one, with no generations). */
  #current(): Promise<PluginTransport> {
    if (this.#isClosed) return Promise.reject(new ContextHostError("the plugin set is closed"));
    if (this.#worker !== undefined && this.#worker.stopped === undefined) return Promise.resolve(this.#worker);
    this.#starting ??= this.#start().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  async #start(): Promise<PluginTransport> {
    clearTimeout(this.#restartTimer);
    this.#living.clear();
    const worker: PluginTransport = await this.#options.startTransport((stopped) => this.#stopped(worker, stopped));
    if (this.#isClosed) {
      await worker.terminate();
      throw new ContextHostError("the plugin set is closed");
    }
    this.#worker = worker;
    return worker;
  }

  #stopped(worker: PluginTransport, stopped: PluginWorkerStopped) {
    if (this.#worker !== worker || this.#isClosed) return;
    this.#worker = undefined;
    this.#living.clear();
    const { crashWindowMs, maxCrashes, backoffMs } = this.#options.limits;
    const now = Date.now();
    // Stopped for another plugin of its shared worker: not a stop of its own (decision 185).
    if (!stopped.isCollateral) this.#crashes.push(now);
    while (this.#crashes.length > 0 && (this.#crashes[0] as number) < now - crashWindowMs) this.#crashes.shift();
    const count = this.#crashes.length;
    const within = `within ${crashWindowMs / 1000} s`;
    const restart =
      this.active === undefined
        ? ""
        : count >= maxCrashes
          ? `; it stopped ${count} times ${within} and is disabled until its file changes`
          : `; restarting it with the last good generation${stopped.isCollateral ? "" : ` (stop ${count} ${within})`}`;
    const key = stopped.key === undefined ? {} : { key: stopped.key };
    this.#report({ phase: stopped.phase ?? "load", message: `${stopped.reason}${restart}`, ...key });
    if (this.active === undefined) return;
    if (count >= maxCrashes) this.#isDisabled = true;
    else this.#scheduleRestart(stopped.isCollateral ? 0 : (backoffMs[Math.min(count - 1, backoffMs.length - 1)] ?? 0));
  }

  /** In `wait` ms, a fresh worker with the active generation rebuilt in it. */
  #scheduleRestart(wait: number) {
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      this.#restarting = this.#rebuild();
    }, wait);
  }

  async #rebuild(): Promise<void> {
    // With loads in flight, the last of them schedules the restart (it is never due without them).
    this.#isRestartDue = this.#loads > 0;
    if (this.#isRestartDue) return;
    const recipe = this.active;
    if (recipe === undefined || this.#isClosed || this.#isDisabled) return;
    const worker = await this.#current().catch(() => undefined);
    if (worker === undefined || this.active !== recipe || this.#living.has(recipe.generation)) return;
    await this.#setUp(worker, recipe.bundle, recipe.generation).catch((error) => {
      // A stop is reported by `#stopped`, a fault here.
      if (!(error instanceof PluginWorkerFault)) return;
      const { phase, message, location } = error.fault;
      this.#report({ phase, message: `after a restart: ${message}`, location });
    });
  }

  /**
   * Evaluates and sets up a generation in `worker` (its config: the settings under the name
   * the module gives); `phase` follows the request under way. Rejects as the transport does.
   */
  async #setUp(worker: PluginTransport, bundle: PluginBundle, generation: number, phase: Phase = { current: "evaluate" }) {
    const { setupDeadlineMs: ms, deadlineMs } = this.#options.limits;
    const { settings, reserved } = this.#options;
    const { code, entry, baseDir, ownDependenciesFirst } = bundle;
    const startedAt = performance.now();
    const evaluated = await worker.request<Evaluated>(
      { type: "evaluate", generation, code, entry, baseDir, ...(ownDependenciesFirst ? { ownDependenciesFirst } : {}), reserved },
      ms + graceMs,
      () => ({ what: `the module code of ${entry}`, phase: "evaluate", ms }),
    );
    const name = evaluated?.name;
    if (typeof name !== "string")
      throw new PluginWorkerFault({ fault: { phase: "evaluate", message: "the worker sent no plugin name" } });
    const config = Object.hasOwn(settings, name) ? settings[name] : undefined;
    phase.current = "setup";
    const evaluatedAt = performance.now();
    const activated = await worker.request<Activated>(
      { type: "activate", generation, config, now: this.#options.now(), setupDeadlineMs: ms },
      ms + graceMs,
      () => ({ what: "setup", phase: "setup", ms }),
    );
    const deadlines = new Map<string, number>();
    for (const source of Array.isArray(activated?.sources) ? activated.sources : []) {
      const own = source?.deadlineMs;
      if (typeof source?.key === "string")
        deadlines.set(source.key, typeof own === "number" && Number.isFinite(own) && own > 0 ? own : deadlineMs);
    }
    this.#living.set(generation, deadlines);
    return { name, keys: [...deadlines.keys()], evaluateMs: evaluatedAt - startedAt, setupMs: performance.now() - evaluatedAt };
  }

  /** A generation set up in the worker, with its host-side scope: closing it runs its disposers there. */
  #hosted(made: Omit<HostedGeneration, "scope">): HostedGeneration {
    const { name, generation } = made;
    const scope = new Scope(`plugin ${name} generation ${generation}`);
    void scope.add(async () => {
      const worker = this.#worker;
      if (worker === undefined || worker.stopped !== undefined || !this.#living.delete(generation)) return;
      const ms = this.#options.limits.disposeDeadlineMs;
      const what = `disposers of ${scope.name}`;
      try {
        await worker.request({ type: "dispose", generation }, ms, () => ({ what, phase: "dispose" }));
      } catch (error) {
        if (error instanceof PluginWorkerFault) throw new PluginCodeFault(error.fault.message);
        // The worker was stopped: that was reported, and it restarts with the active generation.
        throw new DeadlineExceeded({ what, ms });
      }
    });
    return { ...made, scope };
  }

  /** Observes sources of a boundary by one request: all unavailable while their generation does not live in a running worker. */
  async #observe(
    boundary: Boundary,
    keys: readonly string[],
    stored: readonly (Json | undefined)[],
  ): Promise<PrerenderedObservation[]> {
    const deadlines = this.#living.get(boundary.generation);
    const worker = this.#worker;
    if (deadlines === undefined || worker === undefined || worker.stopped !== undefined)
      return keys.map(() => unavailableObservation);
    const { deadlineMs } = this.#options.limits;
    // A loop, not a callback: a closure made per call loses its optimized code at every full collection.
    const waiting: Waiting[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      waiting[i] = { stored: stored[i], held: heldOf(boundary, key), deadlineMs: deadlines.get(key) ?? deadlineMs };
    }
    return this.#flush(worker, boundary, waiting);
  }

  async #flush(worker: PluginTransport, boundary: Boundary, waiting: readonly Waiting[]): Promise<PrerenderedObservation[]> {
    const { generation, env, plugin } = boundary;
    const { deadlineMs, renderDeadlineMs } = this.#options.limits;
    let longest = 0;
    for (const w of waiting) longest = Math.max(longest, w.deadlineMs);
    const columns = asked(worker, waiting, this.#living.get(generation));
    let result: Observed;
    try {
      result = await worker.request<Observed>(
        { type: "observe", generation, env, now: this.#options.now(), deadlineMs, ...columns },
        longest + renderDeadlineMs + graceMs,
        (phase, index) => {
          const key = waiting[index]?.held.key;
          if (phase === undefined || phase === "load")
            return { what: `loader ${key ?? "of the plugin"}`, phase: "load", key, ms: waiting[index]?.deadlineMs };
          if (phase === "value") return { what: `the codec of ${key}`, phase, key };
          return { what: `renderer "${phase}" of ${key}`, phase, key };
        },
      );
    } catch {
      // Reported where it happened: a stop by `#stopped`, nothing else rejects.
      return waiting.map(() => unavailableObservation);
    }
    const { kinds, present, faults } = columnsOf(result);
    const faulted = faults.length === 0 ? undefined : new Set(faults.map((fault) => fault?.key));
    for (const fault of faults.slice(0, 64)) {
      if (typeof fault !== "object" || fault === null) continue;
      // A fault of one of its sources: never another plugin's name.
      const { plugin: _, ...sanitized } = sanitizeFault(fault);
      this.#report({ ...sanitized, phase: sanitized.phase === "value" ? "value" : "load" });
    }
    const observations: PrerenderedObservation[] = new Array(waiting.length);
    const again: number[] = [];
    let presentAt = 0;
    for (let i = 0; i < waiting.length; i++) {
      const w = waiting[i] as Waiting;
      const code = kinds[i] ?? observationCodes.unavailable;
      const arrived = code === observationCodes.present ? present[presentAt++] : undefined;
      // The runner no longer had the held observation's value: asked once more, with the value.
      if (code === observationCodes["ask-again"] && w.held.unchanged !== undefined) {
        w.held.unchanged = undefined;
        again.push(i);
        continue;
      }
      const { key } = w.held;
      if (faulted?.has(key) !== true) {
        this.observed.set(key, observedKinds[code] ?? "value");
        // Cheap at every boundary: only a source with a fault on record resolves anything.
        if (this.faulted.delete(key)) this.#options.resolved(plugin, key);
      }
      observations[i] = fromWorker(worker, w, code, arrived);
    }
    if (again.length === 0) return observations;
    const askedAgain = await this.#flush(
      worker,
      boundary,
      again.map((i) => waiting[i] as Waiting),
    );
    again.forEach((i, k) => {
      observations[i] = askedAgain[k] ?? unavailableObservation;
    });
    return observations;
  }
}

/** What the host holds of a source of `boundary`, made at its first observation. */
function heldOf(boundary: Boundary, key: string): Held {
  let held = boundary.held.get(key);
  if (held === undefined) {
    held = { key, arrival: undefined, unchanged: undefined };
    boundary.held.set(key, held);
  }
  return held;
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

/** What arrived for one source (`code`, and `arrived` when present); the texts of a present one are held for later boundaries. */
function fromWorker(
  transport: PluginTransport,
  waiting: Waiting,
  code: number,
  arrived: PresentObservation | undefined,
): PrerenderedObservation {
  if (code === observationCodes.absent) return absentObservation;
  const { held, stored } = waiting;
  if (code === observationCodes.unchanged) {
    // The admitted value (the very object: no check again) with the held texts.
    if (held.arrival?.transport !== transport || stored === undefined) return unavailableObservation;
    if (held.unchanged?.value !== stored) held.unchanged = { kind: "present", value: stored, ...held.arrival.texts };
    return held.unchanged;
  }
  if (code !== observationCodes.present || typeof arrived !== "object" || arrived === null) return unavailableObservation;
  const removed = arrived.removed === undefined ? {} : { removed: textOf(arrived.removed) };
  const texts: Texts = { baseline: textOf(arrived.baseline), ...removed };
  if (typeof arrived.number === "number") {
    held.arrival = { number: arrived.number, transport, texts };
    held.unchanged = undefined;
  }
  const previous = arrived.previous;
  if (typeof previous !== "object" || previous === null) return { kind: "present", value: arrived.value, ...texts };
  const update = previous.update === undefined ? {} : { update: textOf(previous.update) };
  return { kind: "present", value: arrived.value, ...texts, previous: { decodes: previous.decodes === true, ...update } };
}

/** The sources of one observe request, by column. */
function asked(worker: PluginTransport, waiting: readonly Waiting[], generation: ReadonlyMap<string, number> | undefined) {
  const stored: Array<readonly [number, unknown]> = [];
  const held = new Float64Array(waiting.length);
  let index = 0;
  let isEveryKeyInOrder = waiting.length === generation?.size;
  if (isEveryKeyInOrder) for (const key of generation?.keys() ?? []) isEveryKeyInOrder &&= waiting[index++]?.held.key === key;
  for (index = 0; index < waiting.length; index++) {
    const w = waiting[index] as Waiting;
    const { arrival, unchanged } = w.held;
    const number = w.stored !== undefined && arrival?.transport === worker ? arrival.number : 0;
    held[index] = number;
    // The admitted value is the held observation's: the runner compares with its own copy.
    if (w.stored !== undefined && !(number > 0 && unchanged?.value === w.stored)) stored.push([index, w.stored]);
  }
  return { ...(isEveryKeyInOrder ? {} : { keys: waiting.map((w) => w.held.key) }), stored, held };
}

function textOf(text: WorkerText | undefined): RenderedText {
  if (typeof text !== "object" || text === null) return { ok: false, reason: "produced no rendering" };
  if (text.ok === true) return { ok: true, text: text.text };
  const reason = typeof text.reason === "string" ? text.reason.slice(0, 4096) : "failed";
  return { ok: false, reason, cause: new PluginCodeFault(reason, sanitizeLocation(text.location)) };
}
