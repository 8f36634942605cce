// Owns the one plugin runner (decision 160): it evaluates the generations the host sends, runs `setup`, and serves
// observations and disposers, in a plugin's worker thread or, with `isolation: "none"`, in the host's own thread
// (`InThreadTransport`): only the transport differs. What it answers is plain data the host checks on arrival.

import type { AwilixContainer } from "awilix";
import { withinDeadline } from "../base/deadline.ts";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import type { Scope } from "../base/scope.ts";
import { perEnv } from "../registry/per-env.ts";
import type { SourceEnv } from "../registry/registry.ts";
import type { Renderer } from "../system-context/errors.ts";
// From the modules themselves, not the layer's index: the worker evaluates only what it needs.
import { isSameJson, type Json } from "../system-context/json.ts";
import { arrivalChecks, type ValueLimits } from "../system-context/prerendered.ts";
import { absent, type Rendering, type Source, SourceCodec, unavailable } from "../system-context/source.ts";
import type { Plugin, PluginSource } from "./define.ts";
import { evaluateBundle } from "./evaluate.ts";
import { ActivationFailed, activateGeneration, pluginOf } from "./generation.ts";
import { BundleLocations, type Location } from "./locations.ts";
import {
  type Activated,
  type Evaluated,
  type HostRequest,
  type HostRequestBody,
  type Observed,
  observationCodes,
  type PluginTransport,
  PluginWorkerFault,
  type PresentObservation,
  phaseCode,
  type phaseCodes,
  progress,
  type RunnerReply,
  type WorkerFault,
  type WorkerText,
} from "./protocol.ts";

export interface RunnerOptions {
  /** The services a plugin's `api.services` resolves from: clock, logger, location. */
  readonly container: AwilixContainer;
  /** Values deeper or larger are not sent (a deep enough value cannot even be read by the host's thread). */
  readonly limits: ValueLimits;
  /** Progress cells (`progress`): what the runner runs now, for whoever must say where it stopped (none: nobody asks). */
  readonly cells?: Int32Array;
}

/** A value sent with its texts, and that observation's number: what the host may hold. */
type Sent = { readonly value: Json; readonly number: number };

/** A source as `setup` declared it, with its codec and where it was declared. */
interface Declared {
  readonly source: PluginSource;
  readonly codec: SourceCodec;
  readonly declaredAt?: Error;
}

/** One generation living in this runner. */
interface Living {
  readonly plugin: Plugin;
  readonly locations: BundleLocations;
  scope?: Scope;
  /** By key, in the order `setup` declared them; `keys`: those keys, what a request without `keys` asks for. */
  sources?: Map<string, Declared>;
  keys?: readonly string[];
  /** By env (the most recently used ones), the env its loaders get and what each source last sent in it with its texts. */
  readonly inEnv: (env: SourceEnv) => { readonly env: SourceEnv; readonly sent: Map<string, Sent> };
}

/** The plugin runner: one request in, one reply out. */
export type PluginRunner = (request: HostRequest) => Promise<RunnerReply>;

type ObserveRequest = Extract<HostRequest, { type: "observe" }>;

/** One observe request as the runner reads it: the sources asked, in the env they are observed in. */
interface Asked {
  readonly request: ObserveRequest;
  readonly living: Living;
  /** The living generation's sources (`living.sources`, set up). */
  readonly sources: ReadonlyMap<string, Declared>;
  readonly keys: readonly string[];
  /** The admitted values the host sent, by index. */
  readonly stored: ReadonlyMap<number, Json>;
  readonly env: SourceEnv;
  readonly sent: Map<string, Sent>;
}

/** What a source's loader threw (a value it returned is kept as it is: no object per source). */
class LoadFailed {
  constructor(readonly error: unknown) {}
}

/** A source asked that was not loaded: not declared by the generation, or decided `ask-again` first. */
const notLoaded = Symbol("not loaded");
const askAgain = Symbol("ask again");

/** A source whose texts the host does not hold, decided before anything is rendered: its loaded and encoded value. */
interface Changed {
  readonly index: number;
  readonly key: string;
  readonly declared: Declared;
  readonly loaded: unknown;
  readonly value: Json;
  /** The admitted value it differs from, if any: the update is rendered against it. */
  readonly admitted: Json | undefined;
}

/** What the runner decided of the sources of one request: a code for each, the changed ones to render, the faults met. */
interface Decisions {
  readonly kinds: Uint8Array;
  readonly changed: readonly Changed[];
  readonly faults: readonly WorkerFault[];
}

export function createPluginRunner(options: RunnerOptions): PluginRunner {
  const { container, limits, cells = new Int32Array(progress.length) } = options;
  const generations = new Map<number, Living>();
  /** Numbers the observations sent with texts, so the host can say which one it holds. */
  let sentCount = 0;

  /** Marks a step's start in the progress cells: the request, its phase, the source it is at. */
  function mark(request: number, phase: (typeof phaseCodes)[number], source = 0) {
    Atomics.store(cells, progress.request, request);
    Atomics.store(cells, progress.phase, phaseCode[phase]);
    Atomics.store(cells, progress.source, source);
  }

  /** Within a step over sources, the source it is at now: one cell moves, the request and phase stay marked. */
  function markSource(source: number) {
    Atomics.store(cells, progress.source, source);
  }

  function evaluate(request: Extract<HostRequest, { type: "evaluate" }>): Evaluated {
    mark(request.id, "evaluate");
    let exports: Record<string, unknown>;
    try {
      exports = evaluateBundle(request, request.generation);
    } catch (error) {
      throw new ActivationFailed({ phase: "evaluate", reason: `module code threw: ${messageOf(error)}`, cause: error });
    }
    const plugin = pluginOf(exports, new Set(request.reserved));
    const locations = new BundleLocations(request, request.generation);
    generations.set(request.generation, { plugin, locations, inEnv: perEnv((env) => ({ env, sent: new Map() })) });
    return { name: plugin.name };
  }

  async function activate(request: Extract<HostRequest, { type: "activate" }>): Promise<Activated> {
    const living = generations.get(request.generation);
    if (living === undefined) throw new Error(`generation ${request.generation} was not evaluated here`);
    mark(request.id, "setup");
    // The request carries the activation's generation, config and setup deadline under their names.
    const { scope, sources, declaredAt } = await activateGeneration({ ...request, plugin: living.plugin, container });
    living.scope = scope;
    living.sources = new Map(
      sources.map((source) => [
        source.key,
        { source, codec: new SourceCodec(source as unknown as Source, Infinity), declaredAt: declaredAt.get(source.key) },
      ]),
    );
    living.keys = [...living.sources.keys()];
    return { sources: sources.map(({ key, deadlineMs }) => (typeof deadlineMs === "number" ? { key, deadlineMs } : { key })) };
  }

  /**
   * Observes the sources asked in three steps, as reconciliation does: every loader starts,
   * then each source is decided against what the host holds, rendering nothing, then only
   * the changed ones are rendered. An unchanged source costs its load and a comparison, and
   * is sent as its code alone.
   */
  async function observe(request: ObserveRequest): Promise<Observed> {
    const asked = askedOf(request);
    const loading = loadAll(asked);
    const outcomes = loading.pending === undefined ? loading.outcomes : await loading.pending;
    const { kinds, changed, faults } = decide(asked, outcomes);
    const present = changed.map((source) => render(asked, source));
    return { kinds, present, faults };
  }

  function askedOf(request: ObserveRequest): Asked {
    const living = generations.get(request.generation);
    const sources = living?.sources;
    if (living === undefined || sources === undefined) throw new Error(`generation ${request.generation} is not active here`);
    const { env, sent } = living.inEnv(request.env);
    const stored = new Map(request.stored as ReadonlyArray<readonly [number, Json]>);
    return { request, living, sources, keys: request.keys ?? living.keys ?? [], stored, env, sent };
  }

  /**
   * The value the host admitted for the `index`-th source asked: the one it sent, else, when
   * it holds an observation of it, that observation's (`askAgain` when this runner no longer
   * has it); `undefined`: none.
   */
  function admittedValue(asked: Asked, index: number, key: string): Json | undefined | typeof askAgain {
    const sentValue = asked.stored.get(index);
    if (sentValue !== undefined) return sentValue;
    const held = asked.request.held[index] ?? 0;
    if (held === 0) return undefined;
    const last = asked.sent.get(key);
    return last?.number === held ? last.value : askAgain;
  }

  /**
   * Starts every loader before awaiting any, as the host does: sources are observed
   * concurrently. `outcomes[i]`: what the i-th loader returned, a `LoadFailed`, or why it
   * was not loaded; `pending` settles them when a loader returned a promise (none: no promise).
   */
  function loadAll(asked: Asked): { readonly outcomes: unknown[]; readonly pending?: Promise<unknown[]> } {
    const { request, sources, keys, env } = asked;
    const outcomes: unknown[] = new Array(keys.length).fill(notLoaded);
    let settling: Promise<void>[] | undefined;
    mark(request.id, "load");
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index] as string;
      if (admittedValue(asked, index, key) === askAgain) {
        outcomes[index] = askAgain;
        continue;
      }
      const declared = sources.get(key);
      if (declared === undefined) continue;
      markSource(index);
      try {
        const loaded = declared.source.load(env);
        if (loaded instanceof Promise) {
          const ms = declared.source.deadlineMs ?? request.deadlineMs;
          const settled = withinDeadline(() => loaded, ms, `loader ${key}`).then(
            (value) => {
              outcomes[index] = value;
            },
            (error: unknown) => {
              outcomes[index] = new LoadFailed(error);
            },
          );
          settling ??= [];
          settling.push(settled);
        } else outcomes[index] = loaded;
      } catch (error) {
        outcomes[index] = new LoadFailed(error);
      }
    }
    mark(request.id, "idle");
    if (settling === undefined) return { outcomes };
    return { outcomes, pending: Promise.all(settling).then(() => outcomes) };
  }

  /** Decides every source asked from what its loader gave, rendering nothing. */
  function decide(asked: Asked, outcomes: readonly unknown[]): Decisions {
    const kinds = new Uint8Array(asked.keys.length);
    const decisions = { kinds, changed: [] as Changed[], faults: [] as WorkerFault[] };
    mark(asked.request.id, "value");
    for (let index = 0; index < asked.keys.length; index++) {
      kinds[index] = decideSource(asked, index, outcomes[index], decisions);
    }
    return decisions;
  }

  /** The code of the `index`-th source asked, from its loader's outcome; a changed source or a fault is added to `into`. */
  function decideSource(
    asked: Asked,
    index: number,
    outcome: unknown,
    into: { readonly changed: Changed[]; readonly faults: WorkerFault[] },
  ): number {
    const key = asked.keys[index] as string;
    const declared = asked.sources.get(key);
    if (outcome === askAgain) return observationCodes["ask-again"];
    if (outcome === notLoaded || outcome === unavailable || declared === undefined) return observationCodes.unavailable;
    if (outcome === absent) return observationCodes.absent;
    if (outcome instanceof LoadFailed) {
      into.faults.push(faultAt(asked, outcome.error, "load", key));
      return observationCodes.unavailable;
    }
    markSource(index);
    try {
      const decided = decideValue(asked, index, declared, outcome);
      if (decided === "unchanged") return observationCodes.unchanged;
      into.changed.push(decided);
      return observationCodes.present;
    } catch (error) {
      into.faults.push(faultAt(asked, error, "value", key));
      return observationCodes.unavailable;
    }
  }

  /**
   * Decides a loaded value: `unchanged` when the host holds the texts of this runner's last
   * observation of the source, and the value is still that one's: a comparison, no check (it
   * was checked when it was sent). Else the value, checked, to be rendered. Throws what the
   * codec, the schema or the limits refuse.
   */
  function decideValue(asked: Asked, index: number, declared: Declared, loaded: unknown): Changed | "unchanged" {
    const { codec } = declared;
    const { key } = codec;
    const encoded = codec.encoded(loaded);
    const admitted = admittedValue(asked, index, key) as Json | undefined;
    const last = asked.sent.get(key);
    const isLastHeld =
      last !== undefined &&
      admitted !== undefined &&
      asked.request.held[index] === last.number &&
      (admitted === last.value || isSameJson(admitted, last.value));
    if (isLastHeld && isSameJson(last.value, encoded)) return "unchanged";
    const checked = codec.checked(encoded);
    // The admitted value again: it was plain and within the limits when admitted.
    const isAdmitted = admitted !== undefined && isSameJson(admitted, checked);
    const value = isAdmitted ? admitted : arrivalChecks.value(key, checked, limits);
    return { index, key, declared, loaded, value, admitted: isAdmitted ? undefined : admitted };
  }

  /** Renders a changed source's texts (its update only against an admitted value that decodes); the host may hold them by its number. */
  function render(asked: Asked, changed: Changed): PresentObservation {
    const { request, sent } = asked;
    const { index, key, declared, loaded, value, admitted } = changed;
    const number = ++sentCount;
    sent.set(key, { value, number });
    const text = (renderer: Renderer, decoded?: unknown): WorkerText => {
      mark(request.id, renderer, index);
      return textOf(asked, key, () => declared.codec.render(renderer, loaded, decoded));
    };
    const baseline = text("baseline");
    const removed = declared.source.removed === undefined ? {} : { removed: text("removed") };
    if (admitted === undefined) return { value, number, baseline, ...removed };
    mark(request.id, "value", index);
    const decoded = decodedOrNone(declared.codec, admitted);
    if (decoded === undefined) return { value, number, baseline, ...removed, previous: { decodes: false } };
    return { value, number, baseline, ...removed, previous: { decodes: true, update: text("update", decoded.value) } };
  }

  async function dispose(request: Extract<HostRequest, { type: "dispose" }>): Promise<null> {
    const living = generations.get(request.generation);
    generations.delete(request.generation);
    mark(request.id, "dispose");
    await living?.scope?.close();
    return null;
  }

  // One path for every request: its step's result, or what the step threw as a fault, located in the generation's code.
  const steps = { evaluate, activate, observe, dispose };
  return async function serve(request) {
    try {
      return { ok: true, result: await steps[request.type](request as never) };
    } catch (error) {
      // A disposer's fault is not located (`dispose` forgot the generation before it ran them).
      const locations =
        request.type === "evaluate"
          ? new BundleLocations(request, request.generation)
          : generations.get(request.generation)?.locations;
      // A generation whose evaluation or setup failed does not live on.
      if (request.type !== "observe") generations.delete(request.generation);
      return { ok: false, fault: faultOf(error, locations, faultPhases[request.type]) };
    } finally {
      mark(0, "idle");
    }
  };
}

/** The phase a request's fault names, unless its error says another. */
const faultPhases = { evaluate: "evaluate", activate: "setup", observe: "load", dispose: "dispose" } as const;

function faultOf(error: unknown, locations: BundleLocations | undefined, phase: DiagnosticPhase): WorkerFault {
  const failure = error instanceof ActivationFailed ? error : undefined;
  const location = locations?.locate(failure?.cause ?? error);
  return {
    phase: failure?.phase ?? phase,
    message: messageOf(error),
    ...(failure?.plugin === undefined ? {} : { plugin: failure.plugin }),
    ...(failure?.key === undefined ? {} : { key: failure.key }),
    ...(location === undefined ? {} : { location }),
  };
}

/** A fault of a source's loader or value, placed in the plugin's code, else at the source's declaration. */
function faultAt(asked: Asked, error: unknown, phase: "load" | "value", key: string): WorkerFault {
  const location = locate(asked, error, key);
  return { ...faultOf(error, undefined, phase), phase, key, ...(location === undefined ? {} : { location }) };
}

/** Where a fault of a source happened: in the plugin's code, else (a fault its code did not throw) where the source was declared. */
function locate(asked: Asked, error: unknown, key: string): Location | undefined {
  const { locations } = asked.living;
  return locations.locate(error) ?? locations.locate(asked.sources.get(key)?.declaredAt);
}

/** A rendering as the host is sent it: the text, or why there is none and where in the plugin's code. */
function textOf(asked: Asked, key: string, render: () => Rendering): WorkerText {
  let failure: { readonly reason: string; readonly error: unknown };
  try {
    const rendering = render();
    if (rendering.ok) return { ok: true, text: rendering.text };
    failure = { reason: rendering.error.reason, error: rendering.error };
  } catch (error) {
    failure = { reason: `threw: ${messageOf(error)}`, error };
  }
  const location = locate(asked, failure.error, key);
  return { ok: false, reason: failure.reason, ...(location === undefined ? {} : { location }) };
}

/** An admitted value decoded under the current schema, or `undefined` if it no longer decodes. */
function decodedOrNone(codec: SourceCodec, stored: Json): { readonly value: unknown } | undefined {
  try {
    return codec.decodeStored(stored);
  } catch {
    return undefined;
  }
}

/**
 * The runner in the host's own thread. Nothing can stop plugin code here, so the runner's
 * own deadlines (setup, loaders) and the host's around disposers are all there is; a plugin
 * that loops freezes the host. For trusted code only.
 */
export class InThreadTransport implements PluginTransport {
  readonly #serve: PluginRunner;
  readonly stopped = undefined;
  #nextId = 1;

  constructor(options: RunnerOptions) {
    this.#serve = createPluginRunner(options);
  }

  async request<T>(request: HostRequestBody): Promise<T> {
    const reply = await this.#serve({ ...request, id: this.#nextId++ });
    if (!reply.ok) throw new PluginWorkerFault({ fault: reply.fault });
    return reply.result as T;
  }

  async terminate(): Promise<void> {}
}
