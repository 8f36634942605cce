// Owns the one load of a plugin, wherever its code runs: in-process (`load.ts`'s
// `loadGeneration`) or in the plugin's worker (bundle here, evaluate and set up there),
// with one tagged result that gives an activated generation the shape both isolations
// share. Nothing here touches the registry or the plugin set's entries.

import type { Scope } from "../base/scope.ts";
import type { Registration } from "../registry/registry.ts";
import { type Guard, guardedRegistration } from "./guarded-source.ts";
import { type IsolatedGeneration, type IsolatedPlugin, PluginCodeFault } from "./isolated.ts";
import { bundleForLoad, type LoadContext, type LoadRequest, type LoadResult, loadGeneration } from "./load.ts";
import type { Location } from "./locations.ts";

/**
 * A generation ready to be swapped in, wherever its code runs: its scope (closing it runs
 * its disposers), its sources' registrations under a guard, and how to locate its faults.
 */
export interface LoadedGeneration {
  readonly name: string;
  readonly scope: Scope;
  registrations(guard: Guard): Registration[];
  locate(error: unknown): Location | undefined;
}

/** One load's request: which file, as which generation, and when it started (`performance.now()`). */
export interface PluginLoadRequest extends LoadRequest {
  readonly startedAt: number;
}

/** Where the load runs: in this process, or in the plugin's worker (its handle made on first need). */
export type LoadPlace = { readonly isolation: "none" } | { readonly isolation: "worker"; readonly worker: () => IsolatedPlugin };

/** What one load produced: a `LoadResult`, with an activated generation in the shape both isolations share. */
export type Loaded =
  | Exclude<LoadResult, { readonly kind: "activated" }>
  | {
      readonly kind: "activated";
      readonly inputs: readonly string[];
      readonly hash: string;
      readonly loaded: LoadedGeneration;
      /** When this load started and when its generation was ready (bundle, evaluate, setup done), `performance.now()`. */
      readonly startedAt: number;
      readonly readyAt: number;
      readonly bundleMs?: number;
      readonly evaluateMs?: number;
      readonly setupMs?: number;
    };

/** One load of a plugin: bundle, then evaluate and set up where its code runs. */
export function loadPlugin(request: PluginLoadRequest, place: LoadPlace, context: LoadContext): Promise<Loaded> {
  return place.isolation === "none" ? loadInProcess(request, context) : loadIsolated(request, place.worker, context);
}

async function loadInProcess(request: PluginLoadRequest, context: LoadContext): Promise<Loaded> {
  const result = await loadGeneration(request, context);
  if (result.kind !== "activated") return result;
  return {
    kind: "activated",
    inputs: result.inputs,
    hash: result.hash,
    loaded: inProcessGeneration(result),
    startedAt: request.startedAt,
    readyAt: performance.now(),
  };
}

async function loadIsolated(request: PluginLoadRequest, workerOf: () => IsolatedPlugin, context: LoadContext): Promise<Loaded> {
  const bundled = await bundleForLoad(request);
  if (bundled.kind !== "bundled") return bundled;
  const bundleMs = performance.now() - request.startedAt;
  const { bundle } = bundled;
  const worker = workerOf();
  const outcome = await worker.load(bundle, request.generation, context.settings, [...context.reservedNamespaces]);
  if (outcome.kind === "failed") return { kind: "failed", inputs: bundle.inputs, hash: bundle.hash, fault: outcome.fault };
  return {
    kind: "activated",
    inputs: bundle.inputs,
    hash: bundle.hash,
    loaded: isolatedGeneration(worker, outcome.activated),
    startedAt: request.startedAt,
    readyAt: performance.now(),
    bundleMs,
    evaluateMs: outcome.evaluateMs,
    setupMs: outcome.setupMs,
  };
}

/** An in-process generation: its sources are guarded here. Outside any class, so its closures hold nothing else. */
function inProcessGeneration(result: Extract<LoadResult, { kind: "activated" }>): LoadedGeneration {
  const { activated, locations } = result;
  return {
    name: activated.name,
    scope: activated.scope,
    registrations: (guard) => activated.sources.map((source) => guardedRegistration(source, guard)),
    locate: (error) => locations.locate(error),
  };
}

/** An isolated generation: its sources are observed in the plugin's worker. */
function isolatedGeneration(isolated: IsolatedPlugin, activated: IsolatedGeneration): LoadedGeneration {
  return {
    name: activated.name,
    scope: activated.scope,
    registrations: (guard) =>
      activated.keys.map((key) =>
        isolated.registration(
          activated.generation,
          key,
          { maxTextLength: guard.maxTextLength, maxValueBytes: guard.maxValueBytes ?? 1024 * 1024, report: guard.report },
          guard.observed,
        ),
      ),
    locate: locatedInWorker,
  };
}

/** The location a fault of plugin code in a worker carries (on the error or a cause of it). */
function locatedInWorker(error: unknown): Location | undefined {
  let current = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof PluginCodeFault) return current.location;
    current = current.cause;
  }
  return undefined;
}
