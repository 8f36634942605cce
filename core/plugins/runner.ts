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
import { absent, type Source, SourceCodec, unavailable } from "../system-context/source.ts";
import type { Plugin, PluginSource } from "./define.ts";
import { evaluateBundle } from "./evaluate.ts";
import { ActivationFailed, activateGeneration, pluginOf } from "./generation.ts";
import { BundleLocations } from "./locations.ts";
import {
  type Activated,
  type Evaluated,
  type HostRequest,
  type HostRequestBody,
  type Observed,
  type PluginTransport,
  PluginWorkerFault,
  phaseCodes,
  progress,
  type RunnerReply,
  type WorkerFault,
  type WorkerObservation,
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

/** What a source's loader returned, or what it threw. */
type Outcome = { readonly loaded: unknown } | { readonly error: unknown };

/** One generation living in this runner. */
interface Living {
  readonly plugin: Plugin;
  readonly locations: BundleLocations;
  scope?: Scope;
  /** By key, in the order `setup` declared them. */
  sources?: Map<string, { readonly source: PluginSource; readonly codec: SourceCodec; readonly declaredAt?: Error }>;
  /** By env (the most recently used ones), the env its loaders get and what each source last sent in it with its texts. */
  readonly inEnv: (env: SourceEnv) => { readonly env: SourceEnv; readonly sent: Map<string, Sent> };
}

/** The plugin runner: one request in, one reply out. */
export type PluginRunner = (request: HostRequest) => Promise<RunnerReply>;

// One object for every such answer: a transport that clones sends it once per message.
const unavailableObservation: WorkerObservation = Object.freeze({ kind: "unavailable" });
const absentObservation: WorkerObservation = Object.freeze({ kind: "absent" });
const unchangedObservation: WorkerObservation = Object.freeze({ kind: "unchanged" });
const askAgain: WorkerObservation = Object.freeze({ kind: "ask-again" });

export function createPluginRunner(options: RunnerOptions): PluginRunner {
  const { container, limits, cells = new Int32Array(progress.length) } = options;
  const generations = new Map<number, Living>();
  /** Numbers the observations sent with texts, so the host can say which one it holds. */
  let sentCount = 0;

  function mark(request: number, phase: (typeof phaseCodes)[number], source = 0) {
    Atomics.store(cells, progress.request, request);
    Atomics.store(cells, progress.phase, phaseCodes.indexOf(phase));
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
    return { sources: sources.map(({ key, deadlineMs }) => (typeof deadlineMs === "number" ? { key, deadlineMs } : { key })) };
  }

  async function observe(request: Extract<HostRequest, { type: "observe" }>): Promise<Observed> {
    const living = generations.get(request.generation);
    const sources = living?.sources;
    if (living === undefined || sources === undefined) throw new Error(`generation ${request.generation} is not active here`);
    const { env, sent } = living.inEnv(request.env);
    const keys = request.keys ?? [...sources.keys()];
    const storedAt = new Map(request.stored);
    const faults: WorkerFault[] = [];
    // A fault the plugin's code did not throw (a value its schema refuses, an empty text) is placed at the source's declaration.
    const locate = (error: unknown, key: string) =>
      living.locations.locate(error) ?? living.locations.locate(sources.get(key)?.declaredAt);
    const faulty = (error: unknown, phase: "load" | "value", key: string) => {
      const location = locate(error, key);
      faults.push({ ...faultOf(error, undefined, phase), phase, key, ...(location === undefined ? {} : { location }) });
      return unavailableObservation;
    };
    // Every loader starts before any is awaited, as in the host: sources are observed
    // concurrently. Loaders that all return at once cost no promise.
    const outcomes = keys.map((key, index): Outcome | Promise<Outcome> | undefined => {
      const held = sources.get(key);
      if (held === undefined) return undefined;
      mark(request.id, "load", index);
      try {
        const loaded = held.source.load(env);
        if (!(loaded instanceof Promise)) return { loaded };
        const within = withinDeadline(() => loaded, held.source.deadlineMs ?? request.deadlineMs, `loader ${key}`);
        return within.then(
          (value) => ({ loaded: value }),
          (error: unknown) => ({ error }),
        );
      } catch (error) {
        return { error };
      }
    });
    mark(request.id, "idle");
    const isPending = outcomes.some((outcome) => outcome instanceof Promise);
    const settled = isPending ? await Promise.all(outcomes) : (outcomes as (Outcome | undefined)[]);
    const observations = keys.map((key, index): WorkerObservation => {
      const heldNumber = request.held[index] ?? 0;
      const last = sent.get(key);
      let stored = storedAt.get(index) as Json | undefined;
      // Held with no value sent: the admitted value is that observation's, if this runner still has it.
      const isStoredHeld = heldNumber > 0 && stored === undefined;
      if (isStoredHeld) {
        if (last?.number !== heldNumber) return askAgain;
        stored = last.value;
      }
      const held = sources.get(key);
      const outcome = settled[index];
      if (held === undefined || outcome === undefined) return unavailableObservation;
      if ("error" in outcome) return faulty(outcome.error, "load", key);
      const { loaded } = outcome;
      if (loaded === unavailable) return unavailableObservation;
      if (loaded === absent) return absentObservation;
      const { codec, source } = held;
      let value: Json;
      mark(request.id, "value", index);
      try {
        const encoded = codec.encode(loaded);
        // The admitted value again (the common case): it was plain and within the limits when admitted.
        value = stored !== undefined && isSameJson(stored, encoded) ? stored : arrivalChecks.value(key, encoded, limits);
      } catch (error) {
        return faulty(error, "value", key);
      }
      const isStored = value === stored;
      // Unchanged since admission, and the host holds its texts: a load and a comparison, nothing rendered.
      if (isStored && last !== undefined && heldNumber === last.number && (isStoredHeld || isSameJson(last.value, value)))
        return unchangedObservation;
      const number = ++sentCount;
      sent.set(key, { value, number });
      const render = (renderer: Renderer, previous?: unknown): WorkerText => {
        mark(request.id, renderer, index);
        try {
          const rendering = codec.render(renderer, loaded, previous);
          if (rendering.ok) return { ok: true, text: rendering.text };
          const location = locate(rendering.error, key);
          return { ok: false, reason: rendering.error.reason, ...(location === undefined ? {} : { location }) };
        } catch (error) {
          const location = locate(error, key);
          return { ok: false, reason: `threw: ${messageOf(error)}`, ...(location === undefined ? {} : { location }) };
        }
      };
      const baseline = render("baseline");
      const removed = source.removed === undefined ? {} : { removed: render("removed") };
      if (stored === undefined || isStored) return { kind: "present", value, number, baseline, ...removed };
      // A stored value is decoded (and an update rendered) only when the value changed.
      mark(request.id, "value", index);
      let decoded: { readonly value: unknown } | undefined;
      try {
        decoded = codec.decodeStored(stored);
      } catch {
        decoded = undefined;
      }
      const previous = decoded === undefined ? { decodes: false } : { decodes: true, update: render("update", decoded.value) };
      return { kind: "present", value, number, baseline, ...removed, previous };
    });
    return { observations, faults };
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
