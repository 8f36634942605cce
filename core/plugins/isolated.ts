// Owns an isolated plugin (decision 060): the host's handle on the one worker its code
// runs in. It loads generations into that worker, observes a generation's sources with
// one message per boundary, disposes generations, and, when the worker stops (a missed
// deadline, a crash, an exit, out of memory), reports it and restarts the worker with the
// last good generation, backing off, until the plugin crashes too often and is disabled
// until its file changes.

import { DeadlineExceeded } from "../base/deadline.ts";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { ContextHostError, messageOf } from "../base/errors.ts";
import { Scope } from "../base/scope.ts";
import { perEnv } from "../registry/per-env.ts";
import type { Registration, SourceEnv } from "../registry/registry.ts";
import {
  type Json,
  type PrerenderedObservation,
  prerendered,
  type RenderedText,
  type SourceFault,
} from "../system-context/index.ts";
import type { PluginBundle } from "./bundle.ts";
import type { ObservedKind } from "./events.ts";
import type { Location } from "./locations.ts";
import { PluginWorker, PluginWorkerFault, type PluginWorkerStopped, sanitizeLocation } from "./worker/plugin-worker.ts";
import type { Activated, Evaluated, Observed, WorkerFault, WorkerObservation, WorkerText } from "./worker/protocol.ts";

/** A fault of plugin code that happened in its worker, located in the plugin's own file. */
export class PluginCodeFault extends ContextHostError {
  readonly location: Location | undefined;
  constructor(options: { readonly message: string; readonly location?: Location | undefined }) {
    super(options.message);
    this.location = options.location;
  }
}

/** What an isolated plugin reports, as the plugin set turns it into a diagnostic. */
export interface IsolatedReport {
  readonly phase: DiagnosticPhase;
  readonly message: string;
  readonly key?: string;
  readonly location?: Location;
}

export interface IsolatedPluginOptions {
  readonly file: string;
  /** The host's working folder (`api.services.location`). */
  readonly location: string;
  /** Whether the host's clock is the system clock; otherwise `now()` is sent with each request. */
  readonly isSystemClock: boolean;
  now(): number;
  readonly heapMb: number;
  /** Largest value the worker sends (UTF-8 bytes of its JSON, roughly; the host checks exactly). */
  readonly maxValueBytes: number;
  readonly execArgv?: readonly string[];
  readonly setupDeadlineMs: number;
  readonly disposeDeadlineMs: number;
  /** Default loader deadline. */
  readonly deadlineMs: number;
  /** Time the renderers of one boundary may take, besides the loaders' deadline. */
  readonly renderDeadlineMs: number;
  /** Crashes within `crashWindowMs` that disable the plugin (default 3 in 60 s). */
  readonly maxCrashes: number;
  readonly crashWindowMs: number;
  /** Waits before the n-th restart within the window (the last one repeats). */
  readonly backoffMs: readonly number[];
  log(level: "info" | "warn" | "error", message: string): void;
  /** A problem of the plugin's worker (a stop, a restart that failed, the plugin disabled). */
  report(problem: IsolatedReport): void;
  /** The worker restarted and holds the active generation again. */
  onRestarted?(threadId: number): void;
}

/** A generation loaded into the worker, ready to be swapped in. */
export interface IsolatedGeneration {
  readonly name: string;
  readonly generation: number;
  readonly scope: Scope;
  readonly keys: readonly string[];
}

/** The outcome of `load`. */
export type IsolatedLoad =
  | {
      readonly kind: "activated";
      readonly activated: IsolatedGeneration;
      /** Milliseconds the worker took to evaluate the module and to set it up. */
      readonly evaluateMs: number;
      readonly setupMs: number;
    }
  | { readonly kind: "failed"; readonly fault: WorkerFault };

/** What the worker needs to bring a generation back after a restart. */
interface Recipe {
  readonly bundle: PluginBundle;
  readonly generation: number;
  readonly config: unknown;
  readonly reserved: readonly string[];
}

interface Waiting {
  readonly key: string;
  readonly stored: Json | undefined;
  readonly deadlineMs: number;
  readonly resolve: (observation: PrerenderedObservation) => void;
}

const unavailableObservation: PrerenderedObservation = Object.freeze({ kind: "unavailable" });

/** Extra time the host gives a request beyond the worker's own deadline, so the worker's wins a race. */
const graceMs = 100;

export class IsolatedPlugin {
  readonly #options: IsolatedPluginOptions;
  #worker: PluginWorker | undefined;
  #starting: Promise<PluginWorker | undefined> | undefined;
  /** Generations living in the current worker, with their sources' deadlines. */
  readonly #living = new Map<number, Map<string, number>>();
  /** Loads in flight; a restart due meanwhile waits for them (`#isRestartDue`). */
  #loads = 0;
  #isRestartDue = false;
  #restarting: Promise<void> | undefined;
  /** The generation swapped in, as the worker must rebuild it after a restart. */
  #active: Recipe | undefined;
  readonly #crashes: number[] = [];
  #isDisabled = false;
  #isClosed = false;
  #restartTimer: NodeJS.Timeout | undefined;
  readonly #recipes = new WeakMap<Scope, Recipe>();
  readonly #batches = new Map<string, { env: SourceEnv; generation: number; waiting: Waiting[] }>();

  constructor(options: IsolatedPluginOptions) {
    this.#options = options;
  }

  /** The current worker's thread id (for tests and benches), if one runs. */
  get threadId(): number | undefined {
    return this.#worker?.stopped === undefined ? this.#worker?.threadId : undefined;
  }

  /** Whether the plugin crashed too often and waits for its file to change. */
  get isDisabled(): boolean {
    return this.#isDisabled;
  }

  /**
   * Loads a generation into the worker: evaluate, then `setup` with the plugin's settings.
   * A plugin disabled by crashes is enabled again (its file changed).
   */
  async load(
    bundle: PluginBundle,
    generation: number,
    settings: Readonly<Record<string, unknown>>,
    reserved: readonly string[],
  ): Promise<IsolatedLoad> {
    if (this.#isDisabled) {
      this.#isDisabled = false;
      this.#crashes.length = 0;
    }
    this.#loads++;
    try {
      // A restart under way rebuilds the active generation first; this load follows it, so
      // the newer code is set up last.
      await this.#restarting;
      const first = await this.#loadIn(bundle, generation, settings, reserved);
      // The worker stopped for something else than this load (a displaced generation's
      // disposer missed its deadline, say): this load was a bystander; try it once more in a
      // fresh worker.
      const outcome = first.kind === "bystander" ? await this.#loadIn(bundle, generation, settings, reserved, true) : first;
      if (outcome.kind !== "bystander") return outcome;
      return { kind: "failed", fault: { phase: "evaluate", message: "the plugin's worker stopped twice while loading it" } };
    } finally {
      this.#loads--;
      if (this.#loads === 0 && this.#isRestartDue) {
        this.#isRestartDue = false;
        // After the caller swapped in (or dropped) what it loaded: the restart rebuilds only what is not living.
        this.#restartTimer = setTimeout(() => {
          this.#restartTimer = undefined;
          void this.#restart();
        }, 0);
      }
    }
  }

  async #loadIn(
    bundle: PluginBundle,
    generation: number,
    settings: Readonly<Record<string, unknown>>,
    reserved: readonly string[],
    isRetry = false,
  ): Promise<IsolatedLoad | { readonly kind: "bystander" }> {
    let worker: PluginWorker | undefined;
    try {
      worker = await this.#current();
    } catch (error) {
      return { kind: "failed", fault: { phase: "evaluate", message: messageOf(error) } };
    }
    if (worker === undefined) return { kind: "failed", fault: { phase: "evaluate", message: "the plugin set is closed" } };
    let phase: DiagnosticPhase = "evaluate";
    try {
      const startedAt = performance.now();
      const evaluated = await this.#evaluate(worker, bundle, generation, reserved);
      const config = Object.hasOwn(settings, evaluated.name) ? settings[evaluated.name] : undefined;
      phase = "setup";
      const evaluatedAt = performance.now();
      const activated = await this.#activate(worker, generation, config);
      const setupMs = performance.now() - evaluatedAt;
      const recipe: Recipe = { bundle, generation, config, reserved };
      return {
        kind: "activated",
        activated: {
          name: evaluated.name,
          generation,
          scope: this.#scopeOf(evaluated.name, recipe, activated),
          keys: activated.sources.map((source) => source.key),
        },
        evaluateMs: evaluatedAt - startedAt,
        setupMs,
      };
    } catch (error) {
      if (error instanceof PluginWorkerFault) return { kind: "failed", fault: error.fault };
      const stopped = error as PluginWorkerStopped;
      const isOwn = stopped.phase === undefined || stopped.phase === phase || stopped.phase === "config";
      if (!isOwn && !isRetry && !this.#isClosed) return { kind: "bystander" };
      return { kind: "failed", fault: { phase: stopped.phase ?? phase, message: messageOf(error) } };
    }
  }

  /** `scope`'s generation is the active one now: a restarted worker rebuilds it. */
  swappedIn(scope: Scope): void {
    const recipe = this.#recipes.get(scope);
    if (recipe !== undefined) this.#active = recipe;
  }

  /** The registration of one source of a generation: its observations come from the worker, pre-rendered. */
  registration(
    generation: number,
    key: string,
    limits: { readonly maxTextLength: number; readonly maxValueBytes: number; report(fault: SourceFault): void },
    observed: (key: string, kind: ObservedKind) => void,
  ): Registration {
    return {
      key,
      origin: "plugin",
      load: perEnv((env) =>
        prerendered(
          { key, observe: (stored) => this.#observe(generation, env, key, stored, observed) },
          { maxTextLength: limits.maxTextLength, maxValueBytes: limits.maxValueBytes, report: limits.report },
        ),
      ),
    };
  }

  /** The worker's heap after a full collection (benches). */
  async memory(): Promise<{ heapUsed: number; collected: boolean } | undefined> {
    const worker = this.#worker;
    if (worker === undefined || worker.stopped !== undefined) return undefined;
    return worker.request({ type: "memory" }, 10_000, () => ({ what: "memory statistics", phase: "load" }));
  }

  /** Stops the worker (after the caller disposed what it wanted to). */
  async close(): Promise<void> {
    this.#isClosed = true;
    clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    this.#active = undefined;
    const starting = this.#starting;
    this.#starting = undefined;
    const worker = this.#worker ?? (await starting?.catch(() => undefined));
    this.#worker = undefined;
    await worker?.terminate();
  }

  // ── the worker ──────────────────────────────────────────────────────────

  /** The running worker, started if there is none (after a stop: a fresh one, without the old generations). */
  async #current(): Promise<PluginWorker | undefined> {
    if (this.#isClosed) return undefined;
    if (this.#worker !== undefined && this.#worker.stopped === undefined) return this.#worker;
    if (this.#starting !== undefined) return this.#starting;
    clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    this.#starting = this.#start();
    try {
      return await this.#starting;
    } finally {
      this.#starting = undefined;
    }
  }

  async #start(): Promise<PluginWorker | undefined> {
    this.#living.clear();
    const options = this.#options;
    const worker: PluginWorker = await PluginWorker.start({
      init: {
        location: options.location,
        clock: options.isSystemClock ? "system" : "host",
        maxDepth: 64,
        maxValueBytes: options.maxValueBytes,
      },
      heapMb: options.heapMb,
      ...(options.execArgv === undefined ? {} : { execArgv: options.execArgv }),
      log: options.log,
      onStopped: (stopped) => this.#stopped(worker, stopped),
    });
    if (this.#isClosed) {
      await worker.terminate();
      return undefined;
    }
    this.#worker = worker;
    return worker;
  }

  #stopped(worker: PluginWorker, stopped: PluginWorkerStopped) {
    if (this.#worker !== worker || this.#isClosed) return;
    this.#worker = undefined;
    this.#living.clear();
    const now = Date.now();
    this.#crashes.push(now);
    while (this.#crashes.length > 0 && (this.#crashes[0] as number) < now - this.#options.crashWindowMs) this.#crashes.shift();
    const count = this.#crashes.length;
    const restart =
      this.#active === undefined
        ? ""
        : count >= this.#options.maxCrashes
          ? `; it stopped ${count} times within ${this.#options.crashWindowMs / 1000} s and is disabled until its file changes`
          : `; restarting it with the last good generation (stop ${count} within ${this.#options.crashWindowMs / 1000} s)`;
    this.#options.report({
      phase: stopped.phase ?? "load",
      message: `${stopped.reason}${restart}`,
      ...(stopped.key === undefined ? {} : { key: stopped.key }),
    });
    if (this.#active === undefined) return;
    if (count >= this.#options.maxCrashes) {
      this.#isDisabled = true;
      return;
    }
    const backoff = this.#options.backoffMs;
    const wait = backoff[Math.min(count - 1, backoff.length - 1)] ?? 0;
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      void this.#restart();
    }, wait);
  }

  /** A fresh worker with the active generation rebuilt in it. */
  #restart(): Promise<void> {
    const restarting = this.#rebuild().finally(() => {
      if (this.#restarting === restarting) this.#restarting = undefined;
    });
    this.#restarting = restarting;
    return restarting;
  }

  async #rebuild(): Promise<void> {
    if (this.#loads > 0) {
      this.#isRestartDue = true;
      return;
    }
    const recipe = this.#active;
    if (recipe === undefined || this.#isClosed || this.#isDisabled) return;
    const worker = await this.#current().catch(() => undefined);
    if (worker === undefined || this.#active !== recipe || this.#living.has(recipe.generation)) return;
    try {
      await this.#evaluate(worker, recipe.bundle, recipe.generation, recipe.reserved);
      await this.#activate(worker, recipe.generation, recipe.config);
      this.#options.onRestarted?.(worker.threadId);
    } catch (error) {
      // A stop is reported by `#stopped`; a fault of a generation that loaded before is reported here.
      if (error instanceof PluginWorkerFault) {
        this.#options.report({
          phase: error.fault.phase,
          message: `after a restart: ${error.fault.message}`,
          ...(error.fault.location === undefined ? {} : { location: error.fault.location }),
        });
      }
    }
  }

  async #evaluate(
    worker: PluginWorker,
    bundle: PluginBundle,
    generation: number,
    reserved: readonly string[],
  ): Promise<Evaluated> {
    const ms = this.#options.setupDeadlineMs;
    const evaluated = await worker.request<Evaluated>(
      {
        type: "evaluate",
        generation,
        code: bundle.code,
        entry: bundle.entry,
        baseDir: bundle.baseDir,
        ...(bundle.ownDependenciesFirst === true ? { ownDependenciesFirst: true } : {}),
        reserved,
      },
      ms + graceMs,
      () => ({ what: `the module code of ${bundle.entry}`, phase: "evaluate", ms }),
    );
    if (typeof evaluated?.name !== "string")
      throw new PluginWorkerFault({ fault: { phase: "evaluate", message: "the worker sent no plugin name" } });
    return evaluated;
  }

  async #activate(worker: PluginWorker, generation: number, config: unknown): Promise<Activated> {
    const ms = this.#options.setupDeadlineMs;
    const activated = await worker.request<Activated>(
      { type: "activate", generation, config, now: this.#options.now(), setupDeadlineMs: ms },
      ms + graceMs,
      () => ({ what: "setup", phase: "setup", ms }),
    );
    const sources = Array.isArray(activated?.sources) ? activated.sources : [];
    const deadlines = new Map<string, number>();
    for (const source of sources) {
      if (typeof source?.key !== "string") continue;
      const own = source.deadlineMs;
      deadlines.set(source.key, typeof own === "number" && Number.isFinite(own) && own > 0 ? own : this.#options.deadlineMs);
    }
    this.#living.set(generation, deadlines);
    return { sources: [...deadlines.keys()].map((key) => ({ key })) };
  }

  /** The host-side scope of a generation: closing it runs the generation's disposers in the worker. */
  #scopeOf(name: string, recipe: Recipe, activated: Activated): Scope {
    void activated;
    const scope = new Scope(`plugin ${name} generation ${recipe.generation}`);
    this.#recipes.set(scope, recipe);
    void scope.add(async () => {
      if (this.#active === recipe) this.#active = undefined;
      const worker = this.#worker;
      if (worker === undefined || worker.stopped !== undefined || !this.#living.delete(recipe.generation)) return;
      const ms = this.#options.disposeDeadlineMs;
      try {
        await worker.request({ type: "dispose", generation: recipe.generation }, ms, () => ({
          what: `disposers of ${scope.name}`,
          phase: "dispose",
        }));
      } catch (error) {
        if (error instanceof PluginWorkerFault) throw new PluginCodeFault({ message: error.fault.message });
        // The worker was stopped: its stop was reported, and it restarts with the active generation.
        throw new DeadlineExceeded({ what: `disposers of ${scope.name}`, ms });
      }
    });
    return scope;
  }

  // ── observations, one message per generation and env ────────────────────

  #observe(
    generation: number,
    env: SourceEnv,
    key: string,
    stored: Json | undefined,
    observed: (key: string, kind: ObservedKind) => void,
  ): Promise<PrerenderedObservation> {
    const deadlines = this.#living.get(generation);
    const worker = this.#worker;
    if (deadlines === undefined || worker === undefined || worker.stopped !== undefined) {
      return Promise.resolve(unavailableObservation);
    }
    const batchId = `${generation}\u0000${env.location}\u0000${env.sessionId ?? ""}`;
    let batch = this.#batches.get(batchId);
    if (batch === undefined) {
      const created = { env, generation, waiting: [] as Waiting[] };
      batch = created;
      this.#batches.set(batchId, created);
      // Every source of a boundary is asked for in the same turn: one message carries them all.
      queueMicrotask(() => {
        this.#batches.delete(batchId);
        void this.#flush(worker, created, observed);
      });
    }
    const waiting = batch.waiting;
    return new Promise((resolve) => {
      waiting.push({ key, stored, deadlineMs: deadlines.get(key) ?? this.#options.deadlineMs, resolve });
    });
  }

  async #flush(
    worker: PluginWorker,
    batch: { env: SourceEnv; generation: number; waiting: Waiting[] },
    observed: (key: string, kind: ObservedKind) => void,
  ): Promise<void> {
    const { waiting } = batch;
    const loaderMs = Math.max(...waiting.map((w) => w.deadlineMs));
    const ms = loaderMs + this.#options.renderDeadlineMs;
    let result: Observed;
    try {
      result = await worker.request<Observed>(
        {
          type: "observe",
          generation: batch.generation,
          env: batch.env,
          now: this.#options.now(),
          deadlineMs: this.#options.deadlineMs,
          sources: waiting.map((w) => (w.stored === undefined ? { key: w.key } : { key: w.key, stored: w.stored })),
        },
        ms + graceMs,
        (phase, index) => {
          const stuck = waiting[index];
          if (phase === undefined || phase === "load")
            return { what: `loader ${stuck?.key ?? "of the plugin"}`, phase: "load", key: stuck?.key, ms: stuck?.deadlineMs };
          if (phase === "value") return { what: `the codec of ${stuck?.key}`, phase, key: stuck?.key };
          return { what: `renderer "${phase}" of ${stuck?.key}`, phase, key: stuck?.key };
        },
      );
    } catch {
      // Reported where it happened: a stop by `#stopped`, nothing else rejects.
      for (const w of waiting) w.resolve(unavailableObservation);
      return;
    }
    const observations = Array.isArray(result?.observations) ? result.observations : [];
    const faults = Array.isArray(result?.faults) ? result.faults : [];
    const faulted = new Set<string>();
    for (const fault of faults) if (typeof fault?.key === "string") faulted.add(fault.key);
    this.#reportFaults(faults);
    waiting.forEach((w, i) => {
      const arrived = observations[i];
      if (!faulted.has(w.key))
        observed(w.key, arrived?.kind === "absent" || arrived?.kind === "unavailable" ? arrived.kind : "value");
      w.resolve(arrived === undefined ? unavailableObservation : fromWorker(arrived));
    });
  }

  #reportFaults(faults: readonly WorkerFault[]) {
    for (const fault of faults.slice(0, 64)) {
      if (typeof fault !== "object" || fault === null) continue;
      const phase = fault.phase === "value" ? "value" : "load";
      this.#options.report({
        phase,
        message: typeof fault.message === "string" ? fault.message.slice(0, 4096) : "a fault without a message",
        ...(typeof fault.key === "string" ? { key: fault.key } : {}),
        ...(sanitizeLocation(fault.location) === undefined ? {} : { location: sanitizeLocation(fault.location) as Location }),
      });
    }
  }
}

function fromWorker(arrived: WorkerObservation): PrerenderedObservation {
  if (typeof arrived !== "object" || arrived === null) return unavailableObservation;
  if (arrived.kind === "unavailable" || arrived.kind === "absent") return { kind: arrived.kind };
  if (arrived.kind !== "present") return unavailableObservation;
  const previous = arrived.previous;
  return {
    kind: "present",
    value: arrived.value,
    baseline: textOf(arrived.baseline),
    ...(arrived.removed === undefined ? {} : { removed: textOf(arrived.removed) }),
    ...(typeof previous === "object" && previous !== null
      ? {
          previous: {
            decodes: previous.decodes === true,
            ...(previous.update === undefined ? {} : { update: textOf(previous.update) }),
          },
        }
      : {}),
  };
}

function textOf(text: WorkerText | undefined): RenderedText {
  if (typeof text !== "object" || text === null) return { ok: false, reason: "produced no rendering" };
  if (text.ok === true) return { ok: true, text: text.text };
  const reason = typeof text.reason === "string" ? text.reason.slice(0, 4096) : "failed";
  return { ok: false, reason, cause: new PluginCodeFault({ message: reason, location: sanitizeLocation(text.location) }) };
}
